// File: server/drivers/vmedia/vmedia_boot.h
//
// The redfish-virtual-media boot interface (Ironic's name): the agent boots from a CD the BMC
// attaches, with no PXE or DHCP boot file on the provisioning network.
//
//   prepareRamdisk   aligns the boot mode (sync_boot_mode), builds the node's ISO into
//                    [deploy] http_root (server/drivers/vmedia/boot_iso.h: the agent kernel and
//                    initramfs, kiln.api_url and the agent's kernel arguments baked in) or takes
//                    driver_info/deploy_iso (a URL handed to the BMC as is, or a local file
//                    copied into http_root), inserts its URL into the BMC's virtual CD
//                    (server/drivers/redfish/redfish_virtual_media.h) and sets a one-time boot
//                    from it;
//   prepareInstance  ejects the CD, deletes the ISO and boots from the disk from then on;
//   clean-ups        eject and delete as well (an unreachable BMC is logged, not fatal).
//
// A ramdisk deployment (server/drivers/ramdisk/ramdisk_deploy.h): prepareInstance inserts
// instance_info.boot_iso (a URL as it is, a local file copied into http_root) or an ISO built
// from its local kernel and ramdisk ("root=/dev/ram0 text" and ramdisk_kernel_arguments), boots
// the CD persistently and sets boot_target "ramdisk"; cleanUpInstance ejects and deletes it.
//
// The ISO's URL: [deploy] external_http_url + "/" + name when set (a web server serving
// http_root, as in Ironic), else <api_url>/v1/vmedia/<name>, which kiln-server serves itself
// (GET /v1/vmedia/{name}: public, only files named like the ISOs it writes, only from
// http_root). Names carry 256 random bits: "boot-<node uuid>-<token>.iso".
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/drivers/interfaces.h"
#include "shared/exec/command_runner.h"
#include "shared/http/http_client.h"

namespace kiln::server::vmedia {

/// True for names the interface gives its ISOs: "boot-" + 36-character UUID + "-" + 43
/// characters of base64url + ".iso".
bool isBootIsoName(std::string_view name);

/// The URL BMCs fetch the ISO `name` from (see above); "" when neither [deploy]
/// external_http_url nor an API URL is configured.
std::string bootIsoUrl(const Config& config, const std::string& name);

/// A new name for an ISO of node `nodeUuid` in http_root that isBootIsoName accepts (the node's
/// UUID and a random token, so that the URL cannot be guessed).
std::string newBootIsoName(const std::string& nodeUuid);

/// The redfish-virtual-media boot interface, and `http`: UEFI HTTP boot of the same ISO, its
/// URL handed out by DHCP (server/drivers/dhcp/dhcp_provider.h).
std::vector<std::unique_ptr<HardwareInterface>> makeVirtualMediaInterfaces(HttpClientPtr http,
                                                                           CommandRunnerPtr commands);

}  // namespace kiln::server::vmedia
