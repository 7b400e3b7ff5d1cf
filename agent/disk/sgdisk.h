// File: agent/disk/sgdisk.h
//
// A thin typed wrapper over sgdisk (GPT fdisk) through the CommandRunner seam, plus the pure
// parser of `sgdisk -p` output (house-style rule 15). Works on disks and on image files.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shared/core/error.h"
#include "shared/exec/command_runner.h"

namespace kiln::agent {

/// One row of `sgdisk -p`.
struct GptPartition {
  int number = 0;
  uint64_t startSector = 0;
  uint64_t endSector = 0;  ///< inclusive
  std::string code;        ///< "8300", "EF00", "FD00"
  std::string name;        ///< the GPT partition name ("config-2"), may contain spaces

  uint64_t sizeSectors() const { return endSector - startSector + 1; }
};

/// What `sgdisk -p` says about a disk.
struct GptTable {
  uint64_t diskSectors = 0;
  uint32_t sectorSize = 512;  ///< logical sector size in bytes
  std::string diskGuid;
  uint64_t firstUsableSector = 0;
  uint64_t lastUsableSector = 0;
  std::vector<GptPartition> partitions;

  /// Where `p` lies on the whole device, in bytes.
  uint64_t offsetOf(const GptPartition& p) const { return p.startSector * sectorSize; }
  uint64_t bytesOf(const GptPartition& p) const { return p.sizeSectors() * sectorSize; }
};

/// Parses `sgdisk -p` output. InvalidArgument when the "Disk ...: N sectors" line or the
/// partition header is missing, or a row is malformed. Pure.
Result<GptTable> parseSgdiskPrint(std::string_view text);

/// Runs sgdisk. Every method returns Internal "sgdisk ... failed (exit N): <stderr>" on a
/// non-zero exit unless stated otherwise. Thread-safe (the runner is).
class Sgdisk {
 public:
  explicit Sgdisk(CommandRunner& runner) : runner_(runner) {}

  /// `sgdisk -p DEVICE`, parsed.
  Result<GptTable> print(const std::string& device);
  /// `sgdisk -Z DEVICE`: destroys GPT and MBR. A non-zero exit whose output still says
  /// "GPT data structures destroyed" (sgdisk complaining about the damaged table it just
  /// zapped) counts as success.
  Result<void> zap(const std::string& device);
  /// `sgdisk -o DEVICE`: a new empty GPT.
  Result<void> newTable(const std::string& device);
  /// `sgdisk -e DEVICE`: moves the backup GPT to the end of the disk (after an image smaller
  /// than the disk was written).
  Result<void> moveBackupToEnd(const std::string& device);
  /// `sgdisk -n N:START:END -t N:CODE [-c N:NAME] DEVICE` (N 0 = first free number; START
  /// and END in sgdisk syntax: "0", "+10240M", "-64M").
  Result<void> newPartition(const std::string& device, int number, const std::string& start,
                            const std::string& end, const std::string& typeCode,
                            const std::string& name = "");

 private:
  Result<CommandOutput> run(std::vector<std::string> args);
  CommandRunner& runner_;
};

}  // namespace kiln::agent
