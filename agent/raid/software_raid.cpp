#include "agent/raid/software_raid.h"

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "agent/disk/partition_naming.h"
#include "agent/disk/root_device_hints.h"
#include "agent/disk/sgdisk.h"
#include "agent/disk/uefi_boot.h"
#include "agent/disk/wipefs.h"
#include "agent/raid/mdadm.h"

namespace kiln::agent {
namespace {

constexpr uint64_t kMiB = 1ULL << 20;
/// GPT overhead per member: 1 MiB before the first partition (alignment) and the backup GPT.
constexpr uint64_t kGptOverheadMiB = 2;

struct LevelRule {
  std::string_view level;
  std::string_view mdadmLevel;
  size_t minMembers;
};
// NOTE(kiln): RAID-0 over one disk is allowed by mdadm but pointless; we ask for two.
constexpr LevelRule kLevels[] = {
    {"0", "0", 2}, {"1", "1", 2}, {"5", "5", 3}, {"6", "6", 4}, {"1+0", "10", 4}};

const LevelRule* findLevel(const std::string& level) {
  for (const LevelRule& rule : kLevels) {
    if (rule.level == level) return &rule;
  }
  return nullptr;
}


std::string namesOf(std::span<const BlockDevice* const> devices) {
  std::string out;
  for (const BlockDevice* d : devices) out += (out.empty() ? "" : ", ") + d->name;
  return out.empty() ? "none" : out;
}

/// Like ironic-python-agent's get_block_devices_for_raid: each entry takes the first disk
/// matching its hints that this volume has not picked yet.
Result<std::vector<std::string>> resolvePhysicalDisks(const LogicalDisk& disk,
                                                      std::span<const BlockDevice> candidates) {
  std::vector<std::string> chosen;
  for (const PhysicalDiskHints& wanted : disk.physicalDisks) {
    const std::vector<const BlockDevice*> matches = findDevicesByHints(candidates, wanted.hints);
    if (matches.empty()) {
      std::vector<const BlockDevice*> all;
      for (const BlockDevice& d : candidates) all.push_back(&d);
      return invalid("physical_disks entry '" + wanted.text +
                     "' matches none of the agent's disks (" + namesOf(all) + ")");
    }
    auto free = std::find_if(matches.begin(), matches.end(), [&](const BlockDevice* d) {
      return std::find(chosen.begin(), chosen.end(), d->name) == chosen.end();
    });
    if (free == matches.end()) {
      return invalid("physical_disks entry '" + wanted.text + "' matches no disk left: " +
                     namesOf(matches) + " already picked for this logical disk");
    }
    chosen.push_back((*free)->name);
  }
  return chosen;
}

Result<std::vector<std::string>> volumeDisks(const LogicalDisk& disk,
                                             std::span<const BlockDevice> devices) {
  std::vector<BlockDevice> candidates;
  for (const BlockDevice& d : devices) {
    if (!isMdDevice(d.name)) candidates.push_back(d);
  }
  if (!disk.physicalDisks.empty()) return resolvePhysicalDisks(disk, candidates);
  std::vector<std::string> all;
  for (const BlockDevice& d : candidates) all.push_back(d.name);
  if (disk.numberOfPhysicalDisks) {
    const auto n = static_cast<size_t>(std::max(0, *disk.numberOfPhysicalDisks));
    if (n > all.size()) {
      return invalid("number_of_physical_disks is " + std::to_string(n) + " but only " +
                     std::to_string(all.size()) + " disks are available");
    }
    all.resize(n);
  }
  return all;
}

Result<SoftwareRaidVolume> planVolume(const LogicalDisk& disk, size_t index, bool last,
                                      std::span<const BlockDevice> devices) {
  const LevelRule* rule = findLevel(disk.raidLevel);
  if (!rule) {
    return invalid("RAID level " + disk.raidLevel +
                   " is not supported for software RAID (supported: 0, 1, 5, 6, 1+0)");
  }
  if (!disk.sizeGb && !last) {
    return invalid("Only the last logical disk may have size_gb MAX (logical disk " +
                   std::to_string(index) + " has it)");
  }
  SoftwareRaidVolume volume;
  volume.raidLevel = disk.raidLevel;
  volume.mdadmLevel = std::string(rule->mdadmLevel);
  volume.device = "/dev/md" + std::to_string(index);
  volume.disks = KILN_TRY(volumeDisks(disk, devices));
  if (volume.disks.size() < rule->minMembers) {
    return invalid("RAID level " + disk.raidLevel + " needs at least " +
                   std::to_string(rule->minMembers) + " disks, but only " +
                   std::to_string(volume.disks.size()) + " are available");
  }
  if (disk.sizeGb) {
    volume.memberMiB = memberPartitionMiB(disk.raidLevel, *disk.sizeGb, volume.disks.size());
  }
  volume.name = disk.volumeName.value_or("");
  volume.rootVolume = disk.isRootVolume;
  return volume;
}

/// Numbers the partitions per disk in volume order and checks that every member has room.
Result<void> assignPartitions(std::vector<SoftwareRaidVolume>& volumes,
                              std::span<const BlockDevice> devices, const SoftwareRaidLayout& layout) {
  std::map<std::string, int> next;
  std::map<std::string, uint64_t> usedMiB;
  std::set<std::string> hasMax;
  for (SoftwareRaidVolume& volume : volumes) {
    for (const std::string& disk : volume.disks) {
      const int number = ++next[disk];
      volume.partitionNumbers.push_back(number);
      volume.partitions.push_back(partitionPath(disk, number));
      if (volume.memberMiB) usedMiB[disk] += *volume.memberMiB;
      if (!volume.memberMiB) hasMax.insert(disk);
    }
  }
  for (const BlockDevice& d : devices) {
    if (!next.contains(d.name)) continue;
    const uint64_t needed = usedMiB[d.name] + kGptOverheadMiB + layout.bootReserveMiB +
                            (hasMax.contains(d.name) ? 1 : 0);
    if (needed > d.size / kMiB) {
      return invalid("The logical disks need " + std::to_string(needed) + " MiB on " + d.name +
                     ", which has only " + std::to_string(d.size / kMiB) + " MiB");
    }
  }
  return {};
}

std::vector<std::string> memberDisksInOrder(const std::vector<SoftwareRaidVolume>& volumes) {
  std::vector<std::string> disks;
  for (const SoftwareRaidVolume& volume : volumes) {
    for (const std::string& disk : volume.disks) {
      if (std::find(disks.begin(), disks.end(), disk) == disks.end()) disks.push_back(disk);
    }
  }
  return disks;
}

Result<void> partitionMembers(CommandRunner& runner, const std::vector<SoftwareRaidVolume>& volumes,
                              const SoftwareRaidLayout& layout) {
  Sgdisk sgdisk(runner);
  const std::vector<std::string> disks = memberDisksInOrder(volumes);
  for (const std::string& disk : disks) KILN_TRY_VOID(sgdisk.newTable(disk));
  for (const SoftwareRaidVolume& volume : volumes) {
    const std::string end =
        volume.memberMiB ? "+" + std::to_string(*volume.memberMiB) + "M" : std::string("0");
    for (size_t i = 0; i < volume.disks.size(); ++i) {
      const bool first = volume.partitionNumbers[i] == 1;
      const std::string start = first && layout.bootReserveMiB
                                    ? std::to_string(layout.bootReserveMiB + 1) + "M"
                                    : std::string("0");
      KILN_TRY_VOID(
          sgdisk.newPartition(volume.disks[i], volume.partitionNumbers[i], start, end, "FD00"));
    }
  }
  for (const std::string& disk : disks) {
    Command command;
    command.argv = {"partx", "-u", disk};
    KILN_TRY(runChecked(runner, std::move(command), disk));
  }
  return {};
}

nlohmann::json resultDocument(const nlohmann::json& target,
                              const std::vector<SoftwareRaidVolume>& volumes) {
  nlohmann::json logical = nlohmann::json::array();
  std::string root;
  for (size_t i = 0; i < volumes.size(); ++i) {
    nlohmann::json disk = target["logical_disks"][i];
    disk["controller"] = "software";
    disk["device"] = volumes[i].device;
    disk["physical_disks"] = volumes[i].disks;
    logical.push_back(std::move(disk));
    if (volumes[i].rootVolume && root.empty()) root = volumes[i].device;
  }
  // NOTE(kiln): like ironic-python-agent, the first volume is the root when none is marked.
  if (root.empty()) root = volumes.front().device;
  return {{"raid_config", {{"logical_disks", std::move(logical)}}},
          {"root_device_hint", {{"name", root}}}};
}

/// The disk paths of context.devices that can hold RAID members.
std::set<std::string> ownDisks(const StepContext& context) {
  std::set<std::string> disks;
  for (const BlockDevice& d : context.devices) {
    if (!isMdDevice(d.name)) disks.insert(d.name);
  }
  return disks;
}

void addUnique(std::vector<std::string>& list, const std::string& value) {
  if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
}

/// The member devices of an array: from `mdadm --detail`, or /proc/mdstat when that fails
/// (an inactive array has no detail worth reading).
std::vector<std::string> arrayMembers(StepContext& context, Mdadm& mdadm,
                                      const MdstatArray& array) {
  const std::string device = "/dev/" + array.name;
  auto detail = mdadm.detail(device);
  if (detail) return detail->memberDevices();
  context.log.warning("mdadm --detail failed; using the members listed in /proc/mdstat",
                      {{"device", device}, {"error", detail.error().message}});
  std::vector<std::string> members;
  for (const MdstatMember& m : array.members) members.push_back("/dev/" + m.device);
  return members;
}

Result<void> deleteArrays(StepContext& context, SysfsReader& sysfs, Mdadm& mdadm,
                          std::vector<std::string>& zeroed, std::vector<std::string>& holders) {
  const Mdstat mdstat = KILN_TRY(parseMdstat(sysfs.read("/proc/mdstat").value_or("")));
  const std::set<std::string> own = ownDisks(context);
  for (const MdstatArray& array : mdstat.arrays) {
    const std::string device = "/dev/" + array.name;
    const std::vector<std::string> members = arrayMembers(context, mdadm, array);
    const bool ours = !members.empty() && std::all_of(members.begin(), members.end(), [&](auto& m) {
      return own.contains(holderDisk(m));
    });
    if (!ours) {
      context.log.warning("Leaving alone an md array with members outside the agent's disks",
                          {{"device", device}});
      continue;
    }
    KILN_TRY_VOID(mdadm.stop(device));
    for (const std::string& member : members) {
      KILN_TRY_VOID(mdadm.zeroSuperblock(member));
      addUnique(zeroed, member);
      addUnique(holders, holderDisk(member));
    }
  }
  return {};
}

/// The device itself and its partitions as /sys/block/<name>/ lists them.
std::vector<std::string> deviceAndPartitions(SysfsReader& sysfs, const std::string& device) {
  std::vector<std::string> paths = {device};
  if (!device.starts_with("/dev/")) return paths;
  const std::string name = device.substr(5);
  for (const std::string& entry : sysfs.list("/sys/block/" + name)) {
    if (entry.starts_with(name) && entry.size() > name.size()) paths.push_back("/dev/" + entry);
  }
  return paths;
}

Result<void> zeroStaleSuperblocks(StepContext& context, SysfsReader& sysfs, Mdadm& mdadm,
                                  std::vector<std::string>& zeroed,
                                  std::vector<std::string>& holders) {
  for (const std::string& disk : ownDisks(context)) {
    for (const std::string& path : deviceAndPartitions(sysfs, disk)) {
      if (std::find(zeroed.begin(), zeroed.end(), path) != zeroed.end()) continue;
      auto found = KILN_TRY(mdadm.examine(path));
      if (!found) continue;
      context.log.info("Zeroing a stale md superblock", {{"device", path}});
      KILN_TRY_VOID(mdadm.zeroSuperblock(path));
      addUnique(holders, disk);
    }
  }
  return {};
}

}  // namespace

uint64_t memberPartitionMiB(const std::string& raidLevel, int64_t sizeGb, size_t members) {
  const uint64_t total = static_cast<uint64_t>(sizeGb) * 1024;
  uint64_t numerator = total;
  uint64_t denominator = 1;
  if (raidLevel == "0") denominator = members;
  if (raidLevel == "5") denominator = members - 1;
  if (raidLevel == "6") denominator = members - 2;
  if (raidLevel == "1+0") {
    numerator = 2 * total;
    denominator = members;
  }
  return (numerator + denominator - 1) / denominator;
}

SoftwareRaidLayout raidLayoutFor(SysfsReader& sysfs) {
  return SoftwareRaidLayout{bootedThroughUefi(sysfs) ? kRaidBootReserveMiB : 0};
}

Result<std::vector<SoftwareRaidVolume>> planSoftwareRaid(const RaidConfig& config,
                                                         std::span<const BlockDevice> devices,
                                                         const SoftwareRaidLayout& layout) {
  std::vector<SoftwareRaidVolume> volumes;
  const size_t count = config.logicalDisks.size();
  for (size_t i = 0; i < count; ++i) {
    volumes.push_back(KILN_TRY(planVolume(config.logicalDisks[i], i, i + 1 == count, devices)));
  }
  KILN_TRY_VOID(assignPartitions(volumes, devices, layout));
  return volumes;
}

Result<nlohmann::json> createSoftwareRaid(StepContext& context,
                                          const nlohmann::json& targetRaidConfig,
                                          const SoftwareRaidLayout& layout) {
  if (!context.runner) return internalError("Software RAID needs a command runner");
  const RaidConfig config = KILN_TRY(parseRaidConfig(targetRaidConfig));
  std::vector<SoftwareRaidVolume> volumes =
      KILN_TRY(planSoftwareRaid(config, context.devices, layout));
  if (layout.bootReserveMiB) {
    context.log.info("Leaving room for an EFI system partition on every member disk",
                     {{"mib", std::to_string(layout.bootReserveMiB)}});
  }
  KILN_TRY_VOID(partitionMembers(*context.runner, volumes, layout));
  Mdadm mdadm(*context.runner);
  for (const SoftwareRaidVolume& volume : volumes) {
    context.log.info("Creating software RAID",
                     {{"device", volume.device}, {"level", volume.raidLevel}});
    KILN_TRY_VOID(mdadm.create(volume.device, volume.mdadmLevel, volume.partitions, volume.name));
  }
  return resultDocument(targetRaidConfig, volumes);
}

Result<nlohmann::json> deleteSoftwareRaid(StepContext& context, SysfsReader& sysfs) {
  if (!context.runner) return internalError("Software RAID needs a command runner");
  Mdadm mdadm(*context.runner);
  std::vector<std::string> zeroed;
  std::vector<std::string> holders;
  KILN_TRY_VOID(deleteArrays(context, sysfs, mdadm, zeroed, holders));
  KILN_TRY_VOID(zeroStaleSuperblocks(context, sysfs, mdadm, zeroed, holders));
  Wipefs wipefs(*context.runner);
  Sgdisk sgdisk(*context.runner);
  for (const std::string& disk : holders) {
    KILN_TRY_VOID(wipefs.wipeAll(disk));
    KILN_TRY_VOID(sgdisk.zap(disk));
  }
  return nlohmann::json::object();
}

Result<nlohmann::json> applySoftwareRaid(StepContext& context, const nlohmann::json& args,
                                         SysfsReader& sysfs) {
  if (!args.is_object() || !args.contains("raid_config")) {
    return invalid("apply_configuration needs the argument 'raid_config'");
  }
  const nlohmann::json& target = args["raid_config"];
  const RaidConfig config = KILN_TRY(parseRaidConfig(target));
  const SoftwareRaidLayout layout = raidLayoutFor(sysfs);
  KILN_TRY(planSoftwareRaid(config, context.devices, layout));
  bool deleteExisting = true;
  if (args.contains("delete_existing")) {
    if (!args["delete_existing"].is_boolean()) {
      return invalid("apply_configuration argument 'delete_existing' must be a boolean");
    }
    deleteExisting = args["delete_existing"].get<bool>();
  }
  if (deleteExisting) KILN_TRY(deleteSoftwareRaid(context, sysfs));
  return createSoftwareRaid(context, target, layout);
}

}  // namespace kiln::agent
