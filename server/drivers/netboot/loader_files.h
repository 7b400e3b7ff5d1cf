// File: server/drivers/netboot/loader_files.h
//
// The first-stage boot loaders a machine fetches over TFTP before anything of Kiln runs
// (iPXE for the ipxe boot interface; pxelinux, or shim + GRUB on UEFI, for pxe), copied from
// the host's Debian packages into [pxe] tftp_root at start-up, as Ironic's
// [pxe] loader_file_paths does. The operator's DHCP server names them as boot files.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shared/core/error.h"

namespace kiln::server {

struct Config;

/// What is copied when [pxe] loader_file_paths is not set (each only when its Debian package
/// is installed): iPXE for BIOS (undionly.kpxe) and UEFI (snponly.efi, ipxe.efi; package
/// ipxe), shim and Debian's signed network GRUB for UEFI pxe with Secure Boot (bootx64.efi,
/// grubx64.efi; shim-signed, grub-efi-amd64-signed), pxelinux for BIOS pxe (pxelinux.0,
/// ldlinux.c32; pxelinux, syslinux-common).
inline constexpr std::pair<std::string_view, std::string_view> kDefaultLoaderFiles[] = {
    {"undionly.kpxe", "/usr/lib/ipxe/undionly.kpxe"},
    {"snponly.efi", "/usr/lib/ipxe/snponly.efi"},
    {"ipxe.efi", "/usr/lib/ipxe/ipxe.efi"},
    {"bootx64.efi", "/usr/lib/shim/shimx64.efi.signed"},
    {"grubx64.efi", "/usr/lib/grub/x86_64-efi-signed/grubnetx64.efi.signed"},
    {"pxelinux.0", "/usr/lib/PXELINUX/pxelinux.0"},
    {"ldlinux.c32", "/usr/lib/syslinux/modules/bios/ldlinux.c32"},
};

/// The destination names of the loaders `config` copies (loader_file_paths when set, else every
/// default name): what GET /boot/loaders/<name> may serve from tftp_root.
std::vector<std::string> loaderFileNames(const Config& config);

/// Copies the loader files of `config` into config.tftpRoot (made if missing), each written to
/// a temporary name and renamed, mode 0644. Returns the destination names copied. Unset
/// loader_file_paths: missing defaults are skipped. Set: a missing or unreadable source is
/// InvalidArgument naming it. Internal when tftp_root cannot be written.
Result<std::vector<std::string>> installLoaderFiles(const Config& config);

}  // namespace kiln::server
