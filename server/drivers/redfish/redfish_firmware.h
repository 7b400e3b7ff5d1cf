// File: server/drivers/redfish/redfish_firmware.h
//
// The "redfish" firmware interface (API 1.86), after Ironic's RedfishFirmware.
//
// Components (cacheFirmwareComponents): "bios" from the ComputerSystem's BiosVersion; "bmc"
// from the FirmwareVersion of its first manager (Links.ManagedBy), with the manager's Model
// (1.114); "nic:<SerialNumber, else Id>" for every controller with a FirmwarePackageVersion of
// the NetworkAdapters of its first chassis (Links.Chassis), with the adapter's Manufacturer,
// Model and SerialNumber. A missing manager or unreadable NetworkAdapters only leave those out;
// nothing at all is Unimplemented ("Cannot retrieve firmware for node U: no supported
// components").
//
// firmware.update: for each setting in order, UpdateService.SimpleUpdate with the URL as
// ImageURI (TransferProtocol only when the action lists the URL's scheme; Targets = the system
// when the BMC manages several), then the returned task monitor (its Location, else the Task
// in the answer) is watched until the task ends. Unlike Ironic, which returns "clean wait" and
// polls from a periodic job, the step runs to the end on the conductor's worker, as the redfish
// bios steps do; the waiting uses Ironic's [redfish] firmware_update_* defaults
// (RedfishFirmwareTiming) on the task's clock:
//   - the task monitor is read every status_interval; 202 or a TaskState of New, Starting,
//     Running or Pending means running; a BMC that does not answer (it may be resetting) is
//     asked again; 404 means the BMC purged the task, taken as success (as Ironic);
//   - the task must end Completed with TaskStatus OK or Warning (or none), else the step fails
//     with Ironic's "Firmware update failed for node U, firmware URL. Error: <task messages>";
//   - bios: the node is rebooted (its power interface) as soon as the task runs, or after it
//     ended when it never ran; nic: rebooted after the task, or while the task stays Starting
//     for nic_starting_wait (a NIC that needs a reboot to start); bmc: no reboot, but the
//     manager's FirmwareVersion is watched (every bmc_version_check_interval, up to the
//     setting's wait or reboot_delay) until it changes; the node is rebooted only if the BMC
//     cannot tell its version by then;
//   - a bios or nic setting's wait is then slept; after each component the BMC must answer
//     for the System and Manager required_successes times in a row (validation_interval apart,
//     within validation_timeout);
//   - the whole step fails after overall_timeout.
// Only http:// and https:// URLs are taken (Kiln does not stage images as Ironic's
// firmware_source local/swift does). The conductor caches the components after the step.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "server/drivers/interfaces.h"
#include "shared/http/http_client.h"

namespace kiln::server {

/// How long the update waits, and how often it looks (Ironic's [redfish] option defaults).
struct RedfishFirmwareTiming {
  std::chrono::seconds statusInterval{60};           ///< firmware_update_status_interval
  std::chrono::seconds overallTimeout{7200};         ///< firmware_update_overall_timeout
  std::chrono::seconds rebootDelay{300};             ///< firmware_update_reboot_delay
  std::chrono::seconds bmcVersionCheckInterval{30};  ///< firmware_update_bmc_version_check_interval
  std::chrono::seconds nicStartingWait{30};          ///< firmware_update_nic_starting_wait
  int requiredSuccesses = 3;                         ///< firmware_update_required_successes
  std::chrono::seconds validationInterval{30};       ///< firmware_update_validation_interval
  std::chrono::seconds validationTimeout{480};  ///< firmware_update_resource_validation_timeout
};

/// Firmware through Redfish. Thread-safe across nodes (no state of its own).
class RedfishFirmware final : public FirmwareInterface {
 public:
  explicit RedfishFirmware(HttpClientPtr http, RedfishFirmwareTiming timing = {});

  std::string_view name() const override { return "redfish"; }
  /// Checks driver_info only (see parseRedfishConfig); does not contact the BMC.
  std::optional<std::string> validate(const TaskContext& task) const override;
  std::span<const StepDefinition> steps() const override { return steps_; }
  Result<std::vector<FirmwareComponentInfo>> cacheFirmwareComponents(TaskContext& task) override;

 private:
  Result<StepResult> update(TaskContext& task, const nlohmann::json& args) const;

  HttpClientPtr http_;
  RedfishFirmwareTiming timing_;
  std::vector<StepDefinition> steps_;
};

}  // namespace kiln::server
