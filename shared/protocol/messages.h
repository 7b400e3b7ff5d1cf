// File: shared/protocol/messages.h
//
// The kiln-agent <-> kiln-server protocol (docs/protocol.md is the normative description; the
// golden files under tests/data/protocol/ keep both sides in step). The agent only dials out:
//
//   1. GET  /v1/lookup?addresses=<macs>[&node_uuid=]   -> LookupResponse (Ironic's format plus
//      "kiln_protocol_version" and "heartbeat_interval" in "config").
//   2. POST /v1/heartbeat/{node_uuid}  HeartbeatRequest -> 202 HeartbeatResponse: the commands
//      to run next. Results and progress of commands ride on later heartbeats.
//
// Every message is a plain struct with toJson()/parse(); parse() never throws and reports the
// first problem as InvalidArgument.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shared/core/error.h"

namespace kiln::protocol {

/// Command names (AgentCommand::name).
inline constexpr const char* kCollectLogsCommand = "collect_logs";

/// The protocol version this build speaks (HeartbeatRequest::protocolVersion).
inline constexpr int kProtocolVersion = 1;

/// Microversions the agent sends (Ironic's IPA sends the same for lookup and heartbeat).
inline constexpr const char* kLookupApiVersion = "1.62";
inline constexpr const char* kHeartbeatApiVersion = "1.68";

/// GET /v1/lookup's answer.
struct LookupResponse {
  std::string nodeUuid;
  nlohmann::json node = nlohmann::json::object();  ///< uuid, properties, instance_info, ...
  int heartbeatTimeout = 300;    ///< config.heartbeat_timeout (seconds)
  int heartbeatInterval = 10;    ///< config.heartbeat_interval (Kiln; seconds between beats)
  std::string agentToken;        ///< config.agent_token ("******" when already issued)
  int protocolVersion = kProtocolVersion;  ///< config.kiln_protocol_version
  bool md5ChecksumAllowed = false;  ///< config.agent_md5_checksum_enable (Ironic's name)

  nlohmann::json toJson() const;
  static Result<LookupResponse> parse(const nlohmann::json& j);
};

/// What a command did, reported on the next heartbeat.
struct CommandResult {
  std::string id;       ///< the AgentCommand id
  std::string name;     ///< the AgentCommand name
  std::string status;   ///< "SUCCEEDED" | "FAILED"
  nlohmann::json result = nlohmann::json::object();  ///< step output (e.g. {"raid_config": ...})
  std::string error;    ///< FAILED: what went wrong

  nlohmann::json toJson() const;
  static Result<CommandResult> parse(const nlohmann::json& j);
};

/// Progress of the running command (image writes: bytes).
struct Progress {
  std::string commandId;
  uint64_t bytesDone = 0;
  uint64_t bytesTotal = 0;  ///< 0 = unknown
  double bytesPerSecond = 0;

  nlohmann::json toJson() const;
  static Result<Progress> parse(const nlohmann::json& j);
};

/// The agent's log lines a heartbeat carries (docs/protocol.md "Live log lines"): lines
/// numbered firstSeq, firstSeq + 1, ... (the agent numbers its lines from 1 at start), each
/// one line as the agent's Logger writes it, without the newline. `dropped` counts lines the
/// agent dropped unsent since the last acknowledged batch (its outbox is bounded).
struct LogBatch {
  uint64_t firstSeq = 1;
  std::vector<std::string> lines;
  uint64_t dropped = 0;

  /// The agent sends at most this many bytes of lines per heartbeat (oldest first).
  static constexpr size_t kMaxHeartbeatBytes = 16 * 1024;
  /// Longer lines are cut to this many bytes by both sides.
  static constexpr size_t kMaxLineBytes = 2048;

  nlohmann::json toJson() const;
  static Result<LogBatch> parse(const nlohmann::json& j);
};

/// POST /v1/heartbeat/{uuid}: Ironic's fields plus Kiln's.
struct HeartbeatRequest {
  std::string callbackUrl;   ///< Ironic's callback_url; "" (the agent opens no port)
  std::string agentVersion;  ///< "kiln-agent <version>"
  std::string agentToken;
  int protocolVersion = kProtocolVersion;
  /// The agent's step catalogue: {"clean": {"<interface>": [step...]}, "deploy": {...}}; each
  /// step {"interface", "step", "priority", "abortable", "reboot_requested", "argsinfo":
  /// {"<arg>": {"description", "required"}}}.
  nlohmann::json steps = nlohmann::json::object();
  std::vector<CommandResult> results;  ///< finished commands not yet acknowledged
  std::optional<Progress> progress;    ///< the running command
  std::vector<std::string> running;    ///< ids of commands still running
  std::optional<nlohmann::json> inventory;  ///< hardware inventory (first heartbeat, or asked)
  std::optional<LogBatch> log;  ///< "log": new agent log lines, when there are any

  nlohmann::json toJson() const;
  static Result<HeartbeatRequest> parse(const nlohmann::json& j);
};

/// A command the server wants run. Names: "execute_step" (params {"kind": "clean"|"deploy"|
/// "service" (the agent runs a step by interface and name whatever the kind),
/// "step": {"interface", "step", "args"}, "collect_logs_on_failure": bool (a FAILED result then
/// carries result.system_logs)}), "collect_inventory", "collect_logs" (result {"system_logs":
/// base64 of the gzip'd tar of agent/diagnostics/log_bundle.h}), "sync", "power_off", "reboot".
/// The agent answers commands in the order they arrive, power commands included.
struct AgentCommand {
  std::string id;
  std::string name;
  nlohmann::json params = nlohmann::json::object();

  nlohmann::json toJson() const;
  static Result<AgentCommand> parse(const nlohmann::json& j);
};

/// The heartbeat's 202 body.
struct HeartbeatResponse {
  std::vector<AgentCommand> commands;
  /// Ids whose results the server has recorded: the agent stops resending them.
  std::vector<std::string> acknowledged;
  int heartbeatInterval = 10;  ///< seconds until the next heartbeat (shorter while busy)
  /// "log_acknowledged": the last log line seq the server kept; the agent forgets the lines up
  /// to it and the dropped count it reported. Absent: nothing taken, the agent resends.
  std::optional<uint64_t> logAcknowledged;

  nlohmann::json toJson() const;
  static Result<HeartbeatResponse> parse(const nlohmann::json& j);
};

}  // namespace kiln::protocol
