// File: agent/disk/mbr.h
//
// The four primary entries of an MS-DOS (MBR) partition table, read and written in-process
// (no tool needed for one 16-byte entry), and the plan for a config-drive partition at the
// end of an MBR disk, as ironic-python-agent appends one with parted.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "shared/core/error.h"

namespace kiln::agent {

/// MBR sectors are 512 bytes here: 4Kn disks carry GPT in practice.
inline constexpr uint64_t kMbrSectorBytes = 512;

/// One primary partition entry; type 0 = unused slot.
struct MbrEntry {
  int slot = 0;  ///< 0..3; the partition number is slot + 1
  uint8_t type = 0;
  uint32_t startSector = 0;
  uint32_t sectors = 0;

  bool used() const { return type != 0 && sectors != 0; }
  bool extended() const { return type == 0x05 || type == 0x0f || type == 0x85; }
};

/// Parses the first sector of a disk. InvalidArgument when it lacks the 0x55AA signature.
/// Pure.
Result<std::array<MbrEntry, 4>> parseMbr(std::span<const uint8_t> sector);

/// The entry for a new `bytes` partition (type 0x83) ending at the end of the disk (or of
/// the 2 TiB an MBR can address), its start aligned down to 1 MiB. InvalidArgument when no
/// primary slot is free, an extended partition exists, or it would overlap a partition. Pure.
Result<MbrEntry> planMbrPartitionAtEnd(const std::array<MbrEntry, 4>& entries, uint64_t diskSectors,
                                       uint64_t bytes);

/// Reads the MBR entries of `path` (a device or an image file).
Result<std::array<MbrEntry, 4>> readMbr(const std::string& path);

/// Writes `entry` into its slot of the MBR of `path` (LBA-only CHS markers), then fsync.
Result<void> writeMbrEntry(const std::string& path, const MbrEntry& entry);

}  // namespace kiln::agent
