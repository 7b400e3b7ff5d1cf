#include "shared/core/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>

#include "shared/core/clock.h"

namespace kiln {
namespace {

std::atomic<int> gLevel{static_cast<int>(LogLevel::Info)};
std::mutex gWriteMutex;

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

void appendField(std::string& line, const Logger::Field& field) {
  line += ' ';
  line += field.first;
  line += '=';
  const bool quote = field.second.find(' ') != std::string::npos || field.second.empty();
  if (quote) {
    line += '"';
  }
  line += field.second;
  if (quote) {
    line += '"';
  }
}

}  // namespace

LogLevel parseLogLevel(std::string_view text) {
  std::string lower;
  for (char c : text) {
    lower.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
  }
  if (lower == "trace") return LogLevel::Trace;
  if (lower == "debug") return LogLevel::Debug;
  if (lower == "warning" || lower == "warn") return LogLevel::Warning;
  if (lower == "error") return LogLevel::Error;
  return LogLevel::Info;
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
  line += message;
  for (const auto& f : context_) {
    appendField(line, f);
  }
  for (const auto& f : fields) {
    appendField(line, f);
  }
  line += '\n';
  std::lock_guard<std::mutex> lock(gWriteMutex);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

void Logger::setLevel(LogLevel level) { gLevel.store(static_cast<int>(level)); }
LogLevel Logger::level() { return static_cast<LogLevel>(gLevel.load()); }

}  // namespace kiln
