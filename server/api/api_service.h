// File: server/api/api_service.h
//
// The Ironic-compatible REST API as a function from ApiRequest to ApiResponse. It owns the
// single route table (buildRoutes() in api_service.cpp) and applies, in Ironic's order:
// authentication (http_basic) for non-public routes, microversion negotiation (406), routing
// (404/405, and endpoints newer than the requested version), the observer policy (403), then
// the handler. Every response from the API carries the version headers and a request id.
// Exceptions never escape: anything thrown becomes a 500 in Ironic's error format.
#pragma once

#include <memory>
#include <string>

#include "server/api/auth.h"
#include "server/api/http.h"
#include "server/api/router.h"
#include "server/conductor/conductor.h"
#include "server/config.h"
#include "server/drivers/driver_registry.h"
#include "server/storage/storage.h"
#include "shared/core/clock.h"
#include "shared/core/log.h"

namespace kiln::server {

class NodeEventHub;

/// What the handlers use. References outlive the ApiService.
struct ApiDeps {
  const Config& config;
  Storage& storage;
  const DriverRegistry& drivers;
  const Clock& clock;
  Authenticator& auth;
  Conductor& conductor;
  Logger log{"api"};
  /// Serves the node event streams (server/api/node_event_hub.h); null: no streams (503).
  NodeEventHub* eventHub = nullptr;
  /// The [metrics] listener's service (its own address): GET /metrics and nothing else.
  bool metricsOnly = false;
};

class NodeHandlers;
class PortHandlers;
class CatalogHandlers;
class DeployTemplateHandlers;
class RunbookHandlers;
class AllocationHandlers;
class EventHandlers;
class VendorHandlers;
class VifHandlers;
class ConsoleHandlers;
class AgentHandlers;
class BootHandlers;
class ManagementHandlers;
class VolumeHandlers;
class HistoryHandlers;
class BiosHandlers;
class InspectionRuleHandlers;
class NodeEventHandlers;
class FleetHandlers;
class RamdiskLogHandlers;
class WebConsole;
class RequestMetrics;

class ApiService {
 public:
  explicit ApiService(ApiDeps deps);
  ~ApiService();

  /// Handles one request. Thread-safe. Never throws. Counts it in kiln_api_requests_total and
  /// kiln_api_request_duration_seconds (server/api/api_metrics.h). GET /metrics is answered
  /// here, before routing, when [metrics] serves it on the API port (or this is the metrics
  /// listener's service): in Prometheus' text format, with the API's credentials only when
  /// [metrics] require_auth. The web console's files (/ui/, server/api/web_console.h) are
  /// answered here too, and every write is first checked against cross-site use
  /// (server/api/web_security.h).
  ApiResponse handle(const ApiRequest& request);

 private:
  void buildRoutes();
  /// `matched`: the route that answered, null when none matched.
  ApiResponse dispatch(const ApiRequest& request, const Route*& matched);
  ApiResponse serveMetrics(const ApiRequest& request);

  ApiDeps deps_;
  Router router_;
  std::unique_ptr<NodeHandlers> nodes_;
  std::unique_ptr<PortHandlers> ports_;
  std::unique_ptr<CatalogHandlers> catalog_;
  std::unique_ptr<DeployTemplateHandlers> templates_;
  std::unique_ptr<RunbookHandlers> runbooks_;
  std::unique_ptr<AllocationHandlers> allocations_;
  std::unique_ptr<EventHandlers> events_;
  std::unique_ptr<VendorHandlers> vendor_;
  std::unique_ptr<VifHandlers> vifs_;
  std::unique_ptr<ConsoleHandlers> console_;
  std::unique_ptr<AgentHandlers> agent_;
  std::unique_ptr<BootHandlers> boot_;
  std::unique_ptr<ManagementHandlers> management_;
  std::unique_ptr<VolumeHandlers> volumes_;
  std::unique_ptr<HistoryHandlers> history_;
  std::unique_ptr<BiosHandlers> bios_;
  std::unique_ptr<InspectionRuleHandlers> inspectionRules_;
  std::unique_ptr<NodeEventHandlers> nodeEvents_;
  std::unique_ptr<FleetHandlers> fleet_;
  std::unique_ptr<RamdiskLogHandlers> ramdiskLogs_;
  std::unique_ptr<WebConsole> webConsole_;  ///< null when [console] enabled is false
  std::unique_ptr<RequestMetrics> requestMetrics_;
  bool metricsHere_ = false;  ///< GET /metrics is answered by this service
};

}  // namespace kiln::server
