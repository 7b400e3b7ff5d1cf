#include "server/drivers/boot_mode.h"

#include <nlohmann/json.hpp>

#include "server/config.h"
#include "server/model/capabilities.h"
#include "server/model/node.h"
#include "shared/core/strings.h"
#include "shared/json/json_util.h"

namespace kiln::server {
namespace {

using nlohmann::json;

std::optional<std::string> stringValue(const json& object, std::string_view key) {
  if (!object.is_object()) return std::nullopt;
  auto it = object.find(key);
  if (it == object.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
    return std::nullopt;
  }
  return it->get<std::string>();
}

}  // namespace

std::optional<std::string> nodeCapability(const json& properties, std::string_view key) {
  if (!properties.is_object()) return std::nullopt;
  auto it = properties.find("capabilities");
  if (it == properties.end() || !it->is_string()) return std::nullopt;
  return getCapability(it->get_ref<const std::string&>(), key);
}

Result<json> instanceCapabilities(const TaskContext& task) {
  auto it = task.instanceInfo.find("capabilities");
  if (it == task.instanceInfo.end() || it->is_null()) return json::object();
  if (it->is_object()) return *it;
  if (it->is_string()) {
    if (auto parsed = parseJson(it->get<std::string>(), "instance_info capabilities");
        parsed && parsed->is_object()) {
      return *parsed;
    }
  }
  return invalid("Error parsing capabilities from Node " + task.uuid() +
                 " instance_info field. A dictionary or a \"jsonified\" dictionary is expected.");
}

Result<std::optional<std::string>> requestedBootMode(const TaskContext& task) {
  const json caps = KILN_TRY(instanceCapabilities(task));
  if (auto secure = stringValue(caps, "secure_boot"); secure && asciiLower(*secure) == "true") {
    return std::optional<std::string>(std::string(kBootModeUefi));
  }
  const auto capMode = nodeCapability(objectField(task.node, kNodeProperties), "boot_mode");
  std::optional<std::string> mode = stringValue(caps, "boot_mode");
  if (!mode) mode = stringValue(task.instanceInfo, "deploy_boot_mode");
  if (!mode) mode = capMode;
  if (!mode) mode = stringValue(task.internalInfo, "deploy_boot_mode");
  if (!mode) return std::optional<std::string>();
  *mode = asciiLower(*mode);
  if (capMode && asciiLower(*capMode) != *mode) {
    return invalid("Node " + task.uuid() + " boot mode " + *mode +
                   " violates node properties/capabilities " + asciiLower(*capMode));
  }
  if (*mode != kBootModeUefi && *mode != kBootModeBios) {
    return invalid("Invalid or unsupported boot mode '" + *mode + "' for node " + task.uuid() +
                   ": expected uefi or bios");
  }
  return mode;
}

Result<std::string> effectiveBootMode(const TaskContext& task) {
  if (auto requested = KILN_TRY(requestedBootMode(task))) return *requested;
  return task.config ? task.config->defaultBootMode : std::string(kBootModeUefi);
}

Result<void> syncBootMode(TaskContext& task) {
  ManagementInterface& management = *task.driver->management;
  std::optional<std::string> machine;
  if (auto got = management.getBootMode(task)) {
    machine = *got;
  } else if (!got.error().is(Reason::Unsupported)) {
    return std::unexpected(got.error());
  }
  const std::optional<std::string> requested = KILN_TRY(requestedBootMode(task));

  // Sets `mode` on the machine; unsupported is tolerated unless `mustSet`.
  const auto apply = [&](const std::string& mode, bool mustSet) -> Result<void> {
    auto set = management.setBootMode(task, mode);
    if (!set) {
      if (!set.error().is(Reason::Unsupported)) {
        return invalid("Node " + task.uuid() + " boot mode is not set. Attempt to set " + mode +
                       " boot mode on the baremetal node failed with error " +
                       set.error().message);
      }
      if (mustSet) {
        return invalid("Baremetal node " + task.uuid() + " boot mode is not set to boot mode " +
                       mode + ": " + set.error().message);
      }
      task.log.debug("the management interface cannot set the boot mode; assuming the machine "
                     "is in it already",
                     {{"boot_mode", mode}});
      return {};
    }
    task.log.info("boot mode set on the machine", {{"boot_mode", mode}});
    task.node.setText(kNodeBootMode, mode);
    return {};
  };

  if (!requested && !machine) {
    const std::string fallback = task.config ? task.config->defaultBootMode : std::string(kBootModeUefi);
    task.internalInfo["deploy_boot_mode"] = fallback;
    return apply(fallback, false);
  }
  if (!requested) {
    task.internalInfo["deploy_boot_mode"] = *machine;
    task.node.setText(kNodeBootMode, *machine);
    return {};
  }
  if (!machine) return apply(*requested, false);
  if (*machine != *requested) {
    task.log.info("the machine's boot mode differs from the requested one; changing it",
                  {{"machine", *machine}, {"requested", *requested}});
    return apply(*requested, true);
  }
  task.node.setText(kNodeBootMode, *machine);
  return {};
}

}  // namespace kiln::server
