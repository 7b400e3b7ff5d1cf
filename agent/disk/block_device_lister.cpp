#include "agent/disk/block_device_lister.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <optional>

#include "agent/disk/device_io.h"
#include "shared/core/strings.h"

namespace kiln::agent {
namespace {

constexpr std::string_view kSkippedPrefixes[] = {"loop", "ram", "sr", "zram",
                                                 "md",   "dm-", "fd", "nbd"};

uint64_t readNumber(SysfsReader& sysfs, const std::string& path, uint64_t fallback) {
  return parseInt<uint64_t>(readSysfsValue(sysfs, path)).value_or(fallback);
}

/// udev's ID_WWN spelling: SCSI "naa.5000c500a1b2c3d4" becomes "0x5000c500a1b2c3d4"; other
/// identifiers (NVMe "eui.", "nvme.") are kept as the kernel prints them.
std::string normalizeWwn(std::string wwid) {
  if (wwid.starts_with("naa.")) return "0x" + wwid.substr(4);
  return wwid;
}

std::string readWwn(SysfsReader& sysfs, const std::string& base) {
  std::string wwid = readSysfsValue(sysfs, base + "/device/wwid");
  if (wwid.empty()) wwid = readSysfsValue(sysfs, base + "/wwid");
  return normalizeWwn(wwid);
}

/// Device name ("sda") -> its first /dev/disk/by-path link, read once per listing.
std::map<std::string, std::string> byPathLinks(SysfsReader& sysfs) {
  std::map<std::string, std::string> links;
  for (const std::string& entry : sysfs.list("/dev/disk/by-path")) {
    auto target = sysfs.readLink("/dev/disk/by-path/" + entry);
    if (!target) continue;
    const auto slash = target->rfind('/');
    const std::string leaf = slash == std::string::npos ? *target : target->substr(slash + 1);
    links.emplace(leaf, "/dev/disk/by-path/" + entry);  // the first in sorted order wins
  }
  return links;
}

BlockDevice describeSysfsDisk(SysfsReader& sysfs, const std::string& name,
                              const std::map<std::string, std::string>& byPath) {
  const std::string base = "/sys/block/" + name;
  BlockDevice device;
  device.name = "/dev/" + name;
  device.size = readNumber(sysfs, base + "/size", 0) * 512;
  device.model = readSysfsValue(sysfs, base + "/device/model");
  device.vendor = readSysfsValue(sysfs, base + "/device/vendor");
  device.serial = readSysfsValue(sysfs, base + "/device/serial");
  device.wwn = readWwn(sysfs, base);
  if (auto it = byPath.find(name); it != byPath.end()) device.byPath = it->second;
  device.rotational = readNumber(sysfs, base + "/queue/rotational", 0) != 0;
  device.supportsDiscard = readNumber(sysfs, base + "/queue/discard_max_bytes", 0) > 0;
  device.logicalBlockSize =
      static_cast<uint32_t>(readNumber(sysfs, base + "/queue/logical_block_size", 512));
  return device;
}

Result<BlockDevice> describeBlockSpecial(const std::string& path) {
  auto fd = openFile(path, O_RDONLY);
  if (!fd) return invalid(fd.error().message);
  auto geometry = blockGeometry(fd->get(), path);
  if (!geometry) return invalid("Cannot read the size of device " + path);
  BlockDevice device;
  device.name = path;
  device.size = geometry->bytes;
  device.logicalBlockSize = geometry->logicalBlockSize;
  return device;
}

}  // namespace

bool isVirtualBlockDeviceName(std::string_view name) {
  for (std::string_view prefix : kSkippedPrefixes) {
    if (name.starts_with(prefix)) return true;
  }
  return false;
}

std::vector<BlockDevice> listDisks(SysfsReader& sysfs) {
  std::vector<BlockDevice> disks;
  const auto byPath = byPathLinks(sysfs);
  for (const std::string& name : sysfs.list("/sys/block")) {
    if (isVirtualBlockDeviceName(name)) continue;
    BlockDevice device = describeSysfsDisk(sysfs, name, byPath);
    // NOTE(kiln): empty card readers and ejected media report size 0; never a target.
    if (device.size == 0) continue;
    disks.push_back(std::move(device));
  }
  return disks;
}

Result<std::vector<BlockDevice>> describeDevices(std::span<const std::string> paths) {
  std::vector<BlockDevice> devices;
  for (const std::string& path : paths) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      return invalid("Cannot use device " + path + ": " + std::strerror(errno));
    }
    if (S_ISREG(st.st_mode)) {
      BlockDevice device;
      device.name = path;
      device.size = static_cast<uint64_t>(st.st_size);
      devices.push_back(std::move(device));
    } else if (S_ISBLK(st.st_mode)) {
      devices.push_back(KILN_TRY(describeBlockSpecial(path)));
    } else {
      return invalid("Device " + path + " is neither a regular file nor a block device");
    }
  }
  return devices;
}

}  // namespace kiln::agent
