// What the API tells about a node beyond its own fields, from the microversions after 1.78:
//   GET /v1/nodes/{node}/inventory (1.81): the last inspection's inventory and plugin data;
//   GET /v1/nodes/{node}/children (1.83): the UUIDs of the node's child nodes;
//   GET /v1/shards (1.82): every shard with its node count.
// Their version gates are in the route table (api_service.cpp).
#include <nlohmann/json.hpp>

#include "server/api/handler_support.h"
#include "server/api/node_handlers.h"
#include "server/model/node.h"
#include "server/model/node_inventory.h"
#include "server/model/versions.h"
#include "server/storage/queries/node_inventory.h"
#include "shared/json/json_util.h"

namespace kiln::server {

using Mode = Storage::Mode;

Result<ApiResponse> NodeHandlers::inventory(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    const Record node = KILN_TRY(findNode(tx, ctx, ctx.param(0)));
    auto stored = KILN_TRY(loadNodeInventory(tx, node.id()));
    if (!stored) {
      return notFound("Node inventory record for node " + node.uuid() + " could not be found.");
    }
    const Json body{{"inventory", std::move(stored->inventory)},
                    {"plugin_data", std::move(stored->pluginData)}};
    return jsonResponse(200, dumpJson(body));
  });
}

Result<ApiResponse> NodeHandlers::children(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    const Record node = KILN_TRY(findNode(tx, ctx, ctx.param(0)));
    ListQuery q;
    q.limit = 0;
    q.sortField = kNodeId;
    q.filters.push_back({ListFilter::Op::Equals, kNodeParentNode, Value::text(node.uuid()), {}});
    const auto kids = KILN_TRY(tx.nodes().list(q));
    JsonWriter w;
    w.beginObject();
    w.key("children");
    w.beginArray();
    for (const auto& kid : kids) w.string(kid.uuid());
    w.endArray();
    // Ironic's links here are one object, not a list.
    w.key("links");
    w.beginObject();
    w.key("href");
    w.stringParts({ctx.baseUrl, "/v1/nodes?parent_node=", node.uuid()});
    w.field("rel", "children");
    w.endObject();
    w.endObject();
    return jsonResponse(200, w.take());
  });
}

Result<ApiResponse> NodeHandlers::listShards(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    const auto counts = KILN_TRY(tx.nodes().countByValue(kNodeShard));
    JsonWriter w;
    w.beginObject();
    w.key("shards");
    w.beginArray();
    for (const auto& [shard, count] : counts) {
      w.beginObject();
      w.field("name", shard.isNull() ? std::string("None") : shard.s);
      w.key("count");
      w.integer(count);
      w.endObject();
    }
    w.endArray();
    w.endObject();
    return jsonResponse(200, w.take());
  });
}

}  // namespace kiln::server
