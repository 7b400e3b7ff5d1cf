#include "server/drivers/redfish/redfish_management.h"

#include <algorithm>

#include "server/drivers/redfish/redfish_common.h"

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
};

const json* bootOf(const json& system) {
  if (!system.is_object()) return nullptr;
  const auto boot = system.find("Boot");
  return boot != system.end() && boot->is_object() ? &*boot : nullptr;
}

std::string stringAt(const json* object, const char* key) {
  if (object && object->contains(key) && (*object)[key].is_string()) {
    return (*object)[key].get<std::string>();
  }
  return "";
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
  for (const auto& d : kDevices) out.emplace_back(d.device);
  return out;
}

}  // namespace

std::optional<std::string> RedfishManagement::validate(const TaskContext& task) const {
  return validateRedfishDriverInfo(task);
}

Result<ManagementInterface::BootDevice> RedfishManagement::getBootDevice(TaskContext& task) {
  auto bmc = KILN_TRY(connectRedfish(http_, task));
  const json system = KILN_TRY(bmc.client->get(bmc.systemPath));
  const json* boot = bootOf(system);
  const auto target = stringAt(boot, "BootSourceOverrideTarget");
  const auto enabled = stringAt(boot, "BootSourceOverrideEnabled");
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

}  // namespace kiln::server
