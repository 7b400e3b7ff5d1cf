#include "server/server_app.h"

#include "server/api/api_metrics.h"

namespace kiln::server {

Result<std::unique_ptr<ServerApp>> ServerApp::create(Config config,
                                                     std::shared_ptr<const Clock> clock,
                                                     InterfaceDeps deps) {
  registerAllMetrics();
  std::unique_ptr<ServerApp> app(new ServerApp());
  app->config_ = std::move(config);
  app->clock_ = clock ? std::move(clock) : std::make_shared<SystemClock>();
  app->drivers_ = std::make_unique<DriverRegistry>(KILN_TRY(DriverRegistry::create(app->config_)));
  app->interfaces_ = std::make_unique<InterfaceRegistry>();
  if (!deps.commands) deps.commands = std::make_shared<ProcessCommandRunner>();
  if (!deps.http) deps.http = makeHttpClient();
  KILN_TRY_VOID(registerBuiltinInterfaces(*app->interfaces_, deps, app->config_.ipmi));
  KILN_TRY_VOID(app->interfaces_->checkComplete());
  app->auth_ = KILN_TRY(Authenticator::create(app->config_));
  app->storage_ = KILN_TRY(openStorage(app->config_.connection));
  if (app->config_.dhcpProvider == "dnsmasq" && app->config_.dnsmasqManage) {
    KILN_TRY_VOID(checkManagedDnsmasq(app->config_, interfaceIpv4Networks(app->config_.dnsmasqInterface)));
    app->dnsmasq_ = std::make_unique<DnsmasqSupervisor>(app->config_);
  }
  ServerApp* self = app.get();
  app->dhcp_ = KILN_TRY(makeDhcpProvider(app->config_, [self] {
    if (self->dnsmasq_) self->dnsmasq_->reload();  // forget the deleted files' entries
  }));
  Conductor::Deps conductorDeps{*app->storage_, *app->interfaces_, *app->drivers_, app->config_,
                                *app->clock_};
  // No provider (none): saves and boot interfaces skip the DHCP work altogether.
  if (app->config_.dhcpProvider != "none") conductorDeps.dhcp = app->dhcp_.get();
  app->conductor_ = std::make_unique<Conductor>(conductorDeps);
  app->eventHub_ = std::make_unique<NodeEventHub>(*app->storage_, app->config_);
  ApiDeps apiDeps{app->config_, *app->storage_, *app->drivers_,
                  *app->clock_, *app->auth_,    *app->conductor_};
  apiDeps.eventHub = app->eventHub_.get();
  app->api_ = std::make_unique<ApiService>(std::move(apiDeps));
  if (app->config_.metricsEnabled && !app->config_.metricsListenAddress.empty()) {
    app->metricsConfig_ = app->config_;
    app->metricsConfig_.hostIp = app->config_.metricsListenAddress;
    app->metricsConfig_.port = app->config_.metricsPort;
    app->metricsConfig_.apiWorkers = 1;
    ApiDeps deps{app->metricsConfig_, *app->storage_, *app->drivers_,
                 *app->clock_,        *app->auth_,    *app->conductor_};
    deps.metricsOnly = true;
    app->metricsApi_ = std::make_unique<ApiService>(std::move(deps));
  }
  return app;
}

Result<void> ServerApp::start(bool http, bool periodic) {
  eventHub_->start();  // before the first transaction that may append events
  KILN_TRY_VOID(conductor_->start(periodic));
  if (config_.dhcpProvider == "dnsmasq") {
    // The entries first, so that dnsmasq reads them when it starts.
    dhcpSync_ = std::make_unique<DhcpSync>(*storage_, *dhcp_, config_.dnsmasqSyncInterval);
    KILN_TRY_VOID(dhcpSync_->start());
  }
  if (dnsmasq_) KILN_TRY_VOID(dnsmasq_->start());
  if (!http) return {};
  endpoint_ = std::make_unique<HttpEndpoint>(*api_, config_);
  KILN_TRY_VOID(endpoint_->start());
  if (metricsApi_) {
    metricsEndpoint_ = std::make_unique<HttpEndpoint>(*metricsApi_, metricsConfig_);
    KILN_TRY_VOID(metricsEndpoint_->start());
  }
  return {};
}

void ServerApp::stop() {
  if (metricsEndpoint_) metricsEndpoint_->stop();
  if (endpoint_) endpoint_->stop();
  if (eventHub_) eventHub_->stop();
  if (conductor_) conductor_->stop();
  if (dhcpSync_) dhcpSync_->stop();
  if (dnsmasq_) dnsmasq_->stop();
}

}  // namespace kiln::server
