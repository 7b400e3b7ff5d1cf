// File: server/drivers/vmedia/boot_iso.h
//
// The bootable ISO the redfish-virtual-media boot interface hands a BMC: the agent kernel and
// initramfs with the agent's kernel command line baked in, bootable by a legacy BIOS (El
// Torito with ISOLINUX) and by UEFI firmware (an El Torito EFI image: a FAT file holding
// EFI/BOOT/BOOTX64.EFI, a GRUB built with grub-mkstandalone whose embedded configuration finds
// this ISO by a marker file and boots the kernel from it). Built from Debian's packages through
// the CommandRunner: grub-mkstandalone (grub-common, grub-efi-amd64-bin), mkfs.vfat
// (dosfstools), mmd/mcopy (mtools), xorriso, with ISOLINUX's files (isolinux,
// syslinux-common). The GRUB is not signed: Secure Boot must be off to boot the ISO (or use
// driver_info deploy_iso with an ISO of your own).
#pragma once

#include <string>

#include "shared/core/error.h"
#include "shared/exec/command_runner.h"

namespace kiln::server::vmedia {

/// Debian's ISOLINUX boot file and the syslinux module it loads first.
inline constexpr const char* kIsolinuxBin = "/usr/lib/ISOLINUX/isolinux.bin";
inline constexpr const char* kLdlinuxC32 = "/usr/lib/syslinux/modules/bios/ldlinux.c32";
/// Volume label of the ISOs built here.
inline constexpr const char* kBootIsoLabel = "KILN_AGENT";

struct BootIsoSpec {
  std::string kernel;   ///< local path of the agent kernel
  std::string ramdisk;  ///< local path of the agent initramfs
  std::string cmdline;  ///< the whole kernel command line
  std::string marker;   ///< a name unique to this ISO (the file GRUB searches for)
  std::string output;   ///< where the ISO is written (replaced)
  /// The node's network_data (1.66) as JSON text, written to
  /// /openstack/latest/network_data.json as Ironic does (the ramdisk configures its network
  /// from it: image-build/init); "" = none.
  std::string networkData;
};

/// Where buildBootIso puts BootIsoSpec::networkData, and the kernel argument the virtual media
/// boot interface adds when it does (the ramdisk then reads the file from the CD).
inline constexpr const char* kNetworkDataIsoPath = "openstack/latest/network_data.json";
inline constexpr const char* kNetworkDataArgument = "kiln.network_data=vmedia";

/// ISOLINUX's configuration: serial console, no prompt, one entry booting /vmlinuz with
/// initrd=/initrd and `cmdline`. Pure.
std::string isolinuxConfig(const std::string& cmdline);

/// The GRUB configuration embedded in BOOTX64.EFI: serial and console terminals, no menu,
/// root = the device holding /<marker>, then /vmlinuz `cmdline` and /initrd. Pure.
std::string grubIsoConfig(const std::string& marker, const std::string& cmdline);

/// Builds the ISO (see above) into spec.output. InvalidArgument when the marker is not a
/// plain file name, Unavailable naming the Debian package when a tool or ISOLINUX file is
/// missing, Internal with the tool's output when one fails.
Result<void> buildBootIso(CommandRunner& runner, const BootIsoSpec& spec);

}  // namespace kiln::server::vmedia
