#include "server/api/api_service.h"

#include <algorithm>
#include <chrono>
#include <exception>

#include "server/api/agent_handlers.h"
#include "server/api/allocation_handlers.h"
#include "server/api/api_metrics.h"
#include "server/api/bios_handlers.h"
#include "server/api/boot_handlers.h"
#include "server/api/catalog_handlers.h"
#include "server/api/console_handlers.h"
#include "server/api/deploy_template_handlers.h"
#include "server/api/errors.h"
#include "server/api/event_handlers.h"
#include "server/api/firmware_handlers.h"
#include "server/api/fleet_handlers.h"
#include "server/api/management_handlers.h"
#include "server/api/history_handlers.h"
#include "server/api/node_event_handlers.h"
#include "server/api/inspection_rule_handlers.h"
#include "server/api/node_handlers.h"
#include "server/api/port_handlers.h"
#include "server/api/ramdisk_log_handlers.h"
#include "server/api/runbook_handlers.h"
#include "server/api/vendor_handlers.h"
#include "server/api/vif_handlers.h"
#include "server/api/version.h"
#include "shared/core/strings.h"
#include "server/api/volume_handlers.h"
#include "server/api/web_console.h"
#include "server/api/web_security.h"
#include "server/model/node.h"
#include "server/model/versions.h"

namespace kiln::server {
namespace {

/// The raw-path check Ironic's public-route regex applies to heartbeats: lowercase UUIDs only.
bool isPublicHeartbeatPath(const std::string& path) {
  constexpr std::string_view kPrefix = "/v1/heartbeat/";
  if (path.rfind(kPrefix, 0) != 0) return false;
  std::string_view rest = std::string_view(path).substr(kPrefix.size());
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.empty()) return false;
  for (char c : rest) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

std::string baseUrlFor(const Config& config, const ApiRequest& request) {
  if (!config.publicEndpoint.empty()) return config.publicEndpoint;
  auto host = request.header("host");
  const char* scheme = config.enableSslApi ? "https://" : "http://";
  return scheme + (host && isUrlAuthority(*host) ? *host : config.hostIp + ":" + std::to_string(config.port));
}

/// Ironic's lock acquisition for requests that change a node (every credentialed write):
/// `attempt` (one whole request, whose transaction is rolled back on failure) runs again while
/// it fails only because the node is locked (Reason::NodeLocked), up to [conductor]
/// node_locked_retry_attempts times in all, node_locked_retry_interval seconds apart (on
/// deps.clock); then its 409 stands.
template <typename F>
Result<ApiResponse> retryWhileLocked(const ApiDeps& deps, F&& attempt) {
  const int attempts = std::max(1, deps.config.nodeLockedRetryAttempts);
  for (int i = 1;; ++i) {
    Result<ApiResponse> result = attempt();
    if (result || i >= attempts || !result.error().is(Reason::NodeLocked)) return result;
    deps.clock.sleepFor(std::chrono::seconds(deps.config.nodeLockedRetryInterval));
  }
}

}  // namespace

ApiService::ApiService(ApiDeps deps)
    : deps_(std::move(deps)),
      nodes_(std::make_unique<NodeHandlers>(deps_)),
      ports_(std::make_unique<PortHandlers>(deps_)),
      catalog_(std::make_unique<CatalogHandlers>(deps_)),
      templates_(std::make_unique<DeployTemplateHandlers>(deps_)),
      runbooks_(std::make_unique<RunbookHandlers>(deps_)),
      allocations_(std::make_unique<AllocationHandlers>(deps_)),
      events_(std::make_unique<EventHandlers>(deps_)),
      vendor_(std::make_unique<VendorHandlers>(deps_)),
      vifs_(std::make_unique<VifHandlers>(deps_)),
      console_(std::make_unique<ConsoleHandlers>(deps_)),
      agent_(std::make_unique<AgentHandlers>(deps_)),
      boot_(std::make_unique<BootHandlers>(deps_)),
      management_(std::make_unique<ManagementHandlers>(deps_)),
      volumes_(std::make_unique<VolumeHandlers>(deps_)),
      history_(std::make_unique<HistoryHandlers>(deps_)),
      bios_(std::make_unique<BiosHandlers>(deps_)),
      inspectionRules_(std::make_unique<InspectionRuleHandlers>(deps_)),
      nodeEvents_(std::make_unique<NodeEventHandlers>(deps_)),
      fleet_(std::make_unique<FleetHandlers>(deps_)),
      ramdiskLogs_(std::make_unique<RamdiskLogHandlers>(deps_)) {
  if (deps_.config.consoleEnabled && !deps_.metricsOnly) {
    webConsole_ = std::make_unique<WebConsole>(deps_.config);
  }
  buildRoutes();
  requestMetrics_ = std::make_unique<RequestMetrics>(router_.routes());
  metricsHere_ = deps_.config.metricsEnabled &&
                 (deps_.metricsOnly || deps_.config.metricsListenAddress.empty());
}

ApiService::~ApiService() = default;

// The single route table of the API.
void ApiService::buildRoutes() {
  auto bind = [](auto* obj, auto method) {
    return [obj, method](RequestContext& ctx) { return (obj->*method)(ctx); };
  };
  auto add = [&](std::string method, std::string pattern, Handler h, int since = 1,
                 std::string policy = "") {
    Route r;
    r.method = std::move(method);
    r.pattern = std::move(pattern);
    r.handler = std::move(h);
    r.since = since;
    r.policy = std::move(policy);
    router_.add(std::move(r));
  };
  auto* n = nodes_.get();
  auto* p = ports_.get();
  auto* c = catalog_.get();
  auto* t = templates_.get();

  // Version documents (public).
  Route root{"GET", "/", bind(c, &CatalogHandlers::root), 1, 404, "", true, ""};
  router_.add(root);
  Route v1{"GET", "/v1", bind(c, &CatalogHandlers::v1), 1, 404, "", true, ""};
  router_.add(v1);

  // The agent's endpoints. Lookup is public; a heartbeat is public when its path is a lowercase
  // UUID (Ironic's public-route regex, see isPublicHeartbeatPath), otherwise it needs auth.
  {
    auto* a = agent_.get();
    router_.add({"GET", "/v1/lookup", bind(a, &AgentHandlers::lookup), ver::k22LookupHeartbeat, 404, "", true, ""});
    // The inspection callback (1.84, and 1.1 as Ironic keeps it), public like lookup.
    router_.add({"POST", "/v1/continue_inspection", bind(a, &AgentHandlers::continueInspection),
                 ver::k1InitialVersion, 404, "", true, ""});
    router_.add({"POST", "/v1/heartbeat/{node}", bind(a, &AgentHandlers::heartbeat), ver::k22LookupHeartbeat, 404, "",
                 false, ""});
  }

  // Network boot (ipxe boot interface), public. Paths outside /v1 are re-rooted under it.
  {
    auto* b = boot_.get();
    router_.add({"GET", "/v1/boot.ipxe", bind(b, &BootHandlers::chain), 1, 404, "", true, ""});
    router_.add({"GET", "/v1/boot/{script}", bind(b, &BootHandlers::macScript), 1, 404, "", true, ""});
    router_.add({"GET", "/v1/boot/{node}/{file}", bind(b, &BootHandlers::file), 1, 404, "", true, ""});
    // Virtual media ISOs (redfish-virtual-media), public: the BMC fetches them.
    router_.add({"GET", "/v1/vmedia/{name}", bind(b, &BootHandlers::virtualMedia), 1, 404, "", true, ""});
  }

  // Nodes.
  add("GET", "/v1/nodes", bind(n, &NodeHandlers::list));
  add("GET", "/v1/nodes/detail", bind(n, &NodeHandlers::listDetail));
  add("POST", "/v1/nodes", bind(n, &NodeHandlers::create), 1, "baremetal:node:create");
  add("GET", "/v1/nodes/validate", bind(n, &NodeHandlers::validateByQuery));
  add("GET", "/v1/nodes/{node}", bind(n, &NodeHandlers::show));
  add("PATCH", "/v1/nodes/{node}", bind(n, &NodeHandlers::update), 1, "baremetal:node:update");
  add("DELETE", "/v1/nodes/{node}", bind(n, &NodeHandlers::remove), 1, "baremetal:node:delete");
  add("PUT", "/v1/nodes/{node}/maintenance", bind(n, &NodeHandlers::setMaintenance), 1,
      "baremetal:node:set_maintenance");
  add("DELETE", "/v1/nodes/{node}/maintenance", bind(n, &NodeHandlers::clearMaintenance), 1,
      "baremetal:node:clear_maintenance");
  add("GET", "/v1/nodes/{node}/states", bind(n, &NodeHandlers::states));
  {
    Route raid{"PUT", "/v1/nodes/{node}/states/raid", bind(n, &NodeHandlers::setRaidConfig), ver::k12RaidConfig,
               406, "Request not acceptable.", false, "baremetal:node:set_raid_state"};
    router_.add(raid);
  }
  add("GET", "/v1/nodes/{node}/validate", bind(n, &NodeHandlers::validate));
  add("PUT", "/v1/nodes/{node}/states/provision", bind(n, &NodeHandlers::setProvisionState), 1,
      "baremetal:node:set_provision_state");
  add("PUT", "/v1/nodes/{node}/states/power", bind(n, &NodeHandlers::setPowerState), 1,
      "baremetal:node:set_power_state");
  add("GET", "/v1/nodes/{node}/management/boot_device", bind(n, &NodeHandlers::getBootDevice));
  add("PUT", "/v1/nodes/{node}/management/boot_device", bind(n, &NodeHandlers::setBootDevice), 1,
      "baremetal:node:set_boot_device");
  add("GET", "/v1/nodes/{node}/management/boot_device/supported",
      bind(n, &NodeHandlers::supportedBootDevices));
  // Boot mode, secure boot, NMI and indicators. The boot mode and secure boot handlers check
  // the version themselves, after the node lookup (as Ironic); Ironic gates the indicators by
  // no version.
  {
    auto* m = management_.get();
    add("PUT", "/v1/nodes/{node}/states/boot_mode", bind(m, &ManagementHandlers::setBootMode), 1,
        "baremetal:node:set_boot_mode");
    add("PUT", "/v1/nodes/{node}/states/secure_boot", bind(m, &ManagementHandlers::setSecureBoot),
        1, "baremetal:node:set_secure_boot");
    router_.add({"PUT", "/v1/nodes/{node}/management/inject_nmi",
                 bind(m, &ManagementHandlers::injectNmi), ver::k29InjectNmi, 404, "Resource could not be found.",
                 false, "baremetal:node:inject_nmi"});
    add("GET", "/v1/nodes/{node}/management/indicators",
        bind(m, &ManagementHandlers::listIndicators));
    add("GET", "/v1/nodes/{node}/management/indicators/{indicator}",
        bind(m, &ManagementHandlers::getIndicator));
    add("PUT", "/v1/nodes/{node}/management/indicators/{indicator}",
        bind(m, &ManagementHandlers::setIndicator), 1, "baremetal:node:set_indicator_state");
    // Virtual media: 404 below each version, as Ironic's node _lookup.
    router_.add({"POST", "/v1/nodes/{node}/vmedia", bind(m, &ManagementHandlers::attachVirtualMedia),
                 ver::k89AttachDetachVmedia, 404, "", false, "baremetal:node:vmedia:attach"});
    router_.add({"DELETE", "/v1/nodes/{node}/vmedia",
                 bind(m, &ManagementHandlers::detachVirtualMedia), ver::k89AttachDetachVmedia, 404,
                 "", false, "baremetal:node:vmedia:detach"});
    router_.add({"GET", "/v1/nodes/{node}/vmedia", bind(m, &ManagementHandlers::listVirtualMedia),
                 ver::k93GetVmedia, 404, "", false, ""});
  }
  add("GET", "/v1/nodes/{node}/cleaning/steps", bind(n, &NodeHandlers::cleaningSteps), ver::k15ManualClean);
  // Node traits (1.37). Below 1.37 Ironic's node controller answers these paths itself: a GET
  // looks the node up and then refuses "traits" as a field (406, so listTraits checks the
  // version), a PUT has no handler there (405) and a DELETE refuses the extra segments (404).
  add("GET", "/v1/nodes/{node}/traits", bind(n, &NodeHandlers::listTraits));
  {
    const std::string put405 = "The method PUT is not allowed for this resource.";
    const std::string delete404 = "Resource could not be found.";
    router_.add({"PUT", "/v1/nodes/{node}/traits", bind(n, &NodeHandlers::setTraits), ver::k37NodeTraits, 405,
                 put405, false, "baremetal:node:traits:set"});
    router_.add({"DELETE", "/v1/nodes/{node}/traits", bind(n, &NodeHandlers::clearTraits), ver::k37NodeTraits, 404,
                 delete404, false, "baremetal:node:traits:delete"});
    router_.add({"PUT", "/v1/nodes/{node}/traits/{trait}", bind(n, &NodeHandlers::addTrait), ver::k37NodeTraits,
                 405, put405, false, "baremetal:node:traits:set"});
    router_.add({"DELETE", "/v1/nodes/{node}/traits/{trait}", bind(n, &NodeHandlers::removeTrait),
                 ver::k37NodeTraits, 404, delete404, false, "baremetal:node:traits:delete"});
  }
  add("GET", "/v1/nodes/{node}/ports", bind(p, &PortHandlers::listForNode));
  add("GET", "/v1/nodes/{node}/ports/detail", bind(p, &PortHandlers::listDetailForNode));
  add("GET", "/v1/nodes/{node}/portgroups", bind(p, &PortHandlers::listPortgroupsForNode), ver::k24PortgroupsSubcontrollers);
  add("GET", "/v1/nodes/{node}/portgroups/detail",
      bind(p, &PortHandlers::listPortgroupsDetailForNode), ver::k24PortgroupsSubcontrollers);

  // Node history (1.78) and BIOS settings (1.40): 404 below, as Ironic's node _lookup.
  {
    auto* h = history_.get();
    auto* b = bios_.get();
    router_.add({"GET", "/v1/nodes/{node}/history", bind(h, &HistoryHandlers::list), ver::k78NodeHistory, 404, "",
                 false, ""});
    router_.add({"GET", "/v1/nodes/{node}/history/{event}", bind(h, &HistoryHandlers::show), ver::k78NodeHistory,
                 404, "", false, ""});
    router_.add(
        {"GET", "/v1/nodes/{node}/bios", bind(b, &BiosHandlers::list), ver::k40BiosInterface, 404, "", false, ""});
    router_.add({"GET", "/v1/nodes/{node}/bios/{name}", bind(b, &BiosHandlers::show), ver::k40BiosInterface, 404, "",
                 false, ""});
  }

  // The node event journal and its live stream (Kiln extension, every API version; read as
  // node history is: authenticated, observers included).
  router_.add({"GET", "/v1/nodes/{node}/events", bind(nodeEvents_.get(), &NodeEventHandlers::list),
               1, 404, "", false, ""});

  // The node's ramdisk log bundles (Kiln extension, every API version, read like its events).
  {
    auto* rl = ramdiskLogs_.get();
    router_.add({"GET", "/v1/nodes/{node}/ramdisk_logs", bind(rl, &RamdiskLogHandlers::list), 1,
                 404, "", false, ""});
    router_.add({"GET", "/v1/nodes/{node}/ramdisk_logs/{name}",
                 bind(rl, &RamdiskLogHandlers::download), 1, 404, "", false, ""});
  }

  // Who the credentials are, and the fleet's counts (Kiln extensions for the web console,
  // every API version, observers included).
  router_.add({"GET", "/v1/whoami", bind(fleet_.get(), &FleetHandlers::whoami), 1, 404, "",
               false, ""});
  router_.add({"GET", "/v1/fleet", bind(fleet_.get(), &FleetHandlers::summary), 1, 404, "",
               false, ""});

  // Inventory (1.81) and child nodes (1.83): 404 below, as Ironic's node _lookup; shards
  // (1.82): GET only.
  router_.add({"GET", "/v1/nodes/{node}/inventory", bind(n, &NodeHandlers::inventory),
               ver::k81NodeInventory, 404, "", false, ""});
  router_.add({"GET", "/v1/nodes/{node}/children", bind(n, &NodeHandlers::children),
               ver::k83ParentChildNodes, 404, "", false, ""});
  router_.add({"GET", "/v1/shards", bind(n, &NodeHandlers::listShards), ver::k82NodeShard, 404,
               "The API version does not allow shards", false, ""});

  // Firmware (1.86): the cached firmware components, 404 below as Ironic's node _lookup. The
  // handler object lives as long as the route table (its only owner).
  {
    auto fw = std::make_shared<FirmwareHandlers>(deps_);
    router_.add({"GET", "/v1/nodes/{node}/firmware",
                 [fw](RequestContext& ctx) { return fw->list(ctx); }, ver::k86FirmwareInterface,
                 404, "", false, ""});
  }

  // Ports.
  add("GET", "/v1/ports", bind(p, &PortHandlers::list));
  add("GET", "/v1/ports/detail", bind(p, &PortHandlers::listDetail));
  add("POST", "/v1/ports", bind(p, &PortHandlers::create), 1, "baremetal:port:create");
  add("GET", "/v1/ports/{port}", bind(p, &PortHandlers::show));
  add("PATCH", "/v1/ports/{port}", bind(p, &PortHandlers::update), 1, "baremetal:port:update");
  add("DELETE", "/v1/ports/{port}", bind(p, &PortHandlers::remove), 1, "baremetal:port:delete");

  // Port groups.
  add("GET", "/v1/portgroups", bind(p, &PortHandlers::listPortgroups), ver::k23Portgroups);
  add("GET", "/v1/portgroups/detail", bind(p, &PortHandlers::listPortgroupsDetail), ver::k23Portgroups);
  add("POST", "/v1/portgroups", bind(p, &PortHandlers::createPortgroup), ver::k23Portgroups,
      "baremetal:portgroup:create");
  add("GET", "/v1/portgroups/{pg}", bind(p, &PortHandlers::showPortgroup), ver::k23Portgroups);
  add("PATCH", "/v1/portgroups/{pg}", bind(p, &PortHandlers::updatePortgroup), ver::k23Portgroups,
      "baremetal:portgroup:update");
  add("DELETE", "/v1/portgroups/{pg}", bind(p, &PortHandlers::removePortgroup), ver::k23Portgroups,
      "baremetal:portgroup:delete");
  add("GET", "/v1/portgroups/{pg}/ports", bind(p, &PortHandlers::listForPortgroup), ver::k24PortgroupsSubcontrollers);
  add("GET", "/v1/portgroups/{pg}/ports/detail", bind(p, &PortHandlers::listDetailForPortgroup), ver::k24PortgroupsSubcontrollers);

  // Chassis.
  add("GET", "/v1/chassis", bind(c, &CatalogHandlers::listChassis));
  add("GET", "/v1/chassis/detail", bind(c, &CatalogHandlers::listChassisDetail));
  add("POST", "/v1/chassis", bind(c, &CatalogHandlers::createChassis), 1, "baremetal:chassis:create");
  add("GET", "/v1/chassis/{chassis}", bind(c, &CatalogHandlers::showChassis));
  add("PATCH", "/v1/chassis/{chassis}", bind(c, &CatalogHandlers::updateChassis), 1,
      "baremetal:chassis:update");
  add("DELETE", "/v1/chassis/{chassis}", bind(c, &CatalogHandlers::removeChassis), 1,
      "baremetal:chassis:delete");
  add("GET", "/v1/chassis/{chassis}/nodes",
      [n](RequestContext& ctx) { return n->listForChassis(ctx, false); });
  add("GET", "/v1/chassis/{chassis}/nodes/detail",
      [n](RequestContext& ctx) { return n->listForChassis(ctx, true); });

  // Drivers and conductors.
  add("GET", "/v1/drivers", bind(c, &CatalogHandlers::listDrivers));
  add("GET", "/v1/drivers/{driver}", bind(c, &CatalogHandlers::showDriver));
  add("GET", "/v1/drivers/{driver}/properties", bind(c, &CatalogHandlers::driverProperties));
  add("GET", "/v1/drivers/{driver}/raid/logical_disk_properties",
      bind(c, &CatalogHandlers::driverRaidProperties), ver::k12RaidConfig);
  add("GET", "/v1/conductors", bind(c, &CatalogHandlers::listConductors), ver::k49Conductors);
  add("GET", "/v1/conductors/{hostname}", bind(c, &CatalogHandlers::showConductor), ver::k49Conductors);

  // Allocations (the scheduler). Below 1.52 a GET is 404 and anything else 405, as in Ironic.
  {
    auto* al = allocations_.get();
    const std::string msg = "The API version does not allow allocations";
    const std::string base = "/v1/allocations";
    router_.add({"GET", base, bind(al, &AllocationHandlers::list), ver::k52Allocation, 404, msg, false, ""});
    router_.add({"POST", base, bind(al, &AllocationHandlers::create), ver::k52Allocation, 405, msg, false,
                 "baremetal:allocation:create"});
    router_.add({"GET", base + "/{allocation}", bind(al, &AllocationHandlers::show), ver::k52Allocation, 404, msg,
                 false, ""});
    router_.add({"PATCH", base + "/{allocation}", bind(al, &AllocationHandlers::update), ver::k52Allocation, 405,
                 msg, false, "baremetal:allocation:update"});
    router_.add({"DELETE", base + "/{allocation}", bind(al, &AllocationHandlers::remove), ver::k52Allocation, 405,
                 msg, false, "baremetal:allocation:delete"});
    router_.add({"GET", "/v1/nodes/{node}/allocation", bind(al, &AllocationHandlers::showForNode),
                 52, 404, msg, false, ""});
    router_.add({"DELETE", "/v1/nodes/{node}/allocation",
                 bind(al, &AllocationHandlers::removeForNode), ver::k52Allocation, 404, msg, false,
                 "baremetal:allocation:delete"});
  }

  // Vendor passthru (1.1) of nodes and drivers: admin only, whatever the HTTP method.
  {
    auto* v = vendor_.get();
    const std::string policy = "baremetal:node:vendor_passthru";
    add("GET", "/v1/nodes/{node}/vendor_passthru/methods", bind(v, &VendorHandlers::nodeMethods),
        1, policy);
    add("GET", "/v1/drivers/{driver}/vendor_passthru/methods",
        bind(v, &VendorHandlers::driverMethods), 1, "baremetal:driver:vendor_passthru");
    for (const char* method : {"GET", "POST", "PUT", "PATCH", "DELETE"}) {
      add(method, "/v1/nodes/{node}/vendor_passthru", bind(v, &VendorHandlers::nodeCall), 1, policy);
      add(method, "/v1/drivers/{driver}/vendor_passthru", bind(v, &VendorHandlers::driverCall), 1,
          "baremetal:driver:vendor_passthru");
      // python-ironicclient names the method in the path: .../vendor_passthru/{method}.
      add(method, "/v1/nodes/{node}/vendor_passthru/{method}", bind(v, &VendorHandlers::nodeCall),
          1, policy);
      add(method, "/v1/drivers/{driver}/vendor_passthru/{method}",
          bind(v, &VendorHandlers::driverCall), 1, "baremetal:driver:vendor_passthru");
    }
  }

  // The node console.
  add("GET", "/v1/nodes/{node}/states/console", bind(console_.get(), &ConsoleHandlers::get));
  add("PUT", "/v1/nodes/{node}/states/console", bind(console_.get(), &ConsoleHandlers::set), 1,
      "baremetal:node:set_console_state");

  // VIFs (1.28).
  {
    auto* v = vifs_.get();
    add("GET", "/v1/nodes/{node}/vifs", bind(v, &VifHandlers::list), ver::k28VifsSubcontroller);
    add("POST", "/v1/nodes/{node}/vifs", bind(v, &VifHandlers::attach), ver::k28VifsSubcontroller,
        "baremetal:node:vif:attach");
    add("DELETE", "/v1/nodes/{node}/vifs/{vif}", bind(v, &VifHandlers::detach), ver::k28VifsSubcontroller,
        "baremetal:node:vif:detach");
  }

  // Volume connectors and targets (1.32). Below 1.32 every method is 404, as Ironic's volume
  // controller answers; under a node only the lists are served (the rest is 403 there).
  {
    auto* v = volumes_.get();
    using K = VolumeHandlers::Kind;
    auto volumeRoute = [&](std::string method, std::string pattern, Handler h,
                           std::string policy = "") {
      router_.add({std::move(method), std::move(pattern), std::move(h), ver::k32Volume, 404, "", false,
                   std::move(policy)});
    };
    volumeRoute("GET", "/v1/volume", [v](RequestContext& ctx) { return v->root(ctx, false); });
    volumeRoute("GET", "/v1/nodes/{node}/volume",
                [v](RequestContext& ctx) { return v->root(ctx, true); });
    for (auto [kind, name] :
         {std::pair{K::Connector, "connectors"}, std::pair{K::Target, "targets"}}) {
      for (bool nested : {false, true}) {
        const std::string base =
            (nested ? "/v1/nodes/{node}/volume/" : "/v1/volume/") + std::string(name);
        volumeRoute("GET", base,
                    [v, kind, nested](RequestContext& ctx) { return v->list(ctx, kind, nested); });
        volumeRoute(
            "POST", base,
            [v, kind, nested](RequestContext& ctx) { return v->create(ctx, kind, nested); },
            "baremetal:volume:create");
        volumeRoute("GET", base + "/{volume}",
                    [v, kind, nested](RequestContext& ctx) { return v->show(ctx, kind, nested); });
        volumeRoute(
            "PATCH", base + "/{volume}",
            [v, kind, nested](RequestContext& ctx) { return v->update(ctx, kind, nested); },
            "baremetal:volume:update");
        volumeRoute(
            "DELETE", base + "/{volume}",
            [v, kind, nested](RequestContext& ctx) { return v->remove(ctx, kind, nested); },
            "baremetal:volume:delete");
      }
    }
  }

  // External events (1.54): below it any method is 404, as Ironic's _lookup answers.
  router_.add({"POST", "/v1/events", bind(events_.get(), &EventHandlers::post), ver::k54Events, 404, "",
               false, "baremetal:events:post"});

  // Deploy templates, under Ironic's path and the spec's spelling.
  for (std::string base : {"/v1/deploy_templates", "/v1/deploy-templates"}) {
    const std::string msg = "The API version does not allow deploy templates";
    router_.add({"GET", base, bind(t, &DeployTemplateHandlers::list), ver::k55DeployTemplates, 404, msg, false, ""});
    router_.add({"POST", base, bind(t, &DeployTemplateHandlers::create), ver::k55DeployTemplates, 405, msg, false,
                 "baremetal:deploy_template:create"});
    router_.add({"GET", base + "/{template}", bind(t, &DeployTemplateHandlers::show), ver::k55DeployTemplates, 404, msg,
                 false, ""});
    router_.add({"PATCH", base + "/{template}", bind(t, &DeployTemplateHandlers::update), ver::k55DeployTemplates, 405,
                 msg, false, "baremetal:deploy_template:update"});
    router_.add({"DELETE", base + "/{template}", bind(t, &DeployTemplateHandlers::remove), ver::k55DeployTemplates, 405,
                 msg, false, "baremetal:deploy_template:delete"});
  }

  // Runbooks (1.92, 1.112). Below 1.92 GET is 404 and every other method 405 (Ironic's
  // RunbooksController._route), the traits sub-resource included; from 1.92 to 1.111 the traits
  // handlers answer 404 themselves (its _lookup).
  {
    auto* rb = runbooks_.get();
    const std::string msg = "The API version does not allow runbooks";
    const std::string base = "/v1/runbooks";
    const std::string update = "baremetal:runbook:update";
    auto route = [&](std::string method, std::string pattern, Handler h, std::string policy) {
      const int status = method == "GET" ? 404 : 405;
      router_.add({std::move(method), std::move(pattern), std::move(h), ver::k92Runbooks, status,
                   msg, false, std::move(policy)});
    };
    route("GET", base, bind(rb, &RunbookHandlers::list), "");
    route("POST", base, bind(rb, &RunbookHandlers::create), "baremetal:runbook:create");
    route("GET", base + "/{runbook}", bind(rb, &RunbookHandlers::show), "");
    route("PATCH", base + "/{runbook}", bind(rb, &RunbookHandlers::update), update);
    route("DELETE", base + "/{runbook}", bind(rb, &RunbookHandlers::remove),
          "baremetal:runbook:delete");
    route("GET", base + "/{runbook}/traits", bind(rb, &RunbookHandlers::listTraits), "");
    route("PUT", base + "/{runbook}/traits", bind(rb, &RunbookHandlers::setTraits), update);
    route("DELETE", base + "/{runbook}/traits", bind(rb, &RunbookHandlers::clearTraits), update);
    route("PUT", base + "/{runbook}/traits/{trait}", bind(rb, &RunbookHandlers::addTrait), update);
    route("DELETE", base + "/{runbook}/traits/{trait}", bind(rb, &RunbookHandlers::removeTrait),
          update);
  }

  // Inspection rules (1.96). Below 1.96 a GET is 404 and anything else 405, as in Ironic.
  {
    auto* ir = inspectionRules_.get();
    const std::string msg = "The API version does not allow inspection rules";
    const std::string base = "/v1/inspection_rules";
    const int since = ver::k96InspectionRules;
    router_.add({"GET", base, bind(ir, &InspectionRuleHandlers::list), since, 404, msg, false, ""});
    router_.add({"POST", base, bind(ir, &InspectionRuleHandlers::create), since, 405, msg, false,
                 "baremetal:inspection_rule:create"});
    router_.add({"GET", base + "/{rule}", bind(ir, &InspectionRuleHandlers::show), since, 404, msg,
                 false, ""});
    router_.add({"PATCH", base + "/{rule}", bind(ir, &InspectionRuleHandlers::update), since, 405,
                 msg, false, "baremetal:inspection_rule:update"});
    router_.add({"DELETE", base + "/{rule}", bind(ir, &InspectionRuleHandlers::remove), since, 405,
                 msg, false, "baremetal:inspection_rule:delete"});
  }

  // The node-last spellings Ironic's routing also answers (ironic-tempest-plugin uses
  // GET /v1/nodes/states/console/{id}).
  router_.addNodeLastAliases({"states", "states/console", "states/power", "states/provision",
                              "states/raid", "management/boot_device", "management/inject_nmi",
                              "maintenance"});
}

ApiResponse ApiService::serveMetrics(const ApiRequest& request) {
  ApiResponse response;
  if (deps_.config.metricsRequireAuth) {
    auto auth = deps_.auth.authenticate(request);
    if (auto* refused = std::get_if<ApiResponse>(&auth)) response = std::move(*refused);
  }
  if (response.status == 200 && request.method != "GET" && request.method != "HEAD") {
    response =
        errorResponse({ErrorCode::MethodNotAllowed,
                       "The method " + request.method + " is not allowed for this resource."});
    response.setHeader("Allow", "GET");
  }
  if (response.status == 200) {
    response.contentType = std::string(metrics::kContentType);
    response.body = renderMetrics(deps_.storage, deps_.config);
  }
  stampRequestId(response);
  if (request.method == "HEAD") response.dropBodyForHead();
  return response;
}

ApiResponse ApiService::handle(const ApiRequest& request) {
  if (metricsHere_ && request.path == "/metrics") return serveMetrics(request);
  if (deps_.metricsOnly) {
    ApiResponse response = errorResponse(notFound("The resource could not be found.").error());
    stampRequestId(response);
    if (request.method == "HEAD") response.dropBodyForHead();
    return response;
  }
  const auto start = deps_.clock.monotonic();
  const Route* route = nullptr;
  ApiResponse response;
  try {
    if (webConsole_ && isConsolePath(request.path)) {
      response = webConsole_->serve(request);
    } else if (auto refused = refuseCrossSiteWrite(request, deps_.config.enableSslApi,
                                                   deps_.config.publicEndpoint)) {
      response = std::move(*refused);
    } else {
      response = dispatch(request, route);
    }
  } catch (const std::exception& e) {
    deps_.log.error("unhandled exception in API handler",
                    {{"method", request.method}, {"path", request.path}, {"error", e.what()}});
    response = errorResponse({ErrorCode::Internal, "Internal Server Error"});
  } catch (...) {
    deps_.log.error("unhandled exception in API handler",
                    {{"method", request.method}, {"path", request.path}});
    response = errorResponse({ErrorCode::Internal, "Internal Server Error"});
  }
  stampRequestId(response);
  if (request.method == "HEAD") response.dropBodyForHead();
  requestMetrics_->record(route, request.method, response.status,
                          std::chrono::duration<double>(deps_.clock.monotonic() - start).count());
  return response;
}

ApiResponse ApiService::dispatch(const ApiRequest& request, const Route*& matched) {
  std::vector<std::string> segments = normalizePath(request.path);
  // Below 1.91 Ironic's JsonExtensionMiddleware strips a trailing ".json". It reads only
  // X-OpenStack-Ironic-API-Version (not OpenStack-API-Version): without it, or with a minor
  // version of 0 or one it cannot parse, nothing is stripped.
  if (!segments.empty() && segments.back().size() > 5 && segments.back().ends_with(".json")) {
    if (auto legacy = request.header("x-openstack-ironic-api-version")) {
      const std::string text = trim(*legacy);
      const size_t dot = text.find('.');
      int minor = 0;
      if (dot != std::string::npos && text.size() - dot - 1 <= 6) {
        minor = static_cast<int>(
            parseInt<unsigned>(std::string_view(text).substr(dot + 1)).value_or(0));
      }
      if (minor > 0 && minor < ver::k91DotJson) segments.back().resize(segments.back().size() - 5);
    }
  }
  const bool isRoot = segments.empty();
  Router::Match match = router_.match(request.method, segments);
  matched = match.route;
  const bool isPublic = (match.route && match.route->isPublic) || isPublicHeartbeatPath(request.path);

  // 1. Authentication (the http_basic middleware sits in front of the app).
  Identity identity;
  if (!isPublic) {
    auto auth = deps_.auth.authenticate(request);
    if (auto* resp = std::get_if<ApiResponse>(&auth)) return std::move(*resp);
    identity = std::get<Identity>(auth);
  }

  // 2. Microversion.
  auto addVersionHeaders = [](ApiResponse& r, std::optional<int> version) {
    r.setHeader("X-OpenStack-Ironic-API-Minimum-Version", versionString(kMinMinorVersion));
    r.setHeader("X-OpenStack-Ironic-API-Maximum-Version", versionString(kMaxMinorVersion));
    if (version) r.setHeader("X-OpenStack-Ironic-API-Version", versionString(*version));
  };
  auto version = negotiateVersion(request);
  if (!version && !isRoot) {
    ApiResponse r = errorResponse(version.error());
    addVersionHeaders(r, std::nullopt);
    return r;
  }
  const int minor = version ? *version : kMinMinorVersion;

  const std::optional<int> negotiated = version ? std::optional<int>(minor) : std::nullopt;
  auto finish = [&](Result<ApiResponse> result) {
    ApiResponse r = result ? std::move(*result) : errorResponse(result.error());
    addVersionHeaders(r, negotiated);
    return r;
  };

  // 3. Routing.
  if (!match.pathMatched) {
    return finish(notFound("The resource could not be found."));
  }
  if (!match.route) {
    ApiResponse r = errorResponse({ErrorCode::MethodNotAllowed,
                                   "The method " + request.method +
                                       " is not allowed for this resource."});
    std::string allow;
    for (const auto& m : match.allowed) allow += allow.empty() ? m : ", " + m;
    r.setHeader("Allow", allow);
    addVersionHeaders(r, negotiated);
    return r;
  }
  const Route& route = *match.route;
  if (minor < route.since) {
    const ErrorCode code = route.belowVersionStatus == 405   ? ErrorCode::MethodNotAllowed
                           : route.belowVersionStatus == 406 ? ErrorCode::NotAcceptable
                                                             : ErrorCode::NotFound;
    return finish(fail(code, route.belowVersionMessage.empty() ? "The resource could not be found."
                                                               : route.belowVersionMessage));
  }

  // 4. Policy: observers read everything and write nothing.
  if (!route.policy.empty() && identity.role == Role::Observer) {
    return finish(fail(ErrorCode::PermissionDenied,
                       "Access was denied to the following resource: " + route.policy));
  }

  RequestContext ctx{request, std::move(match.params), minor, baseUrlFor(deps_.config, request),
                     identity.user, identity.role};
  // 5. Ironic's conductor takes a node's lock with retries for every change it is asked for
  // (task_manager.acquire): a change that meets a node another operation holds is tried again
  // before its 409. Every attempt is whole (its transaction rolled back), so repeating it is
  // safe. Reads never wait; the agent's public routes answer at once.
  if (!isPublic && request.method != "GET" && request.method != "HEAD") {
    return finish(retryWhileLocked(deps_, [&] { return route.handler(ctx); }));
  }
  return finish(route.handler(ctx));
}

}  // namespace kiln::server
