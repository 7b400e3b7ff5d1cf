// File: server/drivers/redfish/redfish_raid.h
//
// The "redfish" RAID interface: hardware RAID volumes made by the BMC, after Ironic's RedfishRAID
// (ironic/drivers/modules/redfish/raid.py). The idrac hardware type's "idrac-redfish" RAID
// interface is this object under another name (hardware_types.cpp, ImplementationDef::aliasOf).
//
// What the BMC shows: the ComputerSystem's Storage collection; each Storage (a RAID controller)
// lists its Drives and links a Volumes collection. A Storage whose first controller
// (StorageControllers[0], else the first member of Controllers) reports an empty
// SupportedRAIDTypes has no RAID and its drives are not used, as in Ironic.
//
// Steps, all priority 0 (manual cleaning, deploy templates, user deploy steps), not abortable:
//   raid.create_configuration  clean  creates node.target_raid_config's logical disks; args
//       create_root_volume and create_nonroot_volumes (default true) choose which,
//       delete_existing (default false) runs delete_configuration first. Unlike Ironic, whose
//       redfish interface accepts delete_existing but ignores it, Kiln honours it.
//   raid.delete_configuration  clean, deploy  deletes every volume that has a RAIDType (as
//       Ironic), except those the BMC says cannot be deleted (their GET's Allow header lists no
//       DELETE).
//   raid.apply_configuration   deploy  stores args.raid_config (required) as target_raid_config
//       and creates it; create_root_volume true, create_nonroot_volumes false and
//       delete_existing false by default (Ironic's RedfishRAID defaults).
//
// Creating (Ironic's _find_configuration): each logical disk's size_gb becomes bytes; "MAX"
// (or null, Metal3's "no size") takes what its drives have left. Drives are either named in
// physical_disks (each entry a Drive's Id, Name or @odata.id) or chosen: drives of one kind
// (MediaType, Protocol, CapacityBytes) matching disk_type (hdd/ssd) and interface_type
// (sas/sata), unused unless share_physical_disks, smallest free space first, as many as
// number_of_physical_disks or the fewest the level allows that fit; a backtracking search gives
// every logical disk its drives, or fails with Ironic's "failed to find matching physical disks
// for all logical disks". Space is counted in 64 MiB stripes per drive with each level's parity
// drives (RAID1: exactly 2 drives; 5: 3 or more, 1 parity; 6: 4 or more, 2 parity; 1+0: pairs;
// 5+0 and 6+0: two spans). Unlike Ironic:
//   - "MAX" needs no physical_disks (Ironic refuses it without them); the drives are chosen as
//     above and the volume gets all their free space;
//   - a logical disk's `controller` (a Storage's Id or @odata.id) restricts the drives chosen
//     to that controller's (Ironic does not use it to choose), and must exist;
//   - a physical_disks entry that names no drive is an error (Ironic drops it silently).
// Each volume is a POST to its controller's Volumes collection: RAIDType (0 -> RAID0, 1 -> RAID1,
// 5 -> RAID5, 6 -> RAID6, 1+0 -> RAID10, 5+0 -> RAID50, 6+0 -> RAID60), CapacityBytes (left
// out for "MAX", so that the controller takes its own metadata into account, as Ironic does
// since its bug 2132936), Links.Drives, Name (volume_name) and @Redfish.OperationApplyTime
// (Immediate when the collection's @Redfish.OperationApplyTimeSupport lists it, else OnReset
// when listed, else left out). Deleting is a DELETE of each volume, with the same apply time.
//
// Asynchronous BMCs: an answer 202 with a task (server/drivers/redfish/redfish_task.h) is
// watched until the task ends; as in Ironic, a controller gets no further request until its
// task ended. When a request asked for OnReset, the node is rebooted (its power interface) once
// the round of requests is sent, as Ironic's reboot_to_finish_step. Unlike Ironic, which returns
// "clean wait" and polls from a periodic job, the step runs to the end on the conductor's worker
// (as the redfish bios and firmware steps do), looking every RedfishRaidTiming::statusInterval
// ([redfish] raid_config_status_interval) up to RedfishRaidTiming::timeout; and a task that ends
// in failure fails the step with Ironic's "RAID <create|delete> task <monitor> to node <uuid>
// failed; messages: ..." (Ironic only logs it).
//
// Afterwards node.raid_config is what the BMC reports, as Ironic's update_raid_config:
// {"logical_disks": [{"id", "name", "controller", "size_gb", "raid_level"} for each volume with
// a RAIDType], "last_updated": "<UTC time>"}.
//
// Errors name the node and use Ironic's messages: planning and BMC failures are
// "Redfish exception occurred. Error: <reason>" (Ironic's RedfishError).
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/drivers/interfaces.h"
#include "shared/http/http_client.h"

namespace kiln::server {

/// How long the RAID steps wait for the BMC's tasks, and how often they look.
struct RedfishRaidTiming {
  std::chrono::seconds statusInterval{60};  ///< Ironic's [redfish] raid_config_status_interval
  /// The whole step (Ironic bounds it by the clean/deploy wait timeouts, 30 minutes).
  std::chrono::seconds timeout{1800};
};

/// Ironic's RedfishRAID.validate_raid_config for a target RAID configuration: the common schema
/// (kiln::parseRaidConfig), no interface_type "scsi" ("interface type `scsi` not supported by
/// Redfish RAID"), and, earlier than Ironic (which finds out when it creates the volumes), only
/// the RAID levels the interface can create and physical_disks that are drive names (not device
/// hints). InvalidArgument with the reason.
Result<void> validateRedfishRaidConfig(const nlohmann::json& config);

/// Hardware RAID through Redfish. Thread-safe across nodes (no state of its own).
class RedfishRaid final : public HardwareInterface {
 public:
  explicit RedfishRaid(HttpClientPtr http, RedfishRaidTiming timing = {});

  InterfaceType type() const override { return InterfaceType::Raid; }
  std::string_view name() const override { return "redfish"; }
  /// driver_info (parseRedfishConfig) and the node's target_raid_config
  /// (validateRedfishRaidConfig); does not contact the BMC.
  std::optional<std::string> validate(const TaskContext& task) const override;
  std::span<const StepDefinition> steps() const override { return steps_; }

  /// raid.create_configuration for the node's target_raid_config.
  Result<StepResult> createConfiguration(TaskContext& task, bool createRootVolume,
                                         bool createNonrootVolumes, bool deleteExisting) const;
  /// raid.delete_configuration.
  Result<StepResult> deleteConfiguration(TaskContext& task) const;

 private:
  HttpClientPtr http_;
  RedfishRaidTiming timing_;
  std::vector<StepDefinition> steps_;
};

}  // namespace kiln::server
