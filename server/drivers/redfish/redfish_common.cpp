#include "server/drivers/redfish/redfish_common.h"

#include <algorithm>

namespace kiln::server {
namespace {

using nlohmann::json;

const json* resetAction(const json& system) {
  if (!system.is_object()) return nullptr;
  const auto actions = system.find("Actions");
  if (actions == system.end() || !actions->is_object()) return nullptr;
  const auto reset = actions->find("#ComputerSystem.Reset");
  if (reset == actions->end() || !reset->is_object()) return nullptr;
  return &*reset;
}

/// object[keys...], each key one level down through objects; nullptr when a level is missing
/// or is no object.
const json* descend(const json& object, std::initializer_list<const char*> keys) {
  const json* at = &object;
  for (const char* k : keys) {
    if (!at->is_object()) return nullptr;
    const auto it = at->find(k);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

}  // namespace

Result<RedfishTarget> connectRedfish(const HttpClientPtr& http, const TaskContext& task) {
  auto config = KILN_TRY(parseRedfishConfig(task.driverInfo, task.uuid()));
  RedfishTarget target;
  target.client = std::make_unique<RedfishClient>(http, std::move(config), task.log);
  target.systemPath = KILN_TRY(target.client->systemPath(task.uuid()));
  return target;
}

std::optional<std::string> validateRedfishDriverInfo(const TaskContext& task) {
  auto config = parseRedfishConfig(task.driverInfo, task.uuid());
  if (!config) {
    return config.error().message;
  }
  return std::nullopt;
}

std::vector<std::string> redfishResetTypes(const json& system) {
  std::vector<std::string> out;
  if (const json* reset = resetAction(system)) {
    const auto it = reset->find("ResetType@Redfish.AllowableValues");
    if (it != reset->end() && it->is_array()) {
      for (const auto& v : *it) {
        if (v.is_string()) out.push_back(v.get<std::string>());
      }
    }
  }
  return out;
}

Result<void> redfishReset(const TaskContext& task, RedfishTarget& target, const json& system,
                          std::string_view type) {
  const auto allowed = redfishResetTypes(system);
  if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), type) == allowed.end()) {
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    return invalid("The Redfish BMC of node " + task.uuid() + " does not allow ResetType " +
                   std::string(type) + " (it allows: " + list + ")");
  }
  std::string path = target.systemPath + "/Actions/ComputerSystem.Reset";
  if (const json* action = resetAction(system)) {
    if (action->contains("target") && (*action)["target"].is_string()) {
      path = redfishLinkPath((*action)["target"].get<std::string>());
    }
  }
  task.log.info("Redfish reset", {{"node", task.uuid()}, {"reset_type", std::string(type)}});
  KILN_TRY(target.client->post(path, json{{"ResetType", std::string(type)}}));
  return {};
}

std::string redfishLinkPath(std::string link) {
  if (const auto scheme = link.find("://"); scheme != std::string::npos) {
    const auto slash = link.find('/', scheme + 3);
    link = slash == std::string::npos ? "/" : link.substr(slash);
  }
  return link;
}

const Clock& redfishClock(const TaskContext& task) {
  static const SystemClock kSystemClock;
  return task.clock ? *task.clock : kSystemClock;
}

std::optional<std::string> redfishStringAt(const json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

std::optional<std::string> redfishNonEmptyStringAt(const json& object, const char* key) {
  auto v = redfishStringAt(object, key);
  if (v && v->empty()) v.reset();
  return v;
}

std::string redfishOdataIdAt(const json& object, std::initializer_list<const char*> keys) {
  const json* link = descend(object, keys);
  if (!link) return "";
  return redfishStringAt(*link, "@odata.id").value_or("");
}

std::string redfishLinkAt(const json& object, std::initializer_list<const char*> keys) {
  return redfishLinkPath(redfishOdataIdAt(object, keys));
}

std::vector<std::string> redfishLinksAt(const json& object,
                                        std::initializer_list<const char*> keys) {
  std::vector<std::string> out;
  const json* links = descend(object, keys);
  if (!links || !links->is_array()) return out;
  for (const auto& link : *links) {
    if (auto id = redfishStringAt(link, "@odata.id")) out.push_back(redfishLinkPath(*id));
  }
  return out;
}

std::vector<std::string> redfishNonEmptyLinksAt(const json& object,
                                                std::initializer_list<const char*> keys) {
  std::vector<std::string> out;
  const json* links = descend(object, keys);
  if (!links || !links->is_array()) return out;
  for (const auto& link : *links) {
    if (auto id = redfishNonEmptyStringAt(link, "@odata.id")) out.push_back(redfishLinkPath(*id));
  }
  return out;
}

}  // namespace kiln::server
