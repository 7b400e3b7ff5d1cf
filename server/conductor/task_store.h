// File: server/conductor/task_store.h
//
// How the conductor reads and writes the node it works on: a TaskContext is loaded from the
// node's row (its JSON columns parsed), changed by a flow or an action, and saved back. Saving
// writes only the fields the conductor owns (plus those a caller names) and only those that
// changed, onto the row as it is now: the API may have changed others (maintenance, traits,
// descriptions) while a step ran. Also here: journalling node history, moving the provision
// state, and the one way a save gives the node's reservation up.
//
// Giving the node up: a task saved with saveReleasing() has its reservation cleared in that
// save, and once it is committed the task's onReleased callback runs (the runner holding the
// node's NodeLock sets it to lock.releasedInSave()), so a reservation cleared in a save and the
// lock that held it can no longer drift apart.
//
// A task whose heldBy names the reservation its worker holds is never saved over a row whose
// reservation changed meanwhile (a takeover): the save fails with Reason::TakenOver.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "server/config.h"
#include "server/drivers/interfaces.h"
#include "server/model/node_history.h"
#include "server/storage/storage.h"
#include "shared/core/clock.h"

namespace kiln::server {

class TaskStore {
 public:
  TaskStore(Storage& storage, const Clock& clock, const Config& config, std::string host)
      : storage_(storage), clock_(clock), config_(config), host_(std::move(host)) {}

  /// The DHCP provider tasks get (task.dhcp) and that saves keep in line with the node: after
  /// a committed save of a task that holds its ports, the node's DHCP entries are rewritten
  /// when what they depend on changed (a failure or maintenance ends the network boot).
  void setDhcp(DhcpProvider* dhcp) { dhcp_ = dhcp; }

  Storage& storage() const { return storage_; }
  const Clock& clock() const { return clock_; }
  const std::string& host() const { return host_; }

  /// The node, its JSON columns parsed (leniently: a corrupt one reads as {}), and
  /// (`withRelations`) its traits and ports. NotFound ("Node U could not be found.").
  Result<TaskContext> load(Transaction& tx, const std::string& uuid,
                           bool withRelations = true) const;
  /// load() in a read transaction of its own.
  Result<TaskContext> loadFresh(const std::string& uuid, bool withRelations = true) const;

  /// Writes the conductor-owned fields of task.node (plus `extra`) onto the row as `tx` reads
  /// it now. NotFound when the node was deleted; Reason::TakenOver (Conflict) when task.heldBy
  /// no longer names the row's reservation.
  Result<void> save(Transaction& tx, TaskContext& task, const FieldMask& extra = {}) const;
  /// save() onto `stored`, the row as `tx` itself read it (load() in the same write
  /// transaction, which keeps the row from changing underneath): no second read.
  Result<void> saveOver(Transaction& tx, TaskContext& task, Record stored,
                        const FieldMask& extra = {}) const;
  /// Writes that go with a save in its transaction (the inventory stored with an inspection's
  /// end, say).
  using AlsoWrite = std::function<Result<void>(Transaction& tx)>;
  /// save() in a write transaction of its own, journalling `event` (if any) and running `also`
  /// (if any) in it.
  Result<void> saveNew(TaskContext& task, const FieldMask& extra = {},
                       const HistoryEvent* event = nullptr, const AlsoWrite& also = {}) const;
  /// The save that gives the node up: clears the reservation, saveNew(), and once committed
  /// calls task.onReleased (then clears it). On failure nothing is released: the lock still
  /// owns the reservation and releases it itself.
  Result<void> saveReleasing(TaskContext& task, const FieldMask& extra = {},
                             const HistoryEvent* event = nullptr, const AlsoWrite& also = {}) const;

  /// Journals an event of the node in `tx` (server/model/node_history.h), as this conductor.
  Result<void> recordHistory(Transaction& tx, int64_t nodeId, const HistoryEvent& event) const;

  /// Moves task.node's provision state by `event` (the state machine) and stamps
  /// provision_updated_at. An event the node's state does not take is a bug (KILN_BUG): the
  /// state then stays, and false is returned.
  bool transition(TaskContext& task, std::string_view event) const;

  /// After a committed save: the node's DHCP entries (see setDhcp). Logs what fails.
  void syncDhcpAfterSave(const TaskContext& task) const;

  /// The conductor-owned node fields save() writes back.
  static const FieldMask& ownedFields();

 private:
  DhcpProvider* dhcp_ = nullptr;
  Storage& storage_;
  const Clock& clock_;
  const Config& config_;
  std::string host_;
};

}  // namespace kiln::server
