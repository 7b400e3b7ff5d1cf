// File: agent/disk/bios_boot.h
//
// Legacy-BIOS boot of a software RAID root volume. With mdadm metadata 1.0 the superblock sits
// at the end of each member partition, so every member starts with the plain image written to
// the array (a partition image: a file system with its own boot sector, e.g. syslinux's). What
// the firmware still needs is boot code in each member disk's MBR that finds that partition:
// syslinux's gptmbr.bin (the first 440 bytes of the disk, the partition table untouched) plus
// the GPT "legacy BIOS bootable" attribute (bit 2) on the member partition. Every member gets
// both, so the machine boots from whichever disk the firmware tries.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "agent/hardware/step_context.h"

namespace kiln::agent {

/// Debian's syslinux-common path of the GPT MBR boot code (the ramdisk carries it).
inline constexpr const char* kGptMbrBootCode = "/usr/lib/syslinux/mbr/gptmbr.bin";

/// The partition number at the end of a partition path ("/dev/vda1" → 1,
/// "/dev/nvme0n1p12" → 12); -1 when there is none.
int partitionNumber(const std::string& partition);

/// Makes every member disk of `mdDevice` bootable by a legacy BIOS (see above):
/// `mdadm --detail` for the members, `sgdisk -A N:set:2` per member disk, the first 440 bytes
/// of `bootCodePath` written to each member disk. Result {"bios_boot_disks": [...]}.
Result<nlohmann::json> installRaidBiosBoot(StepContext& ctx, const std::string& mdDevice,
                                           const std::string& bootCodePath = kGptMbrBootCode);

}  // namespace kiln::agent
