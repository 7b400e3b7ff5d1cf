// File: agent/disk/partition_naming.h
//
// Kernel naming of partition device nodes. Pure string functions.
#pragma once

#include <string>
#include <string_view>

namespace kiln::agent {

/// The device node of partition `number` of `disk`: "/dev/sda" -> "/dev/sda1", and a "p"
/// separator when the disk name ends in a digit: "/dev/nvme0n1" -> "/dev/nvme0n1p1",
/// "/dev/loop0" -> "/dev/loop0p1", "/dev/mmcblk0" -> "/dev/mmcblk0p1".
std::string partitionPath(std::string_view disk, int number);

/// Whether `path` names a software RAID array: /dev/md... ("/dev/md0", "/dev/md/root"), or a
/// device whose name is md<N> ("md127", "/tmp/x/md0" in tests).
bool isMdDevice(std::string_view path);

/// The inverse: the disk holding partition `partition` ("/dev/nvme0n1p2" -> "/dev/nvme0n1",
/// "/dev/sdb1" -> "/dev/sdb"). A path without a partition suffix is returned unchanged.
std::string holderDisk(std::string_view partition);

}  // namespace kiln::agent
