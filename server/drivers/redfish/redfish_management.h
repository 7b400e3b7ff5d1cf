// File: server/drivers/redfish/redfish_management.h
//
// The "redfish" management interface: the boot device is the ComputerSystem's boot source
// override (Boot.BootSourceOverrideTarget and BootSourceOverrideEnabled).
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

 private:
  HttpClientPtr http_;
};

}  // namespace kiln::server
