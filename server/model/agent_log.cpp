#include "server/model/agent_log.h"

#include <nlohmann/json.hpp>

#include "shared/core/log.h"
#include "shared/core/secrets.h"
#include "shared/core/strings.h"
#include "shared/protocol/messages.h"

namespace kiln::server {

namespace {

/// The first space-separated word of `text` (after skipping spaces) and the rest after it.
std::pair<std::string_view, std::string_view> word(std::string_view text) {
  text = trimView(text, " ");
  const size_t end = text.find(' ');
  if (end == std::string_view::npos) return {text, {}};
  return {text.substr(0, end), text.substr(end + 1)};
}

/// "2026-11-21T10:00:00+00:00" and the like: digits, '-', ':', 'T', '+', '.', 'Z'; a date first.
bool looksLikeTime(std::string_view text) {
  if (text.size() < 19 || text.size() > 40 || text[4] != '-' || text[10] != 'T') return false;
  for (char c : text) {
    const bool ok = (c >= '0' && c <= '9') || c == '-' || c == ':' || c == 'T' || c == '+' ||
                    c == '.' || c == 'Z';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

AgentLogLine readAgentLogLine(std::string_view raw, std::string_view token) {
  AgentLogLine out;
  while (!raw.empty() && (raw.back() == '\n' || raw.back() == '\r')) raw.remove_suffix(1);
  // Masked before it is cut (no half secret survives a cut), escaped before it is measured.
  std::string text = escapeInvalidUtf8(raw);
  maskSecretIn(text, token);
  text = maskUrlsInText(text, UrlScope::All);
  const size_t kept = truncateUtf8(text, protocol::LogBatch::kMaxLineBytes).size();
  out.cutBytes = text.size() - kept;
  text.resize(kept);

  auto [time, afterTime] = word(text);
  auto [levelWord, afterLevel] = word(afterTime);
  auto [component, afterComponent] = word(afterLevel);
  std::optional<LogLevel> level;
  if (levelWord.size() <= 7) level = parseLogLevel(levelWord);
  if (looksLikeTime(time) && level && component.size() > 1 && component.back() == ':') {
    out.agentTime = std::string(time);
    out.level = std::string(logLevelName(*level));
    out.message = std::string(trimView(afterComponent, " "));
  } else {
    out.message = std::move(text);
  }
  return out;
}

Json agentLogFields(uint64_t seq, const AgentLogLine& line) {
  Json fields{{"seq", seq},
              {"level", line.level.empty() ? Json(nullptr) : Json(line.level)},
              {"agent_time", line.agentTime.empty() ? Json(nullptr) : Json(line.agentTime)},
              {"message", line.message}};
  if (line.cutBytes > 0) fields["truncated_bytes"] = line.cutBytes;
  return fields;
}

Json droppedAgentLogFields(uint64_t count) {
  return Json{{"seq", nullptr},
              {"level", "warning"},
              {"agent_time", nullptr},
              {"message", "the agent dropped " + std::to_string(count) +
                              " log line(s) it could not send (its outbox was full while the "
                              "server did not answer); the ramdisk log bundle keeps more"},
              {"dropped", count}};
}

}  // namespace kiln::server
