// File: agent/disk/config_drive_partition.h
//
// Where the config drive goes on the root device: an existing partition named or labelled
// "config-2", or a new 64 MiB partition at the end of a GPT or MBR disk
// (ironic-python-agent's behaviour). The result is a byte range of the WHOLE device path, so the
// writer writes into the device (or image file) at an offset without needing partition device
// nodes.
#pragma once

#include <cstdint>
#include <string>

#include "agent/disk/block_device_probe.h"
#include "agent/hardware/step_context.h"
#include "shared/core/error.h"

namespace kiln::agent {

/// The largest config drive Ironic accepts, and the size of the partition made for it.
inline constexpr uint64_t kConfigDrivePartitionBytes = 64ULL << 20;

/// A byte range of a device: write `size` bytes at most, starting at `offset` of `path`.
struct PartitionTarget {
  std::string path;
  uint64_t offset = 0;
  uint64_t size = 0;
};

/// Finds or makes the config-drive partition of `rootDevice` for a config drive of `bytes`.
/// GPT: reuses a partition whose GPT name or file-system label is "config-2"; otherwise runs
/// `sgdisk -e` (backup GPT to the end of the disk) and `sgdisk -n 0:-64M:0 -t 0:0700
/// -c 0:config-2`. MBR ("dos"): reuses a partition whose file-system label is "config-2";
/// otherwise writes a new primary partition (type 0x83) covering the last 64 MiB (aligned
/// to 1 MiB, within the 2 TiB an MBR addresses) into a free slot of the MBR. Then `partx -u`
/// when the root device is a block device.
/// Errors: InvalidArgument when `bytes` exceeds 64 MiB, the partition found is too small, or
/// an MBR has no free primary slot, an extended partition or no room at the end;
/// Unimplemented for a disk without partition table or another table type; Internal when a
/// tool or an I/O fails.
Result<PartitionTarget> prepareConfigDrivePartition(StepContext& context,
                                                    const std::string& rootDevice, uint64_t bytes,
                                                    BlockDeviceProbe& probe);

/// The same with the libblkid probe.
Result<PartitionTarget> prepareConfigDrivePartition(StepContext& context,
                                                    const std::string& rootDevice, uint64_t bytes);

}  // namespace kiln::agent
