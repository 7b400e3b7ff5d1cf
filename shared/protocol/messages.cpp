#include "shared/protocol/messages.h"

#include <limits>
#include <tuple>

namespace kiln::protocol {
namespace {

using nlohmann::json;

Result<std::string> str(const json& j, const char* key, bool required = true) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) return invalid(std::string("missing field '") + key + "'");
    return std::string();
  }
  if (!it->is_string()) return invalid(std::string("field '") + key + "' must be a string");
  return it->get<std::string>();
}

Result<int64_t> integer(const json& j, const char* key, int64_t fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number_integer()) return invalid(std::string("field '") + key + "' must be an integer");
  return it->get<int64_t>();
}

Result<void> requireObject(const json& j, const char* what) {
  if (!j.is_object()) return invalid(std::string(what) + " must be a JSON object");
  return {};
}

/// `j` as a non-negative integer (nlohmann keeps 5 parsed from text as unsigned, json(5) built
/// in code as signed); nullopt for anything else.
std::optional<uint64_t> nonNegative(const json& j) {
  if (j.is_number_unsigned()) return j.get<uint64_t>();
  if (j.is_number_integer() && j.get<int64_t>() >= 0) return static_cast<uint64_t>(j.get<int64_t>());
  return std::nullopt;
}

template <typename T>
Result<std::vector<T>> list(const json& j, const char* key) {
  std::vector<T> out;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return out;
  if (!it->is_array()) return invalid(std::string("field '") + key + "' must be a list");
  for (const auto& item : *it) out.push_back(KILN_TRY(T::parse(item)));
  return out;
}

}  // namespace

json LookupResponse::toJson() const {
  json n = node;
  n["uuid"] = nodeUuid;
  return json{{"node", n},
              {"config",
               {{"heartbeat_timeout", heartbeatTimeout},
                {"heartbeat_interval", heartbeatInterval},
                {"agent_token", agentToken},
                {"agent_token_required", true},
                {"kiln_protocol_version", protocolVersion},
                {"agent_md5_checksum_enable", md5ChecksumAllowed}}}};
}

Result<LookupResponse> LookupResponse::parse(const json& j) {
  KILN_TRY_VOID(requireObject(j, "lookup response"));
  if (!j.contains("node") || !j["node"].is_object()) return invalid("lookup response has no node");
  if (!j.contains("config") || !j["config"].is_object()) return invalid("lookup response has no config");
  LookupResponse r;
  r.node = j["node"];
  r.nodeUuid = KILN_TRY(str(r.node, "uuid"));
  const json& c = j["config"];
  r.heartbeatTimeout = static_cast<int>(KILN_TRY(integer(c, "heartbeat_timeout", 300)));
  r.heartbeatInterval = static_cast<int>(KILN_TRY(integer(c, "heartbeat_interval", r.heartbeatTimeout / 3)));
  r.agentToken = KILN_TRY(str(c, "agent_token", false));
  r.protocolVersion = static_cast<int>(KILN_TRY(integer(c, "kiln_protocol_version", 0)));
  if (auto md5 = c.find("agent_md5_checksum_enable"); md5 != c.end() && md5->is_boolean()) {
    r.md5ChecksumAllowed = md5->get<bool>();
  }
  return r;
}

json CommandResult::toJson() const {
  json j{{"id", id}, {"name", name}, {"status", status}, {"result", result}};
  if (!error.empty()) j["error"] = error;
  return j;
}

Result<CommandResult> CommandResult::parse(const json& j) {
  KILN_TRY_VOID(requireObject(j, "command result"));
  CommandResult r;
  r.id = KILN_TRY(str(j, "id"));
  r.name = KILN_TRY(str(j, "name", false));
  r.status = KILN_TRY(str(j, "status"));
  if (r.status != "SUCCEEDED" && r.status != "FAILED") {
    return invalid("command result status must be SUCCEEDED or FAILED, got " + r.status);
  }
  if (j.contains("result") && !j["result"].is_null()) r.result = j["result"];
  r.error = KILN_TRY(str(j, "error", false));
  return r;
}

json Progress::toJson() const {
  return json{{"command_id", commandId}, {"bytes_done", bytesDone}, {"bytes_total", bytesTotal},
              {"bytes_per_second", bytesPerSecond}};
}

Result<Progress> Progress::parse(const json& j) {
  KILN_TRY_VOID(requireObject(j, "progress"));
  Progress p;
  p.commandId = KILN_TRY(str(j, "command_id"));
  for (auto [key, target] : {std::pair{"bytes_done", &p.bytesDone}, std::pair{"bytes_total", &p.bytesTotal}}) {
    auto it = j.find(key);
    if (it == j.end()) continue;
    if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<int64_t>() >= 0)) {
      return invalid(std::string("progress ") + key + " must be a non-negative integer");
    }
    *target = it->get<uint64_t>();
  }
  if (j.contains("bytes_per_second") && j["bytes_per_second"].is_number()) {
    p.bytesPerSecond = j["bytes_per_second"].get<double>();
  }
  return p;
}

json LogBatch::toJson() const {
  return json{{"first_seq", firstSeq}, {"lines", lines}, {"dropped", dropped}};
}

Result<LogBatch> LogBatch::parse(const json& j) {
  KILN_TRY_VOID(requireObject(j, "log"));
  LogBatch b;
  for (auto [key, target, min] : {std::tuple{"first_seq", &b.firstSeq, uint64_t{1}},
                                  std::tuple{"dropped", &b.dropped, uint64_t{0}}}) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) continue;
    const auto value = nonNegative(*it);
    if (!value || *value < min) {
      return invalid(std::string("log ") + key + " must be an integer of at least " +
                     std::to_string(min));
    }
    *target = *value;
  }
  if (auto it = j.find("lines"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return invalid("log lines must be a list of strings");
    b.lines.reserve(it->size());
    for (const auto& line : *it) {
      if (!line.is_string()) return invalid("log lines must be a list of strings");
      b.lines.push_back(line.get<std::string>());
    }
  }
  if (b.lines.size() > std::numeric_limits<uint64_t>::max() - b.firstSeq) {
    return invalid("log first_seq is too large");
  }
  return b;
}

json HeartbeatRequest::toJson() const {
  json j{{"callback_url", callbackUrl}, {"agent_version", agentVersion},
         {"agent_token", agentToken},   {"protocol_version", protocolVersion},
         {"steps", steps},              {"results", json::array()},
         {"running", running}};
  for (const auto& r : results) j["results"].push_back(r.toJson());
  if (progress) j["progress"] = progress->toJson();
  if (inventory) j["inventory"] = *inventory;
  if (log) j["log"] = log->toJson();
  return j;
}

Result<HeartbeatRequest> HeartbeatRequest::parse(const json& j) {
  KILN_TRY_VOID(requireObject(j, "heartbeat"));
  HeartbeatRequest h;
  h.callbackUrl = KILN_TRY(str(j, "callback_url", false));
  h.agentVersion = KILN_TRY(str(j, "agent_version", false));
  h.agentToken = KILN_TRY(str(j, "agent_token", false));
  h.protocolVersion = static_cast<int>(KILN_TRY(integer(j, "protocol_version", 0)));
  if (j.contains("steps") && !j["steps"].is_null()) {
    if (!j["steps"].is_object()) return invalid("field 'steps' must be an object");
    h.steps = j["steps"];
  }
  h.results = KILN_TRY(list<CommandResult>(j, "results"));
  if (j.contains("progress") && !j["progress"].is_null()) h.progress = KILN_TRY(Progress::parse(j["progress"]));
  if (j.contains("running") && j["running"].is_array()) {
    for (const auto& id : j["running"]) {
      if (!id.is_string()) return invalid("field 'running' must be a list of command ids");
      h.running.push_back(id.get<std::string>());
    }
  }
  if (j.contains("inventory") && !j["inventory"].is_null()) {
    if (!j["inventory"].is_object()) return invalid("field 'inventory' must be an object");
    h.inventory = j["inventory"];
  }
  if (j.contains("log") && !j["log"].is_null()) h.log = KILN_TRY(LogBatch::parse(j["log"]));
  return h;
}

json AgentCommand::toJson() const { return json{{"id", id}, {"name", name}, {"params", params}}; }

Result<AgentCommand> AgentCommand::parse(const json& j) {
  KILN_TRY_VOID(requireObject(j, "command"));
  AgentCommand c;
  c.id = KILN_TRY(str(j, "id"));
  c.name = KILN_TRY(str(j, "name"));
  if (j.contains("params") && !j["params"].is_null()) {
    if (!j["params"].is_object()) return invalid("command params must be an object");
    c.params = j["params"];
  }
  return c;
}

json HeartbeatResponse::toJson() const {
  json j{{"commands", json::array()}, {"acknowledged", acknowledged}, {"heartbeat_interval", heartbeatInterval}};
  for (const auto& c : commands) j["commands"].push_back(c.toJson());
  if (logAcknowledged) j["log_acknowledged"] = *logAcknowledged;
  return j;
}

Result<HeartbeatResponse> HeartbeatResponse::parse(const json& j) {
  KILN_TRY_VOID(requireObject(j, "heartbeat response"));
  HeartbeatResponse r;
  r.commands = KILN_TRY(list<AgentCommand>(j, "commands"));
  if (j.contains("acknowledged") && j["acknowledged"].is_array()) {
    for (const auto& id : j["acknowledged"]) {
      if (id.is_string()) r.acknowledged.push_back(id.get<std::string>());
    }
  }
  r.heartbeatInterval = static_cast<int>(KILN_TRY(integer(j, "heartbeat_interval", 10)));
  if (auto it = j.find("log_acknowledged"); it != j.end()) r.logAcknowledged = nonNegative(*it);
  return r;
}

}  // namespace kiln::protocol
