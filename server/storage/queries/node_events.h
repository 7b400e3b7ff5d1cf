// File: server/storage/queries/node_events.h
//
// The node event journal's queries (server/model/node_event.h, table node_events). They take
// the caller's Transaction: an event appended with a change commits or rolls back with it,
// and a committed transaction that appended events tells its storage's events listener (the
// event hub, server/api/node_event_hub.h) once it has committed.
//
// Other parts record their own kinds (BMC requests, agent log lines) with appendNodeEvent();
// the fields they pass must already be masked (no secret may reach the journal).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/model/node_event.h"
#include "server/storage/storage.h"
#include "shared/core/clock.h"

namespace kiln::server {

/// An event time: UTC, ISO 8601 with milliseconds, "2026-12-06T13:43:11.123+00:00" (fixed
/// width, so times sort as text).
std::string formatEventTime(std::chrono::system_clock::time_point tp);

/// Appends an event of kind `kind` (node_event::validKind, else InvalidArgument) with `fields`
/// (a JSON object; anything else is stored as {"value": fields}; its keys id, time, kind,
/// node_uuid and conductor are dropped: every event has those) for the node, stamped now
/// and with `conductor` (this kiln-server's host). Returns the event's id.
Result<int64_t> appendNodeEvent(Transaction& tx, const Clock& clock, const std::string& conductor,
                                int64_t nodeId, const std::string& nodeUuid, std::string_view kind,
                                const nlohmann::json& fields);

/// The node's events with an id larger than `afterId`, of `kinds` (empty = every kind), at most
/// `limit` (>= 1), oldest first.
Result<std::vector<NodeEvent>> listNodeEvents(Transaction& tx, int64_t nodeId, int64_t afterId,
                                              const std::vector<std::string>& kinds, int limit);

/// Every node's events with an id larger than `afterId`, at most `limit`, oldest first (the
/// event hub's one query per poll).
Result<std::vector<NodeEvent>> listAllNodeEvents(Transaction& tx, int64_t afterId, int limit);

/// The largest event id there is (0 when the journal is empty).
Result<int64_t> newestNodeEventId(Transaction& tx);

/// Retention ([events] max_per_node, max_age): deletes events older than `maxAgeSeconds`
/// (0 = no age limit), then each node's events beyond its newest `maxPerNode` (0 = no count
/// limit). Returns how many were deleted.
Result<int64_t> pruneNodeEvents(Transaction& tx, const Clock& clock, int64_t maxPerNode,
                                int64_t maxAgeSeconds);

/// Deletes every event of the node (the node is being deleted).
Result<void> deleteNodeEvents(Transaction& tx, int64_t nodeId);

}  // namespace kiln::server
