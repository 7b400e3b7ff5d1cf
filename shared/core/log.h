// File: shared/core/log.h
//
// One structured-logging facade (house-style rule 23). A Logger carries a component name and
// key/value context (`log.with("node", uuid)`); each line is written to stderr as
//   2026-11-21T10:00:00+00:00 INFO  conductor: message node=... step=...
// Loggers are cheap values; copying one copies its context. Thread-safe.
//
// A tap (setTap) receives a copy of every line as well, in the same format.
//
// Lines never show secrets (shared/core/secrets.h): a field whose key is password-like is
// written as key=******, and URLs carrying user:password@ in the message or in field values
// are masked. Callers still mask what they quote (maskedRepr, maskUrl) before logging it.
#pragma once

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln {

enum class LogLevel { Trace = 0, Debug, Info, Warning, Error };

/// The level `text` names: trace, debug, info, warning (or warn), error, in any case; nullopt
/// for anything else (callers report it: kiln-server's [DEFAULT] log_level, kiln-agent's
/// --log-level).
std::optional<LogLevel> parseLogLevel(std::string_view text);

/// "trace", "debug", "info", "warning" or "error": the name parseLogLevel reads back.
std::string_view logLevelName(LogLevel level);

class Logger {
 public:
  using Field = std::pair<std::string, std::string>;

  explicit Logger(std::string component = "kiln") : component_(std::move(component)) {}

  /// A copy of this logger with one more context field.
  Logger with(std::string key, std::string value) const;

  void trace(std::string_view message, std::initializer_list<Field> fields = {}) const {
    log(LogLevel::Trace, message, fields);
  }
  void debug(std::string_view message, std::initializer_list<Field> fields = {}) const {
    log(LogLevel::Debug, message, fields);
  }
  void info(std::string_view message, std::initializer_list<Field> fields = {}) const {
    log(LogLevel::Info, message, fields);
  }
  void warning(std::string_view message, std::initializer_list<Field> fields = {}) const {
    log(LogLevel::Warning, message, fields);
  }
  void error(std::string_view message, std::initializer_list<Field> fields = {}) const {
    log(LogLevel::Error, message, fields);
  }

  void log(LogLevel level, std::string_view message, std::initializer_list<Field> fields) const;

  /// Process-wide minimum level (default Info).
  static void setLevel(LogLevel level);
  static LogLevel level();

  /// Receives each finished line (with its newline) instead of stderr; calls are serialised.
  using Sink = std::function<void(std::string_view line)>;
  /// Process-wide: sends lines to `sink` (an empty one restores stderr) and returns the sink it
  /// replaced. For tests that check what is logged.
  static Sink setSink(Sink sink);
  /// Process-wide: `tap` also receives each finished line (with its newline), after it went to
  /// stderr or the sink; an empty one removes it. Returns the tap it replaced. kiln-agent keeps
  /// its log of this boot in memory this way (agent/diagnostics/ramdisk_record.h). Called with
  /// the write lock held: it must not log.
  static Sink setTap(Sink tap);

 private:
  std::string component_;
  std::vector<Field> context_;
};

}  // namespace kiln
