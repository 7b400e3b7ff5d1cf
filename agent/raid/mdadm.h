// File: agent/raid/mdadm.h
//
// Linux software RAID: a thin typed wrapper over mdadm through the CommandRunner seam, and
// the pure parsers of `mdadm --detail`, `mdadm --examine` and /proc/mdstat (house-style rule
// 15; the formats are mdadm 4.2's). Tests feed the parsers recorded text and script the
// wrapper with ReplayCommandRunner.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shared/core/error.h"
#include "shared/exec/command_runner.h"

namespace kiln::agent {

/// One row of the device table of `mdadm --detail`.
struct MdMember {
  int number = -1;      ///< "Number"; -1 for "-"
  int raidDevice = -1;  ///< "RaidDevice"; -1 for "-" (spares, faulty devices)
  std::string state;    ///< "active sync", "spare", "faulty", "removed", "spare rebuilding"
  std::string device;   ///< "/dev/sda1"; empty for a removed slot
};

/// `mdadm --detail /dev/mdX`.
struct MdArrayDetail {
  std::string device;     ///< "/dev/md0"
  std::string version;    ///< metadata version, "1.0"
  std::string raidLevel;  ///< "raid1", "raid0", "raid5", "raid6", "raid10"
  uint64_t arraySizeKiB = 0;
  int raidDevices = 0;
  int totalDevices = 0;
  int activeDevices = 0;
  int workingDevices = 0;
  int failedDevices = 0;
  int spareDevices = 0;
  std::string state;  ///< "clean", "clean, degraded", "active, resyncing"
  std::string name;   ///< "host:0"
  std::string uuid;
  std::vector<MdMember> members;

  /// The device paths of the members that have one (including spares and faulty ones).
  std::vector<std::string> memberDevices() const;
};

/// Parses `mdadm --detail` output. InvalidArgument when the "/dev/mdX:" line or the
/// "Raid Level" field is missing or a table row is malformed. Pure.
Result<MdArrayDetail> parseMdadmDetail(std::string_view text);

/// `mdadm --examine` of one member device (a superblock was found).
struct MdExamine {
  std::string device;   ///< "/dev/sda1"
  std::string version;  ///< "1.0"
  std::string arrayUuid;
  std::string name;
  std::string raidLevel;  ///< "raid1"
  int raidDevices = 0;
  std::string deviceRole;  ///< "Active device 0", "spare"
  std::string arrayState;  ///< "AA"
};

/// Parses `mdadm --examine` output of a member. InvalidArgument when it has no "Magic" or
/// "Raid Level" field. Pure.
Result<MdExamine> parseMdadmExamine(std::string_view text);

/// One member in /proc/mdstat: "sdb1[1](F)".
struct MdstatMember {
  std::string device;  ///< kernel name, "sdb1"
  int index = 0;
  bool faulty = false;       ///< (F)
  bool spare = false;        ///< (S)
  bool writeMostly = false;  ///< (W)
};

/// One array in /proc/mdstat.
struct MdstatArray {
  std::string name;  ///< "md0"
  bool active = false;
  bool readOnly = false;  ///< "(read-only)" or "(auto-read-only)"
  std::string level;      ///< "raid1"; empty for an inactive array
  std::vector<MdstatMember> members;
  uint64_t blocks = 0;      ///< 1 KiB blocks
  int raidDevices = -1;     ///< n of "[n/m]"; -1 when not shown (raid0, inactive)
  int workingDevices = -1;  ///< m of "[n/m]"
  std::string health;       ///< "UU", "U_"; empty when not shown
  std::string progress;     ///< the "resync = 8.1% ..." line, trimmed; empty when idle
};

/// /proc/mdstat.
struct Mdstat {
  std::vector<std::string> personalities;  ///< "raid1", "raid0", ...
  std::vector<MdstatArray> arrays;
};

/// Parses /proc/mdstat. InvalidArgument on an array line it cannot read. Pure.
Result<Mdstat> parseMdstat(std::string_view text);

/// Runs mdadm. Each method returns Internal "mdadm ... failed (exit N): <stderr>" on an
/// unexpected non-zero exit. Thread-safe (the runner is).
class Mdadm {
 public:
  explicit Mdadm(CommandRunner& runner) : runner_(runner) {}

  /// `mdadm --create DEVICE --metadata=1.0 --level=LEVEL --raid-devices=N [--name=NAME]
  /// --run --force MEMBERS...`. `level` is mdadm's ("0", "1", "5", "6", "10").
  Result<void> create(const std::string& device, const std::string& level,
                      std::span<const std::string> members, const std::string& name = "");
  /// `mdadm --detail DEVICE`, parsed.
  Result<MdArrayDetail> detail(const std::string& device);
  /// `mdadm --examine DEVICE`, parsed; nullopt when the device carries no md superblock.
  Result<std::optional<MdExamine>> examine(const std::string& device);
  /// `mdadm --stop DEVICE`.
  Result<void> stop(const std::string& device);
  /// `mdadm --zero-superblock DEVICE`; a device that is no md member counts as success.
  Result<void> zeroSuperblock(const std::string& device);

 private:
  Result<CommandOutput> run(std::vector<std::string> args, bool checkExit = true);
  CommandRunner& runner_;
};

}  // namespace kiln::agent
