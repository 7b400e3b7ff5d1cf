#include "server/storage/queries/node_inventory.h"

#include <optional>
#include <string>

#include "shared/core/uuid.h"
#include "shared/json/json_util.h"

namespace kiln::server {

Result<void> storeNodeInventory(Transaction& tx, int64_t nodeId, const NodeInventory& data,
                                const std::string& now) {
  RecordStore& store = tx.records(Resource::NodeInventory);
  auto existing = KILN_TRY(store.findBy(kInvNodeId, Value::integer(nodeId)));
  Record r = existing ? *existing : defaultRecord(nodeInventorySchema());
  r.setText(kInvInventory, dumpJson(data.inventory));
  r.setText(kInvPluginData, dumpJson(data.pluginData));
  if (existing) {
    r.setText(kInvUpdatedAt, now);
    return store.update(r);
  }
  r.setText(kInvUuid, generateUuid());
  r[kInvNodeId] = Value::integer(nodeId);
  r.setText(kInvCreatedAt, now);
  KILN_TRY(store.insert(r));
  return {};
}

Result<std::optional<NodeInventory>> loadNodeInventory(Transaction& tx, int64_t nodeId) {
  auto row =
      KILN_TRY(tx.records(Resource::NodeInventory).findBy(kInvNodeId, Value::integer(nodeId)));
  if (!row) return std::optional<NodeInventory>();
  NodeInventory out;
  for (auto [field, target] :
       {std::pair{kInvInventory, &out.inventory}, std::pair{kInvPluginData, &out.pluginData}}) {
    auto parsed = parseJson(row->str(field), "the stored inventory");
    if (!parsed || !parsed->is_object()) {
      return internalError("The stored inventory of node " + std::to_string(nodeId) +
                           " is not a JSON object");
    }
    *target = std::move(*parsed);
  }
  return std::optional<NodeInventory>(std::move(out));
}

}  // namespace kiln::server
