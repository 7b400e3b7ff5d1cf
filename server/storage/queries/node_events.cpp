#include "server/storage/queries/node_events.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "shared/json/json_util.h"

namespace kiln::server {

std::string formatEventTime(std::chrono::system_clock::time_point tp) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(tp.time_since_epoch());
  auto seconds = static_cast<std::time_t>(ms.count() / 1000);
  auto millis = static_cast<int>(ms.count() % 1000);
  if (millis < 0) {  // before 1970
    millis += 1000;
    --seconds;
  }
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[48];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03d+00:00", millis);
  return buf;
}

Result<int64_t> appendNodeEvent(Transaction& tx, const Clock& clock, const std::string& conductor,
                                int64_t nodeId, const std::string& nodeUuid, std::string_view kind,
                                const nlohmann::json& fields) {
  if (!node_event::validKind(kind)) {
    return invalid("invalid node event kind \"" + std::string(kind) + "\"");
  }
  NodeEvent e;
  e.nodeId = nodeId;
  e.nodeUuid = nodeUuid;
  e.time = formatEventTime(clock.now());
  e.kind = std::string(kind);
  nlohmann::json object = fields.is_object() ? fields : nlohmann::json{{"value", fields}};
  // The names every event has are the journal's own.
  for (const char* reserved : {"id", "time", "kind", "node_uuid", "conductor"}) {
    object.erase(reserved);
  }
  e.fields = dumpJson(object);
  e.conductor = conductor;
  const int64_t id = KILN_TRY(tx.nodeEvents().append(e));
  tx.appendedEvents = true;
  return id;
}

Result<std::vector<NodeEvent>> listNodeEvents(Transaction& tx, int64_t nodeId, int64_t afterId,
                                              const std::vector<std::string>& kinds, int limit) {
  NodeEventQuery q;
  q.nodeId = nodeId;
  q.afterId = afterId;
  q.kinds = kinds;
  q.limit = std::max(1, limit);
  return tx.nodeEvents().list(q);
}

Result<std::vector<NodeEvent>> listAllNodeEvents(Transaction& tx, int64_t afterId, int limit) {
  NodeEventQuery q;
  q.afterId = afterId;
  q.limit = std::max(1, limit);
  return tx.nodeEvents().list(q);
}

Result<int64_t> newestNodeEventId(Transaction& tx) { return tx.nodeEvents().newestId(); }

Result<int64_t> pruneNodeEvents(Transaction& tx, const Clock& clock, int64_t maxPerNode,
                                int64_t maxAgeSeconds) {
  NodeEventStore& store = tx.nodeEvents();
  int64_t removed = 0;
  if (maxAgeSeconds > 0) {
    removed += KILN_TRY(
        store.removeOlderThan(formatEventTime(clock.now() - std::chrono::seconds(maxAgeSeconds))));
  }
  if (maxPerNode > 0) {
    for (int64_t nodeId : KILN_TRY(store.nodesWithMoreThan(maxPerNode))) {
      removed += KILN_TRY(store.removeBeyond(nodeId, maxPerNode));
    }
  }
  return removed;
}

Result<void> deleteNodeEvents(Transaction& tx, int64_t nodeId) {
  KILN_TRY(tx.nodeEvents().removeNode(nodeId));
  return {};
}

}  // namespace kiln::server
