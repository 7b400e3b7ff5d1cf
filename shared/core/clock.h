// File: shared/core/clock.h
//
// Time as a seam: production code asks a Clock, tests inject a FakeClock (tests/support).
#pragma once

#include <chrono>
#include <ctime>
#include <optional>
#include <memory>
#include <string>
#include <thread>

namespace kiln {

/// Source of wall-clock and monotonic time. Implementations must be thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  /// Wall-clock time (UTC), used for timestamps stored on resources.
  virtual std::chrono::system_clock::time_point now() const = 0;
  /// Monotonic time, used for timeouts and durations.
  virtual std::chrono::steady_clock::time_point monotonic() const = 0;
  /// Waits (real time for SystemClock; a FakeClock advances itself and returns at once). Used
  /// by driver code that polls hardware, never to synchronise threads.
  virtual void sleepFor(std::chrono::milliseconds duration) const = 0;
};

/// The real clock.
class SystemClock final : public Clock {
 public:
  std::chrono::system_clock::time_point now() const override {
    return std::chrono::system_clock::now();
  }
  std::chrono::steady_clock::time_point monotonic() const override {
    return std::chrono::steady_clock::now();
  }
  void sleepFor(std::chrono::milliseconds duration) const override;
};

/// Formats a time point the way Ironic does: "2024-05-01T10:00:00+00:00" (UTC, seconds).
std::string formatIsoTime(std::chrono::system_clock::time_point tp);

/// Seconds since the epoch of an ISO time as formatIsoTime writes it (the zone is taken as
/// UTC); nullopt when `text` does not start with "YYYY-MM-DDTHH:MM:SS".
std::optional<std::time_t> parseIsoTime(const std::string& text);

}  // namespace kiln
