#include "shared/core/clock.h"

#include <ctime>

namespace kiln {

void SystemClock::sleepFor(std::chrono::milliseconds duration) const {
  std::this_thread::sleep_for(duration);
}

std::string formatIsoTime(std::chrono::system_clock::time_point tp) {
  std::time_t t = std::chrono::system_clock::to_time_t(tp);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S+00:00", &tm);
  return buf;
}

std::optional<std::time_t> parseIsoTime(const std::string& text) {
  std::tm tm{};
  if (!strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return std::nullopt;
  return timegm(&tm);
}

}  // namespace kiln
