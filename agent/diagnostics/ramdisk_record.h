// File: agent/diagnostics/ramdisk_record.h
//
// What kiln-agent keeps in memory of its ramdisk session for the log bundle (the collect_logs
// command, docs/protocol.md §2.3; agent/diagnostics/log_bundle.h): every external command a
// step ran, and the agent's own log lines of this boot. Both are bounded; the oldest entries
// are dropped first and counted. Thread-safe.
//
// Secrets: a command is recorded as its Command::display() (which callers set to keep
// passwords out of sight) with the URLs carrying user information masked; its stdin is never
// recorded. Strings registered with addSecret (the agent token, image credentials) are
// replaced by "******" in everything the record hands out.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shared/core/clock.h"
#include "shared/exec/command_runner.h"

namespace kiln::agent {

struct RecordLimits {
  size_t streamBytes = 64 * 1024;         ///< per command, for stdout and for stderr each
  size_t commandBytes = 4 * 1024 * 1024;  ///< all recorded commands together
  size_t logBytes = 2 * 1024 * 1024;      ///< the agent's log lines together
};

struct CommandRecord {
  std::string started;          ///< ISO time the command started
  std::string command;          ///< masked
  std::optional<int> exitCode;  ///< none when it could not run or timed out
  std::string error;            ///< why it did not finish (could not start, timeout)
  double seconds = 0;
  std::string out;        ///< the first streamBytes of stdout
  std::string err;        ///< the first streamBytes of stderr
  size_t outDropped = 0;  ///< stdout bytes beyond streamBytes, not kept
  size_t errDropped = 0;

  size_t bytes() const { return command.size() + out.size() + err.size() + error.size() + 64; }
};

class RamdiskRecord {
 public:
  explicit RamdiskRecord(RecordLimits limits = {}) : limits_(limits) {}

  /// From now on `secret` (when at least 4 bytes long) is masked in what the record hands out.
  void addSecret(std::string_view secret);
  /// `text` with every registered secret replaced by "******".
  std::string mask(std::string_view text) const;

  void recordCommand(CommandRecord record);
  /// One log line (as Logger writes it, newline included).
  void appendLogLine(std::string_view line);

  /// The recorded commands, oldest first, masked; and how many older ones were dropped.
  std::vector<CommandRecord> commands() const;
  size_t droppedCommands() const;
  /// The kept log lines, masked, preceded by a line counting the dropped ones if any.
  std::string log() const;

 private:
  std::string maskLocked(std::string_view text) const;

  RecordLimits limits_;
  mutable std::mutex mutex_;
  std::vector<std::string> secrets_;
  std::deque<CommandRecord> commands_;
  size_t commandBytes_ = 0;
  size_t droppedCommands_ = 0;
  std::deque<std::string> lines_;
  size_t logBytes_ = 0;
  size_t droppedLines_ = 0;
};

/// A CommandRunner that runs through `inner` and records each command in `record`.
class RecordingCommandRunner final : public CommandRunner {
 public:
  RecordingCommandRunner(CommandRunner& inner, RamdiskRecord& record, const Clock& clock)
      : inner_(inner), record_(record), clock_(clock) {}
  Result<CommandOutput> run(const Command& command) override;

 private:
  CommandRunner& inner_;
  RamdiskRecord& record_;
  const Clock& clock_;
};

}  // namespace kiln::agent
