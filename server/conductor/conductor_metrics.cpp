#include "server/conductor/conductor_metrics.h"

#include <algorithm>
#include <array>
#include <span>

#include "shared/metrics/metrics.h"

namespace kiln::server {
namespace {

struct ConductorFamilies {
  metrics::Counter& imageBytes;
  metrics::HistogramFamily& flows;
  metrics::HistogramFamily& steps;
};

ConductorFamilies& families() {
  auto& registry = metrics::processRegistry();
  static ConductorFamilies f{
      registry
          .counter("kiln_image_bytes_written_total",
                   "Bytes of images the agents reported written to disks (deploy.write_image).")
          .get(),
      registry.histogram("kiln_flow_duration_seconds",
                         "Duration of whole flows (deploy, clean, inspect, service, rescue) in "
                         "seconds, by result.",
                         {"flow", "result"}, metrics::longSecondsBuckets()),
      registry.histogram("kiln_step_duration_seconds", "Duration of steps in seconds, by result.",
                         {"interface", "step", "result"}, metrics::longSecondsBuckets())};
  return f;
}

std::string_view known(std::string_view value, std::span<const std::string_view> allowed) {
  return std::find(allowed.begin(), allowed.end(), value) != allowed.end() ? value : "other";
}

constexpr std::array<std::string_view, 5> kFlows = {"deploy", "clean", "inspect", "service",
                                                    "rescue"};
constexpr std::array<std::string_view, 3> kResults = {kFlowSuccess, kFlowFailure, kFlowAborted};

}  // namespace

void recordImageBytesWritten(uint64_t bytes) { families().imageBytes.inc(bytes); }

void observeFlow(std::string_view flow, std::string_view result,
                 std::chrono::duration<double> elapsed) {
  families().flows.labels({known(flow, kFlows), known(result, kResults)}).observe(elapsed.count());
}

void observeStep(std::string_view interface, std::string_view step, std::string_view result,
                 std::chrono::duration<double> elapsed) {
  // Interfaces and step names come from the drivers' and agent's step catalogues (validated
  // names), not from free text.
  families().steps.labels({interface, step, known(result, kResults)}).observe(elapsed.count());
}

void registerConductorMetrics() { (void)families(); }

}  // namespace kiln::server
