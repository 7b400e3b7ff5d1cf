#include "server/drivers/bmc_metrics.h"

#include "shared/metrics/metrics.h"

namespace kiln::server {
namespace {

struct BmcFamilies {
  metrics::CounterFamily& requests;
  metrics::HistogramFamily& duration;
};

BmcFamilies& families() {
  static BmcFamilies f{
      metrics::processRegistry().counter("kiln_bmc_requests_total",
                                         "Requests to BMCs, by driver, operation and result.",
                                         {"driver", "operation", "result"}),
      metrics::processRegistry().histogram(
          "kiln_bmc_request_duration_seconds", "Duration of requests to BMCs in seconds.",
          {"driver", "operation"}, metrics::defaultSecondsBuckets())};
  return f;
}

}  // namespace

void recordBmcRequest(std::string_view driver, std::string_view operation, std::string_view result,
                      std::chrono::steady_clock::duration elapsed) {
  BmcFamilies& f = families();
  f.requests.labels({driver, operation, result}).inc();
  f.duration.labels({driver, operation}).observe(std::chrono::duration<double>(elapsed).count());
}

void registerBmcMetrics() { (void)families(); }

}  // namespace kiln::server
