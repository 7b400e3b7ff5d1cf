// File: server/model/agent_log.h
//
// One agent log line as kiln-server journals it (an `agent_log` node event, docs/observability.md
// "Events"; the lines arrive with the heartbeats, docs/protocol.md "Live log lines"). The agent
// is not trusted: a line is cut to LogBatch::kMaxLineBytes, its bytes that are not UTF-8 are
// escaped (\xNN), every URL in it is masked as an agent error's are (an image URL may carry
// credentials or a temporary-URL signature), and the node's agent token is masked wherever it
// appears. The line is then read as the agent's Logger writes it,
//   2026-11-21T10:00:00+00:00 INFO  agent: message key=value ...
// into its time, level and message (the component word is dropped); a line in another shape is kept whole as the message with
// no level. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "shared/json/json_fwd.h"

namespace kiln::server {

struct AgentLogLine {
  std::string agentTime;  ///< the agent's own timestamp ("" when the line has none)
  std::string level;      ///< "trace", "debug", "info", "warning", "error" or "" (unknown)
  std::string message;    ///< the rest of the line, masked
  size_t cutBytes = 0;    ///< bytes cut off the end (0: the whole line is kept)
};

/// `raw` made safe and read (see the file comment); `token` is masked when not empty.
AgentLogLine readAgentLogLine(std::string_view raw, std::string_view token);

/// An agent_log event's fields: {"seq", "level" (null when unknown), "agent_time" (null when
/// unknown), "message"} and "truncated_bytes" when the line was cut.
Json agentLogFields(uint64_t seq, const AgentLogLine& line);

/// The agent_log event's fields that report `count` lines the agent dropped unsent.
Json droppedAgentLogFields(uint64_t count);

}  // namespace kiln::server
