// File: server/api/boot_handlers.h
//
// The network-boot endpoints of the ipxe boot interface (server/drivers/netboot/netboot.h).
// Public like Ironic's boot files: a machine that network-boots has no credentials.
//
//   GET /boot.ipxe                  what DHCP hands iPXE: chains to the MAC's own script
//   GET /boot/<mac>.ipxe            the agent ramdisk while the node needs the agent, else the
//                                   local disk ("52-54-00-12-34-56" or with colons)
//   GET /boot/<node uuid>/kernel    the node's agent kernel / initramfs, when they are local
//   GET /boot/<node uuid>/ramdisk   files (URLs are handed to iPXE as they are)
//   GET /boot/<node uuid>/instance_kernel, /instance_ramdisk
//                                   a ramdisk deployment's own kernel / initramfs when local,
//                                   while the node boots them (boot_target "ramdisk"); the
//                                   MAC's script then boots them, or sanboots its boot_iso
#pragma once

#include "server/api/api_service.h"
#include "server/api/router.h"

namespace kiln::server {

class BootHandlers {
 public:
  explicit BootHandlers(ApiDeps& deps) : deps_(deps) {}

  Result<ApiResponse> chain(RequestContext& ctx);
  Result<ApiResponse> macScript(RequestContext& ctx);
  Result<ApiResponse> file(RequestContext& ctx);
  /// GET /boot/loaders/{name} (routed through file()): a boot loader from [pxe] tftp_root, only
  /// the names server/drivers/netboot/loader_files.h copies there.
  Result<ApiResponse> loader(RequestContext& ctx);
  /// GET /v1/vmedia/{name}: an ISO the redfish-virtual-media boot interface wrote into
  /// [deploy] http_root; only names it gives (vmedia::isBootIsoName), only regular files (no
  /// symbolic link is followed); anything else is the same 404.
  Result<ApiResponse> virtualMedia(RequestContext& ctx);

 private:
  /// The MAC's script of a node with boot_target "ramdisk" (a ramdisk deployment).
  Result<ApiResponse> ramdiskScript(RequestContext& ctx, const Record& node);

  ApiDeps& deps_;
};

}  // namespace kiln::server
