#include "shared/core/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>

#include "shared/core/clock.h"
#include "shared/core/secrets.h"
#include "shared/core/strings.h"

namespace kiln {
namespace {

std::atomic<int> gLevel{static_cast<int>(LogLevel::Info)};
std::mutex gWriteMutex;
Logger::Sink gSink;  // guarded by gWriteMutex; empty: stderr
Logger::Sink gTap;   // guarded by gWriteMutex; empty: none

std::string_view levelName(LogLevel level) {
  switch (level) {
    case LogLevel::Trace: return "TRACE";
    case LogLevel::Debug: return "DEBUG";
    case LogLevel::Info: return "INFO ";
    case LogLevel::Warning: return "WARN ";
    case LogLevel::Error: return "ERROR";
  }
  return "INFO ";
}

/// Appends `text` with control characters escaped (\n, \r, \t, \xNN), so text a client sent
/// cannot start a forged log line or hide one.
void appendEscaped(std::string& line, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c != 0x7f) {
      line += ch;
    } else if (c == '\n') {
      line += "\\n";
    } else if (c == '\r') {
      line += "\\r";
    } else if (c == '\t') {
      line += "\\t";
    } else {
      line += "\\x";
      line += kHex[c >> 4];
      line += kHex[c & 0xf];
    }
  }
}

void appendField(std::string& line, const Logger::Field& field) {
  line += ' ';
  appendEscaped(line, field.first);
  line += '=';
  if (isSecretKey(field.first) && !field.second.empty()) {
    line += kMaskedValue;
    return;
  }
  const std::string value = maskUrlsInText(field.second);
  const bool quote = value.find(' ') != std::string::npos || value.empty();
  if (quote) {
    line += '"';
  }
  appendEscaped(line, value);
  if (quote) {
    line += '"';
  }
}

}  // namespace

std::optional<LogLevel> parseLogLevel(std::string_view text) {
  const std::string lower = asciiLower(text);
  if (lower == "trace") return LogLevel::Trace;
  if (lower == "debug") return LogLevel::Debug;
  if (lower == "info") return LogLevel::Info;
  if (lower == "warning" || lower == "warn") return LogLevel::Warning;
  if (lower == "error") return LogLevel::Error;
  return std::nullopt;
}

std::string_view logLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::Trace: return "trace";
    case LogLevel::Debug: return "debug";
    case LogLevel::Info: return "info";
    case LogLevel::Warning: return "warning";
    case LogLevel::Error: return "error";
  }
  return "info";
}

Logger Logger::with(std::string key, std::string value) const {
  Logger copy = *this;
  copy.context_.emplace_back(std::move(key), std::move(value));
  return copy;
}

void Logger::log(LogLevel level, std::string_view message,
                 std::initializer_list<Field> fields) const {
  if (static_cast<int>(level) < gLevel.load(std::memory_order_relaxed)) {
    return;
  }
  std::string line = formatIsoTime(std::chrono::system_clock::now());
  line += ' ';
  line += levelName(level);
  line += ' ';
  line += component_;
  line += ": ";
  appendEscaped(line, maskUrlsInText(message));
  for (const auto& f : context_) {
    appendField(line, f);
  }
  for (const auto& f : fields) {
    appendField(line, f);
  }
  line += '\n';
  std::lock_guard<std::mutex> lock(gWriteMutex);
  if (gSink) {
    gSink(line);
  } else {
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
  if (gTap) gTap(line);
}

Logger::Sink Logger::setSink(Sink sink) {
  std::lock_guard<std::mutex> lock(gWriteMutex);
  std::swap(gSink, sink);
  return sink;
}

Logger::Sink Logger::setTap(Sink tap) {
  std::lock_guard<std::mutex> lock(gWriteMutex);
  std::swap(gTap, tap);
  return tap;
}

void Logger::setLevel(LogLevel level) { gLevel.store(static_cast<int>(level)); }
LogLevel Logger::level() { return static_cast<LogLevel>(gLevel.load()); }

}  // namespace kiln
