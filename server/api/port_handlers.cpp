#include "server/api/port_handlers.h"

#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "server/api/handler_support.h"
#include "server/conductor/node_lock.h"
#include "server/model/node.h"
#include "server/model/provision_state.h"
#include "shared/core/secrets.h"
#include "shared/core/strings.h"
#include "shared/json/json_util.h"
#include "shared/net/mac.h"
#include "server/model/versions.h"

namespace kiln::server {
namespace {

using Mode = Storage::Mode;

const Schema& portSchema() { return schemaOf(Resource::Port); }
const Schema& pgSchema() { return schemaOf(Resource::Portgroup); }

bool isHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

Result<void> validateLocalLinkConnection(Record& port) {
  if (port[kPortLocalLinkConnection].isNull()) {
    port.setText(kPortLocalLinkConnection, "{}");
    return {};
  }
  Json llc = KILN_TRY(parseJson(port.str(kPortLocalLinkConnection)));
  const std::string usage =
      "Invalid local_link_connection " + maskedRepr(llc) +
      ": it must be empty, or hold port_id with switch_id or hostname, or network_type "
      "'unmanaged'; the keys allowed are hostname, network_type, port_id, switch_id, switch_info";
  for (auto it = llc.begin(); it != llc.end(); ++it) {
    const auto& k = it.key();
    if (k != "port_id" && k != "switch_id" && k != "switch_info" && k != "hostname" &&
        k != "network_type" && k != "vtep-logical-switch" && k != "vtep-physical-switch") {
      return invalid(usage);
    }
    if (!it.value().is_string()) return invalid(usage);
  }
  if (llc.contains("network_type")) {
    const auto t = llc["network_type"].get<std::string>();
    if (t != "managed" && t != "unmanaged") return invalid(usage);
  }
  const bool unmanaged = llc.value("network_type", "") == "unmanaged";
  // 1.90's OVN VTEP shape: port_id with both vtep-* keys (each needs the other).
  const bool vtep = llc.contains("vtep-logical-switch") || llc.contains("vtep-physical-switch");
  if (vtep && !(llc.contains("vtep-logical-switch") && llc.contains("vtep-physical-switch") &&
                llc.contains("port_id"))) {
    return invalid(usage);
  }
  if (!llc.empty() && !unmanaged && !vtep &&
      !(llc.contains("port_id") && (llc.contains("switch_id") || llc.contains("hostname")))) {
    return invalid(usage);
  }
  if (llc.contains("switch_id")) {
    const std::string sw = llc["switch_id"].get<std::string>();
    auto mac = normalizeMac(sw, "switch_id");
    if (mac) {
      llc["switch_id"] = *mac;
    } else {
      bool datapath = sw.size() == 16;
      for (char c : sw) datapath = datapath && isHex(c);
      if (!datapath) {
        return invalid("Expected a MAC address or OpenFlow datapath ID but received " + sw + ".");
      }
      llc["switch_id"] = asciiLower(sw);
    }
  }
  port.setText(kPortLocalLinkConnection, dumpJson(llc));
  return {};
}

/// Whether the request's version knows OVN VTEP local_link_connection keys (1.90 to 1.104).
bool vtepVersion(const RequestContext& ctx) {
  return ctx.atLeast(ver::k90OvnVtep) && !ctx.atLeast(ver::k105RemoveOvnVtep);
}

/// A port written with vtep-* keys outside those versions is 406, as in Ironic.
Result<void> checkVtepVersion(const RequestContext& ctx, const Record& port) {
  if (!vtepVersion(ctx) && port.str(kPortLocalLinkConnection).find("\"vtep-") != std::string::npos) {
    return fail(ErrorCode::NotAcceptable, "Request not acceptable.");
  }
  return {};
}

void renderPort(JsonWriter& w, const RequestContext& ctx, const Record& p, const FieldMask& mask) {
  renderRecord(w, portSchema(), p, mask, [&](JsonWriter& out, size_t field) {
    if (field == kPortLinks) {
      writeLinks(out, ctx.baseUrl, "ports/" + p.uuid());
      return true;
    }
    // Below 1.90 (and from 1.105, when OVN VTEP support went again) Ironic shows a port's
    // local_link_connection without the vtep-* keys.
    if (field == kPortLocalLinkConnection && !p[field].isNull() && !vtepVersion(ctx) &&
        p.str(field).find("\"vtep-") != std::string::npos) {
      out.raw("{}");  // Ironic shows the key with an empty value
      return true;
    }
    return false;
  });
}

void renderPortgroup(JsonWriter& w, const RequestContext& ctx, const Record& pg, const FieldMask& mask) {
  renderRecord(w, pgSchema(), pg, mask, [&](JsonWriter& out, size_t field) {
    if (field == kPgLinks) {
      writeLinks(out, ctx.baseUrl, "portgroups/" + pg.uuid());
      return true;
    }
    if (field == kPgPorts) {
      writeLinks(out, ctx.baseUrl, "portgroups/" + pg.uuid() + "/ports");
      return true;
    }
    return false;
  });
}

/// A port by UUID; from 1.88 also by MAC address or name, as Ironic's Port.get.
Result<Record> findPort(Transaction& tx, const RequestContext& ctx, const std::string& ident) {
  std::optional<Record> found;
  if (isUuidLike(ident)) {
    found = KILN_TRY(tx.ports().findBy(kPortUuid, Value::text(normalizeUuid(ident))));
  } else if (!ctx.atLeast(ver::k88PortName)) {
    // Before port names the identity is a UUID (ironic-tempest-plugin's negative tests).
    return invalid("Expected UUID for port_uuid: " + ident);
  } else if (auto mac = normalizeMac(ident, "port")) {
    // Ironic's Port.get: a UUID, a MAC address or a logical name.
    found = KILN_TRY(tx.ports().findBy(kPortAddress, Value::text(*mac)));
  } else if (isValidLogicalName(ident)) {
    found = KILN_TRY(tx.ports().findBy(kPortName, Value::text(ident)));
  } else {
    return invalid("Expected a logical name or UUID but received " + ident + ".");
  }
  if (!found) return notFound("Port " + ident + " could not be found.");
  return std::move(*found);
}

/// The UUIDs of the nodes matching `filter` (the port and port group filters by a node's
/// shard or conductor group), as an In filter on `nodeField`.
Result<ListFilter> nodesFilter(Transaction& tx, ListFilter filter, int nodeField) {
  ListQuery q;
  q.limit = 0;
  q.filters.push_back(std::move(filter));
  ListFilter out{ListFilter::Op::In, nodeField, {}, {}};
  for (const auto& node : KILN_TRY(tx.nodes().list(q))) out.values.push_back(node.uuid());
  if (out.values.empty()) out.values.push_back("");  // matches nothing
  return out;
}

/// The shard (1.82 ports, 1.106 port groups) and conductor_groups (1.99) filters, which select
/// ports or port groups by their node. conductor_groups cannot be combined with a node, port
/// group or address filter (400, as Ironic).
Result<void> addNodeBasedFilters(Transaction& tx, const RequestContext& ctx, ListQuery& query,
                                 int nodeField, int shardSince) {
  if (auto shard = ctx.request.param("shard")) {
    KILN_TRY_VOID(requireVersion(ctx, shardSince));
    ListFilter f{ListFilter::Op::In, kNodeShard, {}, {}};
    for (auto& v : splitCommaList(*shard)) f.values.push_back(std::move(v));
    if (f.values.empty()) return invalid("The shard filter needs at least one shard");
    query.filters.push_back(KILN_TRY(nodesFilter(tx, std::move(f), nodeField)));
  }
  if (auto groups = ctx.request.param("conductor_groups")) {
    for (const char* other : {"node", "node_uuid", "portgroup", "address"}) {
      if (ctx.request.param(other)) {
        return invalid("Filtering by conductor_groups together with " + std::string(other) +
                       " is not supported");
      }
    }
    ListFilter f{ListFilter::Op::In, kNodeConductorGroup, {}, {}};
    for (const auto& v : splitCommaList(*groups)) f.values.push_back(asciiLower(v));
    if (f.values.empty()) return invalid("The conductor_groups filter needs at least one group");
    query.filters.push_back(KILN_TRY(nodesFilter(tx, std::move(f), nodeField)));
  }
  return {};
}

Result<Record> findPortgroup(Transaction& tx, const std::string& ident) {
  std::optional<Record> found;
  if (isUuidLike(ident)) {
    found = KILN_TRY(tx.portgroups().findBy(kPgUuid, Value::text(normalizeUuid(ident))));
  } else if (isValidLogicalName(ident)) {
    found = KILN_TRY(tx.portgroups().findBy(kPgName, Value::text(ident)));
  } else {
    return invalid("Expected a logical name or UUID but received " + ident + ".");
  }
  if (!found) return notFound("Portgroup " + ident + " could not be found.");
  return std::move(*found);
}

/// The ports of a port group.
Result<std::vector<Record>> portgroupMembers(Transaction& tx, const std::string& pgUuid) {
  ListQuery q;
  q.limit = 0;
  q.filters.push_back({ListFilter::Op::Equals, kPortPortgroupUuid, Value::text(pgUuid), {}});
  return tx.ports().list(q);
}

/// A physical network as Ironic's messages print it (Python's None for a port without one).
std::string physnetText(const Value& physnet) { return physnet.isNull() ? "None" : physnet.s; }

/// Ironic's conductor rule (validate_port_physnet): the ports of a port group share one
/// physical_network, "none" included. Checked when a port joins a group or changes its physical
/// network (`before` is null on create): a port that disagrees with the other members is 409.
/// Members that already disagree among themselves (data from before the rule) are Ironic's
/// PortgroupPhysnetInconsistent: a 500 there, a 409 here (the stored group is in conflict with
/// the rule, and the client can mend it by fixing its ports).
Result<void> checkPortgroupPhysnet(Transaction& tx, const Record& port, const Record* before) {
  if (port[kPortPortgroupUuid].isNull()) return {};
  if (before && (*before)[kPortPortgroupUuid] == port[kPortPortgroupUuid] &&
      (*before)[kPortPhysicalNetwork] == port[kPortPhysicalNetwork]) {
    return {};
  }
  const std::string& pgUuid = port.str(kPortPortgroupUuid);
  std::set<std::optional<std::string>> physnets;  // nullopt: a member without one
  std::optional<Value> groupPhysnet;
  for (const Record& member : KILN_TRY(portgroupMembers(tx, pgUuid))) {
    if (before && member.id() == before->id()) continue;
    physnets.insert(member.optStr(kPortPhysicalNetwork));
    if (!groupPhysnet) groupPhysnet = member[kPortPhysicalNetwork];
  }
  if (physnets.size() > 1) {
    std::string list;
    for (const auto& p : physnets) list += (list.empty() ? "" : ", ") + p.value_or("None");
    return conflict("Port group " + pgUuid +
                         " has member ports with inconsistent physical networks (" + list +
                         "). All ports in a port group must have the same physical network.");
  }
  if (groupPhysnet && !(*groupPhysnet == port[kPortPhysicalNetwork])) {
    return conflict("Port with physical network " + physnetText(port[kPortPhysicalNetwork]) +
                    " cannot become a member of port group " + pgUuid +
                    " which has ports in physical network " + physnetText(*groupPhysnet) + ".");
  }
  return {};
}

/// Python's truth value of a JSON value (Ironic tests values with a bare `if`).
bool pyTruthy(const Json& value) {
  if (value.is_null()) return false;
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number()) return value != 0;
  if (value.is_string()) return !value.get_ref<const std::string&>().empty();
  return !value.empty();
}

/// Ironic's test of a port group name: a value that is empty (Python-falsy: "", null) passes as
/// it is; anything else must be a logical name.
bool acceptableName(const Json& name) {
  return !pyTruthy(name) || (name.is_string() && isValidLogicalName(name.get_ref<const std::string&>()));
}

/// strutils.is_int_like: the text of an integer as Python prints it ("5", "-5"; not "05").
bool isIntLike(std::string_view text) {
  std::string_view digits = text;
  if (!digits.empty() && digits.front() == '-') digits.remove_prefix(1);
  if (digits.empty() || (digits.size() > 1 && digits.front() == '0')) return false;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
  }
  return digits != "0" || text == "0";
}

/// The text Python's str() gives a JSON value, as Ironic's name messages quote it.
std::string pyStr(const Json& value) {
  return value.is_string() ? value.get<std::string>() : pyRepr(value);
}

}  // namespace

Result<std::string> normalizeMac(std::string_view mac, std::string_view field) {
  auto out = net::parseMac(mac);  // ':' only, as Ironic's validate_and_normalize_mac
  if (!out) {
    return invalid("Expected valid MAC address for " + std::string(field) + ": " + std::string(mac));
  }
  return std::move(*out);
}

// ---- ports ---------------------------------------------------------------------------------

Result<ApiResponse> PortHandlers::list(RequestContext& ctx) { return listPorts(ctx, false, Scope::All); }
Result<ApiResponse> PortHandlers::listDetail(RequestContext& ctx) { return listPorts(ctx, true, Scope::All); }
Result<ApiResponse> PortHandlers::listForNode(RequestContext& ctx) { return listPorts(ctx, false, Scope::Node); }
Result<ApiResponse> PortHandlers::listDetailForNode(RequestContext& ctx) { return listPorts(ctx, true, Scope::Node); }
Result<ApiResponse> PortHandlers::listForPortgroup(RequestContext& ctx) { return listPorts(ctx, false, Scope::Portgroup); }
Result<ApiResponse> PortHandlers::listDetailForPortgroup(RequestContext& ctx) { return listPorts(ctx, true, Scope::Portgroup); }

Result<ApiResponse> PortHandlers::listPorts(RequestContext& ctx, bool detailPath, Scope scope) {
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    ListOptions opts;
    opts.collection = "ports";
    opts.invalidSortKeys = {"extra", "internal_info", "local_link_connection"};
    opts.detailPath = detailPath;
    opts.maxLimit = deps_.config.maxLimit;
    ListRequest list = KILN_TRY(parseListRequest(ctx, tx.ports(), opts));
    auto eq = [&](size_t field, std::string value) {
      list.query.filters.push_back({ListFilter::Op::Equals, static_cast<int>(field), Value::text(std::move(value)), {}});
    };
    if (scope == Scope::Node) {
      Record node = KILN_TRY(findNode(tx, ctx, ctx.param(0)));
      eq(kPortNodeUuid, node.uuid());
      opts.nextPath = "nodes/" + ctx.param(0) + "/ports";
    } else if (scope == Scope::Portgroup) {
      Record pg = KILN_TRY(findPortgroup(tx, ctx.param(0)));
      eq(kPortPortgroupUuid, pg.uuid());
      opts.nextPath = "portgroups/" + ctx.param(0) + "/ports";
    }
    if (detailPath && !opts.nextPath.empty()) opts.nextPath += "/detail";
    if (auto node = ctx.request.param("node")) {
      Record n = KILN_TRY(findNode(tx, ctx, *node));
      eq(kPortNodeUuid, n.uuid());
    } else if (auto nodeUuid = ctx.request.param("node_uuid")) {
      Record n = KILN_TRY(findNode(tx, ctx, *nodeUuid));
      eq(kPortNodeUuid, n.uuid());
    }
    if (auto address = ctx.request.param("address")) {
      eq(kPortAddress, KILN_TRY(normalizeMac(*address)));
    }
    if (auto pg = ctx.request.param("portgroup")) {
      KILN_TRY_VOID(requireVersion(ctx, ver::k24PortgroupsSubcontrollers));
      Record group = KILN_TRY(findPortgroup(tx, *pg));
      eq(kPortPortgroupUuid, group.uuid());
    }
    if (auto text = ctx.request.param("description_contains")) {
      // Ironic does not gate this filter by version.
      list.query.filters.push_back({ListFilter::Op::Contains, kPortDescription, Value::text(*text), {}});
    }
    KILN_TRY_VOID(addNodeBasedFilters(tx, ctx, list.query, kPortNodeUuid, ver::k82NodeShard));
    auto ports = KILN_TRY(tx.ports().list(list.query));
    return jsonResponse(200, renderCollection(ctx, opts, list, ports, [&](JsonWriter& w, const Record& p) {
      renderPort(w, ctx, p, list.mask);
    }));
  });
}

Result<ApiResponse> PortHandlers::show(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    Record port = KILN_TRY(findPort(tx, ctx, ctx.param(0)));
    const FieldMask mask = KILN_TRY(showFields(ctx, portSchema()));
    JsonWriter w;
    renderPort(w, ctx, port, mask);
    return jsonResponse(200, w.take());
  });
}

Result<void> PortHandlers::validatePort(Transaction& tx, Record& port) {
  port.setText(kPortAddress, KILN_TRY(normalizeMac(port.str(kPortAddress))));
  if (!isUuidLike(port.str(kPortNodeUuid))) {
    return invalid("Expected UUID for node_uuid: " + port.str(kPortNodeUuid));
  }
  port.setText(kPortNodeUuid, normalizeUuid(port.str(kPortNodeUuid)));
  auto node = KILN_TRY(tx.nodes().findBy(kNodeUuid, port[kPortNodeUuid]));
  if (!node) return invalid("Node " + port.str(kPortNodeUuid) + " could not be found.");
  if (!port[kPortPortgroupUuid].isNull()) {
    if (!isUuidLike(port.str(kPortPortgroupUuid))) {
      return invalid("Expected UUID for portgroup_uuid: " + port.str(kPortPortgroupUuid));
    }
    port.setText(kPortPortgroupUuid, normalizeUuid(port.str(kPortPortgroupUuid)));
    auto pg = KILN_TRY(tx.portgroups().findBy(kPgUuid, port[kPortPortgroupUuid]));
    if (!pg) return invalid("Portgroup " + port.str(kPortPortgroupUuid) + " could not be found.");
    if (pg->str(kPgNodeUuid) != port.str(kPortNodeUuid)) {
      return invalid("Port can not be added to a portgroup belonging to a different node.");
    }
    if (port.flag(kPortPxeEnabled) && !pg->flag(kPgStandalonePortsSupported)) {
      return conflict("Port group " + pg->uuid() + " doesn't support standalone ports. This port "
                      "cannot be created as a member of that portgroup as the port's "
                      "'pxe_enabled' field was set to True.");
    }
  }
  if (!port[kPortPhysicalNetwork].isNull() && port.str(kPortPhysicalNetwork).empty()) {
    return invalid("A non-empty value is required when setting physical_network");
  }
  KILN_TRY_VOID(validateLocalLinkConnection(port));
  if (port.flag(kPortIsSmartnic)) {
    auto llc = KILN_TRY(parseJson(port.str(kPortLocalLinkConnection)));
    if (!llc.contains("port_id") || !llc.contains("hostname")) {
      return invalid("Smart NIC port must have port_id and hostname in local_link_connection");
    }
  }
  return {};
}

Result<ApiResponse> PortHandlers::create(RequestContext& ctx) {
  Json body = KILN_TRY(parseJsonBody(ctx));
  // 1.94: the node may be named by node_ident (a name or UUID) instead of node_uuid; the schema
  // wants exactly one of them.
  std::optional<std::string> nodeIdent;
  if (body.is_object() && body.contains("node_ident")) {
    KILN_TRY_VOID(requireVersion(ctx, ver::k94PortNodename));
    if (!body["node_ident"].is_string()) {
      return invalid("Schema error for port: node_ident: " + pyRepr(body["node_ident"]) +
                     " is not of type 'string'");
    }
    if (body.contains("node_uuid")) {
      return invalid("Schema error for port: exactly one of node_ident and node_uuid is required");
    }
    nodeIdent = body["node_ident"].get<std::string>();
    body.erase("node_ident");
    body["node_uuid"] = "00000000-0000-0000-0000-000000000000";  // replaced below
  }
  Record port = KILN_TRY(recordFromBody(portSchema(), body, ctx.version, {"address", "node_uuid"}, "port"));
  KILN_TRY_VOID(assignUuid(port));
  // Defaults Ironic applies when the body leaves them out (a null pxe_enabled is refused).
  if (!body.contains("pxe_enabled")) port.setBool(kPortPxeEnabled, true);
  if (!body.contains("available_for_dynamic_portgroup")) {
    port.setBool(kPortAvailableForDynamicPortgroup, true);
  }
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    if (nodeIdent) {
      // An unknown node here is a 400, as Ironic's port creation answers.
      auto node = findNode(tx, ctx, *nodeIdent);
      if (!node) return invalid(node.error().message);
      port.setText(kPortNodeUuid, node->uuid());
    }
    KILN_TRY_VOID(checkVtepVersion(ctx, port));
    KILN_TRY_VOID(validatePort(tx, port));
    KILN_TRY_VOID(checkPortgroupPhysnet(tx, port, nullptr));
    port.setText(kPortCreatedAt, timestamp(deps_));
    auto inserted = tx.ports().insert(port);
    if (!inserted) return std::unexpected(uniqueViolation(inserted.error(), "port", port, portSchema()));
    JsonWriter w;
    renderPort(w, ctx, *inserted, visibleFields(portSchema(), ctx.version));
    ApiResponse r = jsonResponse(201, w.take());
    setLocation(r, ctx.baseUrl, "ports/" + inserted->uuid());
    return r;
  });
}

Result<ApiResponse> PortHandlers::update(RequestContext& ctx) {
  Json body = KILN_TRY(parseJsonBody(ctx));
  Patch patch = KILN_TRY(parsePatch(body));
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    Record before = KILN_TRY(findPort(tx, ctx, ctx.param(0)));
    Record port = KILN_TRY(patchRecord(portSchema(), before, patch, ctx.version));
    if (port[kPortAddress].isNull()) return invalid("Schema error for patch: 'address' is a required property");
    if (port[kPortNodeUuid].isNull()) return invalid("Schema error for patch: 'node_uuid' is a required property");
    if (port[kPortLocalLinkConnection] != before[kPortLocalLinkConnection]) {
      KILN_TRY_VOID(checkVtepVersion(ctx, port));
    }
    KILN_TRY_VOID(validatePort(tx, port));
    KILN_TRY_VOID(checkPortgroupPhysnet(tx, port, &before));
    port.setText(kPortUpdatedAt, timestamp(deps_));
    auto updated = tx.ports().update(port);
    if (!updated) return std::unexpected(uniqueViolation(updated.error(), "port", port, portSchema()));
    JsonWriter w;
    renderPort(w, ctx, port, visibleFields(portSchema(), ctx.version));
    return jsonResponse(200, w.take());
  });
}

Result<ApiResponse> PortHandlers::remove(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    Record port = KILN_TRY(findPort(tx, ctx, ctx.param(0)));
    if (auto node = KILN_TRY(tx.nodes().findBy(kNodeUuid, port[kPortNodeUuid]))) {
      KILN_TRY_VOID(NodeLock::checkFree(*node));
      // As Ironic: a port bound to a VIF goes only with its node in maintenance.
      const Json internal = objectField(port, kPortInternalInfo);
      for (const char* use : {"tenant", "cleaning", "provisioning", "rescuing", "inspection"}) {
        if (node->flag(kNodeMaintenance)) break;
        const auto vif = internal.find(std::string(use) + "_vif_port_id");
        if (vif == internal.end() || vif->is_null() || *vif == "") continue;
        return conflict("Cannot delete the port " + port.uuid() + " as it is bound to VIF " +
                        (vif->is_string() ? vif->get<std::string>() : vif->dump()) + " for " +
                        use + " use.");
      }
    }
    KILN_TRY_VOID(tx.ports().remove(port.id()));
    return emptyResponse(204);
  });
}

// ---- port groups -----------------------------------------------------------------------------

Result<ApiResponse> PortHandlers::listPortgroups(RequestContext& ctx) { return listGroups(ctx, false, false); }
Result<ApiResponse> PortHandlers::listPortgroupsDetail(RequestContext& ctx) { return listGroups(ctx, true, false); }
Result<ApiResponse> PortHandlers::listPortgroupsForNode(RequestContext& ctx) { return listGroups(ctx, false, true); }
Result<ApiResponse> PortHandlers::listPortgroupsDetailForNode(RequestContext& ctx) { return listGroups(ctx, true, true); }

Result<ApiResponse> PortHandlers::listGroups(RequestContext& ctx, bool detailPath, bool forNode) {
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    ListOptions opts;
    opts.collection = "portgroups";
    opts.invalidSortKeys = {"extra", "internal_info", "properties"};
    opts.detailPath = detailPath;
    opts.maxLimit = deps_.config.maxLimit;
    ListRequest list = KILN_TRY(parseListRequest(ctx, tx.portgroups(), opts));
    auto eq = [&](size_t field, std::string value) {
      list.query.filters.push_back({ListFilter::Op::Equals, static_cast<int>(field), Value::text(std::move(value)), {}});
    };
    if (forNode) {
      Record node = KILN_TRY(findNode(tx, ctx, ctx.param(0)));
      eq(kPgNodeUuid, node.uuid());
      opts.nextPath = "nodes/" + ctx.param(0) + "/portgroups" + (detailPath ? "/detail" : "");
    }
    if (auto node = ctx.request.param("node")) {
      Record n = KILN_TRY(findNode(tx, ctx, *node));
      eq(kPgNodeUuid, n.uuid());
    }
    if (auto address = ctx.request.param("address")) {
      eq(kPgAddress, KILN_TRY(normalizeMac(*address)));
    }
    KILN_TRY_VOID(addNodeBasedFilters(tx, ctx, list.query, kPgNodeUuid, ver::k106PortgroupShard));
    auto groups = KILN_TRY(tx.portgroups().list(list.query));
    return jsonResponse(200, renderCollection(ctx, opts, list, groups, [&](JsonWriter& w, const Record& pg) {
      renderPortgroup(w, ctx, pg, list.mask);
    }));
  });
}

Result<ApiResponse> PortHandlers::showPortgroup(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    Record pg = KILN_TRY(findPortgroup(tx, ctx.param(0)));
    const FieldMask mask = KILN_TRY(showFields(ctx, pgSchema()));
    JsonWriter w;
    renderPortgroup(w, ctx, pg, mask);
    return jsonResponse(200, w.take());
  });
}

Result<Record> PortHandlers::validatePortgroup(Transaction& tx, Record& pg, bool creating) {
  if (!pg[kPgAddress].isNull()) pg.setText(kPgAddress, KILN_TRY(normalizeMac(pg.str(kPgAddress))));
  // A PATCH checks the names it writes itself (updatePortgroup); "" passes, as in Ironic.
  if (creating && !pg.str(kPgName).empty() && !isValidLogicalName(pg.str(kPgName))) {
    return invalid("Cannot create portgroup with invalid name '" + pg.str(kPgName) + "'");
  }
  if (!isUuidLike(pg.str(kPgNodeUuid))) return invalid("Expected UUID for node_uuid: " + pg.str(kPgNodeUuid));
  pg.setText(kPgNodeUuid, normalizeUuid(pg.str(kPgNodeUuid)));
  auto node = KILN_TRY(tx.nodes().findBy(kNodeUuid, pg[kPgNodeUuid]));
  if (!node) return invalid("Node " + pg.str(kPgNodeUuid) + " could not be found.");
  // Ironic's database layer gives a new port group without a mode [DEFAULT]
  // default_portgroup_mode; a PATCH may set null or "" (only removing the field is refused).
  if (creating && pg.str(kPgMode).empty()) pg.setText(kPgMode, "active-backup");
  return std::move(*node);
}

Result<ApiResponse> PortHandlers::createPortgroup(RequestContext& ctx) {
  Json body = KILN_TRY(parseJsonBody(ctx));
  Record pg = KILN_TRY(recordFromBody(pgSchema(), body, ctx.version, {"node_uuid"}, "portgroup"));
  KILN_TRY_VOID(assignUuid(pg));
  if (!body.contains("standalone_ports_supported")) pg.setBool(kPgStandalonePortsSupported, true);
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    KILN_TRY_VOID(validatePortgroup(tx, pg, true));
    pg.setText(kPgCreatedAt, timestamp(deps_));
    auto inserted = tx.portgroups().insert(pg);
    if (!inserted) return std::unexpected(uniqueViolation(inserted.error(), "portgroup", pg, pgSchema()));
    JsonWriter w;
    renderPortgroup(w, ctx, *inserted, visibleFields(pgSchema(), ctx.version));
    ApiResponse r = jsonResponse(201, w.take());
    setLocation(r, ctx.baseUrl, "portgroups/" + inserted->uuid());
    return r;
  });
}

// Ironic's port group PATCH (API controller, then conductor): every field of PATCH_ALLOWED_FIELDS
// (address, extra, mode, name, node_uuid, properties, standalone_ports_supported; mode and
// properties from 1.26) with its checks, in Ironic's order.
Result<ApiResponse> PortHandlers::updatePortgroup(RequestContext& ctx) {
  Json body = KILN_TRY(parseJsonBody(ctx));
  Patch patch = KILN_TRY(parsePatch(body));
  const std::string& ident = ctx.param(0);
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    Record before = KILN_TRY(findPortgroup(tx, ident));
    // Ironic's 1.26 check (is_path_updated) looks at the first operation only: below 1.26 a
    // patch whose first operation leaves mode and properties alone may change them later.
    int version = ctx.version;
    if (version < ver::k26PortgroupModeProperties && !patch.ops.empty()) {
      const std::string& first = patch.ops.front().tokens.front();
      if (first != "mode" && first != "properties") version = 26;
    }
    Record pg = KILN_TRY(patchRecord(pgSchema(), before, patch, version));
    // Every name the patch writes is checked, not only the last one.
    for (size_t i = 0; i < patch.ops.size(); ++i) {
      if (patch.ops[i].path != "/name" || patch.ops[i].op == "remove") continue;
      if (!acceptableName(patch.values[i])) {
        return invalid("Portgroup " + ident + ": Cannot change name to invalid name '" +
                       pyStr(patch.values[i]) + "'");
      }
    }
    // The patched document tells a removed field from a null one: mode may be null but not
    // removed; standalone_ports_supported may be neither (Ironic's object refuses None: a 500
    // there, a 400 here; patchRecord already refused the null, kNullRefusedOnPatch).
    Json doc = recordToJson(pgSchema(), before);
    KILN_TRY_VOID(applyPatch(doc, patch));
    if (!doc.contains("mode")) {
      return invalid("'mode' is a mandatory attribute and can not be removed");
    }
    if (auto it = doc.find("standalone_ports_supported"); it == doc.end() || it->is_null()) {
      return invalid("Field `standalone_ports_supported' cannot be None");
    }
    if (auto it = doc.find("node_uuid"); it == doc.end()) {
      return invalid("Schema error for patch: 'node_uuid' is a required property");
    } else if (it->is_null()) {
      return invalid("Expected a UUID or int but received None.");
    }
    const std::string& newNode = pg.str(kPgNodeUuid);
    if (newNode != before.str(kPgNodeUuid) && !isUuidLike(newNode)) {
      // Ironic looks a changed node up by UUID or integer id before validating the field.
      return invalid(isIntLike(newNode) ? "Expected UUID for node_uuid: " + newNode
                                        : "Expected a UUID or int but received " + newNode + ".");
    }
    const Record node = KILN_TRY(validatePortgroup(tx, pg, false));
    const std::string& provState = node.str(kNodeProvisionState);
    if (ctx.atLeast(ver::k39InspectWait) && provState == state::kInspecting) {
      return conflict("Cannot update portgroup \"" + pg.uuid() + "\" on node \"" + node.uuid() +
                      "\" while it is in state \"inspecting\".");
    }
    if (pg.str(kPgNodeUuid) != before.str(kPgNodeUuid)) {
      const bool stateAllowed = provState == state::kEnroll || provState == state::kInspecting ||
                                provState == state::kInspectWait || provState == state::kManageable;
      if (!stateAllowed && !node.flag(kNodeMaintenance)) {
        return conflict("Portgroup " + pg.uuid() + " can not be associated to node " + node.uuid() +
                        " unless the node is in a enroll, inspecting, inspect wait, manageable "
                        "state or in maintenance mode.");
      }
      const auto members = KILN_TRY(tx.ports().count(
          {{ListFilter::Op::Equals, kPortPortgroupUuid, Value::text(pg.uuid()), {}}}));
      if (members > 0) {
        return invalid("Portgroup " + pg.uuid() + " can not be associated with node " +
                       node.uuid() + " because there are ports associated with this portgroup.");
      }
    }
    // The flat network interface (not noop) refuses to turn standalone ports off under a
    // member that boots from the network or carries a VIF.
    if (before.flag(kPgStandalonePortsSupported) && !pg.flag(kPgStandalonePortsSupported) &&
        node.str(kNodeNetworkInterface) != "noop") {
      for (const Record& member : KILN_TRY(portgroupMembers(tx, pg.uuid()))) {
        std::string reason;
        if (member.flag(kPortPxeEnabled)) reason = "'pxe_enabled' is set to True";
        const Json vif = objectField(member, kPortInternalInfo).value("tenant_vif_port_id", Json());
        if (vif.is_string() && !vif.get_ref<const std::string&>().empty()) {
          reason += (reason.empty() ? "" : ", ") + std::string("VIF ") +
                    vif.get<std::string>() + " is attached to this port";
        }
        if (!reason.empty()) {
          return conflict(
              "standalone_ports_supported can not be set to False, because the port group " +
              pg.uuid() + " contains port with " + reason);
        }
      }
    }
    pg.setText(kPgUpdatedAt, timestamp(deps_));
    auto updated = tx.portgroups().update(pg);
    if (!updated)
      return std::unexpected(uniqueViolation(updated.error(), "portgroup", pg, pgSchema()));
    JsonWriter w;
    renderPortgroup(w, ctx, pg, visibleFields(pgSchema(), ctx.version));
    return jsonResponse(200, w.take());
  });
}

Result<ApiResponse> PortHandlers::removePortgroup(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    Record pg = KILN_TRY(findPortgroup(tx, ctx.param(0)));
    const auto members = KILN_TRY(tx.ports().count(
        {{ListFilter::Op::Equals, kPortPortgroupUuid, Value::text(pg.uuid()), {}}}));
    if (members > 0) {
      return invalid("Cannot complete the requested action because portgroup " + pg.uuid() +
                     " contains ports.");
    }
    KILN_TRY_VOID(tx.portgroups().remove(pg.id()));
    return emptyResponse(204);
  });
}

}  // namespace kiln::server
