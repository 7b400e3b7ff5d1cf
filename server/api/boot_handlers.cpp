#include "server/api/boot_handlers.h"

#include "server/api/handler_support.h"
#include "server/drivers/netboot/loader_files.h"
#include "server/drivers/netboot/netboot.h"
#include "server/drivers/ramdisk/ramdisk_deploy.h"
#include "server/drivers/vmedia/vmedia_boot.h"
#include "server/local_files.h"
#include "server/model/resources.h"
#include "shared/core/log.h"
#include "shared/json/json_util.h"
#include "shared/net/mac.h"

namespace kiln::server {
namespace {

/// The boot interfaces whose machines run iPXE and fetch the per-MAC script: ipxe, http-ipxe,
/// and http (firmware without UEFI HTTP boot falls back to PXE and iPXE).
bool bootsIpxeScript(std::string_view bootInterface) {
  return bootInterface == "ipxe" || bootInterface == "http-ipxe" || bootInterface == "http";
}

ApiResponse textResponse(std::string body, std::string contentType = "text/plain") {
  ApiResponse r;
  r.status = 200;
  r.body = std::move(body);
  r.contentType = std::move(contentType);
  return r;
}

}  // namespace

Result<ApiResponse> BootHandlers::chain(RequestContext& ctx) {
  return textResponse(netboot::chainScript(ctx.baseUrl));
}

Result<ApiResponse> BootHandlers::macScript(RequestContext& ctx) {
  std::string name = ctx.param(0);
  constexpr std::string_view kSuffix = ".ipxe";
  if (name.size() <= kSuffix.size() || name.substr(name.size() - kSuffix.size()) != kSuffix) {
    return notFound("The resource could not be found.");
  }
  // iPXE's ${mac:hexhyp} names the script with '-'; ':' is taken too.
  const auto mac = net::parseMac(std::string_view(name).substr(0, name.size() - kSuffix.size()),
                                 net::MacSeparators::ColonOrDash);
  if (!mac) return invalid("Expected a MAC address in the boot script name, got " + name);

  auto tx = KILN_TRY(deps_.storage.begin(Storage::Mode::Read));
  ListQuery q;
  q.limit = 1;
  q.filters.push_back({ListFilter::Op::Equals, kPortAddress, Value::text(*mac), {}});
  auto ports = KILN_TRY(tx->ports().list(q));
  if (ports.empty() || ports[0][kPortNodeUuid].isNull()) {
    return textResponse(netboot::localBootScript("no node has a port with MAC " + *mac));
  }
  auto node = KILN_TRY(tx->nodes().findBy(kNodeUuid, Value::text(ports[0].str(kPortNodeUuid))));
  if (!node) return textResponse(netboot::localBootScript("the port's node is gone"));
  const auto internal = objectField(*node, kNodeDriverInternalInfo);
  if (bootsIpxeScript(node->str(kNodeBootInterface)) &&
      internal.value("boot_target", "") == ramdisk::kBootTarget) {
    return ramdiskScript(ctx, *node);
  }
  if (!bootsIpxeScript(node->str(kNodeBootInterface)) || internal.value("boot_target", "") != "agent") {
    return textResponse(netboot::localBootScript("node " + node->uuid() + " boots from its disk"));
  }
  const auto driverInfo = objectField(*node, kNodeDriverInfo);
  auto images = KILN_TRY(netboot::deployImages(deps_.config, driverInfo));
  auto url = [&](const std::string& location, const char* which) {
    return netboot::isUrl(location) ? location : ctx.baseUrl + "/boot/" + node->uuid() + "/" + which;
  };
  // ctx.baseUrl is [api] public_endpoint when set, else the address the machine reached.
  const std::string& apiUrl = deps_.config.apiUrl.empty() ? ctx.baseUrl : deps_.config.apiUrl;
  // The configured and the node's kernel arguments, then kiln.api_ca= ([agent] api_ca_file).
  auto params = KILN_TRY(netboot::agentAppendParams(deps_.config, driverInfo));
  return textResponse(netboot::agentScript(url(images.kernel, "kernel"), url(images.ramdisk, "ramdisk"),
                                           apiUrl, params));
}

Result<ApiResponse> BootHandlers::ramdiskScript(RequestContext& ctx, const Record& node) {
  // A ramdisk deployment (server/drivers/ramdisk/ramdisk_deploy.h): its kernel and initramfs,
  // or its ISO. Local files are served at /boot/<uuid>/instance_kernel and /instance_ramdisk.
  const auto instanceInfo = objectField(node, kNodeInstanceInfo);
  auto boot = ramdisk::instanceBoot(&deps_.config, instanceInfo);
  TaskContext task;
  task.instanceInfo = instanceInfo;
  task.driverInfo = objectField(node, kNodeDriverInfo);
  auto cmdline = boot ? ramdisk::netbootCommandLine(deps_.config, task, *boot)
                      : Result<std::string>(std::unexpected(boot.error()));
  if (!boot || !cmdline || (!boot->bootIso.empty() && !netboot::isUrl(boot->bootIso))) {
    // The reason goes to the log (it may quote the node's values): node validate tells it.
    Logger("boot").warning("cannot boot the node's ramdisk deployment",
                           {{"node", node.uuid()},
                            {"reason", !boot      ? boot.error().message
                                       : !cmdline ? cmdline.error().message
                                                  : std::string("boot_iso is not a URL")}});
    return textResponse(
        netboot::localBootScript("node " + node.uuid() + "'s ramdisk deployment cannot be booted"));
  }
  if (!boot->bootIso.empty()) return textResponse(netboot::isoScript(boot->bootIso));
  auto url = [&](const std::string& location, const char* which) {
    return netboot::isUrl(location) ? location : ctx.baseUrl + "/boot/" + node.uuid() + "/" + which;
  };
  return textResponse(netboot::ramdiskScript(url(boot->kernel, "instance_kernel"),
                                             url(boot->ramdisk, "instance_ramdisk"), *cmdline));
}

Result<ApiResponse> BootHandlers::file(RequestContext& ctx) {
  if (ctx.param(0) == "loaders") return loader(ctx);
  const std::string& which = ctx.param(1);
  const bool instance = which == "instance_kernel" || which == "instance_ramdisk";
  if (which != "kernel" && which != "ramdisk" && !instance) {
    return notFound("The resource could not be found.");
  }
  auto tx = KILN_TRY(deps_.storage.begin(Storage::Mode::Read));
  auto node = KILN_TRY(tx->nodes().findBy(kNodeUuid, Value::text(ctx.param(0))));
  // Unauthenticated: every refusal is the same 404, naming no path (the reason goes to the log,
  // and node validate / last_error tell the operator).
  constexpr const char* kNotFound = "The resource could not be found.";
  if (!node || !bootsIpxeScript(node->str(kNodeBootInterface))) return notFound(kNotFound);
  std::string location;
  if (instance) {
    // The instance's own files, only while the node boots them.
    if (objectField(*node, kNodeDriverInternalInfo).value("boot_target", "") !=
        ramdisk::kBootTarget) {
      return notFound(kNotFound);
    }
    auto boot = ramdisk::instanceBoot(&deps_.config, objectField(*node, kNodeInstanceInfo));
    if (!boot || !boot->bootIso.empty()) return notFound(kNotFound);
    location = which == "instance_kernel" ? boot->kernel : boot->ramdisk;
  } else {
    auto images = netboot::deployImages(deps_.config, objectField(*node, kNodeDriverInfo));
    if (!images) return notFound(kNotFound);
    location = which == "kernel" ? images->kernel : images->ramdisk;
  }
  if (netboot::isUrl(location)) return notFound(kNotFound);  // iPXE fetches URLs itself
  auto body = readLocalFile(deps_.config, location);
  if (!body) {
    Logger("boot").warning("refused to serve an agent image",
                           {{"node", node->uuid()}, {"file", which}, {"reason", body.error().message}});
    return notFound(kNotFound);
  }
  return textResponse(std::move(*body), "application/octet-stream");
}

Result<ApiResponse> BootHandlers::loader(RequestContext& ctx) {
  // GET /boot/loaders/<name>: a boot loader kiln-server copied into tftp_root at start-up (UEFI
  // HTTP boot fetches iPXE by HTTP). Public: only the configured loaders' names, only from
  // tftp_root; anything else is the same 404.
  const std::string& name = ctx.param(1);
  bool known = false;
  for (const auto& loaderName : loaderFileNames(deps_.config)) known = known || loaderName == name;
  if (!known) return notFound("The resource could not be found.");
  auto body = readRegularFile(deps_.config.tftpRoot + "/" + name);
  if (!body) return notFound("The resource could not be found.");
  return textResponse(std::move(*body), "application/efi");
}

Result<ApiResponse> BootHandlers::virtualMedia(RequestContext& ctx) {
  constexpr const char* kNotFound = "The resource could not be found.";
  const std::string& name = ctx.param(0);
  if (!vmedia::isBootIsoName(name)) return notFound(kNotFound);
  auto body = readRegularFile(deps_.config.httpRoot + "/" + name);
  if (!body) return notFound(kNotFound);
  return textResponse(std::move(*body), "application/octet-stream");
}

}  // namespace kiln::server
