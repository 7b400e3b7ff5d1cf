#include "server/api/agent_handlers.h"

#include "server/api/api_metrics.h"
#include "server/api/handler_support.h"
#include "server/api/port_handlers.h"
#include "server/model/versions.h"
#include "shared/core/strings.h"
#include "shared/json/json_util.h"
#include "shared/protocol/messages.h"

namespace kiln::server {

Result<ApiResponse> AgentHandlers::lookup(RequestContext& ctx) {
  Result<ApiResponse> answer = lookupNode(ctx);
  recordLookup(answer                                              ? "found"
               : answer.error().code == ErrorCode::NotFound        ? "not_found"
               : answer.error().code == ErrorCode::InvalidArgument ? "invalid"
                                                                   : "error");
  return answer;
}

Result<ApiResponse> AgentHandlers::lookupNode(RequestContext& ctx) {
  // Ironic ignores addresses that are not MACs; none left and no node_uuid is a 400.
  std::vector<std::string> macs;
  if (auto addresses = ctx.request.param("addresses")) {
    for (std::string_view address : split(*addresses, ',')) {
      if (auto mac = normalizeMac(address)) macs.push_back(*mac);
    }
  }
  std::string uuid = ctx.request.param("node_uuid").value_or("");
  if (!uuid.empty() && !isUuidLike(uuid)) return invalid("Expected a UUID but received " + uuid + ".");
  if (macs.empty() && uuid.empty()) {
    return invalid("Incorrect MAC address format was passed as addresses, and no node_uuid "
                   "was given.");
  }
  const nlohmann::json body = KILN_TRY(deps_.conductor.lookup(macs, uuid));
  return jsonResponse(200, dumpJson(body));
}

Result<ApiResponse> AgentHandlers::continueInspection(RequestContext& ctx) {
  if (ctx.version > ver::k1InitialVersion && ctx.version < ver::k84ContinueInspection) {
    return notFound("The resource could not be found.");
  }
  const Json body = KILN_TRY(parseJsonBody(ctx));
  if (!body.is_object() || !body.contains("inventory") || !body["inventory"].is_object()) {
    return invalid("Invalid inventory data: the body must be an object with an inventory object");
  }
  const Json& inventory = body["inventory"];
  std::vector<std::string> macs;
  if (auto nics = inventory.find("interfaces"); nics != inventory.end() && nics->is_array()) {
    for (const auto& nic : *nics) {
      if (!nic.is_object() || !nic.contains("mac_address") || !nic["mac_address"].is_string()) {
        continue;
      }
      if (auto mac = normalizeMac(nic["mac_address"].get<std::string>())) macs.push_back(*mac);
    }
  }
  std::string uuid = ctx.request.param("node_uuid").value_or("");
  if (!uuid.empty()) {
    if (ctx.version < ver::k84ContinueInspection) return notFound("The resource could not be found.");
    if (!isUuidLike(uuid)) return invalid("Expected a UUID but received " + uuid + ".");
    uuid = normalizeUuid(uuid);
  }
  if (macs.empty() && uuid.empty()) return invalid("No lookup information provided");
  const Json answer = KILN_TRY(deps_.conductor.continueInspection(inventory, macs, uuid));
  if (ctx.version < ver::k84ContinueInspection) {
    return jsonResponse(202, dumpJson(Json{{"uuid", answer["node"].value("uuid", "")}}));
  }
  return jsonResponse(202, dumpJson(answer));
}

Result<ApiResponse> AgentHandlers::heartbeat(RequestContext& ctx) {
  recordHeartbeat();
  const Json body = KILN_TRY(parseJsonBody(ctx));
  auto beat = protocol::HeartbeatRequest::parse(body);
  if (!beat) return invalid("Invalid heartbeat: " + beat.error().message);
  if (!body.contains("protocol_version")) {
    return invalid("This heartbeat carries no protocol_version: kiln-server speaks only "
                   "kiln-agent's pull protocol (docs/protocol.md); ironic-python-agent is not "
                   "supported.");
  }
  // Agents heartbeat with the node's UUID (the conductor answers 404 for an unknown one); a name
  // is resolved here.
  std::string uuid = ctx.param(0);
  if (!isUuidLike(uuid)) {
    auto tx = KILN_TRY(deps_.storage.begin(Storage::Mode::Read));
    uuid = KILN_TRY(findNode(*tx, ctx, uuid)).uuid();
  }
  const protocol::HeartbeatResponse response = KILN_TRY(deps_.conductor.heartbeat(uuid, *beat));
  return jsonResponse(202, dumpJson(response.toJson()));
}

}  // namespace kiln::server
