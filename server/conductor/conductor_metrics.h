// File: server/conductor/conductor_metrics.h
//
// The conductor's metrics (docs/observability.md "Metrics"):
//   kiln_image_bytes_written_total                     counter: bytes the agents reported
//       written by deploy.write_image, counted once, when the server takes the result
//   kiln_flow_duration_seconds{flow,result}            histogram: deploy, clean, inspect,
//       service, rescue (other flows: "other"); result success, failure or aborted
//   kiln_step_duration_seconds{interface,step,result}  histogram: one step
// observeFlow() and observeStep() are for the conductor's step and flow recording to call;
// labels other than the known flows and results become "other" (bounded cardinality).
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

namespace kiln::server {

inline constexpr std::string_view kFlowSuccess = "success";
inline constexpr std::string_view kFlowFailure = "failure";
/// A flow or step ended by an abort (a user's, or a failure in a hold state).
inline constexpr std::string_view kFlowAborted = "aborted";

/// Counts `bytes` written to a node's disk by an image write.
void recordImageBytesWritten(uint64_t bytes);

/// Observes a whole flow (`flow`: deploy, clean, inspect, service or rescue; `result`:
/// kFlowSuccess, kFlowFailure or kFlowAborted).
void observeFlow(std::string_view flow, std::string_view result,
                 std::chrono::duration<double> elapsed);

/// Observes one step (`interface` such as "deploy", `step` such as "write_image").
void observeStep(std::string_view interface, std::string_view step, std::string_view result,
                 std::chrono::duration<double> elapsed);

/// Registers the families (so a scrape lists them before their first sample).
void registerConductorMetrics();

}  // namespace kiln::server
