// Fuzz target agent_log (docs/fuzzing.md): the agent log lines that ride on heartbeats
// (docs/protocol.md "Live log lines"). The first line of the input is the node's agent token;
// the next byte chooses:
//   'j' the rest is a heartbeat's "log" member as JSON: LogBatch::parse, then every line as
//       kiln-server journals it (server/model/agent_log.h, readAgentLogLine, agentLogFields);
//   any other: the rest, split at newlines, are raw lines appended to the agent's LogOutbox
//       (agent/diagnostics/log_outbox.h, a small one) and taken with the token masked, each
//       taken line then journalled as above.
// Never a crash, and: what LogBatch::parse accepts survives toJson() and parse() again; a
// journalled line's fields serialise as strict UTF-8 JSON (nlohmann throws on anything else),
// its message is at most LogBatch::kMaxLineBytes and never holds the token; a line the outbox
// hands out is valid UTF-8, at most kMaxLineBytes, and never holds the token.
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "agent/diagnostics/log_outbox.h"
#include "server/model/agent_log.h"
#include "shared/protocol/messages.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using namespace kiln;
using kiln::fuzz::fail;
using nlohmann::json;

/// Masking is only checked for tokens that cannot arise from masking or escaping themselves.
bool checkableToken(std::string_view token) {
  if (token.size() < 8) return false;
  for (char c : token) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!plain) return false;
  }
  return true;
}

void journal(std::string_view raw, std::string_view token, uint64_t seq) {
  const server::AgentLogLine line = server::readAgentLogLine(raw, token);
  std::string text;
  try {
    text = server::agentLogFields(seq, line).dump();
  } catch (const std::exception& e) {
    fail("agent_log: the fields do not serialise", e.what());
  }
  if (line.message.size() > protocol::LogBatch::kMaxLineBytes) {
    fail("agent_log: a message longer than the line limit", line.message);
  }
  if (checkableToken(token) && line.message.find(token) != std::string::npos) {
    fail("agent_log: the token reached a message", line.message);
  }
}

void checkBatchJson(std::string_view text, std::string_view token) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return;
  auto batch = protocol::LogBatch::parse(j);
  if (!batch) return;
  auto again = protocol::LogBatch::parse(batch->toJson());
  if (!again || again->toJson() != batch->toJson()) fail("agent_log: a batch does not parse back");
  uint64_t seq = batch->firstSeq;
  for (const auto& raw : batch->lines) journal(raw, token, seq++);
}

void checkOutbox(std::string_view rest, std::string token) {
  agent::LogOutbox outbox(4096);
  fuzz::InputReader reader(reinterpret_cast<const uint8_t*>(rest.data()), rest.size());
  while (!reader.empty()) outbox.append(reader.until("\n"));
  const auto mask = [&](std::string_view text) {
    std::string out(text);
    if (token.empty()) return out;
    for (size_t at = out.find(token); at != std::string::npos; at = out.find(token, at + 6)) {
      out.replace(at, token.size(), "******");
    }
    return out;
  };
  auto batch = outbox.take(1024, mask);
  if (!batch) return;
  uint64_t seq = batch->firstSeq;
  for (const auto& line : batch->lines) {
    if (!fuzz::isValidUtf8(line)) fail("agent_log: the outbox handed out invalid UTF-8", line);
    if (line.size() > protocol::LogBatch::kMaxLineBytes) fail("agent_log: an outbox line too long");
    if (checkableToken(token) && line.find(token) != std::string::npos) {
      fail("agent_log: the outbox handed out the token", line);
    }
    journal(line, token, seq++);
  }
  outbox.acknowledge(seq - 1, batch->dropped);
  if (outbox.dropped() != 0) fail("agent_log: an acknowledged dropped count stayed");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::InputReader reader(data, size);
  const std::string token(reader.until("\n"));
  const uint8_t mode = reader.byte();
  if (mode == 'j') {
    checkBatchJson(reader.rest(), token);
  } else {
    checkOutbox(reader.rest(), token);
  }
  return 0;
}
