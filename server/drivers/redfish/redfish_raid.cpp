#include "server/drivers/redfish/redfish_raid.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <deque>
#include <tuple>

#include "server/drivers/redfish/redfish_common.h"
#include "server/drivers/redfish/redfish_task.h"
#include "server/model/node.h"
#include "server/model/provision_state.h"
#include "shared/core/strings.h"
#include "shared/json/json_util.h"
#include "shared/raid/raid_config.h"

namespace kiln::server {
namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr int64_t kGi = 1024LL * 1024 * 1024;
/// Ironic's stripe_size_kb: space is counted in 64 MiB stripes.
constexpr int64_t kStripeKb = 64 * 1024;

// ---- RAID levels (Ironic's RAID_LEVELS) -------------------------------------------------------

struct LevelInfo {
  std::string_view level;     ///< Ironic's raid_level
  std::string_view raidType;  ///< Redfish's RAIDType
  bool spanned = false;       ///< 1+0, 5+0, 6+0: spans of spanLevel
  int minDisks = 0;
  int maxDisks = 0;
  int overhead = 0;  ///< parity or mirror drives
  std::string_view spanLevel;
};

constexpr LevelInfo kLevels[] = {
    {"0", "RAID0", false, 1, 1000, 0, ""}, {"1", "RAID1", false, 2, 2, 1, ""},
    {"5", "RAID5", false, 3, 1000, 1, ""}, {"6", "RAID6", false, 4, 1000, 2, ""},
    {"1+0", "RAID10", true, 0, 0, 0, "1"}, {"5+0", "RAID50", true, 0, 0, 0, "5"},
    {"6+0", "RAID60", true, 0, 0, 0, "6"},
};

const LevelInfo* levelInfo(std::string_view level) {
  for (const auto& l : kLevels) {
    if (l.level == level) return &l;
  }
  return nullptr;
}

/// Ironic's RedfishError: "Redfish exception occurred. Error: <reason>".
std::unexpected<Error> redfishError(const std::string& reason,
                                    ErrorCode code = ErrorCode::InvalidArgument) {
  return fail(code, "Redfish exception occurred. Error: " + reason);
}

std::string levelNotSupported(std::string_view level) {
  std::string list;
  for (const auto& l : kLevels) list += (list.empty() ? "" : ", ") + std::string(l.level);
  return "RAID level " + std::string(level) +
         " is not supported by the driver. Supported RAID levels: " + list;
}

/// The figures of one span of `level` (the level itself when it is not spanned).
Result<const LevelInfo*> spanFigures(std::string_view level, int spans) {
  const LevelInfo* info = levelInfo(level);
  if (!info) return redfishError(levelNotSupported(level));
  if (info->spanned) {
    if (spans <= 1) return redfishError("Spanned RAID volumes cannot contain a single span");
    info = levelInfo(info->spanLevel);
  }
  return info;
}

Result<int> overheadDisks(std::string_view level, int spans) {
  return KILN_TRY(spanFigures(level, spans))->overhead * spans;
}

Result<int> minDisks(std::string_view level, int spans) {
  return KILN_TRY(spanFigures(level, spans))->minDisks * spans;
}

Result<int> maxDisks(std::string_view level, int spans) {
  return KILN_TRY(spanFigures(level, spans))->maxDisks * spans;
}

/// Ironic's _calculate_spans.
Result<int> spansFor(std::string_view level, int disks) {
  if (level == "0" || level == "1" || level == "5" || level == "6") return 1;
  if (level == "5+0" || level == "6+0") return 2;
  if (level == "1+0") return disks >> 1;
  return redfishError("Cannot calculate spans for RAID level \"" + std::string(level) + "\"");
}

/// Ironic's _usable_disks_count: spanned levels use an even number of drives.
int usableDisks(std::string_view level, int disks) {
  const LevelInfo* info = levelInfo(level);
  return info && info->spanned ? (disks >> 1) << 1 : disks;
}

// ---- what the BMC has -------------------------------------------------------------------------

struct Drive {
  std::string id;    ///< Id (Ironic's identity)
  std::string name;  ///< Name
  std::string path;  ///< @odata.id
  int64_t capacity = 0;
  std::string mediaType;  ///< "HDD", "SSD", ...
  std::string protocol;   ///< "SAS", "SATA", "NVMe", ...
  size_t storage = 0;     ///< index into Inventory::storages
};

struct Storage {
  std::string id;
  std::string path;
  std::string volumesPath;               ///< "" when the Storage links no Volumes collection
  std::optional<std::string> applyTime;  ///< @Redfish.OperationApplyTime to send
  std::vector<std::string> volumePaths;  ///< the collection's members
  bool raid = true;                      ///< its first controller supports RAID
};

struct Inventory {
  std::vector<Storage> storages;
  std::vector<Drive> drives;  ///< of RAID-capable storage only
};

/// "<text>." unless the text ends with a full stop already (Ironic's "... Reason: %s.").
std::string sentence(std::string text) {
  if (text.empty() || text.back() != '.') text += '.';
  return text;
}

/// What the BMC allows on a resource, from the Allow header of its GET; nullopt when not said.
std::optional<std::vector<std::string>> allowedMethods(const HttpResponse& response) {
  const auto allow = response.header("allow");
  if (!allow) return std::nullopt;
  std::vector<std::string> out;
  for (const std::string& method : splitTrimmed(*allow, ',', " \t")) {
    out.push_back(asciiUpper(method));
  }
  return out;
}

/// sushy's get_first_controller: StorageControllers[0], else the first member of the
/// Controllers collection; null when there is none.
Result<json> firstController(RedfishClient& client, const json& storage) {
  if (auto it = storage.find("StorageControllers");
      it != storage.end() && it->is_array() && !it->empty() && (*it)[0].is_object()) {
    return (*it)[0];
  }
  const std::string controllers = redfishLinkAt(storage, {"Controllers"});
  if (controllers.empty()) return json();
  const json collection = KILN_TRY(client.get(controllers));
  const auto members = redfishLinksAt(collection, {"Members"});
  if (members.empty()) return json();
  return client.get(members.front());
}

/// The apply time Ironic chooses from a Volumes collection: Immediate, else OnReset, else none.
std::optional<std::string> applyTimeOf(const json& collection) {
  const auto support = collection.find("@Redfish.OperationApplyTimeSupport");
  if (support == collection.end() || !support->is_object()) return std::nullopt;
  const auto values = support->find("SupportedValues");
  if (values == support->end() || !values->is_array()) return std::nullopt;
  for (const char* wanted : {"Immediate", "OnReset"}) {
    for (const auto& v : *values) {
      if (v.is_string() && v.get<std::string>() == wanted) return std::string(wanted);
    }
  }
  return std::nullopt;
}

/// Reads the System's Storage: every controller with its Volumes collection, and the drives of
/// the controllers that do RAID. Errors say `context` first ("Cannot get ... Reason: ...").
Result<Inventory> readInventory(RedfishTarget& bmc, const std::string& context) {
  auto reason = [&](const Error& e) { return fail(e.code, sentence(context + e.message)); };
  RedfishClient& client = *bmc.client;
  auto system = client.get(bmc.systemPath);
  if (!system) return reason(system.error());
  const std::string storagePath = redfishLinkAt(*system, {"Storage"});
  if (storagePath.empty()) {
    return fail(ErrorCode::Unimplemented, context +
                                              "The attribute Storage is missing from the "
                                              "resource " +
                                              bmc.systemPath + ".");
  }
  auto collection = client.get(storagePath);
  if (!collection) return reason(collection.error());
  Inventory inv;
  for (const auto& path : redfishLinksAt(*collection, {"Members"})) {
    auto storage = client.get(path);
    if (!storage) return reason(storage.error());
    Storage st;
    st.path = path;
    st.id = redfishStringAt(*storage, "Id").value_or(path);
    auto controller = firstController(client, *storage);
    if (!controller) return reason(controller.error());
    if (auto raidTypes = controller->find("SupportedRAIDTypes");
        controller->is_object() && raidTypes != controller->end() && raidTypes->is_array() &&
        raidTypes->empty()) {
      st.raid = false;
    }
    st.volumesPath = redfishLinkAt(*storage, {"Volumes"});
    if (!st.volumesPath.empty()) {
      auto volumes = client.get(st.volumesPath);
      if (!volumes) return reason(volumes.error());
      st.applyTime = applyTimeOf(*volumes);
      st.volumePaths = redfishLinksAt(*volumes, {"Members"});
    }
    const size_t index = inv.storages.size();
    inv.storages.push_back(st);
    if (!st.raid) continue;
    for (const auto& drivePath : redfishLinksAt(*storage, {"Drives"})) {
      auto d = client.get(drivePath);
      if (!d) return reason(d.error());
      Drive drive;
      drive.path = drivePath;
      drive.id = redfishStringAt(*d, "Id").value_or(drivePath);
      drive.name = redfishStringAt(*d, "Name").value_or("");
      if (auto it = d->find("CapacityBytes"); it != d->end() && it->is_number_integer()) {
        drive.capacity = std::max<int64_t>(0, it->get<int64_t>());
      }
      drive.mediaType = redfishStringAt(*d, "MediaType").value_or("");
      drive.protocol = redfishStringAt(*d, "Protocol").value_or("");
      drive.storage = index;
      inv.drives.push_back(std::move(drive));
    }
  }
  return inv;
}

/// One existing volume.
struct VolumeInfo {
  std::string path;
  std::string id;
  json name;             ///< Name, or null
  std::string raidType;  ///< "" when the BMC reports none
  int64_t capacity = 0;
  bool deletable = true;
  size_t storage = 0;
};

Result<std::vector<VolumeInfo>> readVolumes(RedfishClient& client, const Inventory& inv,
                                            const std::string& context) {
  std::vector<VolumeInfo> out;
  for (size_t s = 0; s < inv.storages.size(); ++s) {
    for (const auto& path : inv.storages[s].volumePaths) {
      auto response = client.exchange("GET", path);
      if (!response)
        return fail(response.error().code, sentence(context + response.error().message));
      if (response->status < 200 || response->status >= 300) {
        const Error e = client.errorFor("GET", path, *response);
        return fail(e.code, sentence(context + e.message));
      }
      const json body = parseJson(response->body).value_or(json());
      VolumeInfo v;
      v.path = path;
      v.storage = s;
      v.id = redfishStringAt(body, "Id").value_or(path);
      v.name = redfishStringAt(body, "Name") ? json(*redfishStringAt(body, "Name")) : json();
      v.raidType = redfishStringAt(body, "RAIDType").value_or("");
      if (auto it = body.find("CapacityBytes"); it != body.end() && it->is_number_integer()) {
        v.capacity = std::max<int64_t>(0, it->get<int64_t>());
      }
      if (auto allowed = allowedMethods(*response)) {
        v.deletable = std::find(allowed->begin(), allowed->end(), "DELETE") != allowed->end();
      }
      out.push_back(std::move(v));
    }
  }
  return out;
}

// ---- the plan (Ironic's _find_configuration) ------------------------------------------------

/// One logical disk of the target configuration and, once planned, its drives.
struct Volume {
  size_t index = 0;  ///< in target_raid_config.logical_disks
  std::string level;
  std::optional<int64_t> sizeBytes;  ///< nullopt = MAX
  bool root = false;
  bool share = false;
  std::optional<std::string> name;
  std::optional<std::string> controller;
  std::optional<std::string> diskType;       ///< "hdd" or "ssd"
  std::optional<std::string> interfaceType;  ///< "sas" or "sata"
  std::optional<int> count;                  ///< number_of_physical_disks
  std::vector<size_t> predefined;            ///< physical_disks, as drive indexes
  bool hasPredefined = false;
  // The plan.
  std::vector<size_t> drives;
  size_t storage = 0;
};

/// The logical disks of a validated target configuration, with physical_disks and controller
/// resolved against the inventory.
Result<std::vector<Volume>> wantedVolumes(const TaskContext& task, const json& target,
                                          const Inventory& inv) {
  const RaidConfig parsed = KILN_TRY(parseRaidConfig(target));
  std::vector<Volume> out;
  const json& disks = target["logical_disks"];
  for (size_t i = 0; i < disks.size(); ++i) {
    const json& d = disks[i];
    const LogicalDisk& ld = parsed.logicalDisks[i];
    Volume v;
    v.index = i;
    v.level = ld.raidLevel;
    if (ld.sizeGb) v.sizeBytes = *ld.sizeGb * kGi;
    v.root = ld.isRootVolume;
    v.share = d.value("share_physical_disks", false);
    v.name = ld.volumeName;
    v.controller = redfishStringAt(d, "controller");
    if (auto t = redfishStringAt(d, "disk_type")) v.diskType = asciiLower(*t);
    if (auto t = redfishStringAt(d, "interface_type")) v.interfaceType = asciiLower(*t);
    v.count = ld.numberOfPhysicalDisks;
    if (v.controller) {
      const bool known = std::any_of(inv.storages.begin(), inv.storages.end(), [&](const auto& s) {
        return s.raid && (s.id == *v.controller || s.path == *v.controller);
      });
      if (!known) {
        std::string list;
        for (const auto& s : inv.storages) {
          if (s.raid) list += (list.empty() ? "" : ", ") + s.id;
        }
        return redfishError("RAID controller " + *v.controller + " of logical disk " +
                            std::to_string(i) + " was not found on node " + task.uuid() +
                            " (RAID controllers: " + (list.empty() ? "none" : list) + ")");
      }
    }
    v.hasPredefined = !ld.physicalDisks.empty();
    for (const auto& p : ld.physicalDisks) {
      const auto it = std::find_if(inv.drives.begin(), inv.drives.end(), [&](const Drive& drive) {
        return drive.id == p.text || (!drive.name.empty() && drive.name == p.text) ||
               drive.path == p.text;
      });
      if (it == inv.drives.end()) {
        return redfishError("physical disk " + p.text + " of logical disk " + std::to_string(i) +
                            " was not found among the drives of the RAID controllers of node " +
                            task.uuid());
      }
      const size_t index = static_cast<size_t>(it - inv.drives.begin());
      if (std::find(v.predefined.begin(), v.predefined.end(), index) == v.predefined.end()) {
        v.predefined.push_back(index);
      }
    }
    // Ironic takes the named drives in the BMC's order.
    std::sort(v.predefined.begin(), v.predefined.end());
    out.push_back(std::move(v));
  }
  return out;
}

using FreeSpace = std::vector<int64_t>;  ///< per drive

/// Ironic's _max_volume_size_bytes.
Result<int64_t> maxVolumeBytes(std::string_view level, const std::vector<size_t>& drives,
                               const FreeSpace& free, int spans) {
  int64_t minFree = free[drives.front()];
  for (size_t d : drives) minFree = std::min(minFree, free[d]);
  const int64_t stripesPerDisk = (minFree / 1024) / kStripeKb;
  const int count = static_cast<int>(drives.size());
  const int overhead = KILN_TRY(overheadDisks(level, spans));
  if (count <= overhead) {
    return redfishError("The number of physical drives (" + std::to_string(count) +
                        ") is too few for the required number of overhead drives (" +
                        std::to_string(overhead) + ")");
  }
  return stripesPerDisk * kStripeKb * (count - overhead) * 1024;
}

/// Ironic's _volume_usage_per_disk_bytes.
int64_t usagePerDisk(int64_t sizeBytes, int count, int overhead) {
  const int64_t volumeKb = sizeBytes / 1024;
  const int64_t stripesPerVolume = (volumeKb + kStripeKb - 1) / kStripeKb;
  const int64_t dataDisks = count - overhead;
  const int64_t stripesPerDisk = (stripesPerVolume + dataDisks - 1) / dataDisks;
  return stripesPerDisk * kStripeKb * 1024;
}

/// Ironic's _calculate_volume_props: checks that `drives` can hold `v` and takes its space
/// from `free`; records the drives and the controller in the plan.
Result<void> placeVolume(Volume& v, const std::vector<size_t>& drives, FreeSpace& free,
                         const Inventory& inv) {
  const int count = static_cast<int>(drives.size());
  const int spans = KILN_TRY(spansFor(v.level, count));
  if (spans == 0 || count % spans != 0) {
    return redfishError("For RAID level " + v.level + ", the number of physical disks provided (" +
                        std::to_string(count) + ") must be a multiple of the spans count (" +
                        std::to_string(spans) + ")");
  }
  if (drives.empty()) {
    return redfishError("The number of physical drives (0) is too few for RAID level " + v.level);
  }
  const int64_t maxBytes = KILN_TRY(maxVolumeBytes(v.level, drives, free, spans));
  int64_t size = 0;
  if (!v.sizeBytes) {
    if (maxBytes == 0) {
      return redfishError("size set to 'MAX' but could not allocate physical disk space");
    }
    size = maxBytes;
  } else if (maxBytes < *v.sizeBytes) {
    return redfishError("The physical disk space (" + std::to_string(maxBytes) +
                        " bytes) is not enough for the size of the logical disk (" +
                        std::to_string(*v.sizeBytes) + " bytes)");
  } else {
    size = *v.sizeBytes;
  }
  const int64_t usage = usagePerDisk(size, count, KILN_TRY(overheadDisks(v.level, spans)));
  for (size_t d : drives) {
    if (free[d] < usage) {
      return redfishError("The free space of a disk (" + std::to_string(free[d]) +
                          " bytes) is not enough for the per-disk size of the logical disk (" +
                          std::to_string(usage) + " bytes)");
    }
    free[d] -= usage;
  }
  v.drives = drives;
  v.storage = inv.drives[drives.front()].storage;
  return {};
}

/// Drives of one kind: (MediaType, Protocol, CapacityBytes), in the BMC's order.
struct DriveGroup {
  std::tuple<std::string, std::string, int64_t> kind;
  std::vector<size_t> drives;
};

bool protocolMatches(const std::string& protocol, const std::string& interfaceType) {
  // Ironic's PROTOCOL_MAP knows SAS and SATA only.
  const std::string p = asciiLower(protocol);
  return (p == "sas" || p == "sata") && p == interfaceType;
}

/// Ironic's _assign_disks_to_volume: drives for todo[pos..], each trying every drive kind and
/// every drive count the level allows, backtracking when a later volume does not fit. The
/// free space after a complete assignment, or nullopt.
std::optional<FreeSpace> assignDrives(std::vector<Volume*>& todo, size_t pos,
                                      const std::vector<DriveGroup>& groups, const FreeSpace& free,
                                      const Inventory& inv) {
  if (pos == todo.size()) return free;
  Volume& v = *todo[pos];
  for (const auto& group : groups) {
    const auto& [mediaType, protocol, capacity] = group.kind;
    if (v.diskType && *v.diskType != asciiLower(mediaType)) continue;
    if (v.interfaceType && !protocolMatches(protocol, *v.interfaceType)) continue;
    std::vector<size_t> disks;
    for (size_t d : group.drives) {
      if (free[d] <= 0) continue;
      if (!v.share && inv.drives[d].capacity != free[d]) continue;  // in use
      if (v.controller) {
        const Storage& s = inv.storages[inv.drives[d].storage];
        if (s.id != *v.controller && s.path != *v.controller) continue;
      }
      disks.push_back(d);
    }
    std::stable_sort(disks.begin(), disks.end(),
                     [&](size_t a, size_t b) { return free[a] < free[b]; });
    const int available = static_cast<int>(disks.size());
    auto maxSpans = spansFor(v.level, available);
    if (!maxSpans) continue;
    const int minSpans = std::min(2, *maxSpans);
    auto low = minDisks(v.level, minSpans);
    auto high = maxDisks(v.level, *maxSpans);
    if (!low || !high) continue;  // e.g. 1+0 over fewer than 4 drives of this kind
    for (int count = *low; count <= std::min(*high, available); ++count) {
      if (v.count && *v.count != count) continue;
      if (count != usableDisks(v.level, count)) continue;
      const std::vector<size_t> selected(disks.begin(), disks.begin() + count);
      FreeSpace candidate = free;
      const Volume before = v;
      if (!placeVolume(v, selected, candidate, inv)) continue;
      if (auto rest = assignDrives(todo, pos + 1, groups, candidate, inv)) return rest;
      v = before;
    }
  }
  return std::nullopt;
}

/// Ironic's _find_configuration: plans every volume (the root/non-root filter comes after, so
/// that a volume created later still finds its space).
Result<void> plan(std::vector<Volume>& volumes, const Inventory& inv) {
  FreeSpace free(inv.drives.size());
  for (size_t d = 0; d < inv.drives.size(); ++d) free[d] = inv.drives[d].capacity;
  // Drives named by a "MAX" volume that shares them are used by the others only as a last
  // resort; drives named by a volume that does not share them are not chosen for others.
  std::vector<bool> reserved(inv.drives.size()), excluded(inv.drives.size());
  for (const auto& v : volumes) {
    for (size_t d : v.predefined) {
      if (!v.sizeBytes && v.share) reserved[d] = true;
      if (!v.share) excluded[d] = true;
    }
  }
  std::vector<DriveGroup> groups, reservedGroups;
  auto addTo = [&](std::vector<DriveGroup>& list, size_t d, bool keep) {
    const auto kind =
        std::make_tuple(inv.drives[d].mediaType, inv.drives[d].protocol, inv.drives[d].capacity);
    auto it = std::find_if(list.begin(), list.end(), [&](const auto& g) { return g.kind == kind; });
    if (it == list.end()) {
      list.push_back({kind, {}});
      it = list.end() - 1;
    }
    if (keep) it->drives.push_back(d);
  };
  for (size_t d = 0; d < inv.drives.size(); ++d) {
    addTo(groups, d, !reserved[d] && !excluded[d]);
    addTo(reservedGroups, d, reserved[d] && !excluded[d]);
  }
  // 1: named drives, fixed size.
  for (auto& v : volumes) {
    if (v.hasPredefined && v.sizeBytes) KILN_TRY_VOID(placeVolume(v, v.predefined, free, inv));
  }
  // 2: drives to choose.
  std::vector<Volume*> todo;
  for (auto& v : volumes) {
    if (!v.hasPredefined) todo.push_back(&v);
  }
  if (!todo.empty()) {
    auto after = assignDrives(todo, 0, groups, free, inv);
    if (!after) {
      for (size_t g = 0; g < groups.size(); ++g) {
        auto& drives = groups[g].drives;
        drives.insert(drives.end(), reservedGroups[g].drives.begin(),
                      reservedGroups[g].drives.end());
      }
      after = assignDrives(todo, 0, groups, free, inv);
    }
    if (!after) return redfishError("failed to find matching physical disks for all logical disks");
    free = std::move(*after);
  }
  // 3: named drives, "MAX".
  for (auto& v : volumes) {
    if (v.hasPredefined && !v.sizeBytes) KILN_TRY_VOID(placeVolume(v, v.predefined, free, inv));
  }
  return {};
}

// ---- requests and tasks -----------------------------------------------------------------------

/// One request of a RAID change.
struct Operation {
  size_t storage = 0;
  std::string method;  ///< "POST" or "DELETE"
  std::string path;
  json body;  ///< null: none
  bool onReset = false;
  std::string target;  ///< the volume, for messages (its path, or the collection for a POST)
};

Result<void> rebootToApply(TaskContext& task, std::string_view operation) {
  if (!task.driver || !task.driver->power) {
    return internalError("node " + task.uuid() + " has no power interface to reboot it");
  }
  task.log.info("rebooting to apply the RAID configuration",
                {{"node", task.uuid()}, {"operation", std::string(operation)}});
  const int timeout = task.config ? task.config->powerStateChangeTimeout : 60;
  KILN_TRY_VOID(task.driver->power->reboot(task, false, seconds(timeout)));
  task.node.setText(kNodePowerState, std::string(state::kPowerOn));
  return {};
}

/// Sends `ops` as Ironic does: per controller in order, until a request answers with a task;
/// then (rebooting first when a request asked for OnReset) waits for the tasks, and goes on
/// with what is left.
Result<void> runOperations(TaskContext& task, RedfishClient& client,
                           const RedfishRaidTiming& timing, std::string_view operation,
                           const std::vector<Operation>& ops) {
  std::vector<std::deque<Operation>> queues;
  std::vector<size_t> storages;
  for (const auto& op : ops) {
    auto it = std::find(storages.begin(), storages.end(), op.storage);
    if (it == storages.end()) {
      storages.push_back(op.storage);
      queues.emplace_back();
      it = storages.end() - 1;
    }
    queues[static_cast<size_t>(it - storages.begin())].push_back(op);
  }
  const Clock& clock = redfishClock(task);
  const auto start = clock.monotonic();
  auto deadline = [&]() -> Result<void> {
    const auto elapsed = std::chrono::duration_cast<seconds>(clock.monotonic() - start);
    if (timing.timeout.count() > 0 && elapsed >= timing.timeout) {
      return redfishError("RAID " + std::string(operation) + " on node " + task.uuid() +
                              " did not finish within " + std::to_string(timing.timeout.count()) +
                              " seconds",
                          ErrorCode::DeadlineExceeded);
    }
    return {};
  };
  for (;;) {
    std::vector<RedfishTaskRef> tasks;
    bool reset = false;
    for (auto& queue : queues) {
      while (!queue.empty()) {
        const Operation op = queue.front();
        queue.pop_front();
        task.log.info("RAID request", {{"node", task.uuid()},
                                       {"method", op.method},
                                       {"path", op.path},
                                       {"body", op.body.is_null() ? "" : op.body.dump()}});
        auto response = client.exchange(op.method, op.path, op.body.is_null() ? nullptr : &op.body);
        Error failure;
        if (!response) {
          failure = response.error();
        } else if (response->status < 200 || response->status >= 300) {
          failure = client.errorFor(op.method, op.path, *response);
        } else {
          if (response->status != 202) continue;
          const RedfishTaskRef ref = redfishTaskOf(*response);
          if (ref.monitor.empty()) {
            task.log.info("the BMC reported no task for the RAID request; taken as done",
                          {{"node", task.uuid()}, {"path", op.path}});
            continue;
          }
          tasks.push_back(ref);
          reset = reset || op.onReset;
          break;  // one task per controller at a time, as Ironic
        }
        if (op.method == "POST") {
          return fail(failure.code, "Redfish driver failed to create virtual disk for node " +
                                        task.uuid() + ". Reason: " + sentence(failure.message));
        }
        return fail(failure.code, "Redfish driver failed to delete virtual disk " + op.target +
                                      " for node " + task.uuid() +
                                      ". Reason: " + sentence(failure.message));
      }
    }
    if (tasks.empty()) return {};
    if (reset) KILN_TRY_VOID(rebootToApply(task, operation));
    for (const auto& ref : tasks) {
      RedfishTaskWatch how;
      how.clock = &clock;
      how.interval = timing.statusInterval;
      how.what = operation == "create" ? "RAID create" : "RAID delete";
      how.node = task.uuid();
      how.beforePoll = deadline;
      const RedfishTaskPoll poll = KILN_TRY(watchRedfishTask(client, ref, how, task.log));
      if (!redfishTaskSucceeded(poll)) {
        std::string messages;
        for (const auto& m : poll.messages) messages += (messages.empty() ? "" : ", ") + m;
        if (messages.empty()) messages = poll.state + " " + poll.status;
        return redfishError("RAID " + std::string(operation) + " task " + ref.monitor +
                                " to node " + task.uuid() + " failed; messages: " + messages,
                            ErrorCode::Internal);
      }
    }
  }
}

/// Ironic's str(timeutils.utcnow()): "2024-05-01 10:00:00.123456".
std::string pythonUtcNow(const Clock& clock) {
  const auto now = clock.now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S", &tm);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
      1000000;
  char out[48];
  std::snprintf(out, sizeof out, "%s.%06lld", date, static_cast<long long>(micros));
  return out;
}

/// Ironic's update_raid_config: node.raid_config from the volumes the BMC reports now.
Result<void> recordRaidConfig(TaskContext& task, RedfishTarget& bmc) {
  const std::string context =
      "Cannot get the RAID configuration of node " + task.uuid() + ". Reason: ";
  const Inventory inv = KILN_TRY(readInventory(bmc, context));
  const auto volumes = KILN_TRY(readVolumes(*bmc.client, inv, context));
  json disks = json::array();
  std::string withoutType;
  for (const auto& v : volumes) {
    if (v.raidType.empty()) {
      withoutType += (withoutType.empty() ? "" : ", ") + v.id;
      continue;
    }
    const auto level = std::find_if(std::begin(kLevels), std::end(kLevels),
                                    [&](const LevelInfo& l) { return l.raidType == v.raidType; });
    if (level == std::end(kLevels)) {
      task.log.warning("volume with a RAID type Ironic does not know left out of raid_config",
                       {{"node", task.uuid()}, {"volume", v.id}, {"raid_type", v.raidType}});
      continue;
    }
    disks.push_back({{"id", v.id},
                     {"name", v.name},
                     {"controller", inv.storages[v.storage].id},
                     {"size_gb", v.capacity / kGi},
                     {"raid_level", std::string(level->level)}});
  }
  if (!withoutType.empty()) {
    task.log.warning("Unable to update raid_config for volumes missing RAID type",
                     {{"node", task.uuid()}, {"volumes", withoutType}});
  }
  task.node.setText(
      kNodeRaidConfig,
      dumpJson(json{{"logical_disks", disks}, {"last_updated", pythonUtcNow(redfishClock(task))}}));
  return {};
}

Result<bool> boolArg(const json& args, const char* key, bool fallback, std::string_view step) {
  if (!args.is_object() || !args.contains(key) || args[key].is_null()) return fallback;
  const json& v = args[key];
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_string()) {
    const std::string s = asciiLower(v.get<std::string>());
    if (s == "true" || s == "1" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "0" || s == "no" || s == "off") return false;
  }
  return invalid("raid." + std::string(step) + ": " + key + " must be a Boolean, got " + v.dump());
}

}  // namespace

Result<void> validateRedfishRaidConfig(const json& config) {
  KILN_TRY(parseRaidConfig(config));
  for (const auto& d : config["logical_disks"]) {
    if (d.value("interface_type", "") == "scsi") {
      return invalid("interface type `scsi` not supported by Redfish RAID");
    }
    const std::string level = d["raid_level"].get<std::string>();
    if (!levelInfo(level)) return invalid(levelNotSupported(level));
    if (auto it = d.find("physical_disks"); it != d.end()) {
      for (const auto& p : *it) {
        if (!p.is_string()) {
          return invalid(
              "The physical_disks of the redfish RAID interface are names of the BMC's "
              "drives (their Id); " +
              p.dump() + " is a device hint, which only software RAID takes");
        }
      }
    }
  }
  return {};
}

RedfishRaid::RedfishRaid(HttpClientPtr http, RedfishRaidTiming timing)
    : http_(std::move(http)), timing_(timing) {
  const std::vector<ArgInfo> createArgs = {
      {"create_root_volume",
       "This specifies whether to create the root volume. Defaults to `True`.", false},
      {"create_nonroot_volumes",
       "This specifies whether to create the non-root volumes. Defaults to `True`.", false},
      {"delete_existing",
       "Setting this to `True` indicates to delete existing RAID configuration prior to creating "
       "the new configuration. Default value is `False`.",
       false},
  };
  steps_.push_back({.interface = "raid",
                    .name = "create_configuration",
                    .cleanPriority = 0,
                    .argsinfo = createArgs,
                    .handler = [this](TaskContext& task, const json& args) -> Result<StepResult> {
                      constexpr std::string_view kStep = "create_configuration";
                      const bool root = KILN_TRY(boolArg(args, "create_root_volume", true, kStep));
                      const bool nonroot =
                          KILN_TRY(boolArg(args, "create_nonroot_volumes", true, kStep));
                      const bool existing =
                          KILN_TRY(boolArg(args, "delete_existing", false, kStep));
                      return createConfiguration(task, root, nonroot, existing);
                    }});
  steps_.push_back(
      {.interface = "raid",
       .name = "delete_configuration",
       .cleanPriority = 0,
       .deployPriority = 0,
       .argsinfo = {},
       .handler = [this](TaskContext& task, const json&) { return deleteConfiguration(task); }});
  // Ironic's redfish RAID create and delete are also service steps (1.87).
  for (auto& step : steps_) step.service = true;
  steps_.push_back(
      {.interface = "raid",
       .name = "apply_configuration",
       .deployPriority = 0,
       .argsinfo = {{"raid_config", "The RAID configuration to apply.", true},
                    {"create_root_volume",
                     "Setting this to 'False' indicates not to create root volume that is "
                     "specified in 'raid_config'. Default value is 'True'.",
                     false},
                    {"create_nonroot_volumes",
                     "Setting this to 'False' indicates not to create non-root volumes (all "
                     "except the root volume) in 'raid_config'. Default value is 'True'.",
                     false},
                    {"delete_existing",
                     "Setting this to 'True' indicates to delete existing RAID configuration "
                     "prior to creating the new configuration. Default value is 'True'.",
                     false}},
       .handler = [this](TaskContext& task, const json& args) -> Result<StepResult> {
         const json config =
             args.is_object() && args.contains("raid_config") ? args["raid_config"] : json();
         // Ironic's RedfishRAID.apply_configuration defaults.
         constexpr std::string_view kStep = "apply_configuration";
         const bool root = KILN_TRY(boolArg(args, "create_root_volume", true, kStep));
         const bool nonroot = KILN_TRY(boolArg(args, "create_nonroot_volumes", false, kStep));
         const bool existing = KILN_TRY(boolArg(args, "delete_existing", false, kStep));
         KILN_TRY_VOID(validateRedfishRaidConfig(config));
         task.node.setText(kNodeTargetRaidConfig, dumpJson(config));
         return createConfiguration(task, root, nonroot, existing);
       }});
}

std::optional<std::string> RedfishRaid::validate(const TaskContext& task) const {
  if (auto problem = validateRedfishDriverInfo(task)) return problem;
  const json target = objectField(task.node, kNodeTargetRaidConfig);
  if (!target.empty()) {
    if (auto valid = validateRedfishRaidConfig(target); !valid) return valid.error().message;
  }
  return std::nullopt;
}

Result<StepResult> RedfishRaid::createConfiguration(TaskContext& task, bool createRootVolume,
                                                    bool createNonrootVolumes,
                                                    bool deleteExisting) const {
  const json target = objectField(task.node, kNodeTargetRaidConfig);
  if (target.empty()) {
    return invalid("Node " + task.uuid() + " has no target RAID configuration.");
  }
  KILN_TRY_VOID(validateRedfishRaidConfig(target));
  if (deleteExisting) KILN_TRY(deleteConfiguration(task));
  RedfishTarget bmc = KILN_TRY(connectRedfish(http_, task));
  const Inventory inv = KILN_TRY(readInventory(
      bmc, "Cannot get the list of physical disks for node " + task.uuid() + ". Reason: "));
  std::vector<Volume> volumes = KILN_TRY(wantedVolumes(task, target, inv));
  KILN_TRY_VOID(plan(volumes, inv));
  std::vector<Operation> ops;
  for (const auto& v : volumes) {
    if (v.root ? !createRootVolume : !createNonrootVolumes) continue;
    const Storage& storage = inv.storages[v.storage];
    if (storage.volumesPath.empty()) {
      return redfishError("No storage controller found for node " + task.uuid() +
                          ": the attribute Volumes is missing from the resource " + storage.path);
    }
    json drives = json::array();
    for (size_t d : v.drives) drives.push_back({{"@odata.id", inv.drives[d].path}});
    Operation op;
    op.storage = v.storage;
    op.method = "POST";
    op.path = storage.volumesPath;
    op.target = storage.volumesPath;
    op.body = {{"RAIDType", std::string(levelInfo(v.level)->raidType)}};
    if (v.sizeBytes) op.body["CapacityBytes"] = *v.sizeBytes;
    op.body["Links"] = {{"Drives", drives}};
    if (v.name) op.body["Name"] = *v.name;
    if (storage.applyTime) {
      op.body["@Redfish.OperationApplyTime"] = *storage.applyTime;
      op.onReset = *storage.applyTime == "OnReset";
    }
    ops.push_back(std::move(op));
  }
  task.log.info("creating RAID volumes",
                {{"node", task.uuid()}, {"count", std::to_string(ops.size())}});
  KILN_TRY_VOID(runOperations(task, *bmc.client, timing_, "create", ops));
  KILN_TRY_VOID(recordRaidConfig(task, bmc));
  task.log.info("RAID configuration created", {{"node", task.uuid()}});
  return StepResult::Done;
}

Result<StepResult> RedfishRaid::deleteConfiguration(TaskContext& task) const {
  RedfishTarget bmc = KILN_TRY(connectRedfish(http_, task));
  const std::string context =
      "Cannot get the list of volumes to delete for node " + task.uuid() + ". Reason: ";
  const Inventory inv = KILN_TRY(readInventory(bmc, context));
  const auto volumes = KILN_TRY(readVolumes(*bmc.client, inv, context));
  std::vector<Operation> ops;
  for (const auto& v : volumes) {
    if (v.raidType.empty()) continue;  // as Ironic: only RAID volumes
    if (!v.deletable) {
      task.log.info("the BMC does not allow deleting the volume; kept",
                    {{"node", task.uuid()}, {"volume", v.path}});
      continue;
    }
    Operation op;
    op.storage = v.storage;
    op.method = "DELETE";
    op.path = v.path;
    op.target = v.path;
    if (const auto& applyTime = inv.storages[v.storage].applyTime) {
      op.body = {{"@Redfish.OperationApplyTime", *applyTime}};
      op.onReset = *applyTime == "OnReset";
    }
    ops.push_back(std::move(op));
  }
  task.log.info("deleting RAID volumes",
                {{"node", task.uuid()}, {"count", std::to_string(ops.size())}});
  KILN_TRY_VOID(runOperations(task, *bmc.client, timing_, "delete", ops));
  KILN_TRY_VOID(recordRaidConfig(task, bmc));
  return StepResult::Done;
}

}  // namespace kiln::server
