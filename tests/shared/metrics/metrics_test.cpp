// The metrics registry and the Prometheus text format 0.0.4 (shared/metrics/metrics.h).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "shared/metrics/metrics.h"

using namespace kiln::metrics;

TEST_CASE(
    "Registry renders HELP, TYPE and samples in name and label order when families are registered "
    "out of order",
    "[shared][metrics]") {
  Registry r;
  auto& b = r.counter("b_requests_total", "B requests.", {"code"});
  auto& a = r.gauge("a_temperature_celsius", "A gauge.");
  b.labels({"500"}).inc(2);
  b.labels({"200"}).inc();
  a.get().set(21.5);
  CHECK(r.render() ==
        "# HELP a_temperature_celsius A gauge.\n"
        "# TYPE a_temperature_celsius gauge\n"
        "a_temperature_celsius 21.5\n"
        "# HELP b_requests_total B requests.\n"
        "# TYPE b_requests_total counter\n"
        "b_requests_total{code=\"200\"} 1\n"
        "b_requests_total{code=\"500\"} 2\n");
}

TEST_CASE("Family labels returns the same child when asked again with the same values",
          "[shared][metrics]") {
  Registry r;
  auto& f = r.counter("x_total", "X.", {"a", "b"});
  Counter& first = f.labels({"1", "2"});
  std::string a = "1";
  std::string b = "2";
  Counter& again = f.labels({std::string_view(a), std::string_view(b)});
  CHECK(&first == &again);
  CHECK(&f.labels({"1", "3"}) != &first);
  // Registering the name again hands back the family already there.
  CHECK(&r.counter("x_total", "X.", {"a", "b"}) == &f);
}

TEST_CASE("Label values are escaped when they hold backslashes, quotes, newlines or bad UTF-8",
          "[shared][metrics]") {
  CHECK(escapeLabelValue(R"(a\b)") == R"(a\\b)");
  CHECK(escapeLabelValue("say \"hi\"") == R"(say \"hi\")");
  CHECK(escapeLabelValue("two\nlines") == R"(two\nlines)");
  CHECK(escapeLabelValue("caf\xC3\xA9") == "caf\xC3\xA9");    // valid UTF-8 stays
  CHECK(escapeLabelValue("bad\xFFz") == "bad\xEF\xBF\xBDz");  // not UTF-8: U+FFFD
  CHECK(escapeLabelValue("cut\xC3") == "cut\xEF\xBF\xBD");    // truncated sequence
  CHECK(escapeLabelValue("\xED\xA0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  Registry r;
  r.gauge("g", "Help with \\ and\nnewline.", {"name"}).labels({"a\"b\\c\nd"}).set(1);
  CHECK(r.render() ==
        "# HELP g Help with \\\\ and\\nnewline.\n"
        "# TYPE g gauge\n"
        "g{name=\"a\\\"b\\\\c\\nd\"} 1\n");
}

TEST_CASE("Histogram renders cumulative buckets, +Inf, _sum and _count when observed",
          "[shared][metrics]") {
  Registry r;
  static constexpr double kBounds[] = {0.25, 1, 10};
  auto& h = r.histogram("op_duration_seconds", "Op.", {"op"}, kBounds);
  Histogram& child = h.labels({"read"});
  child.observe(0.125);
  child.observe(0.25);  // on a bound: counted in le="0.25" (upper bounds are inclusive)
  child.observe(5);
  child.observe(50);
  CHECK(r.render() ==
        "# HELP op_duration_seconds Op.\n"
        "# TYPE op_duration_seconds histogram\n"
        "op_duration_seconds_bucket{op=\"read\",le=\"0.25\"} 2\n"
        "op_duration_seconds_bucket{op=\"read\",le=\"1\"} 2\n"
        "op_duration_seconds_bucket{op=\"read\",le=\"10\"} 3\n"
        "op_duration_seconds_bucket{op=\"read\",le=\"+Inf\"} 4\n"
        "op_duration_seconds_sum{op=\"read\"} 55.375\n"
        "op_duration_seconds_count{op=\"read\"} 4\n");
}

TEST_CASE("A histogram without labels has only le on its buckets", "[shared][metrics]") {
  Registry r;
  static constexpr double kBounds[] = {1};
  r.histogram("t_seconds", "T.", {}, kBounds).get().observe(2);
  CHECK(r.render() ==
        "# HELP t_seconds T.\n# TYPE t_seconds histogram\n"
        "t_seconds_bucket{le=\"1\"} 0\nt_seconds_bucket{le=\"+Inf\"} 1\n"
        "t_seconds_sum 2\nt_seconds_count 1\n");
}

TEST_CASE("formatValue writes integers plainly and special values as Prometheus reads them",
          "[shared][metrics]") {
  CHECK(formatValue(0) == "0");
  CHECK(formatValue(42) == "42");
  CHECK(formatValue(-3) == "-3");
  CHECK(formatValue(0.25) == "0.25");
  CHECK(formatValue(1e20) == "1e+20");
  CHECK(formatValue(std::numeric_limits<double>::infinity()) == "+Inf");
  CHECK(formatValue(-std::numeric_limits<double>::infinity()) == "-Inf");
  CHECK(formatValue(std::nan("")) == "NaN");
}

TEST_CASE("Metric and label names are checked as Prometheus defines them", "[shared][metrics]") {
  CHECK(isValidMetricName("kiln_nodes"));
  CHECK(isValidMetricName("ns:metric_1"));
  CHECK_FALSE(isValidMetricName("1abc"));
  CHECK_FALSE(isValidMetricName("bad-name"));
  CHECK_FALSE(isValidMetricName(""));
  CHECK(isValidLabelName("provision_state"));
  CHECK_FALSE(isValidLabelName("__reserved"));
  CHECK_FALSE(isValidLabelName("a:b"));
}

TEST_CASE("Gauge add and set change the value when called from several places",
          "[shared][metrics]") {
  Gauge g;
  g.set(2);
  g.add(0.5);
  g.add(-1);
  CHECK(g.value() == 1.5);
}
