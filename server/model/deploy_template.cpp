#include "server/model/deploy_template.h"

#include <nlohmann/json.hpp>
#include <set>

#include "server/model/trait.h"
#include "shared/core/secrets.h"
#include "shared/json/json_util.h"
#include "shared/raid/raid_config.h"

namespace kiln::server {

Result<void> validateTemplateName(const Json& name, std::string_view what) {
  const std::string prefix = "Schema error for " + std::string(what) + ": ";
  if (!name.is_string()) {
    return invalid(prefix + maskedRepr(name) + " is not of type 'string'");
  }
  const auto& s = name.get_ref<const std::string&>();
  if (!validateTrait(s)) {
    return invalid(prefix + maskedRepr(name) +
                   " does not match '^CUSTOM_[A-Z0-9_]+$' and is not a standard trait (a "
                   "deploy template name must be a valid trait, at most 255 characters)");
  }
  return {};
}

Result<void> validateStepArgs(const Json& interface, const Json& args) {
  if (interface == "raid" && args.is_object() && args.contains("raid_config")) {
    KILN_TRY(parseRaidConfig(args["raid_config"]));
  }
  return {};
}

Result<Json> validateTemplateSteps(const Json& steps, std::string_view what) {
  const std::string prefix = "Schema error for " + std::string(what) + ": ";
  if (!steps.is_array()) {
    return invalid(prefix + maskedRepr(steps) + " is not of type 'array'");
  }
  if (steps.empty()) {
    return invalid(prefix + "[] is too short");
  }
  Json out = Json::array();
  std::set<std::string> seen;
  std::string duplicates;
  for (const auto& step : steps) {
    if (!step.is_object()) {
      return invalid(prefix + maskedRepr(step) + " is not of type 'object'");
    }
    for (const char* key : {"interface", "step", "args", "priority"}) {
      if (!step.contains(key)) {
        return invalid(prefix + "'" + std::string(key) + "' is a required property");
      }
    }
    for (auto it = step.begin(); it != step.end(); ++it) {
      if (it.key() != "interface" && it.key() != "step" && it.key() != "args" &&
          it.key() != "priority") {
        return invalid(prefix + "Additional properties are not allowed ('" + it.key() +
                       "' was unexpected)");
      }
    }
    const Json& iface = step["interface"];
    bool validIface = false;
    if (iface.is_string()) {
      for (auto name : kDeployStepInterfaces) validIface = validIface || iface == std::string(name);
    }
    if (!validIface) {
      return invalid(prefix + maskedRepr(iface) +
                     " is not one of " + std::string(kStepInterfacesRepr));
    }
    const Json& name = step["step"];
    if (!name.is_string() || name.get_ref<const std::string&>().empty()) {
      return invalid(prefix + maskedRepr(name) +
                     (name.is_string() ? " is too short" : " is not of type 'string'"));
    }
    if (!step["args"].is_object()) {
      return invalid(prefix + maskedRepr(step["args"]) + " is not of type 'object'");
    }
    KILN_TRY_VOID(validateStepArgs(iface, step["args"]));
    const Json& prio = step["priority"];
    int64_t priority = -1;
    if (prio.is_number_integer()) {
      priority = prio.get<int64_t>();
      if (priority < 0) {
        return invalid(prefix + maskedRepr(prio) + " is less than the minimum of 0");
      }
    } else if (prio.is_string()) {
      const auto& text = prio.get_ref<const std::string&>();
      bool digits = !text.empty() && text.size() <= 9;
      for (char c : text) digits = digits && c >= '0' && c <= '9';
      if (!digits) return invalid(prefix + maskedRepr(prio) + " does not match '^[0-9]+$'");
      priority = std::stoll(text);
    } else {
      return invalid(prefix + maskedRepr(prio) + " is not valid under any of the given schemas");
    }
    Json normalized = Json::object();
    normalized["interface"] = iface;
    normalized["step"] = name;
    normalized["args"] = step["args"];
    normalized["priority"] = priority;
    const std::string key = iface.get<std::string>() + "." + name.get<std::string>() + " " +
                            dumpJson(step["args"]);
    if (!seen.insert(key).second) {
      if (!duplicates.empty()) duplicates += "; ";
      duplicates += "interface: " + iface.get<std::string>() + ", step: " + name.get<std::string>() +
                    ", args: " + maskedDump(step["args"]);
    }
    out.push_back(std::move(normalized));
  }
  if (!duplicates.empty()) {
    return invalid("Deploy template invalid: Duplicate deploy steps. A deploy template cannot "
                   "have the same deploy step twice with the same arguments. Duplicates: " +
                   duplicates + ".");
  }
  return out;
}

}  // namespace kiln::server
