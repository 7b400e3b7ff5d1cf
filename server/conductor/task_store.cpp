#include "server/conductor/task_store.h"

#include <nlohmann/json.hpp>

#include "server/conductor/node_events_recorder.h"
#include "server/conductor/provision_state_machine.h"
#include "server/drivers/dhcp/dhcp_provider.h"
#include "server/model/node.h"
#include "server/model/resources.h"
#include "server/storage/queries/node_history.h"
#include "shared/core/bug.h"
#include "shared/json/json_util.h"

namespace kiln::server {
namespace {

/// Conflict, Reason::TakenOver: the node this conductor worked on under `heldBy`'s reservation
/// now shows another (or none): a takeover happened meanwhile, and this conductor's results are
/// dropped.
std::unexpected<Error> takenOverError(const std::string& uuid, const Record& stored,
                                      const std::string& heldBy) {
  const std::string now = stored[kNodeReservation].isNull()
                              ? std::string("no reservation")
                              : "reservation " + stored.str(kNodeReservation);
  return fail(ErrorCode::Conflict, Reason::TakenOver,
              "Node " + uuid + " was taken over while conductor " + heldBy +
                  " worked on it (it now has " + now + "); that work's results are dropped.");
}

}  // namespace

const FieldMask& TaskStore::ownedFields() {
  static const FieldMask mask = [] {
    FieldMask m;
    for (size_t f : {kNodeProvisionState, kNodeTargetProvisionState, kNodeProvisionUpdatedAt,
                     kNodeLastError, kNodeReservation, kNodeCleanStep, kNodeDeployStep,
                     kNodePowerState, kNodeTargetPowerState, kNodeDriverInternalInfo,
                     kNodeRaidConfig, kNodeFault, kNodeInspectionStartedAt,
                     kNodeInspectionFinishedAt, kNodeBootMode, kNodeServiceStep}) {
      m.set(f);
    }
    return m;
  }();
  return mask;
}

Result<TaskContext> TaskStore::load(Transaction& tx, const std::string& uuid,
                                    bool withRelations) const {
  auto found = KILN_TRY(tx.nodes().findBy(kNodeUuid, Value::text(uuid)));
  if (!found) return notFound("Node " + uuid + " could not be found.");
  TaskContext task;
  task.node = std::move(*found);
  task.driverInfo = objectField(task.node, kNodeDriverInfo);
  task.instanceInfo = objectField(task.node, kNodeInstanceInfo);
  task.internalInfo = objectField(task.node, kNodeDriverInternalInfo);
  if (withRelations) {
    task.traits = KILN_TRY(tx.traits().get(task.node.id()));
    ListQuery ports;
    ports.limit = 0;
    ports.filters.push_back({ListFilter::Op::Equals, kPortNodeUuid, Value::text(uuid), {}});
    task.ports = KILN_TRY(tx.ports().list(ports));
  }
  task.config = &config_;
  task.clock = &clock_;
  task.dhcp = dhcp_;
  task.log = Logger("conductor").with("node", uuid);
  return task;
}

Result<TaskContext> TaskStore::loadFresh(const std::string& uuid, bool withRelations) const {
  auto tx = KILN_TRY(storage_.begin(Storage::Mode::Read));
  return load(*tx, uuid, withRelations);
}

Result<void> TaskStore::save(Transaction& tx, TaskContext& task, const FieldMask& extra) const {
  auto current = KILN_TRY(tx.nodes().findBy(kNodeUuid, Value::text(task.uuid())));
  if (!current) return notFound("Node " + task.uuid() + " was deleted while being worked on.");
  return saveOver(tx, task, std::move(*current), extra);
}

Result<void> TaskStore::saveOver(Transaction& tx, TaskContext& task, Record stored,
                                 const FieldMask& extra) const {
  if (!task.heldBy.empty() && stored.str(kNodeReservation) != task.heldBy) {
    return takenOverError(task.uuid(), stored, task.heldBy);
  }
  // The node events this save reports, in its transaction (they keep their bookkeeping in
  // driver_internal_info, written just below).
  KILN_TRY_VOID(events::recordSaveEvents(tx, {clock_, host_}, stored, task));
  task.node.setText(kNodeDriverInternalInfo, dumpJson(task.internalInfo));
  task.node.setText(kNodeInstanceInfo, dumpJson(task.instanceInfo));
  const FieldMask fields = ownedFields() | extra;
  FieldMask changed;  // only these are written: an agent's heartbeat changes one column or two
  for (size_t i = 0; i < kNodeFieldCount; ++i) {
    if (fields.test(i) && stored[i] != task.node[i]) {
      stored[i] = task.node[i];
      changed.set(i);
    }
  }
  stored.setText(kNodeUpdatedAt, formatIsoTime(clock_.now()));
  changed.set(kNodeUpdatedAt);
  KILN_TRY_VOID(tx.nodes().updateFields(stored, changed));
  task.node = std::move(stored);
  // A save that gave the reservation up ends the guard above.
  if (!task.heldBy.empty() && task.node.str(kNodeReservation) != task.heldBy) task.heldBy.clear();
  return {};
}

Result<void> TaskStore::saveNew(TaskContext& task, const FieldMask& extra,
                                const HistoryEvent* event, const AlsoWrite& also) const {
  auto tx = KILN_TRY(storage_.begin(Storage::Mode::Write));
  KILN_TRY_VOID(save(*tx, task, extra));
  if (event) KILN_TRY_VOID(recordHistory(*tx, task.node.id(), *event));
  if (also) KILN_TRY_VOID(also(*tx));
  KILN_TRY_VOID(tx->commit());
  syncDhcpAfterSave(task);
  return {};
}

void TaskStore::syncDhcpAfterSave(const TaskContext& task) const {
  // A task loaded without its ports cannot say which MACs to write: the periodic sync
  // (server/conductor/dhcp_sync.h) covers those saves.
  if (!dhcp_ || task.ports.empty()) return;
  if (auto synced = dhcp_->syncNode(dhcpNodeOf(task)); !synced) {
    task.log.warning("could not update the node's DHCP entries",
                     {{"error", synced.error().message}});
  }
}

Result<void> TaskStore::saveReleasing(TaskContext& task, const FieldMask& extra,
                                      const HistoryEvent* event, const AlsoWrite& also) const {
  task.node.setNull(kNodeReservation);
  KILN_TRY_VOID(saveNew(task, extra, event, also));
  if (auto released = std::exchange(task.onReleased, nullptr)) released();
  return {};
}

Result<void> TaskStore::recordHistory(Transaction& tx, int64_t nodeId,
                                      const HistoryEvent& event) const {
  return recordNodeHistory(tx, config_, clock_, nodeId, host_, event);
}

bool TaskStore::transition(TaskContext& task, std::string_view event) const {
  const std::string from = task.node.str(kNodeProvisionState);
  const auto to = nextProvisionState(from, event);
  if (!KILN_BUG(to.has_value(), "node " + task.uuid() + ": no transition from \"" + from +
                                    "\" on event \"" + std::string(event) + "\"")) {
    return false;
  }
  task.node.setText(kNodeProvisionState, std::string(*to));
  task.node.setText(kNodeProvisionUpdatedAt, formatIsoTime(clock_.now()));
  task.stateMoves.push_back({from, std::string(*to), std::string(event)});
  task.log.info("provision state changed",
                {{"from", from}, {"to", std::string(*to)}, {"event", std::string(event)}});
  return true;
}

}  // namespace kiln::server
