// File: agent/disk/block_device_probe.h
//
// What libblkid says about the content of a device or image file (house-style rule 16): the
// partition table type and the file system (or RAID member) signature, at the start of the
// device or at an offset inside it (a partition of a whole-device path).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "shared/core/error.h"

namespace kiln::agent {

/// The signatures libblkid found; empty strings when none.
struct ProbeResult {
  std::string partitionTableType;  ///< PTTYPE: "gpt", "dos", ""
  std::string filesystemType;      ///< TYPE: "ext4", "vfat", "iso9660", "linux_raid_member", ""
  std::string label;               ///< LABEL: "config-2", ""
  std::string uuid;                ///< UUID of the file system: "4b494c4e-...", ""
};

/// Probes devices and image files for signatures. Read-only. Thread-safe.
class BlockDeviceProbe {
 public:
  virtual ~BlockDeviceProbe() = default;
  /// Probes `path` from `offset` for `size` bytes (0 = to the end). NotFound when the path
  /// cannot be opened, Internal when libblkid fails; "nothing found" is an empty ProbeResult.
  virtual Result<ProbeResult> probe(const std::string& path, uint64_t offset = 0,
                                    uint64_t size = 0) = 0;
};
using BlockDeviceProbePtr = std::unique_ptr<BlockDeviceProbe>;

/// The real probe over libblkid (low-level probing of superblocks and partition tables; the
/// handle is held in a unique_ptr with blkid_free_probe as deleter).
class BlkidBlockDeviceProbe final : public BlockDeviceProbe {
 public:
  Result<ProbeResult> probe(const std::string& path, uint64_t offset = 0,
                            uint64_t size = 0) override;
};

}  // namespace kiln::agent
