// File: agent/disk/uefi_boot.h
//
// UEFI boot of a deployed whole-disk image, as ironic-python-agent does it: find the image's
// EFI system partition (GPT type EF00), find the boot loaders on it (the BOOTX64.CSV files
// shim's fallback reads, else a vendor shimx64.efi/grubx64.efi, else the removable-media
// path \EFI\BOOT\BOOTX64.EFI) and register a firmware boot entry for each with efibootmgr.
//
// A software RAID root (an md device): the firmware cannot read an ESP inside the array, so
// each member disk gets its own ESP outside it (in the room createSoftwareRaid reserves at the
// start of every member disk on UEFI machines), a byte copy of the image's ESP, and a boot
// entry of its own, so the machine boots with any one member disk left.
//
// When the firmware's variables cannot be written (no efivarfs, efibootmgr failing) the
// deployment still succeeds if the ESP has the removable-media path, which UEFI firmware
// boots without an entry; otherwise it fails.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/hardware/step_context.h"
#include "agent/hardware/sysfs.h"
#include "shared/core/error.h"

namespace kiln::agent {

/// Size of the ESP made on each RAID member disk (ironic-python-agent's 550 MiB).
inline constexpr uint64_t kEfiSystemPartitionMiB = 550;
/// Room createSoftwareRaid leaves before the first member partition on UEFI machines: the ESP
/// plus the 1 MiB a GPT keeps before its first partition.
inline constexpr uint64_t kRaidBootReserveMiB = kEfiSystemPartitionMiB + 1;
/// The removable-media boot path of x86-64 UEFI firmware.
inline constexpr std::string_view kRemovableLoaderPath = "\\EFI\\BOOT\\BOOTX64.EFI";
/// Where efivarfs is mounted.
inline constexpr std::string_view kEfivarsDir = "/sys/firmware/efi/efivars";

/// A boot loader on an ESP: its path in firmware form ("\EFI\debian\shimx64.efi") and the
/// label of its boot entry.
struct EfiLoader {
  std::string path;
  std::string label;
  friend bool operator==(const EfiLoader&, const EfiLoader&) = default;
};

/// What an ESP holds.
struct EspContent {
  std::vector<EfiLoader> loaders;  ///< in the order their entries should boot
  bool removablePath = false;      ///< \EFI\BOOT\BOOTX64.EFI exists
};

/// Parses a shim BOOTX64.CSV found in \EFI\<vendorDir>\: UTF-16LE (with or without its byte
/// order mark) or plain ASCII/UTF-8 lines "loader,label,options,description"; each line gives
/// {"\EFI\<vendorDir>\<loader>", label}. Empty lines and lines without a loader are skipped;
/// a missing label becomes the vendor directory's name. Pure.
std::vector<EfiLoader> parseBootCsv(std::string_view raw, std::string_view vendorDir);

/// Reads the loaders of an ESP through `esp` (a SysfsReader rooted at its mount point; FAT
/// names are matched without regard to case): the BOOTX64.CSV of every vendor directory
/// (\EFI\<vendor>) whose loader exists; else each vendor directory's shimx64.efi, else its
/// grubx64.efi; else the removable-media path, labelled "kiln". Directories are visited in
/// sorted order; \EFI\BOOT\ is never a vendor.
EspContent readEspContent(SysfsReader& esp);

/// One line of `efibootmgr`'s listing.
struct EfiBootEntry {
  std::string number;  ///< "0004"
  std::string label;   ///< "debian"
  friend bool operator==(const EfiBootEntry&, const EfiBootEntry&) = default;
};

/// Parses efibootmgr's listing ("Boot0004* debian\tHD(...)"): number and label of every
/// BootXXXX line. Pure.
std::vector<EfiBootEntry> parseEfibootmgrList(std::string_view text);

/// Reads what an ESP partition (a device node) holds. The real one mounts it read-only.
using EspInspector = std::function<Result<EspContent>(StepContext&, const std::string& partition)>;

/// Mounts `partition` read-only (`mount -t vfat -o ro` through the runner) on a temporary
/// directory, reads it with readEspContent, unmounts it.
Result<EspContent> inspectMountedEsp(StepContext& context, const std::string& partition);

/// Makes the whole-disk image on `rootDevice` boot on this UEFI machine (see above).
/// `sysfs` tells whether efivarfs is there (kEfivarsDir). Result {"efi_system_partitions":
/// ["/dev/vda2", ...], "efi_boot_entries": [{"disk", "partition", "loader", "label"}, ...]}
/// (entries empty when the removable path is relied upon). Errors: InvalidArgument when the
/// image has no ESP or no loader, or an ESP does not fit on a member disk; Internal when a tool
/// fails.
Result<nlohmann::json> installUefiBoot(StepContext& context, const std::string& rootDevice,
                                       SysfsReader& sysfs,
                                       const EspInspector& inspect = inspectMountedEsp);

}  // namespace kiln::agent
