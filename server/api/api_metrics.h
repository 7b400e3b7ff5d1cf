// File: server/api/api_metrics.h
//
// The API's metrics and the scrape (GET /metrics, docs/observability.md "Metrics"):
//   kiln_api_requests_total{method,route,code}   counter; `route` is the matched route's
//       template ("/v1/nodes/{node}"), "unmatched" for a path no route has; `method` one of
//       Ironic's methods or "other": the label sets stay bounded whatever clients send
//   kiln_api_request_duration_seconds{route}     histogram
//   kiln_heartbeats_total                        counter: agent heartbeats received
//   kiln_agent_lookups_total{result}             counter: found, not_found, invalid, error
// and, made at scrape time: kiln_nodes{provision_state,power_state,maintenance} (the whole
// fleet, from the database), kiln_database_up, kiln_server_info{host,version} (which server
// answered), kiln_build_info{version}, the process_* metrics of this process, and the BMC
// sensor gauges this server read (server/drivers/sensor_metrics.h).
//
// Cost: RequestMetrics resolves each route's children once; recording a request is a hash
// lookup on the route's address, a scan of a few atomics and three atomic adds, no lock and no
// allocation once a (route, method, code) has been seen.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "server/api/router.h"
#include "server/config.h"
#include "server/storage/storage.h"
#include "shared/metrics/metrics.h"

namespace kiln::server {

/// The route label of requests no route matched.
inline constexpr std::string_view kUnmatchedRoute = "unmatched";

/// The method label: GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, else "other".
std::string_view methodLabel(std::string_view method);

/// kiln_api_requests_total and kiln_api_request_duration_seconds for one route table.
class RequestMetrics {
 public:
  explicit RequestMetrics(const std::vector<const Route*>& routes);
  RequestMetrics(const RequestMetrics&) = delete;
  RequestMetrics& operator=(const RequestMetrics&) = delete;

  /// Records one answered request; `route` null when none matched. Thread-safe.
  void record(const Route* route, std::string_view method, int status, double seconds);

 private:
  struct PerRoute {
    static constexpr size_t kSlots = 8;
    std::string pattern;
    metrics::Histogram* duration = nullptr;
    /// (method, status) -> counter, published lock-free: the counter is written before its
    /// key is stored (release); 0 = free slot.
    std::array<std::atomic<uint32_t>, kSlots> keys{};
    std::array<metrics::Counter*, kSlots> counters{};
  };
  metrics::Counter& counterFor(PerRoute& route, std::string_view method, int status);

  std::unordered_map<const Route*, std::unique_ptr<PerRoute>> routes_;  ///< fixed after ctor
  PerRoute unmatched_;
  std::mutex publish_;
};

/// Counts an agent heartbeat.
void recordHeartbeat();
/// Counts an agent lookup by result: "found", "not_found", "invalid" or "error".
void recordLookup(std::string_view result);

/// Registers every layer's families, so that the first scrape lists them all, and notes the
/// process start time. Called once by the server at start (idempotent).
void registerAllMetrics();

/// The whole scrape in the text format: the process registry, then the metrics made at
/// scrape time (the fleet's nodes read from `storage` in one GROUP BY, this server's identity
/// from `config`, the process).
std::string renderMetrics(Storage& storage, const Config& config);

}  // namespace kiln::server
