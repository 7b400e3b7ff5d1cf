// File: tests/support/log_capture.h
//
// Captures the process's log lines (Logger::setSink) for as long as it lives, at `level` and
// above; restores the previous sink and level when it goes. One at a time.
#pragma once

#include <mutex>
#include <string>
#include <string_view>

#include "shared/core/log.h"

namespace kiln::test {

class LogCapture {
 public:
  explicit LogCapture(LogLevel level = LogLevel::Trace) : previousLevel_(Logger::level()) {
    Logger::setLevel(level);
    previousSink_ = Logger::setSink([this](std::string_view line) {
      std::lock_guard<std::mutex> lock(mutex_);
      text_.append(line);
    });
  }
  ~LogCapture() {
    Logger::setSink(std::move(previousSink_));
    Logger::setLevel(previousLevel_);
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  /// Every line captured so far.
  std::string text() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return text_;
  }

 private:
  LogLevel previousLevel_;
  Logger::Sink previousSink_;
  mutable std::mutex mutex_;
  std::string text_;
};

}  // namespace kiln::test
