// File: server/drivers/redfish/redfish_inspect.h
//
// The "redfish" inspect interface: out-of-band inspection through the BMC, after Ironic's
// RedfishInspect (ironic/drivers/modules/redfish/inspect.py). Synchronous: no ramdisk, no power
// change; the node goes straight on to manageable. Metal3 chooses it for its "fast" inspection.
// The idrac hardware type's "idrac-redfish" inspect interface is this object under another name
// (hardware_types.cpp, ImplementationDef::aliasOf).
//
// What it reads from the ComputerSystem and its collections, and where it goes in the inventory
// (ironic-python-agent's shape, as the fake inspect interface builds it; null where the BMC does
// not say):
//   cpu       count: the members of Processors summed by TotalThreads (sushy's summary, as
//             Ironic), else ProcessorSummary.LogicalProcessorCount, else ProcessorSummary.Count,
//             else the number of processors. architecture: the first processor's InstructionSet
//             as Ironic maps it (x86 -> i686, x86-64 -> x86_64, IA-64 -> ia64, ARM-A32 -> arm,
//             ARM-A64 -> aarch64, MIPS32 -> mips, MIPS64 -> mips64), else the first
//             ProcessorArchitecture as Ironic mapped it before (x86 -> x86_64, IA-64 -> ia64,
//             ARM -> arm, MIPS -> mips). model_name: the first processor's Model (else
//             ProcessorSummary.Model); frequency: its MaxSpeedMHz as a string. Processors whose
//             ProcessorType is not CPU (GPUs, FPGAs...) are left out.
//   memory    physical_mb: MemorySummary.TotalSystemMemoryGiB * 1024.
//   disks     the Drives of every Storage (name = Name, size = CapacityBytes, model, serial,
//             vendor; rotational from MediaType HDD/SSD); the Devices of SimpleStorage only when
//             the system has no Storage (as Ironic).
//   interfaces  one per EthernetInterfaces member with a valid MAC (MACAddress, else
//             PermanentMACAddress, lower-cased): name = its Id, speed_mbps = SpeedMbps,
//             has_carrier from LinkStatus.
//   system_vendor  manufacturer, product_name (Model), serial_number, system_uuid (UUID),
//             firmware.version (BiosVersion).
//   boot      current_boot_mode from Boot.BootSourceOverrideMode (UEFI -> uefi, Legacy -> bios).
//
// Node properties: cpus, cpu_arch, memory_mb and the boot_mode capability through
// applyInventory (server/drivers/agent/agent_interfaces.h, as agent inspection), except that
// an existing boot_mode capability is kept (as Ironic's RedfishInspect); local_gb as Ironic
// computes it: the smallest disk of at least 4 GiB, in GiB, minus one (0 when none), where a
// disk is a Storage Volume (else a Storage Drive) or an enabled SimpleStorage device, the
// smaller of the two when both have one. The inspection fails, changing nothing, when memory_mb,
// cpus or cpu_arch is neither reported by the BMC nor already a node property (Ironic's
// "Failed to discover the following properties").
//
// Not done (Ironic does them): creating ports for the NICs found, the inventory's
// storage_controllers and pci_devices, LLDP from the chassis' NetworkAdapters, inspection hooks
// other than what applyInventory and the conductor's plugin data cover.
#pragma once

#include <optional>
#include <string>

#include "server/drivers/interfaces.h"
#include "shared/http/http_client.h"

namespace kiln::server {

/// Inspection through Redfish. Thread-safe across nodes (no state of its own).
class RedfishInspect final : public InspectInterface {
 public:
  explicit RedfishInspect(HttpClientPtr http);

  std::string_view name() const override { return "redfish"; }
  /// Checks driver_info only (see parseRedfishConfig); does not contact the BMC.
  std::optional<std::string> validate(const TaskContext& task) const override;
  /// Reads the BMC, sets task.inventory and the node's properties; Done.
  Result<StepResult> inspectHardware(TaskContext& task) override;

 private:
  HttpClientPtr http_;
};

}  // namespace kiln::server
