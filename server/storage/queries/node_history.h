// File: server/storage/queries/node_history.h
//
// Node history (API 1.78): journals an event of a node.
// Storage-side queries of node history (server/model/node_history.h has the schema and the plain
// data): they take the caller's Transaction, so they run inside its atomic unit.
#pragma once

#include <string>

#include "server/config.h"
#include "server/model/node_history.h"
#include "server/storage/storage.h"
#include "shared/core/clock.h"

namespace kiln::server {

/// Journals `event` for the node with integer id `nodeId` in `tx`, as Ironic's
/// node_history_record(): nothing when [conductor] node_history is false or the text is
/// empty; `conductor` names this conductor. Then keeps the node's newest
/// [conductor] node_history_max_entries entries, deleting older ones that are also older than
/// [conductor] node_history_minimum_days.
Result<void> recordNodeHistory(Transaction& tx, const Config& config, const Clock& clock,
                               int64_t nodeId, const std::string& conductor,
                               const HistoryEvent& event);

}  // namespace kiln::server
