#include "server/api/vif_handlers.h"

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "server/api/common.h"
#include "server/api/handler_support.h"
#include "server/conductor/node_lock.h"
#include "server/model/node.h"
#include "server/model/resources.h"
#include "shared/core/secrets.h"
#include "shared/core/uuid.h"
#include "shared/json/json_util.h"
#include "server/model/versions.h"

namespace kiln::server {
namespace {

using Mode = Storage::Mode;
constexpr const char* kTenantVif = "tenant_vif_port_id";

/// A port or a port group of the node, with its parsed internal_info.
struct PortLike {
  Record* record = nullptr;
  bool isGroup = false;
  Json internal;
  /// The column of `record` that is `port` for a port and `group` for a port group.
  size_t field(PortField port, PortgroupField group) const {
    return isGroup ? static_cast<size_t>(group) : static_cast<size_t>(port);
  }
  const std::string& uuid() const { return record->str(field(kPortUuid, kPgUuid)); }
  std::optional<std::string> vif() const {
    const auto it = internal.find(kTenantVif);
    if (it == internal.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
      return std::nullopt;
    }
    return it->get<std::string>();
  }
};

/// The node's ports and port groups, in creation order.
struct NodePorts {
  std::vector<Record> ports, groups;

  static Result<NodePorts> load(Transaction& tx, const Record& node) {
    NodePorts out;
    ListQuery q;
    q.limit = 0;
    q.filters = {{ListFilter::Op::Equals, kPortNodeUuid, Value::text(node.uuid()), {}}};
    out.ports = KILN_TRY(tx.ports().list(q));
    q.filters = {{ListFilter::Op::Equals, kPgNodeUuid, Value::text(node.uuid()), {}}};
    out.groups = KILN_TRY(tx.portgroups().list(q));
    return out;
  }

  std::vector<PortLike> portLikes(bool groupsFirst) {
    std::vector<PortLike> out;
    auto addPorts = [&] {
      for (auto& p : ports) out.push_back({&p, false, objectField(p, kPortInternalInfo)});
    };
    auto addGroups = [&] {
      for (auto& g : groups) out.push_back({&g, true, objectField(g, kPgInternalInfo)});
    };
    if (groupsFirst) {
      addGroups();
      addPorts();
    } else {
      addPorts();
      addGroups();
    }
    return out;
  }
};

/// How the node's network interface treats VIFs: true when it records them on ports (flat).
Result<bool> tracksVifs(const Record& node) {
  const std::string& iface = node.str(kNodeNetworkInterface);
  if (iface == "noop") return false;
  if (iface == "flat" || iface.empty()) return true;
  return invalid("Network interface " + iface + " of node " + node.uuid() +
                 " cannot attach VIFs in Kiln");
}

Result<Record> lockableNode(Transaction& tx, const RequestContext& ctx) {
  Record node = KILN_TRY(findNode(tx, ctx, ctx.param(0)));
  KILN_TRY_VOID(NodeLock::checkFree(node));
  return node;
}

Error alreadyAttached(const PortLike& p, const std::string& vif) {
  return Error{ErrorCode::Conflict, "Unable to attach VIF because VIF " + vif +
                                        " is already attached to Ironic " +
                                        (p.isGroup ? "Portgroup " : "Port ") + p.uuid()};
}

/// Ironic's choice of a free port-like object for `vif` (drivers/modules/network/common.py,
/// without a network service: every physical network is allowed): port groups before ports,
/// PXE-enabled ports before the others, otherwise in creation order. `portUuid` or
/// `groupUuid` restricts the choice (1.67).
Result<std::optional<PortLike>> chooseFree(NodePorts& all, const std::string& vif,
                                           const std::optional<std::string>& portUuid,
                                           const std::optional<std::string>& groupUuid) {
  std::vector<PortLike> candidates;
  std::map<std::string, std::vector<PortLike>> byGroup;
  std::set<std::string> unusableGroups;
  for (auto& p : all.portLikes(false)) {
    if (p.isGroup) continue;
    if (portUuid && *portUuid != p.uuid()) continue;
    const auto attached = p.vif();
    if (attached && *attached == vif) return std::unexpected(alreadyAttached(p, vif));
    const std::string& group = p.record->str(kPortPortgroupUuid);
    if (attached) {
      if (!group.empty()) unusableGroups.insert(group);
      continue;
    }
    if (group.empty() && !groupUuid) {
      candidates.push_back(std::move(p));
    } else if (!group.empty()) {
      byGroup[group].push_back(std::move(p));
    }
  }
  if (!portUuid) {
    for (auto& g : all.portLikes(true)) {
      if (!g.isGroup) break;
      if (groupUuid && *groupUuid != g.uuid()) continue;
      const auto attached = g.vif();
      if (attached && *attached == vif) return std::unexpected(alreadyAttached(g, vif));
      if (attached) continue;
      auto& members = byGroup[g.uuid()];
      if (unusableGroups.count(g.uuid())) {
        if (!groupUuid) {
          for (auto& m : members) candidates.push_back(std::move(m));
        }
      } else if (!members.empty()) {
        candidates.push_back(std::move(g));
      }
    }
  }
  if (candidates.empty()) return std::optional<PortLike>();
  auto rank = [](const PortLike& p) {
    return std::pair<bool, bool>(p.isGroup, p.isGroup || p.record->flag(kPortPxeEnabled));
  };
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](const PortLike& a, const PortLike& b) { return rank(a) > rank(b); });
  return std::optional<PortLike>(std::move(candidates.front()));
}

Result<void> saveInternal(Transaction& tx, PortLike& p, const std::string& now) {
  p.record->setText(p.field(kPortInternalInfo, kPgInternalInfo), p.internal.dump());
  p.record->setText(p.field(kPortUpdatedAt, kPgUpdatedAt), now);
  // The port (group) was read by a list: only the columns a VIF changes are written.
  FieldMask changed;
  changed.set(p.field(kPortInternalInfo, kPgInternalInfo)).set(p.field(kPortUpdatedAt, kPgUpdatedAt));
  return p.isGroup ? tx.portgroups().updateFields(*p.record, changed)
                   : tx.ports().updateFields(*p.record, changed);
}

/// The VIF body of a POST: {"id": UUID or name, ...} (extra keys allowed, as in Ironic).
Result<Json> parseVif(const RequestContext& ctx) {
  const Json body = KILN_TRY(parseJsonBody(ctx));
  const std::string prefix = "Schema error for vif: ";
  if (!body.is_object()) return invalid(prefix + maskedRepr(body) + " is not of type 'object'");
  const auto id = body.find("id");
  if (id == body.end()) return invalid(prefix + "'id' is a required property");
  if (!id->is_string()) return invalid(prefix + maskedRepr(*id) + " is not of type 'string'");
  const std::string& value = id->get_ref<const std::string&>();
  if (!isValidLogicalName(value) && !isUuidLike(value)) {
    return invalid("Expected UUID or name for vif.id: " + value);
  }
  return body;
}

std::optional<std::string> optionalString(const Json& body, const char* key) {
  const auto it = body.find(key);
  if (it == body.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

}  // namespace

Result<ApiResponse> VifHandlers::list(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    const Record node = KILN_TRY(findNode(tx, ctx, ctx.param(0)));
    Json vifs = Json::array();
    if (KILN_TRY(tracksVifs(node))) {
      NodePorts all = KILN_TRY(NodePorts::load(tx, node));
      for (const auto& p : all.portLikes(false)) {
        if (auto vif = p.vif()) vifs.push_back({{"id", *vif}});
      }
    }
    return jsonResponse(200, dumpJson(Json{{"vifs", vifs}}));
  });
}

Result<ApiResponse> VifHandlers::attach(RequestContext& ctx) {
  const Json vif = KILN_TRY(parseVif(ctx));
  const std::string id = vif["id"];
  const auto portUuid = optionalString(vif, "port_uuid");
  const auto groupUuid = portUuid ? std::nullopt : optionalString(vif, "portgroup_uuid");
  if (ctx.version >= ver::k67NodeVifAttachPort && vif.contains("port_uuid") && vif.contains("portgroup_uuid")) {
    return invalid("Cannot specify both port_uuid and portgroup_uuid");
  }
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    const Record node = KILN_TRY(lockableNode(tx, ctx));
    if (!KILN_TRY(tracksVifs(node))) return emptyResponse(204);
    NodePorts all = KILN_TRY(NodePorts::load(tx, node));
    auto chosen = KILN_TRY(chooseFree(all, id, portUuid, groupUuid));
    if (!chosen)
      return invalid("Unable to attach VIF " + id + ", not enough free physical ports.");
    chosen->internal[kTenantVif] = id;
    KILN_TRY_VOID(saveInternal(tx, *chosen, timestamp(deps_)));
    deps_.log.info("VIF attached",
                   {{"node", node.uuid()}, {"vif", id}, {"port_like", chosen->uuid()}});
    return emptyResponse(204);
  });
}

Result<ApiResponse> VifHandlers::detach(RequestContext& ctx) {
  const std::string& id = ctx.param(1);
  if (!isValidLogicalName(id) && !isUuidLike(id)) {
    return invalid("Expected UUID or name for vif_id: " + id);
  }
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    const Record node = KILN_TRY(lockableNode(tx, ctx));
    if (!KILN_TRY(tracksVifs(node))) return emptyResponse(204);
    NodePorts all = KILN_TRY(NodePorts::load(tx, node));
    for (auto& p : all.portLikes(true)) {
      if (p.vif() != id) continue;
      p.internal.erase(kTenantVif);
      // Ironic also forgets the pre-1.28 extra/vif_port_id.
      const size_t extraField = p.field(kPortExtra, kPgExtra);
      Json extra = objectField(*p.record, extraField);
      if (extra.erase("vif_port_id") > 0) p.record->setText(extraField, extra.dump());
      KILN_TRY_VOID(saveInternal(tx, p, timestamp(deps_)));
      deps_.log.info("VIF detached", {{"node", node.uuid()}, {"vif", id}});
      return emptyResponse(204);
    }
    return invalid("Unable to detach VIF " + id + " from node " + node.uuid() +
                   " because it is not attached to it.");
  });
}

}  // namespace kiln::server
