// The node traits sub-resource (node traits spec, Ironic >= 1.37):
//   GET/PUT/DELETE /v1/nodes/{node}/traits, PUT/DELETE /v1/nodes/{node}/traits/{trait}.
// What older versions get is decided in the route table (api_service.cpp) and in listTraits.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "server/api/handler_support.h"
#include "server/api/node_handlers.h"
#include "server/conductor/node_lock.h"
#include "server/model/trait.h"
#include "server/model/versions.h"

namespace kiln::server {
namespace {

using Mode = Storage::Mode;

constexpr const char* kPutUsage =
    "A single node trait may be added via PUT /v1/nodes/<node identifier>/traits/<trait> with "
    "no body, or all node traits may be replaced via PUT /v1/nodes/<node identifier>/traits "
    "with the list of traits specified in the request body.";

bool hasBody(const RequestContext& ctx) {
  return ctx.request.body.find_first_not_of(" \t\r\n") != std::string::npos;
}

/// Whether PUT .../traits/{trait} carries a body. As in Ironic, a body that parses to `{}` or
/// `null` holds nothing and counts as none (some clients send `{}` with every PUT).
Result<bool> carriesBody(const RequestContext& ctx) {
  if (!hasBody(ctx)) return false;
  const Json body = KILN_TRY(parseJsonBody(ctx));
  return !(body.is_null() || (body.is_object() && body.empty()));
}

}  // namespace

Result<ApiResponse> NodeHandlers::listTraits(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    Record node = KILN_TRY(findNode(tx, ctx, ctx.param(0)));
    // Below 1.37 Ironic reads the path as GET /v1/nodes/{node}?fields=traits: the node must
    // exist, then the field is too new (see the route table).
    if (!ctx.atLeast(ver::k37NodeTraits)) return fail(ErrorCode::NotAcceptable, "Request not acceptable.");
    auto traits = KILN_TRY(tx.traits().get(node.id()));
    JsonWriter w;
    w.beginObject();
    w.key("traits");
    w.beginArray();
    for (const auto& t : traits) w.string(t);
    w.endArray();
    w.endObject();
    return jsonResponse(200, w.take());
  });
}

Result<ApiResponse> NodeHandlers::setTraits(RequestContext& ctx) {
  if (!hasBody(ctx)) return invalid(kPutUsage);
  Json body = KILN_TRY(parseJsonBody(ctx));
  if (!body.is_object()) return invalid(kPutUsage);
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (it.key() != "traits") {
      return invalid("Schema error for traits: Additional properties are not allowed ('" +
                     it.key() + "' was unexpected)");
    }
  }
  if (!body.contains("traits")) return invalid(kPutUsage);
  const Json& list = body["traits"];
  if (!list.is_array()) {
    return invalid("Schema error for traits: " + pyRepr(list) + " is not of type 'array'");
  }
  std::vector<std::string> requested;
  for (const auto& t : list) {
    if (!t.is_string()) return invalid("Invalid trait. A trait must be a string, got " + pyRepr(t));
    requested.push_back(t.get<std::string>());
  }
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    Record node = KILN_TRY(findNode(tx, ctx, ctx.param(0)));
    auto traits = KILN_TRY(normalizeTraits(requested, node.uuid()));
    KILN_TRY_VOID(NodeLock::checkFree(node));
    KILN_TRY_VOID(tx.traits().set(node.id(), traits));
    node.setText(kNodeUpdatedAt, timestamp(deps_));
    KILN_TRY_VOID(tx.nodes().update(node));
    return emptyResponse(204);
  });
}

Result<ApiResponse> NodeHandlers::addTrait(RequestContext& ctx) {
  if (KILN_TRY(carriesBody(ctx))) return invalid(kPutUsage);
  const std::string& trait = ctx.param(1);
  KILN_TRY_VOID(validateTrait(trait));
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    Record node = KILN_TRY(findNode(tx, ctx, ctx.param(0)));
    KILN_TRY_VOID(NodeLock::checkFree(node));
    auto traits = KILN_TRY(tx.traits().get(node.id()));
    if (std::find(traits.begin(), traits.end(), trait) == traits.end()) {
      if (traits.size() + 1 > kMaxTraitsPerNode) {
        return invalid(tooManyTraitsMessage(node.uuid(), traits.size() + 1));
      }
      KILN_TRY_VOID(tx.traits().add(node.id(), trait));
      node.setText(kNodeUpdatedAt, timestamp(deps_));
      KILN_TRY_VOID(tx.nodes().update(node));
    }
    ApiResponse r = emptyResponse(204);
    setLocation(r, ctx.baseUrl, "nodes/" + node.uuid() + "/traits/" + trait);
    return r;
  });
}

Result<ApiResponse> NodeHandlers::clearTraits(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    Record node = KILN_TRY(findNode(tx, ctx, ctx.param(0)));
    KILN_TRY_VOID(NodeLock::checkFree(node));
    KILN_TRY_VOID(tx.traits().clear(node.id()));
    node.setText(kNodeUpdatedAt, timestamp(deps_));
    KILN_TRY_VOID(tx.nodes().update(node));
    return emptyResponse(204);
  });
}

Result<ApiResponse> NodeHandlers::removeTrait(RequestContext& ctx) {
  const std::string& trait = ctx.param(1);
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    Record node = KILN_TRY(findNode(tx, ctx, ctx.param(0)));
    KILN_TRY_VOID(NodeLock::checkFree(node));
    if (!KILN_TRY(tx.traits().remove(node.id(), trait))) {
      return notFound("Node " + node.uuid() + " doesn't have a trait '" + trait + "'");
    }
    node.setText(kNodeUpdatedAt, timestamp(deps_));
    KILN_TRY_VOID(tx.nodes().update(node));
    return emptyResponse(204);
  });
}

}  // namespace kiln::server
