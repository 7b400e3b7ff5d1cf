#include "server/drivers/ipmitool/ipmitool_management.h"

#include <algorithm>

namespace kiln::server {
namespace {

// Ironic's boot device names; ipmitool's bootdev takes the same words.
const std::vector<std::string> kBootDevices = {"pxe", "disk", "cdrom", "bios", "safe"};

}  // namespace

IpmitoolManagement::IpmitoolManagement(Ipmitool ipmitool) : ipmitool_(std::move(ipmitool)) {}

std::optional<std::string> IpmitoolManagement::validate(const TaskContext& task) const {
  auto info = parseIpmiDriverInfo(task.driverInfo);
  if (!info) return info.error().message;
  return std::nullopt;
}

Result<ManagementInterface::BootDevice> IpmitoolManagement::getBootDevice(TaskContext& task) {
  const IpmiBootFlags flags = KILN_TRY(ipmitool_.bootFlags(task));
  if (!flags.valid || flags.device.empty()) return BootDevice{"", std::nullopt};
  return BootDevice{flags.device, flags.persistent};
}

Result<void> IpmitoolManagement::setBootDevice(TaskContext& task, std::string_view device,
                                               bool persistent) {
  if (std::find(kBootDevices.begin(), kBootDevices.end(), device) == kBootDevices.end()) {
    return invalid("Invalid boot device " + std::string(device) +
                   " specified; the ipmitool management interface supports pxe, disk, cdrom, "
                   "bios, safe.");
  }
  return ipmitool_.setBootDevice(task, device, persistent);
}

std::vector<std::string> IpmitoolManagement::supportedBootDevices(const TaskContext&) const {
  return kBootDevices;
}

Result<void> IpmitoolManagement::injectNmi(TaskContext& task) {
  auto done = ipmitool_.run(task, {"power", "diag"});
  if (!done) {
    task.log.error("Inject NMI failed", {{"node", task.uuid()}, {"error", done.error().message}});
    return fail(done.error().code, "IPMI call failed: power diag. " + done.error().message);
  }
  return {};
}

}  // namespace kiln::server
