#include "server/api/fleet_handlers.h"

#include <array>
#include <nlohmann/json.hpp>

#include "server/api/handler_support.h"
#include "server/conductor/conductor.h"
#include "server/model/node.h"

namespace kiln::server {
namespace {

std::string valueText(const Value& v) {
  if (v.kind == Value::Kind::Bool) return v.b ? "true" : "false";
  if (v.kind == Value::Kind::Int) return std::to_string(v.i);
  return v.s;
}

}  // namespace

Result<ApiResponse> FleetHandlers::whoami(RequestContext& ctx) {
  Json body = {{"user", ctx.user.empty() ? Json(nullptr) : Json(ctx.user)},
               {"role", ctx.role == Role::Observer ? "observer" : "admin"},
               {"auth_strategy", deps_.config.authStrategy}};
  return jsonResponse(200, body.dump());
}

Result<ApiResponse> FleetHandlers::summary(RequestContext&) {
  return inTransaction(deps_.storage, Storage::Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    Json body = Json::object();
    auto& nodes = tx.nodes();
    body["nodes"] = KILN_TRY(nodes.count({}));
    static constexpr std::pair<const char*, int> kFields[] = {
        {"provision_state", kNodeProvisionState}, {"power_state", kNodePowerState},
        {"maintenance", kNodeMaintenance},         {"fault", kNodeFault},
        {"resource_class", kNodeResourceClass},    {"conductor_group", kNodeConductorGroup}};
    for (const auto& [name, field] : kFields) {
      Json counts = Json::object();
      for (const auto& [value, n] : KILN_TRY(nodes.countByValue(field))) {
        if (value.isNull()) continue;
        // Booleans may come back as integers (SQLite): the field's own spelling.
        const std::string key =
            field == kNodeMaintenance ? ((value.kind == Value::Kind::Bool ? value.b : value.i != 0) ? "true" : "false")
                                      : valueText(value);
        counts[key] = counts.value(key, int64_t{0}) + n;
      }
      body[name] = std::move(counts);
    }
    // Ownership is the hash ring's (group, UUID) -> conductor, as the conductor filter applies.
    Json owners = Json::object();
    const auto live = deps_.conductor.registry().liveConductors();
    for (const auto& host : live) owners[host] = 0;
    if (live.size() == 1) {
      // One live conductor serves every group (a group no conductor serves falls back to the
      // whole ring): no node needs hashing.
      owners[live.front()] = body["nodes"];
    } else if (live.size() > 1) {
      static constexpr std::array<int, 2> kRing = {kNodeConductorGroup, kNodeUuid};
      Record probe(kNodeFieldCount);
      for (const auto& [values, n] : KILN_TRY(nodes.countGrouped(kRing))) {
        probe.setText(kNodeConductorGroup, values[0].isNull() ? std::string() : values[0].s);
        probe.setText(kNodeUuid, values[1].s);
        const std::string owner = deps_.conductor.registry().ownerOf(probe);
        if (!owner.empty()) owners[owner] = owners.value(owner, int64_t{0}) + n;
      }
    }
    body["conductor"] = std::move(owners);
    Json traits = Json::object();
    for (const auto& [trait, n] : KILN_TRY(tx.traits().countAll())) traits[trait] = n;
    body["traits"] = std::move(traits);
    return jsonResponse(200, body.dump());
  });
}

}  // namespace kiln::server
