#include "server/storage/queries/node_history.h"

#include <chrono>
#include <string>

#include "server/model/node.h"
#include "shared/core/uuid.h"

namespace kiln::server {

Result<void> recordNodeHistory(Transaction& tx, const Config& config, const Clock& clock,
                               int64_t nodeId, const std::string& conductor,
                               const HistoryEvent& event) {
  if (!config.nodeHistory || event.event.empty()) return {};
  const auto now = clock.now();
  Record r = defaultRecord(nodeHistorySchema());
  r.setText(kHistUuid, generateUuid());
  r[kHistNodeId] = Value::integer(nodeId);
  r.setText(kHistConductor, conductor.substr(0, 255));
  r.setText(kHistEventType,
            event.eventType.empty() ? std::string(history_event::kUnknown) : event.eventType);
  r.setText(kHistSeverity, event.severity);
  r.setText(kHistEvent, event.event);
  if (!event.user.empty()) r.setText(kHistUser, event.user.substr(0, 32));
  // 1.115: the node's states as they are when the event is recorded.
  if (event.state) {
    r.setText(kHistState, *event.state);
    if (event.targetState) r.setText(kHistTargetProvisionState, *event.targetState);
  } else if (auto node = KILN_TRY(tx.nodes().findBy(kNodeId, Value::integer(nodeId)))) {
    r[kHistState] = (*node)[kNodeProvisionState];
    r[kHistTargetProvisionState] = (*node)[kNodeTargetProvisionState];
  }
  if (event.durationSeconds) r[kHistDurationSeconds] = Value::integer(*event.durationSeconds);
  r.setText(kHistCreatedAt, formatIsoTime(now));
  RecordStore& store = tx.records(Resource::NodeHistory);
  KILN_TRY(store.insert(r));

  // Keep the newest node_history_max_entries; entries younger than node_history_minimum_days
  // stay regardless (Ironic's purge rules, applied on every insert instead of periodically).
  ListQuery q;
  q.limit = 0;
  q.sortField = kHistId;
  q.filters.push_back({ListFilter::Op::Equals, kHistNodeId, Value::integer(nodeId), {}});
  const int64_t count = KILN_TRY(store.count(q.filters));
  const int64_t excess = count - config.nodeHistoryMaxEntries;
  if (excess <= 0) return {};
  q.limit = static_cast<int>(excess);
  const std::string before =
      formatIsoTime(now - std::chrono::hours(24) * config.nodeHistoryMinimumDays);
  for (const auto& old : KILN_TRY(store.list(q))) {
    if (config.nodeHistoryMinimumDays > 0 && old.str(kHistCreatedAt) >= before) continue;
    KILN_TRY_VOID(store.remove(old.id()));
  }
  return {};
}

}  // namespace kiln::server
