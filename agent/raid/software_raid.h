// File: agent/raid/software_raid.h
//
// Linux software RAID like ironic-python-agent's: every member disk gets a new GPT and one
// partition (type FD00) per logical disk, and each logical disk becomes /dev/mdN built by
// mdadm over those partitions. Also the deletion of existing arrays. Every tool runs
// through the context's CommandRunner (sgdisk, partx, mdadm, wipefs).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "agent/disk/block_device.h"
#include "agent/hardware/step_context.h"
#include "agent/hardware/sysfs.h"
#include "shared/core/error.h"
#include "shared/raid/raid_config.h"

namespace kiln::agent {

/// One logical disk as it will be built.
struct SoftwareRaidVolume {
  std::string raidLevel;                ///< Ironic's level: "0", "1", "5", "6", "1+0"
  std::string mdadmLevel;               ///< mdadm's level: "0", "1", "5", "6", "10"
  std::string device;                   ///< "/dev/md0"
  std::optional<uint64_t> memberMiB;    ///< partition size on each member; nullopt = rest (MAX)
  std::vector<std::string> disks;       ///< member disks, "/dev/sda"
  std::vector<int> partitionNumbers;    ///< per member disk
  std::vector<std::string> partitions;  ///< "/dev/sda1"
  std::string name;                     ///< volume_name, or empty
  bool rootVolume = false;
};

/// Where the members go on their disks.
struct SoftwareRaidLayout {
  /// MiB left free before the first member partition of every disk (for the EFI system
  /// partition of a UEFI machine: kRaidBootReserveMiB); 0 = the first partition starts at
  /// 1 MiB as usual.
  uint64_t bootReserveMiB = 0;
};

/// The layout for this machine: room for an ESP when it booted through UEFI
/// (/sys/firmware/efi exists), none otherwise.
SoftwareRaidLayout raidLayoutFor(SysfsReader& sysfs);

/// The partition size each member needs for a logical disk of `sizeGb` GiB at `raidLevel`
/// over `members` disks, in MiB rounded up (1: size; 0: size/n; 5: size/(n-1); 6:
/// size/(n-2); 1+0: 2*size/n). Pure; assumes a supported level and enough members.
uint64_t memberPartitionMiB(const std::string& raidLevel, int64_t sizeGb, size_t members);

/// Plans the volumes of `config` over `devices` (md devices among them are ignored) without
/// running anything. Errors (InvalidArgument): an unsupported level (only 0, 1, 5, 6, 1+0),
/// fewer members than the level needs (0: 2, 1: 2, 5: 3, 6: 4, 1+0: 4), "MAX" on any but the
/// last logical disk, a physical_disks entry that matches no disk (or none this volume has
/// not picked yet: each entry takes the first matching disk not already picked, like
/// ironic-python-agent), or volumes that do not fit a member. Pure.
Result<std::vector<SoftwareRaidVolume>> planSoftwareRaid(const RaidConfig& config,
                                                         std::span<const BlockDevice> devices,
                                                         const SoftwareRaidLayout& layout = {});

/// Creates the software RAID described by Ironic's `target_raid_config` on context.devices:
/// validates it (kiln::parseRaidConfig; InvalidArgument with its message) and plans it
/// (planSoftwareRaid) before touching any disk, then `sgdisk -o` on each member, `sgdisk -n
/// N:0:+SIZEM -t N:FD00` per volume and member (the first one of each disk starting after
/// `layout.bootReserveMiB` when set: `-n 1:<reserve+1>M:+SIZEM`), `partx -u` per member and `mdadm --create`
/// per volume. Returns {"raid_config": {"logical_disks": [target fields + "controller":
/// "software", "device": "/dev/mdN", "physical_disks": [...]]}, "root_device_hint": {"name":
/// the root volume, or the first volume when none is marked}}.
Result<nlohmann::json> createSoftwareRaid(StepContext& context,
                                          const nlohmann::json& targetRaidConfig,
                                          const SoftwareRaidLayout& layout = {});

/// Deletes the md arrays listed in /proc/mdstat whose members all sit on context.devices
/// (arrays on other disks are left alone): `mdadm --detail`, `mdadm --stop`, `mdadm
/// --zero-superblock` on each member; then zeroes stale superblocks that `mdadm --examine`
/// finds on the devices and their partitions (from /sys/block); then `wipefs --force --all`
/// and `sgdisk -Z` on every disk that held RAID members. Returns {}.
Result<nlohmann::json> deleteSoftwareRaid(StepContext& context, SysfsReader& sysfs);

/// Ironic's apply_configuration for software RAID: args {"raid_config": target,
/// "delete_existing": bool (default true)}. Validates first, then deletes (when asked) and
/// creates with raidLayoutFor(sysfs). Returns createSoftwareRaid's document.
Result<nlohmann::json> applySoftwareRaid(StepContext& context, const nlohmann::json& args,
                                         SysfsReader& sysfs);

}  // namespace kiln::agent
