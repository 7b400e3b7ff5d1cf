// File: server/drivers/netboot/netboot.h
//
// Network boot of the agent ramdisk, Ironic's two boot interfaces:
//
//   ipxe  DHCP hands iPXE kiln-server's GET /boot.ipxe, which chains to the booting MAC's own
//         script GET /boot/<mac>.ipxe: the agent kernel and initramfs (kernel command line with
//         kiln.api_url) while the node needs the agent (driver_internal_info.boot_target =
//         "agent"), a local-disk boot otherwise. Kernel and initramfs are URLs, or local files
//         kiln-server serves at GET /boot/<node uuid>/kernel and /ramdisk.
//   pxe   per-MAC pxelinux configuration files (pxelinux.cfg/01-<mac>) on BIOS machines, GRUB
//         ones (grub.cfg-01-<mac>, <mac>.conf, and grub/grub.cfg) on UEFI machines, and the
//         node's kernel and initramfs, under [pxe] tftp_root, for a TFTP server such as dnsmasq.
//         The boot mode is server/drivers/boot_mode.h's, aligned with the BMC first.
//
// A node with the ramdisk deploy interface boots its instance's kernel and initramfs (or, with
// ipxe, its boot_iso) the same ways once deployed: driver_internal_info.boot_target =
// "ramdisk", the iPXE script boots them (local files served at GET /boot/<node uuid>/
// instance_kernel and /instance_ramdisk), the pxe interface copies them under tftp_root/<node
// uuid>/ and writes the per-MAC configurations for them (server/drivers/ramdisk/ramdisk_deploy.h).
//
// Which kernel and initramfs: the node's driver_info deploy_kernel / deploy_ramdisk (a path or
// a URL), defaulting to [conductor] deploy_kernel / deploy_ramdisk, as in Ironic; the kernel
// arguments likewise from driver_info kernel_append_params or [pxe] kernel_append_params. The
// management interface points the next boot at the network (ramdisk) or the disk (instance).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/config.h"
#include "server/drivers/interfaces.h"

namespace kiln::server::netboot {

/// The agent kernel and initramfs of a node.
struct DeployImages {
  std::string kernel;
  std::string ramdisk;
};

/// driver_info deploy_kernel/deploy_ramdisk, else the configuration's. InvalidArgument in
/// Ironic's "missing in driver_info" wording when neither is set.
Result<DeployImages> deployImages(const Config& config, const nlohmann::json& driverInfo);

/// The agent's extra kernel arguments: driver_info kernel_append_params when it is a string
/// (even an empty one), with "%default%" replaced by [pxe] kernel_append_params, as in Ironic;
/// else the configuration's.
std::string kernelAppendParams(const Config& config, const nlohmann::json& driverInfo);

/// Longest kernel command line an x86 kernel takes (COMMAND_LINE_SIZE 2048 with its NUL);
/// boot loaders truncate or refuse longer ones.
inline constexpr size_t kMaxKernelCmdline = 2047;

/// The kernel argument that tells booting agents the CA of the API's certificate, from
/// [agent] api_ca_file: "kiln.api_ca=" and, for each PEM certificate of the file, its DER in
/// standard base64 (the PEM body without line breaks), comma-separated. An EC P-256 CA takes
/// 540 to 780 bytes (short or long subject), an RSA-2048 one 1,060 to 1,300; an RSA-4096 one
/// (1,750 or more) does not fit. Empty when the option is unset.
/// InvalidArgument when the file cannot be read, holds no PEM certificate, or has a CERTIFICATE
/// block that is not base64 of one whole DER SEQUENCE (cut, padded, or with PEM headers).
Result<std::string> agentCaParam(const Config& config);

/// What follows kiln.api_url= on the agent's kernel command line: kernelAppendParams, then
/// agentCaParam (last, so that a truncating boot loader cuts the CA, which the agent then
/// refuses loudly, rather than the settings before it). InvalidArgument when the parameters
/// hold a control character (a newline would add lines to the boot loader's files).
Result<std::string> agentAppendParams(const Config& config, const nlohmann::json& driverInfo);

/// A problem when the agent's kernel command line could exceed kMaxKernelCmdline: `apiUrl`
/// plus `appendParams` plus what the boot loader adds (initrd=, BOOTIF=, pxelinux's ip=).
std::optional<std::string> agentCmdlineTooLong(const std::string& apiUrl,
                                               const std::string& appendParams);

/// True for http:// and https:// locations.
bool isUrl(std::string_view location);

/// GET /boot.ipxe: chains to the booting MAC's script under `baseUrl`.
std::string chainScript(const std::string& baseUrl);

/// The iPXE script that boots the agent.
std::string agentScript(const std::string& kernelUrl, const std::string& ramdiskUrl,
                        const std::string& apiUrl, const std::string& appendParams);

/// The iPXE script that boots the local disk (or leaves the boot to the firmware).
std::string localBootScript(std::string_view why);

/// The iPXE script of a ramdisk deployment (server/drivers/ramdisk/ramdisk_deploy.h): the
/// instance's kernel with `cmdline` and its initramfs, or its ISO through sanboot.
std::string ramdiskScript(const std::string& kernelUrl, const std::string& ramdiskUrl,
                          const std::string& cmdline);
std::string isoScript(const std::string& isoUrl);

/// pxelinux and GRUB configurations of a ramdisk deployment (paths as for the agent's).
std::string pxeRamdiskConfig(const std::string& kernel, const std::string& ramdisk,
                             const std::string& cmdline);
std::string grubRamdiskConfig(const std::string& kernel, const std::string& ramdisk,
                              const std::string& cmdline);

/// pxelinux: the agent configuration (paths relative to the TFTP root) and the local one.
std::string pxeAgentConfig(const std::string& kernel, const std::string& ramdisk,
                           const std::string& apiUrl, const std::string& appendParams);
std::string pxeLocalConfig();

/// GRUB (the pxe boot interface on UEFI machines): the agent's configuration for the port
/// `mac` (paths from the TFTP root; BOOTIF names the port, as pxelinux's ipappend does), the
/// local one (exit to the firmware's next boot option), and the master grub/grub.cfg that
/// loads /<mac>.conf ($net_default_mac), as Ironic's documentation lays it out.
std::string grubAgentConfig(const std::string& kernel, const std::string& ramdisk,
                            const std::string& apiUrl, const std::string& appendParams,
                            const std::string& mac);
std::string grubLocalConfig();
std::string grubMasterConfig();

/// Ironic's names of a port's GRUB configuration under the TFTP root:
/// "grub.cfg-01-52-54-00-12-34-56" (GRUB's own per-MAC lookup) and "52:54:00:12:34:56.conf".
std::vector<std::string> grubConfigNames(std::string_view mac);

/// pxelinux.cfg file name of a MAC: "01-52-54-00-12-34-56".
std::string pxeConfigName(std::string_view mac);

/// The URL agents reach the API at when nothing in a request says it: [conductor] api_url,
/// else [api] public_endpoint; empty when neither is set.
std::string configuredApiUrl(const Config& config);

/// The boot device that starts a network boot: "uefi http" (Redfish UefiHttp) when
/// `preferHttp`, the node boots in UEFI mode and its management interface offers it, else "pxe"
/// (firmware without HTTP boot falls back to PXE).
Result<std::string> networkBootDevice(TaskContext& task, bool preferHttp);

/// The ipxe, http-ipxe and pxe boot interfaces. http-ipxe is ipxe started by UEFI HTTP boot:
/// DHCP hands the firmware iPXE by HTTP (server/drivers/dhcp/dhcp_provider.h) and the boot
/// device is "uefi http" where the BMC has it.
std::vector<std::unique_ptr<HardwareInterface>> makeNetbootInterfaces();

}  // namespace kiln::server::netboot
