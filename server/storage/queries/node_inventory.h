// File: server/storage/queries/node_inventory.h
//
// Inspection data (API 1.81): store and load a node's inventory.
// Storage-side queries of stored inspection data (server/model/node_inventory.h has the schema and
// the plain data): they take the caller's Transaction, so they run inside its atomic unit.
#pragma once

#include <optional>
#include <string>

#include "server/model/node_inventory.h"
#include "server/storage/storage.h"

namespace kiln::server {

/// Replaces the node's stored inventory.
Result<void> storeNodeInventory(Transaction& tx, int64_t nodeId, const NodeInventory& data,
                                const std::string& now);

/// The node's stored inventory, or nullopt when no inspection recorded one.
Result<std::optional<NodeInventory>> loadNodeInventory(Transaction& tx, int64_t nodeId);

}  // namespace kiln::server
