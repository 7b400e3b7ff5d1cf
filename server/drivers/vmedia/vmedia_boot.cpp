#include "server/drivers/vmedia/vmedia_boot.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>

#include "server/drivers/agent/agent_session.h"
#include "server/config/dnsmasq_options.h"
#include "server/drivers/boot_mode.h"
#include "server/drivers/dhcp/dhcp_provider.h"
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

/// What the two interfaces that boot the agent from an ISO share: the ISO, built into
/// http_root from the agent images or taken from driver_info/deploy_iso.
class IsoBootBase : public BootInterface {
 public:
  explicit IsoBootBase(CommandRunnerPtr commands) : commands_(std::move(commands)) {}

 protected:
  /// Whether the ISO can be made (or taken) and its URL handed out.
  std::optional<std::string> validateIso(const TaskContext& task) const {
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
          return "The " + std::string(name()) + " boot interface builds its ISO from local agent images: " +
                 location + " is a URL (use a local file, or driver_info/deploy_iso).";
        }
        if (auto file = checkLocalFile(config, location); !file) return "The agent image " + file.error().message + ".";
      }
      if (netboot::configuredApiUrl(config).empty()) {
        return "The " + std::string(name()) + " boot interface needs [conductor] api_url (or [api] "
               "public_endpoint): the URL the agent reaches kiln-server at, baked into its ISO.";
      }
      auto params = netboot::agentAppendParams(config, task.driverInfo);
      if (!params) return params.error().message;
      if (auto tooLong = netboot::agentCmdlineTooLong(netboot::configuredApiUrl(config), *params)) return tooLong;
    }
    if (bootIsoUrl(config, "x").empty()) {
      return "The " + std::string(name()) + " boot interface needs [deploy] external_http_url or "
             "[conductor] api_url: the URL the ISO is fetched from.";
    }
    return std::nullopt;
  }

  /// The URL of the node's ISO: deploy_iso as given when it is a URL, else a file written to
  /// http_root (recorded in driver_internal_info for the clean-ups).
  Result<std::string> prepareIso(TaskContext& task, const char* key) {
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
    task.internalInfo[key] = name;
    return bootIsoUrl(config, name);
  }

  void removeIso(TaskContext& task, const char* key) {
    auto it = task.internalInfo.find(key);
    if (it == task.internalInfo.end()) return;
    if (it->is_string() && isBootIsoName(it->get<std::string>()) && task.config) {
      std::error_code ec;
      fs::remove(fs::path(task.config->httpRoot) / it->get<std::string>(), ec);
    }
    task.internalInfo.erase(key);
  }

  CommandRunnerPtr commands_;
};

class RedfishVirtualMediaBoot final : public IsoBootBase {
 public:
  RedfishVirtualMediaBoot(HttpClientPtr http, CommandRunnerPtr commands)
      : IsoBootBase(std::move(commands)), http_(std::move(http)) {}

  std::string_view name() const override { return "redfish-virtual-media"; }

  std::optional<std::string> validate(const TaskContext& task) const override {
    if (auto problem = validateRedfishDriverInfo(task)) return problem;
    return validateIso(task);
  }

  Result<void> prepareRamdisk(TaskContext& task) override {
    if (auto problem = validate(task)) return invalid(*problem);
    KILN_TRY_VOID(syncBootMode(task));
    removeIso(task, kIsoKey);
    const std::string url = KILN_TRY(prepareIso(task, kIsoKey));
    auto target = KILN_TRY(connectRedfish(http_, task));
    const json system = KILN_TRY(target.client->get(target.systemPath));
    const VirtualMediaSlot slot = KILN_TRY(findVirtualMediaSlot(target, system, "CD"));
    KILN_TRY_VOID(insertVirtualMedia(target, slot, url));
    task.log.info("virtual media inserted", {{"node", task.uuid()}, {"slot", slot.path}});
    task.internalInfo["boot_target"] = "agent";
    KILN_TRY_VOID(syncDhcp(task));  // the ramdisk's address, before the machine boots
    KILN_TRY_VOID(task.driver->management->setBootDevice(task, "cdrom", false));
    return {};
  }

  Result<void> cleanUpRamdisk(TaskContext& task) override {
    if (task.internalInfo.value("boot_target", "") == "agent") task.internalInfo.erase("boot_target");
    KILN_TRY_VOID(syncDhcp(task));
    ejectQuietly(task);
    removeIso(task, kIsoKey);
    return {};
  }

  Result<void> prepareInstance(TaskContext& task) override {
    KILN_TRY_VOID(syncBootMode(task));
    KILN_TRY_VOID(eject(task));
    removeIso(task, kIsoKey);
    if (ramdisk::isRamdiskDeploy(task.node)) return prepareRamdiskInstance(task);
    KILN_TRY_VOID(task.driver->management->setBootDevice(task, "disk", true));
    task.internalInfo["boot_target"] = "disk";
    KILN_TRY_VOID(syncDhcp(task));
    return {};
  }

  Result<void> cleanUpInstance(TaskContext& task) override {
    task.internalInfo.erase("boot_target");
    KILN_TRY_VOID(syncDhcp(task));
    ejectQuietly(task);
    removeIso(task, kIsoKey);
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
    return syncDhcp(task);  // the instance ramdisk's address
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
};

/// driver_internal_info key of the http boot interface's ISO: a name in http_root, or the URL
/// driver_info/deploy_iso gave (server/drivers/dhcp/dhcp_provider.h hands it out).
constexpr const char* kHttpIsoKey = "http_boot_iso";

/// UEFI HTTP boot of the agent's ISO (Ironic's `http` boot interface, with Kiln's ISO): DHCP
/// answers the firmware's HTTPClient request with the ISO's URL, which UEFI boots as a RAM disk;
/// the boot device is "uefi http" where the BMC offers it. Firmware without HTTP boot gets PXE
/// and iPXE, whose script boots the agent kernel and initramfs as with the ipxe interface.
class HttpBoot final : public IsoBootBase {
 public:
  using IsoBootBase::IsoBootBase;
  std::string_view name() const override { return "http"; }

  std::optional<std::string> validate(const TaskContext& task) const override {
    if (task.ports.empty()) return "Node " + task.uuid() + " does not have any port associated with it.";
    if (const std::string iso = deployIso(task); netboot::isUrl(iso) && !dnsmasqSafeValue(iso)) {
      return "driver_info/deploy_iso cannot be handed out by DHCP: it must be printable ASCII "
             "without spaces, ',', '#', quotes or backslashes.";
    }
    return validateIso(task);
  }

  Result<void> prepareRamdisk(TaskContext& task) override {
    if (auto problem = validate(task)) return invalid(*problem);
    KILN_TRY_VOID(syncBootMode(task));
    removeIso(task, kHttpIsoKey);
    const std::string url = KILN_TRY(prepareIso(task, kHttpIsoKey));
    if (!task.internalInfo.contains(kHttpIsoKey)) task.internalInfo[kHttpIsoKey] = url;  // deploy_iso
    task.internalInfo["boot_target"] = "agent";
    KILN_TRY_VOID(syncDhcp(task));
    const std::string device = KILN_TRY(netboot::networkBootDevice(task, true));
    KILN_TRY_VOID(task.driver->management->setBootDevice(task, device, false));
    return {};
  }

  Result<void> cleanUpRamdisk(TaskContext& task) override {
    if (task.internalInfo.value("boot_target", "") == "agent") task.internalInfo.erase("boot_target");
    removeHttpIso(task);
    return syncDhcp(task);
  }

  Result<void> prepareInstance(TaskContext& task) override {
    KILN_TRY_VOID(syncBootMode(task));
    removeHttpIso(task);
    task.internalInfo["boot_target"] = "disk";
    KILN_TRY_VOID(syncDhcp(task));
    return task.driver->management->setBootDevice(task, "disk", true);
  }

  Result<void> cleanUpInstance(TaskContext& task) override {
    task.internalInfo.erase("boot_target");
    removeHttpIso(task);
    return syncDhcp(task);
  }

 private:
  void removeHttpIso(TaskContext& task) {
    auto it = task.internalInfo.find(kHttpIsoKey);
    if (it != task.internalInfo.end() && it->is_string() && netboot::isUrl(it->get<std::string>())) {
      task.internalInfo.erase(it);
      return;
    }
    removeIso(task, kHttpIsoKey);
  }
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
  out.push_back(std::make_unique<RedfishVirtualMediaBoot>(std::move(http), commands));
  out.push_back(std::make_unique<HttpBoot>(std::move(commands)));
  return out;
}

}  // namespace kiln::server::vmedia
