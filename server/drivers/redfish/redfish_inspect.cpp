#include "server/drivers/redfish/redfish_inspect.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/drivers/agent/agent_interfaces.h"
#include "server/drivers/boot_mode.h"
#include "server/drivers/redfish/redfish_common.h"
#include "server/model/node.h"
#include "shared/core/strings.h"
#include "shared/json/json_util.h"
#include "shared/net/mac.h"

namespace kiln::server {
namespace {

using nlohmann::json;

constexpr int64_t kGiB = int64_t{1} << 30;
/// Ironic counts only disks of at least 4 GiB for local_gb.
constexpr int64_t kSmallestRootDisk = 4 * kGiB;

/// Ironic's PROCESSOR_INSTRUCTION_SET_MAP (OEM maps to nothing).
constexpr std::pair<std::string_view, std::string_view> kInstructionSets[] = {
    {"x86", "i686"},        {"x86-64", "x86_64"}, {"IA-64", "ia64"},    {"ARM-A32", "arm"},
    {"ARM-A64", "aarch64"}, {"MIPS32", "mips"},   {"MIPS64", "mips64"},
};

/// Ironic's former CPU_ARCH_MAP, for processors that report no InstructionSet ("OEM" is left
/// out: it names no architecture).
constexpr std::pair<std::string_view, std::string_view> kProcessorArchitectures[] = {
    {"x86", "x86_64"},
    {"IA-64", "ia64"},
    {"ARM", "arm"},
    {"MIPS", "mips"},
};

/// Ironic's BOOT_MODE_MAP.
constexpr std::pair<std::string_view, std::string_view> kBootModes[] = {
    {"UEFI", kBootModeUefi},
    {"Legacy", kBootModeBios},
};

std::optional<std::string_view> lookUp(
    std::span<const std::pair<std::string_view, std::string_view>> map, std::string_view key) {
  for (const auto& [from, to] : map) {
    if (from == key) return to;
  }
  return std::nullopt;
}

/// object[key] when it is a number.
std::optional<double> numberAt(const json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

/// object[key] when it is a whole number (sizes, counts, speeds); fractions are truncated, as
/// sushy's int adapter does.
std::optional<int64_t> integerAt(const json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(key);
  if (it == object.end()) return std::nullopt;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number_float() && std::isfinite(it->get<double>())) {
    return static_cast<int64_t>(it->get<double>());
  }
  return std::nullopt;
}

json orNull(const std::optional<std::string>& v) { return v ? json(*v) : json(); }
json orNull(const std::optional<int64_t>& v) { return v ? json(*v) : json(); }

/// GETs each member of the collection `object` links under `key`; an empty list when there is
/// no such link.
Result<std::vector<json>> members(RedfishClient& client, const json& object, const char* key) {
  std::vector<json> out;
  const std::string path = redfishLinkAt(object, {key});
  if (path.empty()) return out;
  const json collection = KILN_TRY(client.get(path));
  for (const auto& member : redfishNonEmptyLinksAt(collection, {"Members"})) {
    out.push_back(KILN_TRY(client.get(member)));
  }
  return out;
}

/// A MAC address as Ironic accepts it (oslo's is_valid_mac: six hex pairs separated by ':' or
/// '-'), lower-cased with colons; nullopt when it is not one.
std::optional<std::string> normalizedMac(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  return net::parseMac(*text, net::MacSeparators::ColonOrDash);
}

/// The smallest size of at least 4 GiB, or 0 (Ironic picks the first of sushy's sorted sizes).
int64_t smallestRootDisk(const std::vector<int64_t>& sizes) {
  int64_t best = 0;
  for (int64_t size : sizes) {
    if (size >= kSmallestRootDisk && (best == 0 || size < best)) best = size;
  }
  return best;
}

struct Cpu {
  std::optional<int64_t> count;
  std::optional<std::string> architecture;
  std::optional<std::string> model;
  std::optional<int64_t> maxSpeedMhz;
};

Result<Cpu> readCpu(RedfishClient& client, const json& system) {
  Cpu cpu;
  std::vector<json> processors;
  for (auto& p : KILN_TRY(members(client, system, "Processors"))) {
    const auto type = redfishNonEmptyStringAt(p, "ProcessorType");
    if (!type || *type == "CPU") processors.push_back(std::move(p));
  }
  int64_t threads = 0;
  for (const auto& p : processors) {
    threads += std::max<int64_t>(0, integerAt(p, "TotalThreads").value_or(0));
  }
  const json summary = system.value("ProcessorSummary", json::object());
  if (threads > 0) {
    cpu.count = threads;
  } else if (auto logical = integerAt(summary, "LogicalProcessorCount"); logical && *logical > 0) {
    cpu.count = logical;
  } else if (auto count = integerAt(summary, "Count"); count && *count > 0) {
    cpu.count = count;
  } else if (!processors.empty()) {
    cpu.count = static_cast<int64_t>(processors.size());
  }
  cpu.model = redfishNonEmptyStringAt(summary, "Model");
  if (!processors.empty()) {
    const json& first = processors.front();
    if (auto model = redfishNonEmptyStringAt(first, "Model")) cpu.model = model;
    if (auto mhz = integerAt(first, "MaxSpeedMHz"); mhz && *mhz > 0) cpu.maxSpeedMhz = mhz;
    if (auto set = redfishNonEmptyStringAt(first, "InstructionSet")) {
      if (auto arch = lookUp(kInstructionSets, *set)) cpu.architecture = std::string(*arch);
    }
  }
  for (const auto& p : processors) {
    if (cpu.architecture) break;
    if (auto pa = redfishNonEmptyStringAt(p, "ProcessorArchitecture")) {
      if (auto arch = lookUp(kProcessorArchitectures, *pa)) cpu.architecture = std::string(*arch);
      break;  // sushy's summary takes the first architecture reported
    }
  }
  return cpu;
}

/// One disk in ironic-python-agent's shape (what Redfish does not say is null).
json diskEntry(const json& drive, const std::optional<int64_t>& size) {
  json rotational;
  if (const auto media = redfishNonEmptyStringAt(drive, "MediaType")) {
    if (*media == "HDD") rotational = true;
    if (*media == "SSD") rotational = false;
  }
  return json{{"name", orNull(redfishNonEmptyStringAt(drive, "Name"))},
              {"model", orNull(redfishNonEmptyStringAt(drive, "Model"))},
              {"size", orNull(size)},
              {"rotational", rotational},
              {"wwn", nullptr},
              {"serial", orNull(redfishNonEmptyStringAt(drive, "SerialNumber"))},
              {"vendor", orNull(redfishNonEmptyStringAt(drive, "Manufacturer"))},
              {"wwn_with_extension", nullptr},
              {"wwn_vendor_extension", nullptr},
              {"hctl", nullptr},
              {"by_path", nullptr}};
}

struct Disks {
  json list = json::array();
  int64_t localGb = 0;
};

/// The Storage and SimpleStorage disks, and local_gb from them (Ironic's _detect_local_gb).
Result<Disks> readDisks(RedfishClient& client, const json& system, const Logger& log) {
  Disks out;
  std::vector<int64_t> driveSizes, volumeSizes;
  bool volumesKnown = true;  // as sushy: one Storage without Volumes spoils the volume sizes
  const auto storages = KILN_TRY(members(client, system, "Storage"));
  for (const auto& storage : storages) {
    for (const auto& path : redfishNonEmptyLinksAt(storage, {"Drives"})) {
      const json drive = KILN_TRY(client.get(path));
      const auto size = integerAt(drive, "CapacityBytes");
      if (size) driveSizes.push_back(*size);
      out.list.push_back(diskEntry(drive, size));
    }
    if (!volumesKnown) continue;
    auto volumes = redfishLinkAt(storage, {"Volumes"}).empty()
                       ? Result<std::vector<json>>(fail(ErrorCode::NotFound, "no Volumes link"))
                       : members(client, storage, "Volumes");
    if (!volumes) {
      log.debug("no Redfish volume sizes for local_gb", {{"error", volumes.error().message}});
      volumesKnown = false;
      volumeSizes.clear();
      continue;
    }
    for (const auto& volume : *volumes) {
      if (auto size = integerAt(volume, "CapacityBytes")) volumeSizes.push_back(*size);
    }
  }
  // SimpleStorage: its disks only when there is no Storage; its enabled devices always count
  // for local_gb. Without Storage, failing to read it fails the inspection.
  std::vector<int64_t> simpleSizes;
  auto simple = members(client, system, "SimpleStorage");
  if (!simple) {
    if (storages.empty()) return std::unexpected(simple.error());
    log.debug("no Redfish SimpleStorage sizes for local_gb", {{"error", simple.error().message}});
  } else {
    for (const auto& controller : *simple) {
      const auto devices = controller.find("Devices");
      if (devices == controller.end() || !devices->is_array()) continue;
      for (const auto& device : *devices) {
        const auto size = integerAt(device, "CapacityBytes");
        const json status = device.is_object() ? device.value("Status", json::object()) : json();
        if (size &&
            redfishNonEmptyStringAt(status, "State") == std::optional<std::string>("Enabled")) {
          simpleSizes.push_back(*size);
        }
        if (storages.empty()) out.list.push_back(diskEntry(device, size));
      }
    }
  }
  const int64_t simpleSize = smallestRootDisk(simpleSizes);
  int64_t storageSize = smallestRootDisk(volumeSizes);
  if (storageSize == 0) storageSize = smallestRootDisk(driveSizes);
  const int64_t chosen = simpleSize && storageSize ? std::min(simpleSize, storageSize)
                                                   : std::max(simpleSize, storageSize);
  out.localGb = chosen >= kGiB ? chosen / kGiB - 1 : 0;  // Ironic keeps one GiB spare
  return out;
}

Result<json> readInterfaces(RedfishClient& client, const json& system, const Logger& log) {
  json out = json::array();
  for (const auto& nic : KILN_TRY(members(client, system, "EthernetInterfaces"))) {
    const std::string id = redfishNonEmptyStringAt(nic, "Id").value_or("");
    auto mac = normalizedMac(redfishNonEmptyStringAt(nic, "MACAddress"));
    if (!mac) mac = normalizedMac(redfishNonEmptyStringAt(nic, "PermanentMACAddress"));
    if (!mac || id.empty()) {
      log.warning(
          "Redfish NIC without a valid MAC address or Id left out of the inventory",
          {{"interface", id}, {"mac", redfishNonEmptyStringAt(nic, "MACAddress").value_or("")}});
      continue;
    }
    json carrier;
    if (const auto link = redfishNonEmptyStringAt(nic, "LinkStatus")) {
      if (*link == "LinkUp") carrier = true;
      if (*link == "LinkDown" || *link == "NoLink") carrier = false;
    }
    out.push_back({{"name", id},
                   {"mac_address", *mac},
                   {"ipv4_address", nullptr},
                   {"ipv6_address", nullptr},
                   {"has_carrier", carrier},
                   {"vendor", nullptr},
                   {"product", nullptr},
                   {"speed_mbps", orNull(integerAt(nic, "SpeedMbps"))},
                   {"client_id", nullptr},
                   {"lldp", nullptr}});
  }
  return out;
}

bool hasProperty(const json& properties, const char* key) {
  const auto it = properties.find(key);
  if (it == properties.end() || it->is_null()) return false;
  return !it->is_string() || !it->get_ref<const std::string&>().empty();
}

}  // namespace

RedfishInspect::RedfishInspect(HttpClientPtr http) : http_(std::move(http)) {}

std::optional<std::string> RedfishInspect::validate(const TaskContext& task) const {
  return validateRedfishDriverInfo(task);
}

Result<StepResult> RedfishInspect::inspectHardware(TaskContext& task) {
  RedfishTarget target = KILN_TRY(connectRedfish(http_, task));
  RedfishClient& client = *target.client;
  const json system = KILN_TRY(client.get(target.systemPath));
  if (!system.is_object()) {
    return fail(ErrorCode::Unavailable,
                "The Redfish system " + target.systemPath + " is not a JSON object");
  }

  const Cpu cpu = KILN_TRY(readCpu(client, system));
  std::optional<int64_t> memoryMb;
  if (auto gib = numberAt(system.value("MemorySummary", json::object()), "TotalSystemMemoryGiB");
      gib && *gib > 0 && std::isfinite(*gib)) {
    memoryMb = std::llround(*gib * 1024);
  }
  const Disks disks = KILN_TRY(readDisks(client, system, task.log));
  json interfaces = KILN_TRY(readInterfaces(client, system, task.log));
  std::optional<std::string> bootMode;
  if (auto mode =
          redfishNonEmptyStringAt(system.value("Boot", json::object()), "BootSourceOverrideMode")) {
    if (auto mapped = lookUp(kBootModes, *mode)) bootMode = std::string(*mapped);
  }

  // Ironic's ESSENTIAL_PROPERTIES (plus cpus, which Kiln's inspections set): from the BMC, or
  // already on the node.
  json properties = objectField(task.node, kNodeProperties);
  std::vector<std::string> missing;
  if (!memoryMb && !hasProperty(properties, "memory_mb")) {
    missing.push_back("memory_mb (no MemorySummary.TotalSystemMemoryGiB)");
  }
  if (!cpu.count && !hasProperty(properties, "cpus")) {
    missing.push_back("cpus (no Processors, ProcessorSummary.Count or LogicalProcessorCount)");
  }
  if (!cpu.architecture && !hasProperty(properties, "cpu_arch")) {
    missing.push_back("cpu_arch (no known InstructionSet or ProcessorArchitecture of a processor)");
  }
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    return fail(ErrorCode::NotFound, "Failed to discover the following properties: " + list +
                                         " in the Redfish system " + target.systemPath);
  }

  json inventory{{"cpu",
                  {{"model_name", orNull(cpu.model)},
                   {"frequency", cpu.maxSpeedMhz ? json(std::to_string(*cpu.maxSpeedMhz)) : json()},
                   {"count", orNull(cpu.count)},
                   {"architecture", orNull(cpu.architecture)},
                   {"flags", nullptr}}},
                 {"memory", {{"total", nullptr}, {"physical_mb", orNull(memoryMb)}}},
                 {"interfaces", std::move(interfaces)},
                 {"disks", disks.list},
                 {"root_disk", nullptr},
                 {"boot", {{"current_boot_mode", orNull(bootMode)}, {"pxe_interface", nullptr}}},
                 {"system_vendor",
                  {{"product_name", orNull(redfishNonEmptyStringAt(system, "Model"))},
                   {"serial_number", orNull(redfishNonEmptyStringAt(system, "SerialNumber"))},
                   {"manufacturer", orNull(redfishNonEmptyStringAt(system, "Manufacturer"))},
                   {"system_uuid", orNull(redfishNonEmptyStringAt(system, "UUID"))},
                   {"firmware",
                    {{"vendor", nullptr},
                     {"version", orNull(redfishNonEmptyStringAt(system, "BiosVersion"))},
                     {"build_date", nullptr}}}}},
                 {"bmc_address", nullptr},
                 {"hostname", nullptr}};

  // As the agent's inspection, except that Ironic's RedfishInspect keeps a boot_mode
  // capability the node already has.
  const auto existingMode = nodeCapability(properties, "boot_mode");
  const bool keepCapabilities = existingMode && !existingMode->empty();
  const json capabilities = properties.value("capabilities", json());
  applyInventory(properties, inventory);
  if (keepCapabilities) properties["capabilities"] = capabilities;
  properties["local_gb"] = disks.localGb;
  task.node.setText(kNodeProperties, dumpJson(properties));
  task.log.info("Redfish inspection",
                {{"node", task.uuid()},
                 {"cpus", cpu.count ? std::to_string(*cpu.count) : ""},
                 {"cpu_arch", cpu.architecture.value_or("")},
                 {"memory_mb", memoryMb ? std::to_string(*memoryMb) : ""},
                 {"local_gb", std::to_string(disks.localGb)},
                 {"interfaces", std::to_string(inventory["interfaces"].size())}});
  task.inventory = std::move(inventory);
  return StepResult::Done;
}

}  // namespace kiln::server
