// File: agent/diagnostics/log_outbox.h
//
// The agent's log lines waiting to ride on a heartbeat (docs/protocol.md "Live log lines"):
// every line the Logger writes is numbered (1, 2, ... from the start of the process) and kept
// until the server acknowledges it by number. Bounded in bytes: when the server is slow or
// unreachable the oldest lines are dropped and counted, and the count goes out with the next
// batch. A heartbeat takes at most LogBatch::kMaxHeartbeatBytes of lines, oldest first; a
// retried heartbeat sends the same lines again (the server may store a line twice when an
// answer was lost, never loses one it acknowledged).
//
// Lines are kept as written; take() passes each through `mask` (the agent's registered
// secrets, which may be learned after the line was written), escapes bytes that are not UTF-8
// (JSON must be UTF-8) and cuts it to LogBatch::kMaxLineBytes. Thread-safe; append() takes only
// the outbox's own lock, so the Logger's tap may call it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "shared/protocol/messages.h"

namespace kiln::agent {

class LogOutbox {
 public:
  explicit LogOutbox(size_t maxBytes = 256 * 1024) : maxBytes_(maxBytes) {}

  /// One line as the Logger writes it (a trailing newline is removed).
  void append(std::string_view line);

  using Mask = std::function<std::string(std::string_view)>;
  /// The oldest unacknowledged lines, at most `maxBytes` of them (at least one line when any
  /// is waiting), and the dropped count not yet acknowledged; nullopt when there is nothing.
  std::optional<protocol::LogBatch> take(size_t maxBytes = protocol::LogBatch::kMaxHeartbeatBytes,
                                         const Mask& mask = {}) const;

  /// The server kept the lines up to `lastSeq` and was told of `droppedReported` dropped
  /// lines (the batch's `dropped`): both are forgotten.
  void acknowledge(uint64_t lastSeq, uint64_t droppedReported);

  /// Lines waiting, and dropped lines not yet reported (tests, diagnostics).
  size_t size() const;
  uint64_t dropped() const;

 private:
  struct Line {
    uint64_t seq;
    std::string text;
  };

  size_t maxBytes_;
  mutable std::mutex mutex_;
  std::deque<Line> lines_;
  size_t bytes_ = 0;
  uint64_t nextSeq_ = 1;
  uint64_t dropped_ = 0;
};

}  // namespace kiln::agent
