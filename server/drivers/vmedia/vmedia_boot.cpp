#include "server/drivers/vmedia/vmedia_boot.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>

#include "server/drivers/agent/agent_session.h"
#include "server/drivers/boot_mode.h"
#include "server/drivers/netboot/netboot.h"
#include "server/drivers/ramdisk/ramdisk_deploy.h"
#include "server/drivers/redfish/redfish_common.h"
#include "server/drivers/redfish/redfish_virtual_media.h"
#include "server/drivers/vmedia/boot_iso.h"
#include "server/local_files.h"
#include "server/model/node.h"
#include "shared/core/secrets.h"

namespace kiln::server::vmedia {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::string_view kIsoPrefix = "boot-";
constexpr std::string_view kIsoSuffix = ".iso";
/// driver_internal_info key of the node's ISO in http_root.
constexpr const char* kIsoKey = "vmedia_boot_iso";

std::string deployIso(const TaskContext& task) {
  auto it = task.driverInfo.find("deploy_iso");
  return it != task.driverInfo.end() && it->is_string() ? it->get<std::string>() : "";
}

class RedfishVirtualMediaBoot final : public BootInterface {
 public:
  RedfishVirtualMediaBoot(HttpClientPtr http, CommandRunnerPtr commands)
      : http_(std::move(http)), commands_(std::move(commands)) {}

  std::string_view name() const override { return "redfish-virtual-media"; }

  std::optional<std::string> validate(const TaskContext& task) const override {
    if (auto problem = validateRedfishDriverInfo(task)) return problem;
    if (!task.config) return std::nullopt;
    const Config& config = *task.config;
    if (const std::string iso = deployIso(task); !iso.empty()) {
      if (netboot::isUrl(iso)) return std::nullopt;  // the BMC fetches it from there
      if (auto file = checkLocalFile(config, iso); !file) return "The deploy ISO " + file.error().message + ".";
    } else {
      auto images = netboot::deployImages(config, task.driverInfo);
      if (!images) return images.error().message;
      for (const auto& location : {images->kernel, images->ramdisk}) {
        if (netboot::isUrl(location)) {
          return "The redfish-virtual-media boot interface builds its ISO from local agent images: " +
                 location + " is a URL (use a local file, or driver_info/deploy_iso).";
        }
        if (auto file = checkLocalFile(config, location); !file) return "The agent image " + file.error().message + ".";
      }
      if (netboot::configuredApiUrl(config).empty()) {
        return "The redfish-virtual-media boot interface needs [conductor] api_url (or [api] "
               "public_endpoint): the URL the agent reaches kiln-server at, baked into its ISO.";
      }
      auto params = netboot::agentAppendParams(config, task.driverInfo);
      if (!params) return params.error().message;
      if (auto tooLong = netboot::agentCmdlineTooLong(netboot::configuredApiUrl(config), *params)) return tooLong;
    }
    if (bootIsoUrl(config, "x").empty()) {
      return "The redfish-virtual-media boot interface needs [deploy] external_http_url or "
             "[conductor] api_url: the URL the BMC fetches the ISO from.";
    }
    return std::nullopt;
  }

  Result<void> prepareRamdisk(TaskContext& task) override {
    if (auto problem = validate(task)) return invalid(*problem);
    KILN_TRY_VOID(syncBootMode(task));
    removeIso(task);
    const std::string url = KILN_TRY(prepareIso(task));
    auto target = KILN_TRY(connectRedfish(http_, task));
    const json system = KILN_TRY(target.client->get(target.systemPath));
    const VirtualMediaSlot slot = KILN_TRY(findVirtualMediaSlot(target, system, "CD"));
    KILN_TRY_VOID(insertVirtualMedia(target, slot, url));
    task.log.info("virtual media inserted", {{"node", task.uuid()}, {"slot", slot.path}});
    KILN_TRY_VOID(task.driver->management->setBootDevice(task, "cdrom", false));
    task.internalInfo["boot_target"] = "agent";
    return {};
  }

  Result<void> cleanUpRamdisk(TaskContext& task) override {
    if (task.internalInfo.value("boot_target", "") == "agent") task.internalInfo.erase("boot_target");
    ejectQuietly(task);
    removeIso(task);
    return {};
  }

  Result<void> prepareInstance(TaskContext& task) override {
    KILN_TRY_VOID(syncBootMode(task));
    KILN_TRY_VOID(eject(task));
    removeIso(task);
    if (ramdisk::isRamdiskDeploy(task.node)) return prepareRamdiskInstance(task);
    KILN_TRY_VOID(task.driver->management->setBootDevice(task, "disk", true));
    task.internalInfo["boot_target"] = "disk";
    return {};
  }

  Result<void> cleanUpInstance(TaskContext& task) override {
    task.internalInfo.erase("boot_target");
    ejectQuietly(task);
    removeIso(task);
    return {};
  }

  bool ramdiskBoot() const override { return true; }

  std::optional<std::string> validateRamdiskBoot(const TaskContext& task) const override {
    auto boot = ramdisk::instanceBoot(task.config, task.instanceInfo);
    if (!boot) return boot.error().message;
    if (!boot->bootIso.empty()) {
      if (netboot::isUrl(boot->bootIso)) return std::nullopt;  // the BMC fetches it from there
    } else {
      for (const auto& location : {boot->kernel, boot->ramdisk}) {
        if (netboot::isUrl(location)) {
          return "The redfish-virtual-media boot interface builds the instance's ISO from local "
                 "files: " +
                 maskUrl(location) +
                 " is a URL (use a local file, or "
                 "instance_info.boot_iso).";
        }
      }
      if (auto line = ramdisk::isoCommandLine(*boot); !line) return line.error().message;
    }
    if (task.config && bootIsoUrl(*task.config, "x").empty()) {
      return "The redfish-virtual-media boot interface needs [deploy] external_http_url or "
             "[conductor] api_url: the URL the BMC fetches the instance's ISO from.";
    }
    return std::nullopt;
  }

 private:
  /// A ramdisk deployment (server/drivers/ramdisk/ramdisk_deploy.h): instance_info.boot_iso
  /// (a URL handed to the BMC as it is, a local file copied into http_root) or an ISO built
  /// from its kernel and ramdisk, in the virtual CD, which the node boots from every time.
  Result<void> prepareRamdiskInstance(TaskContext& task) {
    if (auto problem = validateRamdiskBoot(task)) return invalid(*problem);
    const Config& config = *task.config;
    const auto boot = KILN_TRY(ramdisk::instanceBoot(task.config, task.instanceInfo));
    std::string url = boot.bootIso;
    if (!netboot::isUrl(url)) {
      std::error_code ec;
      fs::create_directories(config.httpRoot, ec);
      if (ec)
        return internalError("Cannot create [deploy] http_root " + config.httpRoot + ": " +
                             ec.message());
      const std::string name = newBootIsoName(task.uuid());
      const std::string path = (fs::path(config.httpRoot) / name).string();
      if (!boot.bootIso.empty()) {
        KILN_TRY_VOID(copyLocalFile(config, boot.bootIso, path));
      } else {
        const std::string kernel = KILN_TRY(checkLocalFile(config, boot.kernel));
        const std::string initrd = KILN_TRY(checkLocalFile(config, boot.ramdisk));
        const std::string cmdline = KILN_TRY(ramdisk::isoCommandLine(boot));
        KILN_TRY_VOID(buildBootIso(
            *commands_,
            BootIsoSpec{kernel, initrd, cmdline, "kiln-ramdisk-" + task.uuid(), path, ""}));
      }
      ::chmod(path.c_str(), 0644);
      task.internalInfo[kIsoKey] = name;
      url = bootIsoUrl(config, name);
    }
    auto target = KILN_TRY(connectRedfish(http_, task));
    const json system = KILN_TRY(target.client->get(target.systemPath));
    const VirtualMediaSlot slot = KILN_TRY(findVirtualMediaSlot(target, system, "CD"));
    KILN_TRY_VOID(insertVirtualMedia(target, slot, url));
    task.log.info("instance ISO inserted", {{"node", task.uuid()}, {"slot", slot.path}});
    KILN_TRY_VOID(task.driver->management->setBootDevice(task, "cdrom", true));
    task.internalInfo["boot_target"] = ramdisk::kBootTarget;
    return {};
  }

  /// The URL of the node's ISO: deploy_iso as given when it is a URL, else a file written to
  /// http_root (recorded in driver_internal_info for the clean-ups).
  Result<std::string> prepareIso(TaskContext& task) {
    const Config& config = *task.config;
    const std::string given = deployIso(task);
    if (netboot::isUrl(given)) return given;
    std::error_code ec;
    fs::create_directories(config.httpRoot, ec);
    if (ec) return internalError("Cannot create [deploy] http_root " + config.httpRoot + ": " + ec.message());
    const std::string name = newBootIsoName(task.uuid());
    const std::string path = (fs::path(config.httpRoot) / name).string();
    if (!given.empty()) {
      KILN_TRY_VOID(copyLocalFile(config, given, path));
    } else {
      const auto images = KILN_TRY(netboot::deployImages(config, task.driverInfo));
      const std::string kernel = KILN_TRY(checkLocalFile(config, images.kernel));
      const std::string ramdisk = KILN_TRY(checkLocalFile(config, images.ramdisk));
      const std::string params = KILN_TRY(netboot::agentAppendParams(config, task.driverInfo));
      std::string cmdline = "kiln.api_url=" + netboot::configuredApiUrl(config) + " " + params;
      // The node's network_data (1.66) rides on the ISO, as Ironic injects it, for networks
      // without DHCP; the ramdisk's init configures the NICs from it.
      const json networkData = objectField(task.node, kNodeNetworkData);
      std::string networkText;
      if (networkData.is_object() && !networkData.empty()) {
        networkText = networkData.dump(2);
        cmdline += std::string(" ") + kNetworkDataArgument;
      }
      KILN_TRY_VOID(buildBootIso(*commands_, BootIsoSpec{kernel, ramdisk, cmdline,
                                                         "kiln-vmedia-" + task.uuid(), path,
                                                         networkText}));
    }
    ::chmod(path.c_str(), 0644);
    task.internalInfo[kIsoKey] = name;
    return bootIsoUrl(config, name);
  }

  void removeIso(TaskContext& task) {
    auto it = task.internalInfo.find(kIsoKey);
    if (it == task.internalInfo.end()) return;
    if (it->is_string() && isBootIsoName(it->get<std::string>()) && task.config) {
      std::error_code ec;
      fs::remove(fs::path(task.config->httpRoot) / it->get<std::string>(), ec);
    }
    task.internalInfo.erase(kIsoKey);
  }

  Result<void> eject(TaskContext& task) {
    auto target = KILN_TRY(connectRedfish(http_, task));
    const json system = KILN_TRY(target.client->get(target.systemPath));
    const VirtualMediaSlot slot = KILN_TRY(findVirtualMediaSlot(target, system, "CD"));
    return ejectVirtualMedia(target, slot);
  }

  void ejectQuietly(TaskContext& task) {
    if (auto ejected = eject(task); !ejected) {
      task.log.warning("cannot eject the virtual media", {{"node", task.uuid()}, {"error", ejected.error().message}});
    }
  }

  HttpClientPtr http_;
  CommandRunnerPtr commands_;
};

}  // namespace

bool isBootIsoName(std::string_view name) {
  constexpr size_t kLength = 5 + 36 + 1 + 43 + 4;
  if (name.size() != kLength || !name.starts_with(kIsoPrefix) || !name.ends_with(kIsoSuffix)) return false;
  for (char c : name.substr(kIsoPrefix.size(), name.size() - kIsoPrefix.size() - kIsoSuffix.size())) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  }
  return true;
}

std::string newBootIsoName(const std::string& nodeUuid) {
  return std::string(kIsoPrefix) + nodeUuid + "-" + agent::generateToken() + std::string(kIsoSuffix);
}

std::string bootIsoUrl(const Config& config, const std::string& name) {
  if (!config.externalHttpUrl.empty()) return config.externalHttpUrl + "/" + name;
  const std::string api = netboot::configuredApiUrl(config);
  return api.empty() ? "" : api + "/v1/vmedia/" + name;
}

std::vector<std::unique_ptr<HardwareInterface>> makeVirtualMediaInterfaces(HttpClientPtr http,
                                                                           CommandRunnerPtr commands) {
  std::vector<std::unique_ptr<HardwareInterface>> out;
  out.push_back(std::make_unique<RedfishVirtualMediaBoot>(std::move(http), std::move(commands)));
  return out;
}

}  // namespace kiln::server::vmedia
