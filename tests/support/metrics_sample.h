// File: tests/support/metrics_sample.h
//
// Reading samples back from Prometheus text (the process registry's, or a scrape's body). The
// process registry is shared by every test of a binary: tests compare values before and after
// what they do, never absolute counts.
#pragma once

#include <optional>
#include <sstream>
#include <string>

#include "shared/metrics/metrics.h"

namespace kiln::test {

/// The value of the sample line `series` ("name" or "name{a=\"b\",...}", exactly as rendered),
/// or nullopt when the text has no such line.
inline std::optional<double> sampleValue(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.size() > series.size() && line.starts_with(series) && line[series.size()] == ' ') {
      return std::stod(line.substr(series.size() + 1));
    }
  }
  return std::nullopt;
}

/// The value of `series` in the process registry now (0 when it has no such sample yet).
inline double processSample(const std::string& series) {
  return sampleValue(metrics::processRegistry().render(), series).value_or(0);
}

}  // namespace kiln::test
