// File: server/drivers/redfish/redfish_management.h
//
// The "redfish" management interface: the boot device is the ComputerSystem's boot source
// override (Boot.BootSourceOverrideTarget and BootSourceOverrideEnabled), the boot mode its
// Boot.BootSourceOverrideMode (UEFI = uefi, Legacy = bios), secure boot its SecureBoot
// resource (SecureBootEnable), an NMI the Reset action with ResetType Nmi, and the indicators
// the IndicatorLED of the System and of the Chassis it links (Lit/Blinking/Off = ON/BLINKING/
// OFF), named by their UUID, as Ironic's redfish management does.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server/drivers/interfaces.h"
#include "shared/http/http_client.h"

namespace kiln::server {

/// Boot device selection through Redfish. Thread-safe across nodes (no state of its own).
/// Devices: pxe = Pxe, disk = Hdd, cdrom = Cd, bios = BiosSetup.
class RedfishManagement final : public ManagementInterface {
 public:
  explicit RedfishManagement(HttpClientPtr http) : http_(std::move(http)) {}

  std::string_view name() const override { return "redfish"; }
  /// Checks driver_info only (see parseRedfishConfig); does not contact the BMC.
  std::optional<std::string> validate(const TaskContext& task) const override;
  /// The override target ("" when it is none or unknown to Kiln); persistent is true for
  /// Continuous, false for Once, unknown otherwise (Disabled).
  Result<BootDevice> getBootDevice(TaskContext& task) override;
  /// PATCHes Boot {BootSourceOverrideTarget, BootSourceOverrideEnabled: Once|Continuous}.
  /// InvalidArgument for a device Kiln cannot map or the BMC does not list as allowed.
  Result<void> setBootDevice(TaskContext& task, std::string_view device, bool persistent) override;
  /// From BootSourceOverrideTarget@Redfish.AllowableValues when the BMC lists them (and can be
  /// reached), else pxe, disk, cdrom, bios. Contacts the BMC.
  std::vector<std::string> supportedBootDevices(const TaskContext& task) const override;

  /// Boot.BootSourceOverrideMode: "uefi", "bios", or nullopt when the BMC reports neither.
  Result<std::optional<std::string>> getBootMode(TaskContext& task) override;
  /// PATCHes Boot {BootSourceOverrideMode}. When the BMC refuses and reports no mode at all,
  /// unsupported("set_boot_mode") as Ironic (the BMC cannot override the boot mode).
  Result<void> setBootMode(TaskContext& task, std::string_view mode) override;
  /// SecureBoot.SecureBootEnable; unsupported() when the System links no SecureBoot resource.
  Result<std::optional<bool>> getSecureBoot(TaskContext& task) override;
  /// PATCHes SecureBoot {SecureBootEnable} unless it already has that value; refused while the
  /// System boots in Legacy mode.
  Result<void> setSecureBoot(TaskContext& task, bool enabled) override;
  /// Reset with ResetType Nmi.
  Result<void> injectNmi(TaskContext& task) override;
  /// "system" and "chassis" indicators that report an IndicatorLED, each settable to BLINKING,
  /// OFF or ON. A chassis the BMC fails to return is left out.
  Result<Indicators> supportedIndicators(TaskContext& task, std::string_view component) override;
  Result<std::string> getIndicatorState(TaskContext& task, std::string_view component,
                                        std::string_view indicator) override;
  Result<void> setIndicatorState(TaskContext& task, std::string_view component,
                                 std::string_view indicator, std::string_view state) override;
  /// VirtualMedia InsertMedia on the first slot taking the device type (cdrom: CD/DVD, disk:
  /// USBStick, floppy: Floppy). "local": the image is first downloaded into [deploy] http_root
  /// and the BMC reads it from kiln-server (GET /v1/vmedia/{name}).
  Result<void> attachVirtualMedia(TaskContext& task, std::string_view deviceType,
                                  const std::string& url, std::string_view downloadSource) override;
  Result<void> detachVirtualMedia(TaskContext& task,
                                  const std::vector<std::string>& deviceTypes) override;
  Result<std::vector<VirtualMedia>> getVirtualMedia(TaskContext& task) override;
  bool hasVirtualMedia() const override { return true; }
  /// System.Status.Health ("OK", "Warning", "Critical"); nullopt when absent.
  Result<std::optional<std::string>> getHealth(TaskContext& task) override;
  /// The System's sensors (server/drivers/redfish/redfish_sensors.h); only a System the BMC
  /// does not answer for is an error.
  Result<std::optional<SensorData>> getSensorData(TaskContext& task) override;

 private:
  HttpClientPtr http_;
};

}  // namespace kiln::server
