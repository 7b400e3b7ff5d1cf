// File: agent/disk/partition_image.h
//
// Partition images (Ironic's image_type "partition"), as ironic-python-agent deploys them: the
// agent makes a new GPT on the root device with a boot partition (UEFI: a 550 MiB EFI system
// partition, FAT32; BIOS: a 1 MiB BIOS boot partition for GRUB's core image) and a root
// partition of root_mb, writes the image (one file system) into the root partition, then
// installs the bootloader FROM THE IMAGE: the image's own grub-install and grub-mkconfig (or
// grub2-*) run in a chroot of the mounted root file system, with /dev, /proc, /sys and /run
// bound into it and, on UEFI, the ESP mounted at /boot/efi. On UEFI GRUB goes to the
// removable-media path (\EFI\BOOT\BOOTX64.EFI, no NVRAM write from the chroot); the caller then
// registers the firmware boot entry (uefi_boot.h).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/hardware/step_context.h"
#include "shared/core/error.h"

namespace kiln::agent {

inline constexpr uint64_t kPartitionImageEspMiB = 550;
inline constexpr uint64_t kBiosBootPartitionMiB = 1;

/// Where a partition image goes on its disk.
struct PartitionImageLayout {
  std::string disk;
  bool uefi = false;
  int bootPartition = 1;  ///< the ESP (UEFI) or BIOS boot partition
  int rootPartition = 2;
  uint64_t rootOffset = 0;  ///< bytes from the start of the disk
  uint64_t rootBytes = 0;
};

/// Makes the layout on `disk` (everything on it is lost): `sgdisk -Z`, `sgdisk -o`, partition 1
/// (`-t 1:EF00 -c 1:efi-system`, 550 MiB, or `-t 1:EF02 -c 1:bios-boot`, 1 MiB), partition 2
/// (`-t 2:8300 -c 2:root`, root_mb), reads the offsets back (`sgdisk -p`), formats the ESP
/// (`mkfs.vfat -I -F 32 -n EFI-SYSTEM --offset SECTORS disk KIB`, which works on image files too; -I because the disk has partitions)
/// and runs `partx -u` on a block device. InvalidArgument when the disk is too small.
Result<PartitionImageLayout> partitionForImage(StepContext& context, const std::string& disk,
                                               uint64_t diskBytes, uint64_t rootMb, bool uefi);

/// Installs the image's GRUB (see above). `rootPartition` and `espPartition` are device nodes
/// ("/dev/vda2", "/dev/vda1"; the ESP only on UEFI); `rootFsType` the root file system's type
/// as libblkid names it ("ext4"; mount -t, so that the kernel loads its module); `mountBase`
/// is where the root file system is mounted. Every mount is undone, in reverse order, whatever fails. Result {"bootloader":
/// "grub"|"grub2", "grub_target": "i386-pc"|"x86_64-efi"}. InvalidArgument when the image has
/// no grub-install/grub2-install (Kiln installs no bootloader of its own); Internal with the
/// tool's output when a command fails.
Result<nlohmann::json> installImageGrub(StepContext& context, const PartitionImageLayout& layout,
                                        const std::string& rootPartition,
                                        const std::string& espPartition, const std::string& rootFsType,
                                        const std::string& mountBase);

}  // namespace kiln::agent
