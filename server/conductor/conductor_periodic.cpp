// File: server/conductor/conductor_periodic.cpp
//
// The conductor's periodic side: the pass that runs every `[conductor] periodic_interval`
// (the conductor ring, takeovers, hand-offs from other servers, wait-state timers, the
// power-state sync) and the recovery of what this server or a dead conductor left behind.
// Requests live in conductor.cpp, the flows' steps in conductor.cpp and the agent's side in
// conductor_agent.cpp.
#include <chrono>

#include "server/conductor/conductor.h"
#include "server/conductor/conductor_detail.h"
#include "server/conductor/node_events_recorder.h"
#include "server/drivers/agent/agent_session.h"
#include "server/drivers/agent/ramdisk_logs.h"
#include "server/drivers/sensor_metrics.h"
#include "server/model/node.h"
#include "server/model/provision_state.h"
#include "server/model/resources.h"
#include "server/storage/queries/node_events.h"
#include "shared/json/json_util.h"

namespace kiln::server {

using namespace detail;
using nlohmann::json;
using Mode = Storage::Mode;

void Conductor::pickUpHandedOffNodes() {
  std::vector<Record> candidates;
  {
    auto tx = deps_.storage.begin(Mode::Read);
    if (!tx) return;
    ListQuery q;
    q.limit = 0;
    ListFilter working{ListFilter::Op::In, kNodeProvisionState, {}, {}};
    for (auto s : state::kWorkingStates) working.values.emplace_back(s);
    q.filters.push_back(std::move(working));
    q.filters.push_back({ListFilter::Op::IsNull, kNodeReservation, {}, {}});
    auto nodes = (*tx)->nodes().list(q);
    if (!nodes) return;
    candidates = std::move(*nodes);
  }
  for (const auto& n : candidates) {
    if (!registry_.owns(n)) continue;
    auto lock = lockNode(n.uuid(), "handed-off flow", [](const Record& node) -> Result<void> {
      if (!state::isWorkingState(node.str(kNodeProvisionState))) {
        return conflict("the flow moved on meanwhile");
      }
      return {};
    });
    if (!lock) continue;  // another conductor or the flow itself got there first
    log_.info("running a handed-off flow", {{"node", n.uuid()}});
    startFlow(std::move(*lock), true);
  }
}

void Conductor::pickUpHandedOffPower() {
  struct Pending {
    std::string uuid;
    std::string target;
    int timeout = 0;
    std::string user;
  };
  std::vector<std::string> noted;
  forEachNode(deps_.storage,
              {{ListFilter::Op::Equals, kNodeReservation, Value::text(host()), {}},
               {ListFilter::Op::IsNotNull, kNodeTargetPowerState, {}, {}}},
              [&](const Record& n) {
                // This server's own power actions in progress carry no note.
                if (objectField(n, kNodeDriverInternalInfo).contains(flow::kHandedOffPower)) {
                  noted.push_back(n.uuid());
                }
                return true;
              });
  for (const auto& uuid : noted) {
    // Claimed in one transaction: the note goes, the reservation (already this server's) stays
    // and the worker adopts it, so the action runs once however often this pass sees it.
    auto claimed = [&]() -> Result<Pending> {
      auto tx = KILN_TRY(deps_.storage.begin(Mode::Write));
      TaskContext task = KILN_TRY(tasks_.load(*tx, uuid));
      const json note = task.internalInfo.value(flow::kHandedOffPower, json());
      if (task.node.str(kNodeReservation) != host() || !note.is_object()) {
        return conflict("the power action was claimed meanwhile");
      }
      Pending p{uuid, note.value("target", std::string()), note.value("timeout", 0),
                note.value("user", std::string())};
      task.internalInfo.erase(flow::kHandedOffPower);
      KILN_TRY_VOID(tasks_.save(*tx, task));
      KILN_TRY_VOID(tx->commit());
      return p;
    }();
    if (!claimed) continue;
    if (claimed->timeout <= 0) claimed->timeout = deps_.config.powerStateChangeTimeout;
    log_.info("running a handed-off power action", {{"node", uuid}, {"target", claimed->target}});
    submit(adoptLock(uuid, "handed-off power action " + claimed->target),
           [this, p = *claimed](NodeLock& lock) { powerAction(lock, p.target, p.timeout, p.user); });
  }
}

void Conductor::runPeriodicTasks() {
  if (auto r = registry_.refresh(); !r) {
    log_.warning("reading the conductors failed", {{"error", r.error().message}});
  }
  takeOverNodes();
  pickUpHandedOffPower();
  pickUpHandedOffNodes();
  checkWaitingNodes();
  expireFastTrack();
  const int interval = deps_.config.syncPowerStateInterval;
  if (interval > 0) {
    const auto now = deps_.clock.monotonic();
    if (!powerSyncDone_ || now - lastPowerSync_ >= std::chrono::seconds(interval)) {
      powerSyncDone_ = true;
      lastPowerSync_ = now;
      syncPowerStates();
    }
  }
  pruneNodeEventsWhenDue();
}

void Conductor::pruneNodeEventsWhenDue() {
  // [events] max_per_node and max_age; once a minute (the journal only grows by a few events a
  // second per node, and any kiln-server of several may prune: the deletes are idempotent).
  const auto now = deps_.clock.monotonic();
  if (eventsPruneDone_ && now - lastEventsPrune_ < std::chrono::seconds(60)) return;
  eventsPruneDone_ = true;
  lastEventsPrune_ = now;
  if (deps_.config.eventsMaxPerNode <= 0 && deps_.config.eventsMaxAge <= 0) return;
  auto pruned = [&]() -> Result<int64_t> {
    auto tx = KILN_TRY(deps_.storage.begin(Mode::Write));
    const int64_t n = KILN_TRY(pruneNodeEvents(*tx, deps_.clock, deps_.config.eventsMaxPerNode,
                                               deps_.config.eventsMaxAge));
    KILN_TRY_VOID(tx->commit());
    return n;
  }();
  if (!pruned) {
    log_.warning("pruning the node event journal failed", {{"error", pruned.error().message}});
  } else if (*pruned > 0) {
    log_.debug("pruned the node event journal", {{"deleted", std::to_string(*pruned)}});
  }
}

void Conductor::checkWaitingNodes() {
  std::vector<Record> waiting;
  {
    auto tx = deps_.storage.begin(Mode::Read);
    if (!tx) return;
    ListQuery q;
    q.limit = 0;
    q.filters.push_back({ListFilter::Op::In, kNodeProvisionState, {},
                         {std::string(state::kCleanWait), std::string(state::kDeployWait),
                          std::string(state::kInspectWait), std::string(state::kServiceWait)}});
    auto nodes = (*tx)->nodes().list(q);
    if (!nodes) return;
    waiting = std::move(*nodes);
  }
  const auto now = deps_.clock.now();
  const auto nowSeconds = std::chrono::system_clock::to_time_t(now);
  for (const auto& node : waiting) {
    if (!node[kNodeReservation].isNull() || !registry_.owns(node)) continue;
    const json info = objectField(node, kNodeDriverInternalInfo);
    if (agent::waitingForLogs(info)) {
      // Parked for the agent's logs (ramdisk_logs.h): bounded by its own deadline, not by the
      // callback timeout.
      if (agent::logsDeadlinePassed(info, nowSeconds)) (void)stopWaitingForLogs(node.uuid());
      continue;
    }
    if (info.contains(flow::kWaitUntil) && info[flow::kWaitUntil].is_number_integer()) {
      if (info[flow::kWaitUntil].get<int64_t>() <= nowSeconds) (void)resume(node.uuid(), true);
      continue;
    }
    const bool clean = node.str(kNodeProvisionState) == state::kCleanWait ||
                       node.str(kNodeProvisionState) == state::kServiceWait;
    const bool inspect = node.str(kNodeProvisionState) == state::kInspectWait;
    const int timeout = inspect ? deps_.config.inspectWaitTimeout
                        : clean ? deps_.config.cleanCallbackTimeout
                                : deps_.config.deployCallbackTimeout;
    if (timeout <= 0 || node[kNodeProvisionUpdatedAt].isNull()) continue;
    const auto since = parseIsoTime(node.str(kNodeProvisionUpdatedAt));
    if (!since || nowSeconds - *since < timeout) continue;
    // Timed out: fail the node under its lock (if it is still free and still waiting there),
    // naming the step it waited in.
    const std::string waitState = node.str(kNodeProvisionState);
    auto lock = lockNode(node.uuid(), "callback timeout", [&](const Record& row) -> Result<void> {
      if (row.str(kNodeProvisionState) != waitState) return conflict("no longer " + waitState);
      return {};
    });
    if (!lock) continue;
    // failFlow's BMC requests (a failed deployment's power-off) go with its save.
    events::BmcRequestJournal bmc(deps_.storage, {deps_.clock, host()}, node.uuid());
    auto task = tasks_.loadFresh(node.uuid());
    if (!task) continue;
    auto driver = driverFor(task->node);
    if (!driver) continue;
    task->driver = &*driver;
    task->heldBy = host();
    task->onReleased = [&lock] { lock->releasedInSave(); };
    if (inspect) {
      (void)failFlow(*task,
                     "Timeout reached while inspecting node " + task->uuid() +
                         ": its agent did not report the hardware inventory within " +
                         std::to_string(timeout) + " seconds.",
                     {}, FailureCause::TimedOut);
      continue;
    }
    const bool service = waitState == state::kServiceWait;
    const json current = objectField(task->node, service ? kNodeServiceStep
                                                 : clean ? kNodeCleanStep
                                                         : kNodeDeployStep);
    const std::string step = current.empty() ? "(none yet)" : stepName(current);
    if (service) {
      (void)failFlow(*task,
                     "Timeout reached while servicing the node " + task->uuid() +
                         ". Failed on step " + step + ".",
                     {}, FailureCause::TimedOut);
      continue;
    }
    (void)failFlow(*task,
                   clean ? "Timeout reached while cleaning the node. Please check if the "
                           "ramdisk responsible for the cleaning is running on the node. "
                           "Failed on step " + step + "."
                         : "Timeout reached while waiting for callback for node " +
                               task->uuid() + " in deploy step " + step + ".",
                   {}, FailureCause::TimedOut);
  }
}

void Conductor::expireFastTrack() {
  const auto now = deps_.clock.monotonic();
  if (fastTrackSweepDone_ && now - lastFastTrackSweep_ < std::chrono::seconds(10)) return;
  fastTrackSweepDone_ = true;
  lastFastTrackSweep_ = now;
  const auto wallNow = deps_.clock.now();
  // Whether fast track left something of its agent on the node that is no longer true.
  auto stale = [&](const TaskContext& task) {
    const json& info = task.internalInfo;
    const bool kept = info.contains(agent::kToken) || info.value("boot_target", "") == "agent";
    if (!kept) return false;
    return !fastTrackIdle(task) || task.node.optStr(kNodePowerState) == state::kPowerOff ||
           !agent::agentAlive(info, deps_.config.fastTrackTimeout, wallNow);
  };
  std::vector<std::string> expired;
  forEachNode(deps_.storage,
              {{ListFilter::Op::In,
                kNodeProvisionState,
                {},
                {std::string(state::kManageable), std::string(state::kAvailable)}},
               {ListFilter::Op::IsNull, kNodeReservation, {}, {}}},
              [&](const Record& n) {
                if (!registry_.owns(n)) return true;
                TaskContext task;
                task.node = n;
                task.internalInfo = objectField(n, kNodeDriverInternalInfo);
                task.driverInfo = objectField(n, kNodeDriverInfo);
                if (stale(task)) expired.push_back(n.uuid());
                return true;
              });
  for (const auto& uuid : expired) {
    auto ended = [&]() -> Result<void> {
      auto tx = KILN_TRY(deps_.storage.begin(Mode::Write));
      TaskContext task = KILN_TRY(tasks_.load(*tx, uuid, /*withRelations=*/false));
      if (!task.node[kNodeReservation].isNull() ||
          !agent::fastTrackIdleState(task.node.str(kNodeProvisionState)) || !stale(task)) {
        return {};  // changed meanwhile: the next pass looks again
      }
      const Record storedRow = task.node;
      agent::endFastTrack(task.internalInfo);
      task.log.info("fast track ended: the agent is no longer usable",
                    {{"last_heartbeat", objectField(storedRow, kNodeDriverInternalInfo)
                                            .value(agent::kLastHeartbeat, std::string())}});
      KILN_TRY_VOID(tasks_.saveOver(*tx, task, storedRow));
      return tx->commit();
    }();
    if (!ended) {
      log_.warning("ending fast track failed", {{"node", uuid}, {"error", ended.error().message}});
    }
  }
}

void Conductor::syncPowerStates() {
  const std::vector<ListFilter> filters = {
      {ListFilter::Op::Equals, kNodeMaintenance, Value::boolean(false), {}},
      {ListFilter::Op::IsNull, kNodeReservation, {}, {}}};
  const auto started = std::chrono::steady_clock::now();
  int64_t visited = 0;
  sensorNodesRead_.clear();
  forEachNode(deps_.storage, filters, [&](const Record& n) {
    ++visited;
    return syncPowerState(n);
  });
  // Sensor samples of the nodes this pass did not read go: deleted nodes, nodes that lost
  // their redfish driver, went to another conductor or into maintenance, failed reads.
  processSensorMetrics().retainOnly(host(), sensorNodesRead_);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - started).count();
  log_.info("power state sync pass finished",
             {{"nodes", std::to_string(visited)}, {"milliseconds", std::to_string(ms)}});
}

void Conductor::readSensors(TaskContext& task, ManagementInterface& management) {
  // Sensors are extra: a BMC without Thermal or Power, or one that answers garbage, gives no
  // samples and never fails the power sync.
  auto data = management.getSensorData(task);
  if (!data) {
    task.log.debug("cannot read the node's sensors", {{"error", data.error().message}});
    return;
  }
  if (!*data) return;
  const SensorNode node{task.node.uuid(), task.node.optStr(kNodeName).value_or(""),
                        task.node.optStr(kNodeInstanceUuid).value_or("")};
  processSensorMetrics().publish(host(), node, **data);
  sensorNodesRead_.insert(node.uuid);
}

bool Conductor::syncPowerState(const Record& n) {
  if (!deps_.drivers.find(n.str(kNodeDriver)) || !registry_.owns(n)) return true;
  // Ironic's SYNC_EXCLUDED_STATES: nodes not yet verified, failed adoptions, and nodes
  // waiting for their agent (which may be powering them on and off).
  const std::string s = n.str(kNodeProvisionState);
  if (s == state::kEnroll || s == state::kAdoptFailed || s == state::kDeployWait ||
      s == state::kCleanWait || !n[kNodeTargetPowerState].isNull()) {
    return true;
  }
  TaskContext task;
  {
    auto tx = deps_.storage.begin(Mode::Read);
    if (!tx) return false;
    auto loaded = tasks_.load(**tx, n.uuid());
    if (!loaded) return true;
    task = std::move(*loaded);
  }
  // From here to the outcome's transaction no transaction is open: a slow BMC holds up this
  // node's sync, not the API or the flows.
  // Its BMC requests are journalled only with a save of the node (a failure, a change, a
  // restore: TaskStore::save takes them); a sync that finds the node as recorded, or gives
  // up, drops them with the scope (docs/observability.md "Events").
  BmcRequestScope bmc(n.uuid(), deps_.clock);
  auto driver = driverFor(task.node);
  if (!driver || driver->power->validate(task)) return true;  // not set up for power yet
  task.driver = &*driver;
  auto read = driver->power->getPowerState(task);
  if (read && !*read) return true;  // not known (the fake before its power was set): nothing to sync
  const Result<std::string> observed =
      read ? Result<std::string>(**read) : Result<std::string>(std::unexpected(read.error()));
  // As Ironic's sync: once the power state is read, the boot mode and secure boot are cached.
  const FieldMask bootFields = observed ? cacheBootMode(task) : FieldMask();
  // 1.109: the health the management interface reports, read with the power state.
  std::optional<std::optional<std::string>> health;
  if (observed && deps_.config.enableHealthMonitoring && driver->management) {
    if (auto h = driver->management->getHealth(task)) {
      health = *h;
    } else {
      task.log.warning("cannot read the node's health", {{"error", h.error().message}});
    }
  }
  if (observed && deps_.config.sendSensorData && driver->management &&
      (deps_.config.sensorDataForUndeployedNodes || s == state::kActive)) {
    readSensors(task, *driver->management);
  }
  const std::optional<std::string> recorded = task.node.optStr(kNodePowerState);
  // force_power_state_during_sync puts the recorded state back, under the node's lock: taken
  // only while the node is as it was read (free, out of maintenance, no power action running).
  // 1.95: a node with disable_power_off is not forced back (it may be off by itself).
  NodeLock lock;
  std::optional<Result<void>> restored;
  if (observed && recorded && *recorded != *observed && deps_.config.forcePowerStateDuringSync &&
      !task.node.flag(kNodeDisablePowerOff)) {
    auto acquired = lockNode(n.uuid(), "power state sync", [&](const Record& row) -> Result<void> {
      if (row.flag(kNodeMaintenance) || !row[kNodeTargetPowerState].isNull() ||
          row.optStr(kNodePowerState) != recorded ||
          row.str(kNodeProvisionState) != task.node.str(kNodeProvisionState)) {
        return conflict("Node " + n.uuid() + " changed while its power state was read.");
      }
      return {};
    });
    if (!acquired) return true;  // locked or changed meanwhile: the next pass looks again
    lock = std::move(*acquired);
    task.log.warning("power state differs from the recorded one; restoring it",
                     {{"recorded", *recorded}, {"observed", *observed}});
    restored = driver->power->setPowerState(
        task, *recorded, std::chrono::seconds(deps_.config.powerStateChangeTimeout));
    if (!*restored) {
      task.log.warning("restoring the power state failed", {{"error", restored->error().message}});
    }
  }
  // The outcome, in one short transaction that re-checks the node first: free (or reserved by
  // this sync's lock), out of maintenance, its recorded power state unchanged.
  auto tx = deps_.storage.begin(Mode::Write);
  if (!tx) return false;
  auto current = tasks_.load(**tx, n.uuid());
  if (!current || current->node.flag(kNodeMaintenance)) return true;
  const bool reserved = !current->node[kNodeReservation].isNull();
  if (reserved && !(lock.held() && current->node.str(kNodeReservation) == host())) return true;
  if (current->node.optStr(kNodePowerState) != recorded) return true;
  const int failures = current->internalInfo.value(flow::kPowerSyncFailures, 0);
  FieldMask extra;
  std::optional<HistoryEvent> journal;
  if (!observed) {
    current->internalInfo[flow::kPowerSyncFailures] = failures + 1;
    if (failures + 1 >= deps_.config.powerStateSyncMaxRetries) {
      current->node.setBool(kNodeMaintenance, true);
      current->node.setText(kNodeMaintenanceReason,
                            "During sync_power_state, max retries exceeded for node " + n.uuid() +
                                ". Switching node to maintenance mode. Error: " + observed.error().message);
      current->node.setText(kNodeFault, "power failure");
      current->internalInfo.erase(flow::kPowerSyncFailures);
      extra.set(kNodeMaintenance).set(kNodeMaintenanceReason);
      current->log.error("power state sync failed; node put in maintenance",
                         {{"error", observed.error().message}});
      journal = HistoryEvent{current->node.str(kNodeMaintenanceReason),
                             std::string(history_event::kMonitoring),
                             "ERROR",
                             {}};
    }
  } else {
    current->internalInfo.erase(flow::kPowerSyncFailures);
    for (size_t f : {kNodeBootMode, kNodeSecureBoot}) {
      if (bootFields.test(f)) current->node[f] = task.node[f];
    }
    extra |= bootFields;
    if (health && current->node.optStr(kNodeHealth) != *health) {
      const std::string before = current->node.optStr(kNodeHealth).value_or("None");
      if (*health) {
        current->node.setText(kNodeHealth, **health);
      } else {
        current->node.setNull(kNodeHealth);
      }
      extra.set(kNodeHealth);
      const std::string after = health->value_or("None");
      const bool bad = after == "Warning" || after == "Critical";
      if (bad) current->log.warning("node health changed", {{"from", before}, {"to", after}});
      journal = HistoryEvent{"Node health changed from " + before + " to " + after,
                             std::string(history_event::kMonitoring), bad ? "WARNING" : "INFO",
                             {}, std::nullopt};
    }
    if (!recorded) {
      current->node.setText(kNodePowerState, *observed);
    } else if (*recorded != *observed) {
      if (restored) {
        // Restored: the recorded state stands; otherwise the BMC's is recorded.
        if (!*restored) current->node.setText(kNodePowerState, *observed);
      } else {
        current->log.warning("power state changed outside Kiln",
                             {{"recorded", *recorded}, {"observed", *observed}});
        current->node.setText(kNodePowerState, *observed);
      }
    } else if (bootFields.none() && !extra.test(kNodeHealth)) {
      return true;
    }
  }
  // The restore's lock is given up in the same save that records its outcome.
  if (lock.held()) current->node.setNull(kNodeReservation);
  if (!tasks_.save(**tx, *current, extra)) return true;
  if (journal && !tasks_.recordHistory(**tx, current->node.id(), *journal)) return true;
  if ((*tx)->commit() && lock.held()) lock.releasedInSave();
  return true;
}

void Conductor::recoverInterruptedNodes() {
  // What this server left behind when it stopped: its own reservations (whatever the ring says
  // now: nobody else takes over a live conductor's nodes) and, on its own nodes, power actions
  // no one is carrying out. Flows handed off in a working state are picked up afterwards.
  std::vector<std::string> uuids;
  const auto collect = [&](const Record& n) {
    uuids.push_back(n.uuid());
    return true;
  };
  forEachNode(deps_.storage, {{ListFilter::Op::Equals, kNodeReservation, Value::text(host()), {}}},
              collect);
  forEachNode(deps_.storage,
              {{ListFilter::Op::IsNull, kNodeReservation, {}, {}},
               {ListFilter::Op::IsNotNull, kNodeTargetPowerState, {}, {}}},
              [&](const Record& n) { return registry_.owns(n) ? collect(n) : true; });
  for (const auto& uuid : uuids) recoverNode(uuid, host(), "kiln-server stopped");
}

void Conductor::takeOverNodes() {
  const auto dead = registry_.deadConductors();
  if (dead.empty()) return;
  std::vector<Record> reserved;
  {
    auto tx = deps_.storage.begin(Mode::Read);
    if (!tx) return;
    ListQuery q;
    q.limit = 0;
    q.filters.push_back({ListFilter::Op::In, kNodeReservation, {}, dead});
    auto nodes = (*tx)->nodes().list(q);
    if (!nodes) return;
    reserved = std::move(*nodes);
  }
  for (const auto& n : reserved) {
    if (!registry_.owns(n)) continue;
    const std::string from = n.str(kNodeReservation);
    log_.warning("taking over a node from a dead conductor", {{"node", n.uuid()}, {"conductor", from}});
    recoverNode(n.uuid(), from, "conductor " + from + " stopped heartbeating");
  }
}

void Conductor::recoverNode(const std::string& uuid, const std::string& reservedBy,
                            const std::string& who) {
  auto tx = deps_.storage.begin(Mode::Write);
  if (!tx) return;
  auto task = tasks_.load(**tx, uuid);
  if (!task) return;
  Record& node = task->node;
  const Record stored = node;  // saved over without a second read (same transaction)
  // Re-checked under the row's lock: the reservation may have moved on since it was listed.
  const bool reserved = !node[kNodeReservation].isNull();
  if (reserved && node.str(kNodeReservation) != reservedBy) return;
  if (!reserved && node[kNodeTargetPowerState].isNull()) return;
  if (reserved && task->internalInfo.contains(flow::kHandedOffPower)) {
    // A power action handed to `reservedBy` that never started: the reservation was only the
    // hand-off's, so nothing was interrupted. This conductor runs it (pickUpHandedOffPower).
    if (reservedBy == host()) return;
    node.setText(kNodeReservation, host());
    if (tasks_.saveOver(**tx, *task, stored)) (void)(*tx)->commit();
    log_.info("took over a handed-off power action", {{"node", uuid}, {"from", reservedBy}});
    return;
  }
  const std::string s = node.str(kNodeProvisionState);
  std::optional<std::string> message;
  if (reserved && state::isWorkingState(s)) {
    const FailurePlan plan = planFailure(s, FailureCause::Interrupted);
    message = interruptedMessage(s, who, failedStepName(plan, node));
    tasks_.transition(*task, plan.event);
    applyFailure(plan, node, &task->internalInfo, *message);
    log_.warning("failed an interrupted flow", {{"node", uuid}, {"state", s}, {"by", who}});
  } else if (!node[kNodeTargetPowerState].isNull()) {
    message = who + " during a power action (target " + node.str(kNodeTargetPowerState) +
              "); retry it.";
    applyFailure(planFailure(s, FailureCause::Interrupted, true), node, &task->internalInfo,
                 *message);
  }
  node.setNull(kNodeReservation);
  if (!tasks_.saveOver(**tx, *task, stored)) return;
  const FailurePlan journal = planFailure(s, FailureCause::Interrupted);
  if (message && !tasks_.recordHistory(**tx, node.id(),
                                       {*message, std::string(journal.historyType), "ERROR", {}})) {
    return;
  }
  (void)(*tx)->commit();
}

void Conductor::periodicLoop() {
  std::unique_lock<std::mutex> lock(periodicMutex_);
  while (!stopping_) {
    periodicWake_.wait_for(lock, std::chrono::seconds(deps_.config.periodicInterval),
                           [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    try {
      runPeriodicTasks();
    } catch (const std::exception& e) {  // the periodic thread's boundary, like the pool's
      log_.error("periodic tasks threw; the next pass runs as usual", {{"error", e.what()}});
    } catch (...) {
      log_.error("periodic tasks threw something that is not a std::exception");
    }
    lock.lock();
  }
}

}  // namespace kiln::server
