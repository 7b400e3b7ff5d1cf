// kiln_flow_duration_seconds and kiln_step_duration_seconds (server/conductor/conductor_metrics.h).
#include <catch2/catch.hpp>

#include "server/conductor/conductor_metrics.h"
#include "tests/support/metrics_sample.h"

using namespace kiln::server;
using kiln::test::processSample;

TEST_CASE("observeFlow counts a flow's duration by flow and result, other names as other",
          "[server][conductor][metrics]") {
  const std::string deploys = R"(kiln_flow_duration_seconds_count{flow="deploy",result="success"})";
  const std::string slow =
      R"(kiln_flow_duration_seconds_bucket{flow="deploy",result="success",le="600"})";
  const std::string sum = R"(kiln_flow_duration_seconds_sum{flow="deploy",result="success"})";
  const std::string other = R"(kiln_flow_duration_seconds_count{flow="other",result="other"})";
  const double before[] = {processSample(deploys), processSample(slow), processSample(sum),
                           processSample(other)};
  observeFlow("deploy", kFlowSuccess, std::chrono::seconds(90));
  observeFlow("deploy", kFlowSuccess, std::chrono::seconds(900));
  observeFlow("unheard-of", "maybe", std::chrono::seconds(1));
  CHECK(processSample(deploys) == before[0] + 2);
  CHECK(processSample(slow) == before[1] + 1);  // 900 s is above le="600"
  CHECK(processSample(sum) == before[2] + 990);
  CHECK(processSample(other) == before[3] + 1);
}

TEST_CASE("observeStep counts a step's duration by interface, step and result",
          "[server][conductor][metrics]") {
  const std::string series =
      R"(kiln_step_duration_seconds_count{interface="deploy",step="write_image",result="failure"})";
  const double before = processSample(series);
  observeStep("deploy", "write_image", kFlowFailure, std::chrono::milliseconds(2500));
  CHECK(processSample(series) == before + 1);
}
