// File: server/drivers/ipmitool/ipmitool_management.h
//
// The "ipmitool" management interface: the IPMI boot device override.
//   setBootDevice   `raw 0x00 0x08 0x03 0x08` (keep the override past 60 s), then
//                   `chassis bootdev <device> [options=persistent]`
//   getBootDevice   `chassis bootparam get 5`, parsed by parseBootFlags
//   injectNmi       `power diag` (as Ironic's ipmitool management)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/drivers/interfaces.h"
#include "server/drivers/ipmitool/ipmitool.h"

namespace kiln::server {

class IpmitoolManagement final : public ManagementInterface {
 public:
  explicit IpmitoolManagement(Ipmitool ipmitool);

  std::string_view name() const override { return "ipmitool"; }

  /// The same driver_info checks as IpmitoolPower::validate.
  std::optional<std::string> validate(const TaskContext& task) const override;

  /// The pending boot override. `device` is "pxe", "disk", "cdrom", "bios" or "safe" with
  /// `persistent` from "Options apply to all future boots"; when no override is pending ("No
  /// override", or the BMC marked the boot flags invalid, i.e. already used or expired) or the
  /// BMC names a device Ironic has no name for (floppy, diagnostic partition), `device` is ""
  /// and `persistent` unknown, as with the noop management interface. Errors as Ipmitool::run,
  /// plus Internal for unparsable output.
  Result<BootDevice> getBootDevice(TaskContext& task) override;

  /// Sets the boot device for the next boot, or every boot with `persistent`. InvalidArgument
  /// for a device outside supportedBootDevices(); otherwise errors as Ipmitool::run.
  Result<void> setBootDevice(TaskContext& task, std::string_view device, bool persistent) override;

  /// pxe, disk, cdrom, bios, safe.
  std::vector<std::string> supportedBootDevices(const TaskContext& task) const override;

  /// A non-maskable interrupt through `power diag`. Errors as Ipmitool::run, their message
  /// prefixed with Ironic's "IPMI call failed: power diag.".
  Result<void> injectNmi(TaskContext& task) override;

 private:
  Ipmitool ipmitool_;
};

}  // namespace kiln::server
