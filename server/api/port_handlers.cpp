#include "server/api/port_handlers.h"

#include <nlohmann/json.hpp>

#include "server/api/handler_support.h"
#include "server/model/node.h"
#include "shared/core/secrets.h"
#include "shared/json/json_util.h"

namespace kiln::server {
namespace {

using Mode = Storage::Mode;

const Schema& portSchema() { return schemaOf(Resource::Port); }
const Schema& pgSchema() { return schemaOf(Resource::Portgroup); }

bool isHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

/// Logical names (port groups): 1-255 of [A-Za-z0-9._~-].
bool isLogicalName(std::string_view name) {
  if (name.empty() || name.size() > 255) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '~' || c == '-')) {
      return false;
    }
  }
  return true;
}

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
        k != "network_type") {
      return invalid(usage);
    }
    if (!it.value().is_string()) return invalid(usage);
  }
  if (llc.contains("network_type")) {
    const auto t = llc["network_type"].get<std::string>();
    if (t != "managed" && t != "unmanaged") return invalid(usage);
  }
  const bool unmanaged = llc.value("network_type", "") == "unmanaged";
  if (!llc.empty() && !unmanaged && !(llc.contains("port_id") && (llc.contains("switch_id") || llc.contains("hostname")))) {
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
      std::string lower = sw;
      for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      llc["switch_id"] = lower;
    }
  }
  port.setText(kPortLocalLinkConnection, dumpJson(llc));
  return {};
}

void renderPort(JsonWriter& w, const RequestContext& ctx, const Record& p, const FieldMask& mask) {
  renderRecord(w, portSchema(), p, mask, [&](JsonWriter& out, size_t field) {
    if (field == kPortLinks) {
      writeLinks(out, ctx.baseUrl, "ports/" + p.uuid());
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

Result<Record> findPort(Transaction& tx, const std::string& ident) {
  if (!isUuidLike(ident)) return invalid("Expected UUID for port_uuid: " + ident);
  auto found = KILN_TRY(tx.ports().findBy(kPortUuid, Value::text(normalizeUuid(ident))));
  if (!found) return notFound("Port " + ident + " could not be found.");
  return std::move(*found);
}

Result<Record> findPortgroup(Transaction& tx, const std::string& ident) {
  std::optional<Record> found;
  if (isUuidLike(ident)) {
    found = KILN_TRY(tx.portgroups().findBy(kPgUuid, Value::text(normalizeUuid(ident))));
  } else if (isLogicalName(ident)) {
    found = KILN_TRY(tx.portgroups().findBy(kPgName, Value::text(ident)));
  } else {
    return invalid("Expected a logical name or UUID but received " + ident + ".");
  }
  if (!found) return notFound("Portgroup " + ident + " could not be found.");
  return std::move(*found);
}

}  // namespace

Result<std::string> normalizeMac(std::string_view mac, std::string_view field) {
  bool ok = mac.size() == 17;
  for (size_t i = 0; ok && i < mac.size(); ++i) {
    ok = (i % 3 == 2) ? mac[i] == ':' : isHex(mac[i]);
  }
  if (!ok) {
    return invalid("Expected valid MAC address for " + std::string(field) + ": " + std::string(mac));
  }
  std::string out(mac);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
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
      KILN_TRY_VOID(requireVersion(ctx, 24));
      Record group = KILN_TRY(findPortgroup(tx, *pg));
      eq(kPortPortgroupUuid, group.uuid());
    }
    auto ports = KILN_TRY(tx.ports().list(list.query));
    return jsonResponse(200, renderCollection(ctx, opts, list, ports, [&](JsonWriter& w, const Record& p) {
      renderPort(w, ctx, p, list.mask);
    }));
  });
}

Result<ApiResponse> PortHandlers::show(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    Record port = KILN_TRY(findPort(tx, ctx.param(0)));
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
  Record port = KILN_TRY(recordFromBody(portSchema(), body, ctx.version, {"address", "node_uuid"}, "port"));
  KILN_TRY_VOID(assignUuid(port));
  // Defaults Ironic applies when the body leaves them out.
  if (!body.contains("pxe_enabled") || body["pxe_enabled"].is_null()) port.setBool(kPortPxeEnabled, true);
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    KILN_TRY_VOID(validatePort(tx, port));
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
    Record before = KILN_TRY(findPort(tx, ctx.param(0)));
    Record port = KILN_TRY(patchRecord(portSchema(), before, patch, ctx.version));
    if (port[kPortAddress].isNull()) return invalid("Schema error for patch: 'address' is a required property");
    if (port[kPortNodeUuid].isNull()) return invalid("Schema error for patch: 'node_uuid' is a required property");
    KILN_TRY_VOID(validatePort(tx, port));
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
    Record port = KILN_TRY(findPort(tx, ctx.param(0)));
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

Result<void> PortHandlers::validatePortgroup(Transaction& tx, Record& pg, bool creating) {
  if (!pg[kPgAddress].isNull()) pg.setText(kPgAddress, KILN_TRY(normalizeMac(pg.str(kPgAddress))));
  if (!pg[kPgName].isNull() && !isLogicalName(pg.str(kPgName))) {
    return invalid(creating ? "Cannot create portgroup with invalid name '" + pg.str(kPgName) + "'"
                            : "Portgroup " + pg.uuid() + ": Cannot change name to invalid name '" +
                                  pg.str(kPgName) + "'");
  }
  if (!isUuidLike(pg.str(kPgNodeUuid))) return invalid("Expected UUID for node_uuid: " + pg.str(kPgNodeUuid));
  pg.setText(kPgNodeUuid, normalizeUuid(pg.str(kPgNodeUuid)));
  auto node = KILN_TRY(tx.nodes().findBy(kNodeUuid, pg[kPgNodeUuid]));
  if (!node) return invalid("Node " + pg.str(kPgNodeUuid) + " could not be found.");
  if (pg[kPgMode].isNull() || pg.str(kPgMode).empty()) {
    if (!creating) return invalid("'mode' is a mandatory attribute and can not be removed");
    pg.setText(kPgMode, "active-backup");
  }
  return {};
}

Result<ApiResponse> PortHandlers::createPortgroup(RequestContext& ctx) {
  Json body = KILN_TRY(parseJsonBody(ctx));
  Record pg = KILN_TRY(recordFromBody(pgSchema(), body, ctx.version, {"node_uuid"}, "portgroup"));
  KILN_TRY_VOID(assignUuid(pg));
  if (!body.contains("standalone_ports_supported") || body["standalone_ports_supported"].is_null()) {
    pg.setBool(kPgStandalonePortsSupported, true);
  }
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

Result<ApiResponse> PortHandlers::updatePortgroup(RequestContext& ctx) {
  Json body = KILN_TRY(parseJsonBody(ctx));
  Patch patch = KILN_TRY(parsePatch(body));
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    Record before = KILN_TRY(findPortgroup(tx, ctx.param(0)));
    Record pg = KILN_TRY(patchRecord(pgSchema(), before, patch, ctx.version));
    if (pg[kPgNodeUuid].isNull()) return invalid("Schema error for patch: 'node_uuid' is a required property");
    KILN_TRY_VOID(validatePortgroup(tx, pg, false));
    if (pg.str(kPgNodeUuid) != before.str(kPgNodeUuid)) {
      const auto members = KILN_TRY(tx.ports().count(
          {{ListFilter::Op::Equals, kPortPortgroupUuid, Value::text(pg.uuid()), {}}}));
      if (members > 0) {
        return conflict("Portgroup " + pg.uuid() + " has ports; it cannot move to another node.");
      }
    }
    pg.setText(kPgUpdatedAt, timestamp(deps_));
    auto updated = tx.portgroups().update(pg);
    if (!updated) return std::unexpected(uniqueViolation(updated.error(), "portgroup", pg, pgSchema()));
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
