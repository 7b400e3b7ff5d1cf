#include "agent/hardware/inventory.h"

#include <sys/utsname.h>

#include <charconv>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "shared/core/strings.h"

namespace kiln::agent {
namespace {

using nlohmann::json;

std::optional<int64_t> integer(std::string_view text) {
  int64_t number = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec != std::errc()) return std::nullopt;
  return number;
}

/// "key\t: value" lines of /proc/cpuinfo, all processors.
std::vector<std::pair<std::string, std::string>> cpuinfoFields(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> fields;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    fields.emplace_back(trim(line.substr(0, colon)),
                        trim(line.substr(colon + 1)));
  }
  return fields;
}

json collectCpu(SysfsReader& sysfs, const std::string& architecture) {
  std::string model, frequency;
  json flags = json::array();
  int count = 0;
  for (const auto& [key, val] : cpuinfoFields(sysfs.read("/proc/cpuinfo").value_or(""))) {
    if (key == "processor") ++count;
    if (key == "model name" && model.empty()) model = val;
    if (key == "cpu MHz" && frequency.empty()) frequency = val;
    if ((key == "flags" || key == "Features") && flags.empty()) {
      std::istringstream words(val);
      for (std::string w; words >> w;) flags.push_back(w);
    }
  }
  // NOTE(kiln): the maximum frequency (what lscpu calls "CPU max MHz") describes the machine
  // better than the current one; cpufreq gives it in kHz when the driver is loaded.
  if (auto maxKhz =
          integer(readSysfsValue(sysfs, "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"))) {
    frequency = std::to_string(*maxKhz / 1000);
  }
  return {{"model_name", model},
          {"frequency", frequency},
          {"count", count},
          {"architecture", architecture},
          {"flags", flags}};
}

json collectMemory(SysfsReader& sysfs) {
  uint64_t totalBytes = 0;
  std::istringstream in(sysfs.read("/proc/meminfo").value_or(""));
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("MemTotal:")) continue;
    totalBytes = static_cast<uint64_t>(integer(trim(line.substr(9))).value_or(0)) * 1024;
  }
  // Physical memory = online memory blocks; MemTotal lacks what the kernel reserved.
  uint64_t blockBytes = 0;
  std::istringstream hex(readSysfsValue(sysfs, "/sys/devices/system/memory/block_size_bytes"));
  hex >> std::hex >> blockBytes;
  uint64_t onlineBlocks = 0;
  for (const std::string& entry : sysfs.list("/sys/devices/system/memory")) {
    if (entry.starts_with("memory") &&
        readSysfsValue(sysfs, "/sys/devices/system/memory/" + entry + "/online") == "1") {
      ++onlineBlocks;
    }
  }
  uint64_t physicalMb = blockBytes * onlineBlocks / (1ULL << 20);
  if (physicalMb == 0) physicalMb = totalBytes / (1ULL << 20);
  return {{"total", totalBytes}, {"physical_mb", physicalMb}};
}

json collectInterface(SysfsReader& sysfs, const std::string& name) {
  const std::string base = "/sys/class/net/" + name;
  json nic = {{"name", name},
              {"mac_address", readSysfsValue(sysfs, base + "/address")},
              {"ipv4_address", nullptr},
              {"ipv6_address", nullptr},
              {"has_carrier", readSysfsValue(sysfs, base + "/carrier") == "1"},
              {"vendor", readSysfsValue(sysfs, base + "/device/vendor")},
              {"product", readSysfsValue(sysfs, base + "/device/device")},
              {"client_id", nullptr},
              {"biosdevname", nullptr},
              {"lldp", nullptr}};
  // The kernel reports -1 (or fails the read) when the link is down.
  if (auto speed = integer(readSysfsValue(sysfs, base + "/speed")); speed && *speed > 0) {
    nic["speed_mbps"] = *speed;
  }
  return nic;
}

/// The physical NICs (lo and virtual interfaces without a device/ link left out).
std::vector<std::string> physicalNics(SysfsReader& sysfs) {
  std::vector<std::string> names;
  for (const std::string& name : sysfs.list("/sys/class/net")) {
    if (name != "lo" && sysfs.exists("/sys/class/net/" + name + "/device")) names.push_back(name);
  }
  return names;
}

json collectInterfaces(SysfsReader& sysfs) {
  json nics = json::array();
  for (const std::string& name : physicalNics(sysfs)) nics.push_back(collectInterface(sysfs, name));
  return nics;
}

json collectSystemVendor(SysfsReader& sysfs) {
  const std::string dmi = "/sys/class/dmi/id/";
  return {{"product_name", readSysfsValue(sysfs, dmi + "product_name")},
          {"serial_number", readSysfsValue(sysfs, dmi + "product_serial")},
          {"manufacturer", readSysfsValue(sysfs, dmi + "sys_vendor")},
          {"firmware",
           {{"vendor", readSysfsValue(sysfs, dmi + "bios_vendor")},
            {"version", readSysfsValue(sysfs, dmi + "bios_version")},
            {"build_date", readSysfsValue(sysfs, dmi + "bios_date")}}}};
}

}  // namespace

std::string hostArchitecture() {
  struct utsname name {};
  if (::uname(&name) != 0) return {};
  return name.machine;
}

nlohmann::json collectInventory(SysfsReader& sysfs, std::span<const BlockDevice> disks,
                                const std::string& architecture) {
  json diskList = json::array();
  for (const BlockDevice& disk : disks) diskList.push_back(disk.toJson());
  const bool uefi = bootedThroughUefi(sysfs);
  return {{"cpu", collectCpu(sysfs, architecture)},
          {"memory", collectMemory(sysfs)},
          {"interfaces", collectInterfaces(sysfs)},
          {"disks", std::move(diskList)},
          {"boot", {{"current_boot_mode", uefi ? "uefi" : "bios"}, {"pxe_interface", nullptr}}},
          {"system_vendor", collectSystemVendor(sysfs)},
          {"hostname", readSysfsValue(sysfs, "/proc/sys/kernel/hostname")}};
}

std::vector<std::string> nicMacAddresses(SysfsReader& sysfs) {
  std::vector<std::string> macs;
  for (const std::string& name : physicalNics(sysfs)) {
    const std::string mac = readSysfsValue(sysfs, "/sys/class/net/" + name + "/address");
    if (!mac.empty() && mac != "00:00:00:00:00:00") macs.push_back(mac);
  }
  return macs;
}

}  // namespace kiln::agent
