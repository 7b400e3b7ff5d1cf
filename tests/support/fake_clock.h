// File: tests/support/fake_clock.h
//
// A Clock tests advance by hand.
#pragma once

#include <atomic>
#include <chrono>

#include "shared/core/clock.h"

namespace kiln::test {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(std::chrono::system_clock::time_point start =
                         std::chrono::system_clock::time_point(std::chrono::seconds(1767225600)))
      : wall_(start.time_since_epoch().count()), mono_(0) {}

  std::chrono::system_clock::time_point now() const override {
    return std::chrono::system_clock::time_point(std::chrono::system_clock::duration(wall_.load()));
  }
  std::chrono::steady_clock::time_point monotonic() const override {
    return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(mono_.load()));
  }
  /// Sleeping on a fake clock just moves it forward.
  void sleepFor(std::chrono::milliseconds duration) const override {
    const_cast<FakeClock*>(this)->advance(duration);
  }
  void advance(std::chrono::nanoseconds d) {
    wall_ += std::chrono::duration_cast<std::chrono::system_clock::duration>(d).count();
    mono_ += std::chrono::duration_cast<std::chrono::steady_clock::duration>(d).count();
  }

 private:
  std::atomic<std::chrono::system_clock::duration::rep> wall_;
  std::atomic<std::chrono::steady_clock::duration::rep> mono_;
};

}  // namespace kiln::test
