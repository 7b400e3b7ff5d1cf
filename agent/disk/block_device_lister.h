// File: agent/disk/block_device_lister.h
//
// Enumerates the machine's disks from /sys/block (through a SysfsReader) and describes the
// devices or image files given with --device when the agent is run by hand.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "agent/disk/block_device.h"
#include "agent/hardware/sysfs.h"
#include "shared/core/error.h"

namespace kiln::agent {

/// The whole disks under /sys/block, sorted by name: loop, ram, sr, zram, md, dm-, fd and
/// nbd devices and zero-sized devices are skipped. Size = /sys/block/X/size sectors * 512;
/// model, vendor, serial, wwn from device/; rotational, discard support and logical block
/// size from queue/; by_path from the /dev/disk/by-path symlinks that point at the disk.
std::vector<BlockDevice> listDisks(SysfsReader& sysfs);

/// Describes the paths given with --device: a regular file (size = st_size) or a block
/// device (size from BLKGETSIZE64, opened read-only). The name is the path as given.
/// InvalidArgument for anything else or a path that cannot be opened.
Result<std::vector<BlockDevice>> describeDevices(std::span<const std::string> paths);

/// True for kernel block device names that are never install targets ("loop0", "md0", ...).
bool isVirtualBlockDeviceName(std::string_view name);

}  // namespace kiln::agent
