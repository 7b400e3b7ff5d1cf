#include "server/drivers/redfish/redfish_management.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "server/drivers/redfish/redfish_common.h"
#include "server/drivers/redfish/redfish_sensors.h"
#include "server/drivers/redfish/redfish_virtual_media.h"
#include "server/drivers/vmedia/vmedia_boot.h"
#include "shared/core/secrets.h"

namespace kiln::server {
namespace {

using nlohmann::json;

struct DeviceTarget {
  std::string_view device;  ///< Ironic's name
  std::string_view target;  ///< Redfish BootSourceOverrideTarget
};

constexpr DeviceTarget kDevices[] = {
    {"pxe", "Pxe"},
    {"disk", "Hdd"},
    {"cdrom", "Cd"},
    {"bios", "BiosSetup"},
    // Ironic's boot_devices.UEFIHTTP; offered only where the BMC lists UefiHttp.
    {"uefi http", "UefiHttp"},
};

const json* bootOf(const json& system) {
  if (!system.is_object()) return nullptr;
  const auto boot = system.find("Boot");
  return boot != system.end() && boot->is_object() ? &*boot : nullptr;
}

/// (*object)[key] when it is a string; "" otherwise, and when there is no object.
std::string stringOrEmpty(const json* object, const char* key) {
  return object ? redfishStringAt(*object, key).value_or("") : "";
}

/// BootSourceOverrideTarget@Redfish.AllowableValues; empty when the BMC does not list them.
std::vector<std::string> allowedTargets(const json& system) {
  std::vector<std::string> out;
  if (const json* boot = bootOf(system)) {
    const auto it = boot->find("BootSourceOverrideTarget@Redfish.AllowableValues");
    if (it != boot->end() && it->is_array()) {
      for (const auto& v : *it) {
        if (v.is_string()) out.push_back(v.get<std::string>());
      }
    }
  }
  return out;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

std::vector<std::string> defaultDevices() {
  std::vector<std::string> out;
  for (const auto& d : kDevices) {
    if (d.target != "UefiHttp") out.emplace_back(d.device);
  }
  return out;
}

/// Ironic's RedfishError wording around a failure, keeping its code.
std::unexpected<Error> redfishError(const Error& cause, const std::string& what) {
  return fail(cause.code, "Redfish exception occurred. Error: " + what + cause.message);
}

/// An indicator's name: the resource's UUID (as Ironic), else its Id.
std::string indicatorName(const json& resource) {
  const auto uuid = stringOrEmpty(&resource, "UUID");
  return uuid.empty() ? stringOrEmpty(&resource, "Id") : uuid;
}

struct LedState {
  std::string_view redfish;  ///< IndicatorLED
  std::string_view ironic;   ///< Ironic's indicator state
};

constexpr LedState kLedStates[] = {
    {"Lit", "ON"}, {"Off", "OFF"}, {"Blinking", "BLINKING"}, {"Unknown", "UNKNOWN"}};

std::string ironicLedState(const json& resource) {
  const auto led = stringOrEmpty(&resource, "IndicatorLED");
  for (const auto& s : kLedStates) {
    if (s.redfish == led) return std::string(s.ironic);
  }
  return "UNKNOWN";
}

/// Where the named indicator lives: the System or one of its chassis (path and resource), or
/// nullopt when the node has no such indicator.
struct IndicatorResource {
  std::string path;
  json resource;
};

Result<std::optional<IndicatorResource>> findIndicator(RedfishTarget& bmc, const json& system,
                                                       std::string_view component,
                                                       std::string_view indicator) {
  if (component == "system" && indicatorName(system) == indicator) {
    return std::optional<IndicatorResource>(IndicatorResource{bmc.systemPath, system});
  }
  if (component == "chassis") {
    for (const auto& path : redfishLinksAt(system, {"Links", "Chassis"})) {
      json chassis = KILN_TRY(bmc.client->get(path));
      if (indicatorName(chassis) == indicator) {
        return std::optional<IndicatorResource>(IndicatorResource{path, std::move(chassis)});
      }
    }
  }
  return std::optional<IndicatorResource>();
}

std::unexpected<Error> unknownIndicator(const TaskContext& task, std::string_view component,
                                        std::string_view indicator) {
  return invalid("Unknown indicator " + std::string(indicator) + " for component " +
                 std::string(component) + " of node " + task.uuid());
}

}  // namespace

std::optional<std::string> RedfishManagement::validate(const TaskContext& task) const {
  return validateRedfishDriverInfo(task);
}

Result<ManagementInterface::BootDevice> RedfishManagement::getBootDevice(TaskContext& task) {
  auto bmc = KILN_TRY(connectRedfish(http_, task));
  const json system = KILN_TRY(bmc.client->get(bmc.systemPath));
  const json* boot = bootOf(system);
  const auto target = stringOrEmpty(boot, "BootSourceOverrideTarget");
  const auto enabled = stringOrEmpty(boot, "BootSourceOverrideEnabled");
  BootDevice result;
  for (const auto& d : kDevices) {
    if (d.target == target) result.device = std::string(d.device);
  }
  if (enabled == "Continuous") {
    result.persistent = true;
  } else if (enabled == "Once") {
    result.persistent = false;
  }
  return result;
}

Result<void> RedfishManagement::setBootDevice(TaskContext& task, std::string_view device,
                                              bool persistent) {
  const auto it = std::find_if(std::begin(kDevices), std::end(kDevices),
                               [&](const DeviceTarget& d) { return d.device == device; });
  if (it == std::end(kDevices)) {
    return invalid("The redfish management interface cannot set boot device '" +
                   std::string(device) + "' on node " + task.uuid() +
                   "; supported: " + join(defaultDevices()));
  }
  auto bmc = KILN_TRY(connectRedfish(http_, task));
  const json system = KILN_TRY(bmc.client->get(bmc.systemPath));
  const auto allowed = allowedTargets(system);
  if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), it->target) == allowed.end()) {
    return invalid("The Redfish BMC of node " + task.uuid() + " does not allow boot device '" +
                   std::string(device) + "' (BootSourceOverrideTarget " + std::string(it->target) +
                   "; it allows: " + join(allowed) + ")");
  }
  const json patch = {{"Boot",
                       {{"BootSourceOverrideTarget", std::string(it->target)},
                        {"BootSourceOverrideEnabled", persistent ? "Continuous" : "Once"}}}};
  task.log.info("Redfish boot device", {{"node", task.uuid()},
                                        {"device", std::string(device)},
                                        {"persistent", persistent ? "true" : "false"}});
  KILN_TRY(bmc.client->patch(bmc.systemPath, patch));
  return {};
}

std::vector<std::string> RedfishManagement::supportedBootDevices(const TaskContext& task) const {
  auto bmc = connectRedfish(http_, task);
  if (!bmc) {
    return defaultDevices();
  }
  const auto system = bmc->client->get(bmc->systemPath);
  if (!system) {
    return defaultDevices();
  }
  const auto allowed = allowedTargets(*system);
  if (allowed.empty()) {
    return defaultDevices();
  }
  std::vector<std::string> out;
  for (const auto& d : kDevices) {
    if (std::find(allowed.begin(), allowed.end(), d.target) != allowed.end()) {
      out.emplace_back(d.device);
    }
  }
  return out;
}

Result<std::optional<std::string>> RedfishManagement::getBootMode(TaskContext& task) {
  auto bmc = KILN_TRY(connectRedfish(http_, task));
  const json system = KILN_TRY(bmc.client->get(bmc.systemPath));
  const auto mode = stringOrEmpty(bootOf(system), "BootSourceOverrideMode");
  if (mode == "UEFI") return std::optional<std::string>("uefi");
  if (mode == "Legacy") return std::optional<std::string>("bios");
  return std::optional<std::string>();
}

Result<void> RedfishManagement::setBootMode(TaskContext& task, std::string_view mode) {
  if (mode != "uefi" && mode != "bios") {
    return invalid("Invalid boot mode " + std::string(mode) + " for node " + task.uuid() +
                   "; the redfish management interface supports bios, uefi.");
  }
  auto bmc = KILN_TRY(connectRedfish(http_, task));
  const json patch = {{"Boot", {{"BootSourceOverrideMode", mode == "uefi" ? "UEFI" : "Legacy"}}}};
  task.log.info("Redfish boot mode", {{"node", task.uuid()}, {"mode", std::string(mode)}});
  auto done = bmc.client->patch(bmc.systemPath, patch);
  if (!done) {
    // Some BMCs cannot override the boot mode at all: they report none (Ironic's check).
    auto system = bmc.client->get(bmc.systemPath);
    if (system && stringOrEmpty(bootOf(*system), "BootSourceOverrideMode").empty()) {
      return unsupported(task, "set_boot_mode");
    }
    return redfishError(done.error(), "Setting boot mode to " + std::string(mode) +
                                          " failed for node " + task.uuid() + ". Error: ");
  }
  return {};
}

Result<std::optional<bool>> RedfishManagement::getSecureBoot(TaskContext& task) {
  auto bmc = KILN_TRY(connectRedfish(http_, task));
  const json system = KILN_TRY(bmc.client->get(bmc.systemPath));
  const auto path = redfishLinkAt(system, {"SecureBoot"});
  if (path.empty()) return unsupported(task, "get_secure_boot_state");
  const json secureBoot = KILN_TRY(bmc.client->get(path));
  if (secureBoot.is_object() && secureBoot.contains("SecureBootEnable") &&
      secureBoot["SecureBootEnable"].is_boolean()) {
    return std::optional<bool>(secureBoot["SecureBootEnable"].get<bool>());
  }
  return std::optional<bool>();
}

Result<void> RedfishManagement::setSecureBoot(TaskContext& task, bool enabled) {
  auto bmc = KILN_TRY(connectRedfish(http_, task));
  const json system = KILN_TRY(bmc.client->get(bmc.systemPath));
  const auto path = redfishLinkAt(system, {"SecureBoot"});
  if (path.empty()) {
    task.log.error("secure boot requested but the Redfish BMC has no SecureBoot resource",
                   {{"node", task.uuid()}});
    return unsupported(task, "set_secure_boot_state");
  }
  const json secureBoot = KILN_TRY(bmc.client->get(path));
  if (secureBoot.is_object() && secureBoot.contains("SecureBootEnable") &&
      secureBoot["SecureBootEnable"] == enabled) {
    task.log.info("secure boot state already as requested", {{"node", task.uuid()}});
    return {};
  }
  if (stringOrEmpty(bootOf(system), "BootSourceOverrideMode") == "Legacy") {
    return fail(ErrorCode::Internal,
                "Redfish exception occurred. Error: Configuring secure boot "
                "requires UEFI for node " +
                    task.uuid());
  }
  const std::string value = enabled ? "True" : "False";
  if (auto done = bmc.client->patch(path, json{{"SecureBootEnable", enabled}}); !done) {
    return redfishError(done.error(), "Failed to set secure boot state on node " + task.uuid() +
                                          " to " + value + ": ");
  }
  task.log.info("secure boot state set", {{"node", task.uuid()}, {"enabled", value}});
  return {};
}

Result<void> RedfishManagement::injectNmi(TaskContext& task) {
  auto bmc = KILN_TRY(connectRedfish(http_, task));
  const json system = KILN_TRY(bmc.client->get(bmc.systemPath));
  if (auto done = redfishReset(task, bmc, system, "Nmi"); !done) {
    return redfishError(done.error(),
                        "Redfish inject NMI failed for node " + task.uuid() + ". Error: ");
  }
  return {};
}

Result<ManagementInterface::Indicators> RedfishManagement::supportedIndicators(
    TaskContext& task, std::string_view component) {
  const Indicator settable{false, {"BLINKING", "OFF", "ON"}};
  auto bmc = KILN_TRY(connectRedfish(http_, task));
  const json system = KILN_TRY(bmc.client->get(bmc.systemPath));
  Indicators out;
  if (component.empty() || component == "chassis") {
    const auto paths = redfishLinksAt(system, {"Links", "Chassis"});
    if (!paths.empty()) {
      auto& chassisLeds = out["chassis"];
      for (const auto& path : paths) {
        auto chassis = bmc.client->get(path);
        if (!chassis) {
          task.log.debug("chassis indicator not available",
                         {{"node", task.uuid()}, {"error", chassis.error().message}});
          continue;
        }
        if (!stringOrEmpty(&*chassis, "IndicatorLED").empty()) {
          chassisLeds[indicatorName(*chassis)] = settable;
        }
      }
    }
  }
  if ((component.empty() || component == "system") &&
      !stringOrEmpty(&system, "IndicatorLED").empty()) {
    out["system"][indicatorName(system)] = settable;
  }
  return out;
}

Result<std::string> RedfishManagement::getIndicatorState(TaskContext& task,
                                                         std::string_view component,
                                                         std::string_view indicator) {
  auto bmc = KILN_TRY(connectRedfish(http_, task));
  auto found = [&]() -> Result<std::optional<IndicatorResource>> {
    const json system = KILN_TRY(bmc.client->get(bmc.systemPath));
    return findIndicator(bmc, system, component, indicator);
  }();
  if (!found) {
    return redfishError(found.error(), "Redfish get " + std::string(component) + " indicator " +
                                           std::string(indicator) + " state failed for node " +
                                           task.uuid() + ". Error: ");
  }
  if (!*found) return unknownIndicator(task, component, indicator);
  return ironicLedState((*found)->resource);
}

Result<void> RedfishManagement::setIndicatorState(TaskContext& task, std::string_view component,
                                                  std::string_view indicator,
                                                  std::string_view state) {
  const auto led = std::find_if(std::begin(kLedStates), std::end(kLedStates),
                                [&](const LedState& s) { return s.ironic == state; });
  if (led == std::end(kLedStates) || led->redfish == "Unknown") {
    return invalid("Invalid indicator state " + std::string(state) + " for node " + task.uuid() +
                   "; the redfish management interface sets BLINKING, OFF, ON.");
  }
  auto bmc = KILN_TRY(connectRedfish(http_, task));
  auto done = [&]() -> Result<bool> {
    const json system = KILN_TRY(bmc.client->get(bmc.systemPath));
    auto found = KILN_TRY(findIndicator(bmc, system, component, indicator));
    if (!found) return false;
    KILN_TRY(bmc.client->patch(found->path, json{{"IndicatorLED", std::string(led->redfish)}}));
    return true;
  }();
  if (!done) {
    return redfishError(done.error(), "Redfish set " + std::string(component) + " indicator " +
                                          std::string(indicator) + " state " + std::string(state) +
                                          " failed for node " + task.uuid() + ". Error: ");
  }
  if (!*done) return unknownIndicator(task, component, indicator);
  return {};
}

}  // namespace kiln::server

// ---- virtual media (API 1.89, 1.93) ---------------------------------------------------------

namespace kiln::server {
namespace {

/// The Redfish MediaTypes entry Ironic looks for per API device type.
std::string_view redfishMediaType(std::string_view deviceType) {
  if (deviceType == "cdrom") return "CD";
  if (deviceType == "disk") return "USBStick";
  return "Floppy";
}

/// driver_internal_info key of the images kiln-server serves for attached media.
constexpr const char* kAttachedKey = "vmedia_attached";

/// Downloads `url` into a new file of [deploy] http_root that GET /v1/vmedia/{name} serves;
/// returns the file's name. Credentials as for the agent's image downloads (downloadRequest).
Result<std::string> downloadForBmc(HttpClient& http, TaskContext& task, const std::string& url) {
  namespace fs = std::filesystem;
  const Config& config = *task.config;
  std::error_code ec;
  fs::create_directories(config.httpRoot, ec);
  if (ec) return internalError("Cannot create [deploy] http_root " + config.httpRoot + ": " + ec.message());
  const std::string name = vmedia::newBootIsoName(task.uuid());
  const fs::path path = fs::path(config.httpRoot) / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return internalError("Cannot write " + path.string());
  // As Ironic's HttpImageService: the URL's own user information, else [deploy]
  // image_server_* with http_basic; redirects followed, the credentials kept for the origin.
  std::optional<BasicCredentials> configured;
  if (config.imageServerAuthStrategy == "http_basic") {
    configured = BasicCredentials{config.imageServerUser, config.imageServerPassword};
  }
  auto built = downloadRequest(url, configured);
  if (!built) {
    return invalid("Could not download the image " + maskUrl(url) + ": " + built.error().message);
  }
  HttpRequest request = std::move(*built);
  request.idleTimeout = std::chrono::seconds(60);
  auto response = http.stream(request, [&](std::string_view chunk) -> Result<void> {
    out.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    if (!out) return internalError("Cannot write " + path.string());
    return {};
  });
  out.close();
  if (!response || response->status != 200) {
    fs::remove(path, ec);
    return invalid("Could not download the image " + maskUrl(url) + ": " +
                   (response ? "HTTP status " + std::to_string(response->status)
                             : response.error().message));
  }
  ::chmod(path.c_str(), 0644);
  return name;
}

void removeServedImage(TaskContext& task, const std::string& deviceType) {
  auto attached = task.internalInfo.find(kAttachedKey);
  if (attached == task.internalInfo.end() || !attached->is_object()) return;
  if (auto it = attached->find(deviceType); it != attached->end() && it->is_string() &&
                                            vmedia::isBootIsoName(it->get<std::string>()) &&
                                            task.config) {
    std::error_code ec;
    std::filesystem::remove(std::filesystem::path(task.config->httpRoot) / it->get<std::string>(), ec);
  }
  attached->erase(deviceType);
  if (attached->empty()) task.internalInfo.erase(kAttachedKey);
}

}  // namespace

Result<void> RedfishManagement::attachVirtualMedia(TaskContext& task, std::string_view deviceType,
                                                   const std::string& url,
                                                   std::string_view downloadSource) {
  auto bmc = KILN_TRY(connectRedfish(http_, task));
  const json system = KILN_TRY(bmc.client->get(bmc.systemPath));
  const VirtualMediaSlot slot = KILN_TRY(findVirtualMediaSlot(bmc, system, redfishMediaType(deviceType)));
  std::string imageUrl = url;
  if (downloadSource == "local") {
    const std::string name = KILN_TRY(downloadForBmc(*http_, task, url));
    imageUrl = vmedia::bootIsoUrl(*task.config, name);
    if (imageUrl.empty()) {
      return invalid("Cannot serve virtual media: set [deploy] external_http_url or [api] "
                     "public_endpoint so that the BMC can reach kiln-server");
    }
    removeServedImage(task, std::string(deviceType));
    task.internalInfo[kAttachedKey][std::string(deviceType)] = name;
  }
  return insertVirtualMedia(bmc, slot, imageUrl);
}

Result<void> RedfishManagement::detachVirtualMedia(TaskContext& task,
                                                   const std::vector<std::string>& deviceTypes) {
  auto bmc = KILN_TRY(connectRedfish(http_, task));
  const json system = KILN_TRY(bmc.client->get(bmc.systemPath));
  const std::vector<std::string> all{"cdrom", "disk", "floppy"};
  for (const auto& type : deviceTypes.empty() ? all : deviceTypes) {
    for (const auto& slot : KILN_TRY(listVirtualMediaSlots(bmc, system))) {
      if (slotTakesMedia(slot.resource, redfishMediaType(type))) KILN_TRY_VOID(ejectVirtualMedia(bmc, slot));
    }
    removeServedImage(task, type);
  }
  return {};
}

Result<std::vector<ManagementInterface::VirtualMedia>> RedfishManagement::getVirtualMedia(
    TaskContext& task) {
  auto bmc = KILN_TRY(connectRedfish(http_, task));
  const json system = KILN_TRY(bmc.client->get(bmc.systemPath));
  std::vector<VirtualMedia> out;
  for (const auto& slot : KILN_TRY(listVirtualMediaSlots(bmc, system))) {
    VirtualMedia media;
    if (auto types = slot.resource.find("MediaTypes"); types != slot.resource.end() && types->is_array()) {
      for (const auto& t : *types) {
        if (t.is_string()) media.mediaTypes.push_back(t.get<std::string>());
      }
    }
    media.inserted = virtualMediaInserted(slot.resource);
    if (auto image = slot.resource.find("Image"); image != slot.resource.end() && image->is_string()) {
      media.image = image->get<std::string>();
    }
    out.push_back(std::move(media));
  }
  return out;
}

}  // namespace kiln::server

namespace kiln::server {

Result<std::optional<std::string>> RedfishManagement::getHealth(TaskContext& task) {
  auto bmc = KILN_TRY(connectRedfish(http_, task));
  const nlohmann::json system = KILN_TRY(bmc.client->get(bmc.systemPath));
  auto status = system.find("Status");
  if (status == system.end() || !status->is_object()) return std::optional<std::string>();
  auto health = status->find("Health");
  if (health == status->end() || !health->is_string()) return std::optional<std::string>();
  const std::string value = health->get<std::string>();
  if (value != "OK" && value != "Warning" && value != "Critical") return std::optional<std::string>();
  return std::optional<std::string>(value);
}

Result<std::optional<SensorData>> RedfishManagement::getSensorData(TaskContext& task) {
  auto bmc = KILN_TRY(connectRedfish(http_, task));
  return std::optional<SensorData>(
      KILN_TRY(readRedfishSensors(*bmc.client, bmc.systemPath, task.log)));
}

}  // namespace kiln::server
