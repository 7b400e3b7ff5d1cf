// File: server/server_app.h
//
// kiln-server's composition root: configuration -> storage, driver registry, authenticator,
// API service, HTTP endpoint (and, with [metrics] listen_address, a second endpoint that serves
// only GET /metrics). main() builds one and runs it; integration tests build one on
// port 0 with an in-memory or temporary database.
#pragma once

#include <memory>

#include "server/api/api_service.h"
#include "server/api/auth.h"
#include "server/api/http_endpoint.h"
#include "server/api/node_event_hub.h"
#include "server/config.h"
#include "server/conductor/conductor.h"
#include "server/conductor/dhcp_sync.h"
#include "server/drivers/dhcp/dhcp_provider.h"
#include "server/drivers/dhcp/dnsmasq_process.h"
#include "server/drivers/driver_registry.h"
#include "server/drivers/interface_registry.h"
#include "server/storage/storage.h"
#include "shared/core/clock.h"

namespace kiln::server {

class ServerApp {
 public:
  /// Validates the configuration (fatal driver-composition errors name the option), opens and
  /// migrates the database. Does not listen yet.
  /// `deps` replaces the real command runner / HTTP client (tests); null members mean real.
  static Result<std::unique_ptr<ServerApp>> create(Config config,
                                                   std::shared_ptr<const Clock> clock = nullptr,
                                                   InterfaceDeps deps = {});

  /// Starts the conductor (recovery, workers, periodic thread when `periodic`), the DHCP entries'
  /// sync and the managed dnsmasq ([dhcp], [dnsmasq]) and the HTTP endpoint (unless `http` is
  /// false: in-process tests).
  Result<void> start(bool http = true, bool periodic = true);
  void stop();

  uint16_t port() const { return endpoint_ ? endpoint_->port() : 0; }
  /// The [metrics] listener's port (after start()), 0 when /metrics has no address of its own.
  uint16_t metricsPort() const { return metricsEndpoint_ ? metricsEndpoint_->port() : 0; }
  ApiService& api() { return *api_; }
  Storage& storage() { return *storage_; }
  Conductor& conductor() { return *conductor_; }
  const Config& config() const { return config_; }
  const DriverRegistry& drivers() const { return *drivers_; }
  NodeEventHub& eventHub() { return *eventHub_; }
  DhcpProvider& dhcp() { return *dhcp_; }
  /// The managed dnsmasq; null unless [dnsmasq] manage.
  DnsmasqSupervisor* dnsmasq() { return dnsmasq_.get(); }

 private:
  ServerApp() = default;

  Config config_;
  std::shared_ptr<const Clock> clock_;
  StoragePtr storage_;
  std::unique_ptr<DhcpProvider> dhcp_;
  std::unique_ptr<DnsmasqSupervisor> dnsmasq_;
  std::unique_ptr<DhcpSync> dhcpSync_;
  std::unique_ptr<DriverRegistry> drivers_;
  std::unique_ptr<InterfaceRegistry> interfaces_;
  std::unique_ptr<Conductor> conductor_;
  std::unique_ptr<Authenticator> auth_;
  std::unique_ptr<NodeEventHub> eventHub_;
  std::unique_ptr<ApiService> api_;
  std::unique_ptr<HttpEndpoint> endpoint_;
  // [metrics] listen_address: GET /metrics on an address of its own.
  Config metricsConfig_;
  std::unique_ptr<ApiService> metricsApi_;
  std::unique_ptr<HttpEndpoint> metricsEndpoint_;
};

}  // namespace kiln::server
