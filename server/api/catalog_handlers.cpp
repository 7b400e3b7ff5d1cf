#include "server/api/catalog_handlers.h"

#include <map>
#include <nlohmann/json.hpp>

#include "server/api/handler_support.h"
#include "server/api/version.h"
#include "server/drivers/hardware_types.h"
#include "server/model/node.h"
#include "shared/raid/raid_config.h"
#include "server/model/versions.h"

namespace kiln::server {
namespace {

using Mode = Storage::Mode;

const Schema& chassisSchema() { return schemaOf(Resource::Chassis); }

void writeVersionObject(JsonWriter& w, const std::string& base) {
  w.beginObject();
  w.field("id", "v1");
  w.key("links");
  w.beginArray();
  w.beginObject();
  w.field("href", base + "/v1/");
  w.field("rel", "self");
  w.endObject();
  w.endArray();
  w.field("status", "CURRENT");
  w.field("min_version", versionString(kMinMinorVersion));
  w.field("version", versionString(kMaxMinorVersion));
  w.endObject();
}

/// [self, bookmark] links of a top-level resource collection ("/v1/nodes/", "/nodes/").
void writeCollectionLinks(JsonWriter& w, const std::string& base, std::string_view name) {
  writeLinks(w, base, std::string(name) + "/");
}

void renderChassis(JsonWriter& w, const RequestContext& ctx, const Record& c, const FieldMask& mask) {
  renderRecord(w, chassisSchema(), c, mask, [&](JsonWriter& out, size_t field) {
    if (field == kChassisLinks) {
      writeLinks(out, ctx.baseUrl, "chassis/" + c.uuid());
      return true;
    }
    if (field == kChassisNodes) {
      writeLinks(out, ctx.baseUrl, "chassis/" + c.uuid() + "/nodes");
      return true;
    }
    return false;
  });
}

Result<Record> findChassis(Transaction& tx, const std::string& ident) {
  if (!isUuidLike(ident)) return invalid("Expected UUID for chassis_uuid: " + ident);
  auto found = KILN_TRY(tx.chassis().findBy(kChassisUuid, Value::text(normalizeUuid(ident))));
  if (!found) return notFound("Chassis " + ident + " could not be found.");
  return std::move(*found);
}

/// Interface types shown on drivers at a version (the node field's microversion rules apply).
bool interfaceVisible(const InterfaceTypeInfo& info, int version) {
  // Drivers show interfaces from 1.30; storage, rescue and bios follow their node fields.
  return version >= ver::k30DynamicDrivers && (info.since <= ver::k31DynamicInterfaces || info.since <= version);
}

void renderDriver(JsonWriter& w, const RequestContext& ctx, const EnabledHardwareType& hw,
                  const std::vector<ConductorInfo>& conductors, bool detail) {
  w.beginObject();
  w.field("name", hw.name);
  w.key("hosts");
  w.beginArray();
  // The live conductors that enable the hardware type (this server always does).
  for (const auto& c : conductors) {
    if (c.alive && std::find(c.drivers.begin(), c.drivers.end(), hw.name) != c.drivers.end()) {
      w.string(c.hostname);
    }
  }
  w.endArray();
  w.key("links");
  writeLinks(w, ctx.baseUrl, "drivers/" + hw.name);
  if (ctx.atLeast(ver::k14LinksNodestatesDriverproperties)) {
    w.key("properties");
    writeLinks(w, ctx.baseUrl, "drivers/" + hw.name + "/properties");
  }
  if (ctx.atLeast(ver::k30DynamicDrivers)) {
    w.field("type", "dynamic");
    if (detail) {
      for (const auto& info : kInterfaceTypes) {
        if (!interfaceVisible(info, ctx.version)) continue;
        const auto idx = static_cast<size_t>(info.type);
        w.key("default_" + std::string(info.name) + "_interface");
        if (hw.defaults[idx]) w.string(*hw.defaults[idx]); else w.null();
        w.key("enabled_" + std::string(info.name) + "_interfaces");
        w.beginArray();
        for (const auto& impl : hw.enabled[idx]) w.string(impl);
        w.endArray();
      }
    }
  }
  w.endObject();
}

}  // namespace

// ---- version documents -------------------------------------------------------------------------

Result<ApiResponse> CatalogHandlers::root(RequestContext& ctx) {
  JsonWriter w;
  w.beginObject();
  w.field("name", "OpenStack Ironic API");
  w.field("description",
          "Kiln is a bare-metal provisioning service that speaks the OpenStack Ironic API.");
  w.key("default_version");
  writeVersionObject(w, ctx.baseUrl);
  w.key("versions");
  w.beginArray();
  writeVersionObject(w, ctx.baseUrl);
  w.endArray();
  w.endObject();
  return jsonResponse(200, w.take());
}

Result<ApiResponse> CatalogHandlers::v1(RequestContext& ctx) {
  const std::string& base = ctx.baseUrl;
  JsonWriter w;
  w.beginObject();
  w.field("id", "v1");
  w.key("links");
  w.beginArray();
  w.beginObject();
  w.field("href", base + "/v1/");
  w.field("rel", "self");
  w.endObject();
  w.beginObject();
  w.field("href", "https://docs.openstack.org//ironic/latest/contributor//webapi.html");
  w.field("rel", "describedby");
  w.field("type", "text/html");
  w.endObject();
  w.endArray();
  w.key("media_types");
  w.beginObject();
  w.field("base", "application/json");
  w.field("type", "application/vnd.openstack.ironic.v1+json");
  w.endObject();
  for (auto name : {"chassis", "nodes", "ports", "drivers"}) {
    w.key(name);
    writeCollectionLinks(w, base, name);
  }
  w.key("version");
  writeVersionObject(w, base);
  if (ctx.atLeast(ver::k23Portgroups)) {
    w.key("portgroups");
    writeCollectionLinks(w, base, "portgroups");
  }
  if (ctx.atLeast(ver::k32Volume)) {
    w.key("volume");
    writeCollectionLinks(w, base, "volume");
  }
  if (ctx.atLeast(ver::k49Conductors)) {
    w.key("conductors");
    writeCollectionLinks(w, base, "conductors");
  }
  if (ctx.atLeast(ver::k52Allocation)) {
    w.key("allocations");
    writeCollectionLinks(w, base, "allocations");
  }
  if (ctx.atLeast(ver::k54Events)) {
    w.key("events");
    writeCollectionLinks(w, base, "events");
  }
  if (ctx.atLeast(ver::k55DeployTemplates)) {
    w.key("deploy_templates");
    writeCollectionLinks(w, base, "deploy_templates");
  }
  if (ctx.atLeast(ver::k82NodeShard)) {
    w.key("shards");
    writeCollectionLinks(w, base, "shards");
  }
  if (ctx.atLeast(ver::k84ContinueInspection)) {
    w.key("continue_inspection");
    writeCollectionLinks(w, base, "continue_inspection");
  }
  if (ctx.atLeast(ver::k92Runbooks)) {
    w.key("runbooks");
    writeCollectionLinks(w, base, "runbooks");
  }
  if (ctx.atLeast(ver::k96InspectionRules)) {
    w.key("inspection_rules");
    writeCollectionLinks(w, base, "inspection_rules");
  }
  w.endObject();
  return jsonResponse(200, w.take());
}

// ---- chassis ---------------------------------------------------------------------------------

Result<ApiResponse> CatalogHandlers::listChassis(RequestContext& ctx) { return chassisList(ctx, false); }
Result<ApiResponse> CatalogHandlers::listChassisDetail(RequestContext& ctx) { return chassisList(ctx, true); }

Result<ApiResponse> CatalogHandlers::chassisList(RequestContext& ctx, bool detailPath) {
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    ListOptions opts;
    opts.collection = "chassis";
    opts.invalidSortKeys = {"extra"};
    opts.detailPath = detailPath;
    opts.maxLimit = deps_.config.maxLimit;
    ListRequest list = KILN_TRY(parseListRequest(ctx, tx.chassis(), opts));
    auto items = KILN_TRY(tx.chassis().list(list.query));
    return jsonResponse(200, renderCollection(ctx, opts, list, items, [&](JsonWriter& w, const Record& c) {
      renderChassis(w, ctx, c, list.mask);
    }));
  });
}

Result<ApiResponse> CatalogHandlers::showChassis(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    Record c = KILN_TRY(findChassis(tx, ctx.param(0)));
    const FieldMask mask = KILN_TRY(showFields(ctx, chassisSchema()));
    JsonWriter w;
    renderChassis(w, ctx, c, mask);
    return jsonResponse(200, w.take());
  });
}

Result<ApiResponse> CatalogHandlers::createChassis(RequestContext& ctx) {
  Json body = KILN_TRY(parseJsonBody(ctx));
  Record c = KILN_TRY(recordFromBody(chassisSchema(), body, ctx.version, {}, "chassis"));
  KILN_TRY_VOID(assignUuid(c));
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    c.setText(kChassisCreatedAt, timestamp(deps_));
    auto inserted = tx.chassis().insert(c);
    if (!inserted) return std::unexpected(uniqueViolation(inserted.error(), "chassis", c, chassisSchema()));
    JsonWriter w;
    renderChassis(w, ctx, *inserted, visibleFields(chassisSchema(), ctx.version));
    ApiResponse r = jsonResponse(201, w.take());
    setLocation(r, ctx.baseUrl, "chassis/" + inserted->uuid());
    return r;
  });
}

Result<ApiResponse> CatalogHandlers::updateChassis(RequestContext& ctx) {
  Json body = KILN_TRY(parseJsonBody(ctx));
  Patch patch = KILN_TRY(parsePatch(body));
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    Record before = KILN_TRY(findChassis(tx, ctx.param(0)));
    Record c = KILN_TRY(patchRecord(chassisSchema(), before, patch, ctx.version));
    c.setText(kChassisUpdatedAt, timestamp(deps_));
    KILN_TRY_VOID(tx.chassis().update(c));
    JsonWriter w;
    renderChassis(w, ctx, c, visibleFields(chassisSchema(), ctx.version));
    return jsonResponse(200, w.take());
  });
}

Result<ApiResponse> CatalogHandlers::removeChassis(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    Record c = KILN_TRY(findChassis(tx, ctx.param(0)));
    const auto nodes = KILN_TRY(tx.nodes().count(
        {{ListFilter::Op::Equals, kNodeChassisUuid, Value::text(c.uuid()), {}}}));
    if (nodes > 0) {
      return invalid("Cannot complete the requested action because chassis " + c.uuid() +
                     " contains nodes.");
    }
    KILN_TRY_VOID(tx.chassis().remove(c.id()));
    return emptyResponse(204);
  });
}

// ---- drivers ---------------------------------------------------------------------------------

Result<ApiResponse> CatalogHandlers::listDrivers(RequestContext& ctx) {
  bool detail = false;
  std::string type;
  if (auto t = ctx.request.param("type")) {
    KILN_TRY_VOID(requireVersion(ctx, ver::k30DynamicDrivers));
    type = *t;
    if (type != "classic" && type != "dynamic") {
      return invalid("\"type\" filter must be one of \"classic\" or \"dynamic\", if specified.");
    }
  }
  if (auto d = ctx.request.param("detail")) {
    KILN_TRY_VOID(requireVersion(ctx, ver::k30DynamicDrivers));
    detail = KILN_TRY(parseBool("detail", *d));
  }
  const auto conductors = KILN_TRY(deps_.conductor.registry().list());
  JsonWriter w;
  w.beginObject();
  w.key("drivers");
  w.beginArray();
  if (type != "classic") {
    for (const auto& hw : deps_.drivers.hardwareTypes()) {
      renderDriver(w, ctx, hw, conductors, detail);
    }
  }
  w.endArray();
  w.endObject();
  return jsonResponse(200, w.take());
}

Result<ApiResponse> CatalogHandlers::showDriver(RequestContext& ctx) {
  const auto* hw = deps_.drivers.find(ctx.param(0));
  if (!hw) {
    return notFound("Could not find the following driver(s) or hardware type(s): " + ctx.param(0) + ".");
  }
  JsonWriter w;
  const auto conductors = KILN_TRY(deps_.conductor.registry().list());
  renderDriver(w, ctx, *hw, conductors, true);
  return jsonResponse(200, w.take());
}

Result<ApiResponse> CatalogHandlers::driverProperties(RequestContext& ctx) {
  const auto* hw = deps_.drivers.find(ctx.param(0));
  if (!hw) {
    return notFound("Could not find the following driver(s) or hardware type(s): " + ctx.param(0) + ".");
  }
  // The spec: properties of the calculated default implementation of each interface.
  std::map<std::string, std::string> props;
  for (const auto& info : kInterfaceTypes) {
    const auto& def = hw->defaults[static_cast<size_t>(info.type)];
    if (!def) continue;
    if (const auto* impl = findImplementation(info.type, *def)) {
      for (const auto& p : impl->properties) props.emplace(p.name, p.description);
    }
  }
  JsonWriter w;
  w.beginObject();
  for (const auto& [k, v] : props) w.field(k, v);
  w.endObject();
  return jsonResponse(200, w.take());
}

Result<ApiResponse> CatalogHandlers::driverRaidProperties(RequestContext& ctx) {
  const auto* hw = deps_.drivers.find(ctx.param(0));
  if (!hw) {
    return notFound("Could not find the following driver(s) or hardware type(s): " + ctx.param(0) + ".");
  }
  const auto& raid = hw->defaults[static_cast<size_t>(InterfaceType::Raid)];
  const auto* impl = raid ? findImplementation(InterfaceType::Raid, *raid) : nullptr;
  if (!impl || impl->noop) {
    return notFound("Driver " + hw->name + " does not support raid (disabled or not implemented).");
  }
  JsonWriter w;
  w.beginObject();
  for (const auto& p : logicalDiskProperties()) w.field(p.name, p.description);
  w.endObject();
  return jsonResponse(200, w.take());
}

// ---- conductors --------------------------------------------------------------------------------

namespace {

void renderConductor(JsonWriter& w, const RequestContext& ctx, const ConductorInfo& c, bool detail,
                     const std::optional<std::vector<std::string>>& fields) {
  auto want = [&](std::string_view f) {
    if (fields) return std::find(fields->begin(), fields->end(), f) != fields->end();
    if (detail) return true;
    return f == "hostname" || f == "conductor_group" || f == "alive";
  };
  auto time = [&](const std::string& t) {
    if (t.empty()) {
      w.null();
    } else {
      w.string(t);
    }
  };
  w.beginObject();
  if (want("hostname")) w.field("hostname", c.hostname);
  if (want("conductor_group")) w.field("conductor_group", c.group);
  if (want("alive")) {
    w.key("alive");
    w.boolean(c.alive);
  }
  if (want("drivers")) {
    w.key("drivers");
    w.beginArray();
    for (const auto& d : c.drivers) w.string(d);
    w.endArray();
  }
  if (want("created_at")) {
    w.key("created_at");
    time(c.createdAt);
  }
  if (want("updated_at")) {
    w.key("updated_at");
    time(c.updatedAt);
  }
  w.key("links");
  writeLinks(w, ctx.baseUrl, "conductors/" + c.hostname);
  w.endObject();
}

Result<std::optional<std::vector<std::string>>> conductorFields(const RequestContext& ctx) {
  auto fields = ctx.request.param("fields");
  if (!fields) return std::optional<std::vector<std::string>>();
  auto list = splitCommaList(*fields);
  for (const auto& f : list) {
    if (f != "hostname" && f != "conductor_group" && f != "alive" && f != "drivers" &&
        f != "created_at" && f != "updated_at") {
      return invalid("Field(s) \"" + f + "\" are not valid");
    }
  }
  return std::optional<std::vector<std::string>>(std::move(list));
}

}  // namespace

Result<ApiResponse> CatalogHandlers::listConductors(RequestContext& ctx) {
  bool detail = false;
  if (auto d = ctx.request.param("detail")) detail = KILN_TRY(parseBool("detail", *d));
  auto fields = KILN_TRY(conductorFields(ctx));
  if (fields && detail) return invalid("Can not specify ?detail=True and fields in the same request.");
  auto conductors = KILN_TRY(deps_.conductor.registry().list());  // sorted by host name
  // Ironic's pagination: after the marker (a host name), at most `limit` ([api] max_limit).
  const size_t limit = static_cast<size_t>(KILN_TRY(parseLimit(ctx, deps_.config.maxLimit)));
  const auto marker = ctx.request.param("marker");
  JsonWriter w;
  w.beginObject();
  w.key("conductors");
  w.beginArray();
  size_t shown = 0;
  std::string last;
  for (const auto& c : conductors) {
    if (marker && c.hostname <= *marker) continue;
    if (shown == limit) break;
    renderConductor(w, ctx, c, detail, fields);
    last = c.hostname;
    ++shown;
  }
  w.endArray();
  if (shown == limit && !last.empty() && conductors.back().hostname != last) {
    w.field("next", ctx.baseUrl + "/v1/conductors?limit=" + std::to_string(limit) + "&marker=" + last);
  }
  w.endObject();
  return jsonResponse(200, w.take());
}

Result<ApiResponse> CatalogHandlers::showConductor(RequestContext& ctx) {
  auto fields = KILN_TRY(conductorFields(ctx));
  for (const auto& c : KILN_TRY(deps_.conductor.registry().list())) {
    if (c.hostname != ctx.param(0)) continue;
    JsonWriter w;
    renderConductor(w, ctx, c, true, fields);
    return jsonResponse(200, w.take());
  }
  return notFound("Conductor " + ctx.param(0) + " could not be found.");
}
}  // namespace kiln::server
