// File: server/drivers/bmc_metrics.h
//
// The BMC request metrics every driver records where it talks to a BMC, once per request
// (docs/observability.md "Metrics"):
//   kiln_bmc_requests_total{driver,operation,result}      counter
//   kiln_bmc_request_duration_seconds{driver,operation}   histogram
// `driver` is "ipmitool" or "redfish"; `operation` a bounded name (ipmitool's command words,
// Redfish's HTTP method), never an address, a path or a credential; `result` is one of
// kBmcSuccess, kBmcError, kBmcTimeout.
#pragma once

#include <chrono>
#include <string_view>

namespace kiln::server {

inline constexpr std::string_view kBmcSuccess = "success";
inline constexpr std::string_view kBmcError = "error";
inline constexpr std::string_view kBmcTimeout = "timeout";

/// Counts one BMC request and observes its duration.
void recordBmcRequest(std::string_view driver, std::string_view operation, std::string_view result,
                      std::chrono::steady_clock::duration elapsed);

/// Registers the families (so a scrape lists them before the first request).
void registerBmcMetrics();

}  // namespace kiln::server
