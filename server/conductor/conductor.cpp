#include "server/conductor/conductor.h"

#include <algorithm>

#include "server/conductor/conductor_detail.h"
#include "server/conductor/firmware_cache.h"
#include "server/conductor/node_events_recorder.h"
#include "server/conductor/provision_state_machine.h"
#include "server/drivers/agent/agent_session.h"
#include "server/drivers/agent/ramdisk_logs.h"
#include "server/drivers/node_validation.h"
#include "server/drivers/ramdisk/ramdisk_deploy.h"
#include "server/model/bios_setting.h"
#include "server/model/node.h"
#include "server/model/node_inventory.h"
#include "server/model/provision_state.h"
#include "server/model/resources.h"
#include "server/model/versions.h"
#include "server/storage/queries/bios_settings.h"
#include "shared/json/json_util.h"
#include "shared/raid/raid_config.h"

namespace kiln::server {
namespace detail {

void clearFlow(nlohmann::json& info, StepKind kind) {
  const auto& k = flow::keysFor(kind);
  info.erase(k.steps);
  info.erase(k.index);
  info.erase(k.completed);
  info.erase(flow::kWaitUntil);
  if (kind == StepKind::Clean) {
    info.erase(flow::kCleanStepsRequested);
    info.erase(flow::kAbortAfter);
  } else if (kind == StepKind::Deploy) {
    info.erase(flow::kUserDeploySteps);
  } else {
    info.erase(flow::kServiceStepsRequested);
  }
}

std::string stepName(const nlohmann::json& step) {
  if (!step.is_object() || !step.contains("step")) return "";
  return step.value("interface", "") + "." + step.value("step", "");
}

void forEachNode(Storage& storage, const std::vector<ListFilter>& filters,
                 const std::function<bool(const Record&)>& fn) {
  ListQuery q;
  q.filters = filters;
  q.limit = 200;
  std::vector<Record> page;
  while (true) {
    {
      auto tx = storage.begin(Storage::Mode::Read);
      if (!tx || !(*tx)->nodes().listInto(q, page)) return;
    }
    for (const auto& node : page) {
      if (!fn(node)) return;
    }
    if (page.size() < static_cast<size_t>(q.limit)) return;
    q.marker = page.back();
  }
}

}  // namespace detail

namespace flow {

const FlowKeys& keysFor(StepKind kind) {
  static const FlowKeys clean{"clean_steps", "clean_step_index", "clean_step_completed",
                              kNodeCleanStep};
  static const FlowKeys deploy{"deploy_steps", "deploy_step_index", "deploy_step_completed",
                               kNodeDeployStep};
  static const FlowKeys service{"service_steps", "service_step_index", "service_step_completed",
                                kNodeServiceStep};
  return kind == StepKind::Clean ? clean : kind == StepKind::Deploy ? deploy : service;
}

}  // namespace flow

namespace {

using namespace detail;

using nlohmann::json;
using Mode = Storage::Mode;

/// loadTask reads the JSON columns leniently (a corrupt one reads as {}); a flow must not run on
/// such a row: InternalError naming the first corrupt column.
Result<void> checkStoredObjects(const Record& node) {
  for (auto [field, column] : {std::pair{kNodeDriverInfo, "driver_info"}, std::pair{kNodeInstanceInfo, "instance_info"},
                               std::pair{kNodeDriverInternalInfo, "driver_internal_info"}}) {
    if (node[field].isNull()) continue;
    auto parsed = parseJson(node.str(field), "the stored value");
    if (!parsed || !parsed->is_object()) {
      return internalError("The " + std::string(column) + " of node " + node.uuid() +
                           " stored in the database is not a JSON object" +
                           (parsed ? std::string() : " (" + parsed.error().message + ")"));
    }
  }
  return {};
}

/// Ironic's restore_interface: the deploy interface autodetect switched from
/// (server/drivers/ramdisk/ramdisk_deploy.h) goes back once cleaning is over. True when the
/// node's deploy_interface changed.
bool restoreDeployInterface(TaskContext& task) {
  auto it = task.internalInfo.find(ramdisk::kOriginalDeployInterface);
  if (it == task.internalInfo.end()) return false;
  const bool restore = it->is_string() && !it->get_ref<const std::string&>().empty();
  if (restore) task.node.setText(kNodeDeployInterface, it->get<std::string>());
  task.internalInfo.erase(it);
  return restore;
}

std::vector<std::string> hardwareTypeNames(const DriverRegistry& drivers) {
  std::vector<std::string> out;
  for (const auto& hw : drivers.hardwareTypes()) out.push_back(hw.name);
  return out;
}

}  // namespace

Conductor::Conductor(Deps deps)
    : deps_(deps),
      tasks_(deps.storage, deps.clock, deps.config, deps.config.host),
      registry_({deps.storage, deps.config, deps.clock, hardwareTypeNames(deps.drivers)}) {
  tasks_.setDhcp(deps.dhcp);
  overrides_.clean = deps_.config.cleanStepPriorityOverride;
  overrides_.deploy = deps_.config.deployStepPriorityOverride;
  if (deps_.config.eraseDevicesPriority) {
    overrides_.clean["deploy.erase_devices"] = *deps_.config.eraseDevicesPriority;
  }
  if (deps_.config.eraseDevicesMetadataPriority) {
    overrides_.clean["deploy.erase_devices_metadata"] = *deps_.config.eraseDevicesMetadataPriority;
  }
}

Conductor::~Conductor() { stop(); }

Result<void> Conductor::start(bool periodicThread) {
  KILN_TRY_VOID(registry_.registerSelf());
  registered_ = true;
  recoverInterruptedNodes();
  pool_ = std::make_unique<WorkerPool>(deps_.config.workersPoolSize);
  recoverAllocations();
  takeOverNodes();
  pickUpHandedOffPower();
  pickUpHandedOffNodes();
  if (periodicThread) registry_.startHeartbeats();
  if (periodicThread && deps_.config.periodicInterval > 0) {
    periodic_ = std::thread([this] { periodicLoop(); });
  }
  return {};
}

void Conductor::stop() {
  {
    std::lock_guard<std::mutex> lock(periodicMutex_);
    stopping_ = true;
  }
  periodicWake_.notify_all();
  if (periodic_.joinable()) periodic_.join();
  if (pool_) pool_->stop();
  registry_.stopHeartbeats();
  if (registered_) {
    registered_ = false;
    if (auto r = registry_.unregister(); !r) {
      log_.warning("marking the conductor offline failed", {{"error", r.error().message}});
    }
  }
}

void Conductor::waitIdle() {
  if (pool_) pool_->waitIdle();
}

Result<NodeDriver> Conductor::driverFor(const Record& node) const {
  if (!deps_.drivers.find(node.str(kNodeDriver))) {
    return invalid(DriverRegistry::unknownDriverMessage(node.str(kNodeDriver)));
  }
  return deps_.interfaces.resolve(node);
}

NodeLock Conductor::adoptLock(const std::string& uuid, std::string purpose) {
  return NodeLock::adopt(deps_.storage, deps_.clock, uuid, host(), std::move(purpose));
}

Result<NodeLock> Conductor::lockNode(const std::string& uuid, std::string purpose,
                                     const NodeLock::Precondition& precondition) {
  return NodeLock::acquire(deps_.storage, deps_.clock, uuid, host(), std::move(purpose),
                           precondition);
}

void Conductor::cacheBiosSettings(TaskContext& task) {
  auto* bios =
      task.driver ? dynamic_cast<BiosInterface*>(task.driver->get(InterfaceType::Bios)) : nullptr;
  if (!bios || bios->isNoop()) return;
  auto settings = bios->cacheBiosSettings(task);
  auto cached = [&]() -> Result<void> {
    if (!settings) return std::unexpected(settings.error());
    auto tx = KILN_TRY(deps_.storage.begin(Mode::Write));
    KILN_TRY_VOID(
        syncBiosSettings(*tx, task.node.id(), *settings, formatIsoTime(deps_.clock.now())));
    return tx->commit();
  }();
  if (!cached) {
    task.log.warning("caching of the BIOS settings failed", {{"error", cached.error().message}});
  }
}


// ---- flows ------------------------------------------------------------------------------------

void Conductor::advance(NodeLock& lock, const std::string& user) {
  const std::string& uuid = lock.uuid();
  std::string requester = user;
  for (int guard = 0; guard < 10000; ++guard) {
    auto next = advanceOnce(lock, requester);
    if (!next && next.error().is(Reason::TakenOver)) {
      // Not this conductor's node any more: its new owner has failed or resumed the flow.
      log_.warning("flow dropped", {{"node", uuid}, {"error", next.error().message}});
      lock.release();  // clears nothing: the reservation no longer names this conductor
      return;
    }
    if (!next) {
      // An unexpected failure (database, programming error): record it and release the node
      // rather than leaving it locked.
      log_.error("conductor error", {{"node", uuid}, {"error", next.error().message}});
      failUnfinished(uuid, "Internal error: " + next.error().message, &lock);
      return;
    }
    // Stop: the flow's last save gave the node up (and told the lock), or the node was not
    // this conductor's any more (release() then leaves it alone).
    if (*next == Next::Stop) return lock.release();
  }
}

Result<Conductor::Next> Conductor::advanceOnce(NodeLock& lock, std::string& user) {
  TaskContext task = KILN_TRY(tasks_.loadFresh(lock.uuid()));
  if (task.node.str(kNodeReservation) != host()) return Next::Stop;  // not ours (any more)
  task.heldBy = host();
  task.onReleased = [&lock] { lock.releasedInSave(); };
  // A flow handed over by the server that took the request: its user, dropped at the next save.
  if (auto it = task.internalInfo.find(flow::kHandedOffUser); it != task.internalInfo.end()) {
    if (user.empty() && it->is_string()) user = it->get<std::string>();
    task.internalInfo.erase(it);
  }
  task.user = user;
  KILN_TRY_VOID(checkStoredObjects(task.node));
  auto driver = KILN_TRY(driverFor(task.node));
  task.driver = &driver;
  // A failure kept aside while the agent's logs were collected (failFlow): reported now.
  if (auto it = task.internalInfo.find(agent::kFailAfterLogs); it != task.internalInfo.end()) {
    const json kept = *it;
    task.internalInfo.erase(it);
    return failFlow(task, kept.value("message", std::string()), {},
                    static_cast<FailureCause>(kept.value("cause", 0)));
  }
  const std::string s = task.node.str(kNodeProvisionState);
  if (s == state::kVerifying) return doVerify(task);
  if (s == state::kCleaning) return doCleaning(task);
  if (s == state::kDeploying) return doDeploying(task);
  if (s == state::kDeleting) return doDeleting(task);
  if (s == state::kInspecting) return doInspecting(task);
  if (s == state::kAdopting) return doAdopting(task);
  if (s == state::kRescuing) return doRescuing(task);
  if (s == state::kUnrescuing) return doUnrescuing(task);
  if (s == state::kServicing) return doServicing(task);
  // Nothing to do in this state: the node is given up in this save.
  KILN_TRY_VOID(tasks_.saveReleasing(task));
  return Next::Stop;
}

void Conductor::startFlow(NodeLock lock, bool mine, const std::string& user,
                          std::function<void()> done) {
  if (!mine) {
    // The owner's periodic pass finds the node in its working state, unreserved.
    log_.info("flow handed to the node's conductor", {{"node", lock.uuid()}});
    lock.release();
    if (done) done();
    return;
  }
  submit(std::move(lock), [this, user, done = std::move(done)](NodeLock& held) {
    advance(held, user);
    if (done) done();
  });
}

void Conductor::submit(NodeLock lock, std::function<void(NodeLock&)> job) {
  const std::string uuid = lock.uuid();
  // Shared by the job and its failure handler: the lock outlives an exception in the job, so
  // the node's action is failed while it is still held, and is released afterwards.
  auto held = std::make_shared<NodeLock>(std::move(lock));
  pool_->submit(
      uuid,
      [this, held, uuid, job = std::move(job)] {
        {
          // The job's BMC requests: journalled with its saves, the rest when it ends.
          events::BmcRequestJournal bmc(deps_.storage, {deps_.clock, host()}, uuid);
          job(*held);
        }
        held->release();
      },
      [this, held, uuid](const std::string& what) {
        failUnfinished(uuid, "Internal error: the conductor's worker failed unexpectedly: " + what,
                       held.get());
        held->release();
      });
}

void Conductor::submitUnlocked(const std::string& uuid, std::function<void()> job) {
  // Without the lock there is no action of this job's to fail: another worker may hold the
  // node. The pool has logged what was thrown.
  pool_->submit(uuid,
                [this, uuid, job = std::move(job)] {
                  events::BmcRequestJournal bmc(deps_.storage, {deps_.clock, host()}, uuid);
                  job();
                },
                {});
}

void Conductor::runLocked(NodeLock& lock, const LockedAction& action, const LockedBody& body) {
  const std::string& uuid = lock.uuid();
  auto loaded = tasks_.loadFresh(uuid);
  if (!loaded) return failUnfinished(uuid, "Internal error: " + loaded.error().message, &lock);
  TaskContext& task = *loaded;
  task.heldBy = host();
  task.user = action.user;
  task.onReleased = [&lock] { lock.releasedInSave(); };
  FieldMask extra;
  auto driver = driverFor(task.node);
  Result<void> result = driver ? Result<void>() : Result<void>(std::unexpected(driver.error()));
  if (driver) {
    task.driver = &*driver;
    result = body(task, extra);
  }
  task.driver = nullptr;
  std::optional<HistoryEvent> event;
  if (!result) {
    task.node.setText(kNodeLastError, action.failure + ": " + result.error().message);
    task.log.error("action failed", {{"action", action.failure}, {"error", result.error().message}});
    if (!action.historyType.empty()) {
      event = HistoryEvent{task.node.str(kNodeLastError), std::string(action.historyType), "ERROR",
                           action.user, std::nullopt};
    }
  }
  // A locked action leaves no power action pending, whichever it was.
  task.node.setNull(kNodeTargetPowerState);
  if (auto saved = tasks_.saveReleasing(task, extra, event ? &*event : nullptr); !saved) {
    task.log.error(action.what, {{"error", saved.error().message}});
  }
}

void Conductor::failUnfinished(const std::string& uuid, const std::string& message,
                               NodeLock* lock) {
  // Only the plain columns are touched (and driver_internal_info when it parses): this must work
  // on the row whose JSON made the flow fail.
  auto result = [&]() -> Result<void> {
    auto tx = KILN_TRY(deps_.storage.begin(Mode::Write));
    auto found = KILN_TRY(tx->nodes().findBy(kNodeUuid, Value::text(uuid)));
    if (!found) return {};
    TaskContext task;
    task.node = std::move(*found);
    task.log = Logger("conductor").with("node", uuid);
    Record& node = task.node;
    if (!node[kNodeReservation].isNull() && node.str(kNodeReservation) != host()) return {};
    const Record before = node;
    const std::string from = node.str(kNodeProvisionState);
    const bool powerAction = !node[kNodeTargetPowerState].isNull();
    const FailurePlan plan = planFailure(from, FailureCause::WorkerFailed, powerAction);
    if (!plan.event.empty()) tasks_.transition(task, plan.event);
    auto info = parseJson(node.str(kNodeDriverInternalInfo));
    const bool infoParses = info && info->is_object();
    applyFailure(plan, node, infoParses ? &*info : nullptr, message);
    // The node events of this failure (the step and flow ends need the parsed bookkeeping).
    if (infoParses) task.internalInfo = std::move(*info);
    KILN_TRY_VOID(events::recordSaveEvents(*tx, {deps_.clock, host()}, before, task));
    if (infoParses) node.setText(kNodeDriverInternalInfo, dumpJson(task.internalInfo));
    node.setText(kNodeUpdatedAt, formatIsoTime(deps_.clock.now()));
    KILN_TRY_VOID(tx->nodes().update(node));  // read with findBy in this transaction
    KILN_TRY_VOID(tasks_.recordHistory(
        *tx, node.id(), {message, std::string(plan.historyType), "ERROR", {}}));
    KILN_TRY_VOID(tx->commit());
    if (lock) lock->releasedInSave();
    return {};
  }();
  if (!result) {
    log_.error("cannot record a failed action", {{"node", uuid}, {"error", result.error().message}});
  }
}

Result<Conductor::Next> Conductor::endFlow(TaskContext& task, std::string_view event,
                                           const FieldMask& extra) {
  tasks_.transition(task, event);
  task.node.setNull(kNodeTargetProvisionState);
  KILN_TRY_VOID(tasks_.saveReleasing(task, extra));
  return Next::Stop;
}

Result<Conductor::Next> Conductor::parkFlow(TaskContext& task, std::string_view event,
                                            const FieldMask& extra) {
  tasks_.transition(task, event);
  KILN_TRY_VOID(tasks_.saveReleasing(task, extra));
  return Next::Stop;
}

Result<Conductor::Next> Conductor::failFlow(TaskContext& task, const std::string& message,
                                            const FieldMask& extra, FailureCause cause) {
  const std::string from = task.node.str(kNodeProvisionState);
  // A failure that is not an in-band step's own (those bring their logs with their result)
  // while the agent is up: its logs first, bounded in time (ramdisk_logs.h). The failure is
  // kept aside and reported as it is once they came or their deadline passed. Not for a
  // callback timeout (the agent has been silent for the whole timeout: heartbeats reset it)
  // nor for an operator's abort, which takes effect at once; as in Ironic, neither collects.
  if (cause == FailureCause::StepFailed) {
    const std::string_view flowName =
        from == state::kDeploying || from == state::kDeployWait     ? "deploy"
        : from == state::kCleaning || from == state::kCleanWait     ? "cleaning"
        : from == state::kServicing || from == state::kServiceWait  ? "service"
        : from == state::kInspecting || from == state::kInspectWait ? "inspection"
                                                                    : "";
    if (!flowName.empty() && agent::awaitLogs(task, flowName, /*failed=*/true)) {
      task.internalInfo[agent::kFailAfterLogs] =
          json{{"message", message}, {"cause", static_cast<int>(cause)}};
      task.internalInfo.erase(agent::kCommand);  // the flow is over: no command of its own
      task.internalInfo.erase(agent::kResult);
      task.log.info("the failure is reported once the agent's logs came", {{"state", from}});
      if (!state::isWaitState(from)) return parkFlow(task, "wait", extra);
      KILN_TRY_VOID(tasks_.saveReleasing(task, extra));
      return Next::Stop;
    }
  }
  task.log.error("provisioning failed", {{"state", from}, {"error", message}});
  const FailurePlan plan = planFailure(from, cause);
  if (plan.tearDownCleaning) {
    if (auto r = task.driver->deploy->tearDownCleaning(task); !r) {
      task.log.warning("tear down after failed cleaning failed", {{"error", r.error().message}});
    }
  }
  if (plan.powerOffAfterDeploy && deps_.config.powerOffAfterDeployFailure && task.driver &&
      task.driver->power && !task.node.flag(kNodeDisablePowerOff)) {
    // As Ironic's set_failed_state: a failed machine does not stay up in the ramdisk. A power
    // failure here is logged; last_error keeps the deployment's cause.
    const auto timeout = std::chrono::seconds(deps_.config.powerStateChangeTimeout);
    if (auto r = task.driver->power->setPowerState(task, state::kPowerOff, timeout); r) {
      task.node.setText(kNodePowerState, std::string(state::kPowerOff));
    } else {
      task.log.error("cannot power off the node after its deployment failed; put it in "
                     "maintenance or remove it until this is resolved",
                     {{"error", r.error().message}});
    }
  }
  // How long the flow had been in the state it fails from (node history, 1.115).
  std::optional<int64_t> duration;
  if (auto since = parseIsoTime(task.node.str(kNodeProvisionUpdatedAt))) {
    duration = std::max<int64_t>(0, std::chrono::system_clock::to_time_t(deps_.clock.now()) - *since);
  }
  // As Ironic, the history entry records the states the flow failed in.
  const std::optional<std::string> failedTarget = task.node.optStr(kNodeTargetProvisionState);
  if (!plan.event.empty()) tasks_.transition(task, plan.event);
  applyFailure(plan, task.node, &task.internalInfo, message);
  const HistoryEvent event{message, std::string(plan.historyType), "ERROR", task.user,
                           duration, from, failedTarget};
  FieldMask fields = extra;
  // As Ironic's cleaning_error_handler: a deploy interface autodetect chose goes back.
  if ((from == state::kCleaning || from == state::kCleanWait || from == state::kCleanHold) &&
      restoreDeployInterface(task)) {
    fields.set(kNodeDeployInterface);
  }
  KILN_TRY_VOID(tasks_.saveReleasing(task, fields, &event));
  return Next::Stop;
}

Result<Conductor::Next> Conductor::doVerify(TaskContext& task) {
  if (auto reason = task.driver->power->validate(task)) {
    return failFlow(task, "Failed to verify node " + task.uuid() + ": " + *reason);
  }
  auto power = task.driver->power->getPowerState(task);
  if (!power) {
    return failFlow(task, "Failed to verify node " + task.uuid() + ": cannot read its power state: " +
                              power.error().message);
  }
  if (*power) {
    task.node.setText(kNodePowerState, **power);
  } else {
    task.node.setNull(kNodePowerState);
  }
  const FieldMask bootFields = cacheBootMode(task);  // as Ironic's verify
  cacheBiosSettings(task);  // as Ironic's do_node_verify
  cacheFirmwareComponents(task, deps_.storage, deps_.clock);
  return endFlow(task, "done", bootFields);
}

Result<Conductor::Next> Conductor::doCleaning(TaskContext& task) {
  json& info = task.internalInfo;
  if (!info.contains("clean_steps")) {
    // A re-plan with the agent's own catalogue (after its first heartbeat) runs in the ramdisk
    // that is already up; a new plan boots it.
    const bool replan = info.value(flow::kCleanReplan, false);
    info.erase(flow::kCleanReplan);
    const bool manual = info.contains(flow::kCleanStepsRequested);
    if (!replan) {  // as Ironic's do_node_clean, before any step
      cacheBiosSettings(task);
      cacheFirmwareComponents(task, deps_.storage, deps_.clock);
    }
    const Value& nodeSetting = task.node[kNodeAutomatedClean];
    const bool enabled = nodeSetting.isNull() ? deps_.config.automatedClean : nodeSetting.b;
    if (!manual && !enabled) {
      task.log.info("automated cleaning disabled");
      return finishCleaning(task);
    }
    const json* agentSteps = info.contains(agent::kCachedCleanSteps) ? &info[agent::kCachedCleanSteps] : nullptr;
    const auto available = availableSteps(*task.driver, StepKind::Clean, overrides_, agentSteps, &task.log);
    std::vector<PlannedStep> plan;
    if (manual) {
      auto planned = manualCleanPlan(info[flow::kCleanStepsRequested], available);
      if (!planned) {
        return failFlow(task, "Failed to validate the clean steps of node " + task.uuid() + ": " +
                                  planned.error().message);
      }
      // disable_ramdisk (1.70): the API marks the requested steps; an in-band one is refused,
      // as Ironic's _validate_user_steps does.
      const json& requested = info[flow::kCleanStepsRequested];
      const bool disableRamdisk =
          requested.is_array() && std::any_of(requested.begin(), requested.end(), [](const json& r) {
            return r.is_object() && r.value("__out_of_band_only", false);
          });
      for (const auto& p : *planned) {
        if (disableRamdisk && p.requiresRamdisk) {
          return failFlow(task, "Failed to validate the clean steps of node " + task.uuid() +
                                    ": clean step " + p.key() + " requires booting a ramdisk");
        }
      }
      plan = std::move(*planned);
    } else {
      plan = automatedCleanPlan(available);
    }
    json steps = json::array();
    for (const auto& p : plan) steps.push_back(p.toJson());
    info["clean_steps"] = steps;
    info.erase("clean_step_index");
    info.erase("clean_step_completed");
    KILN_TRY_VOID(tasks_.saveNew(task));
    // In-band steps need the agent: the deploy interface boots it and the node waits for it.
    const bool inBand = std::any_of(plan.begin(), plan.end(), [](const PlannedStep& p) { return p.requiresRamdisk; });
    if (inBand && !replan) {
      auto prepared = task.driver->deploy->prepareCleaning(task);
      if (!prepared) {
        return failFlow(task, "Failed to prepare node " + task.uuid() + " for cleaning: " +
                                  prepared.error().message);
      }
      if (*prepared == StepResult::Wait) return parkFlow(task, "wait");
    }
    return Next::Continue;
  }
  return runNextStep(task, StepKind::Clean);
}

Result<Conductor::Next> Conductor::finishCleaning(TaskContext& task) {
  // deploy_logs_collect = always: the agent's logs before the ramdisk goes (as Ironic's
  // do_next_clean_step, label "cleaning"); the flow waits for them in clean wait.
  if (agent::awaitLogs(task, "cleaning", /*failed=*/false)) return parkFlow(task, "wait");
  const bool manual = task.internalInfo.contains(flow::kCleanStepsRequested);
  if (auto r = task.driver->deploy->tearDownCleaning(task); !r) {
    return failFlow(task, "Failed to tear down cleaning of node " + task.uuid() + ": " + r.error().message);
  }
  // Kiln keeps the last run's clean_steps for inspection; the index bookkeeping goes.
  json& info = task.internalInfo;
  info.erase("clean_step_index");
  info.erase("clean_step_completed");
  info.erase(flow::kCleanStepsRequested);
  info.erase(flow::kAbortAfter);
  info.erase(flow::kWaitUntil);
  task.node.setText(kNodeCleanStep, "{}");
  FieldMask extra;
  if (restoreDeployInterface(task)) extra.set(kNodeDeployInterface);
  return endFlow(task, manual ? "manage" : "done", extra);
}

Result<Conductor::Next> Conductor::doDeploying(TaskContext& task) {
  json& info = task.internalInfo;
  if (!info.contains("deploy_steps")) {
    // Deploy templates named by the instance traits extend the driver's steps (selected by
    // the step planner; the conductor only loads them).
    std::vector<TemplateStep> fromTemplates;
    if (const auto traits = instanceTraits(task.instanceInfo); !traits.empty()) {
      std::vector<Record> templates;
      {
        auto tx = KILN_TRY(deps_.storage.begin(Mode::Read));
        ListQuery q;
        q.limit = 0;
        q.filters.push_back({ListFilter::Op::In, kDtName, {}, traits});
        templates = KILN_TRY(tx->deployTemplates().list(q));
      }  // a corrupt stored template fails the flow once the read is closed
      auto selected = selectTemplateSteps(templates, traits);
      if (!selected) {
        return failFlow(task, "Failed to plan the deployment of node " + task.uuid() + ": " +
                                  selected.error().message);
      }
      fromTemplates = std::move(*selected);
    }
    const json user = info.contains(flow::kUserDeploySteps) ? info[flow::kUserDeploySteps] : json();
    const json* agentSteps = info.contains(agent::kCachedDeploySteps) ? &info[agent::kCachedDeploySteps] : nullptr;
    const auto available = availableSteps(*task.driver, StepKind::Deploy, overrides_, agentSteps, &task.log);
    auto plan = deployPlan(available, fromTemplates, user);
    if (!plan) {
      return failFlow(task, "Failed to plan the deployment of node " + task.uuid() + ": " +
                                plan.error().message);
    }
    json steps = json::array();
    for (const auto& p : *plan) steps.push_back(p.toJson());
    info["deploy_steps"] = steps;
    info.erase("deploy_step_index");
    info.erase("deploy_step_completed");
    KILN_TRY_VOID(tasks_.saveNew(task));
    return Next::Continue;
  }
  return runNextStep(task, StepKind::Deploy);
}

Result<Conductor::Next> Conductor::runNextStep(TaskContext& task, StepKind kind) {
  const flow::FlowKeys& keys = flow::keysFor(kind);
  json& info = task.internalInfo;
  if (info.contains(agent::kResult)) return takeAgentResult(task, kind);
  const json& steps = info[keys.steps];
  int index = info.contains(keys.index) && info[keys.index].is_number_integer() ? info[keys.index].get<int>() : -1;
  if (index >= 0 && info.value(keys.completed, false)) {
    ++index;
    info.erase(keys.completed);
    if (kind == StepKind::Clean && info.value(flow::kAbortAfter, false)) {
      // An abort was requested while a non-abortable step ran.
      info.erase(flow::kAbortAfter);
      task.node.setText(kNodeCleanStep, "{}");
      return failFlow(task, "By request, the clean operation was aborted for node " + task.uuid() +
                                " after the step that was running finished.");
    }
  }
  if (index < 0) index = 0;
  if (index >= static_cast<int>(steps.size())) {
    if (kind == StepKind::Clean) return finishCleaning(task);
    if (kind == StepKind::Service) return finishServicing(task);
    // Deployment finished. Kiln keeps deploy_steps (the merged, ordered plan) for inspection.
    info.erase(keys.index);
    info.erase(keys.completed);
    info.erase(flow::kUserDeploySteps);
    task.node.setText(kNodeDeployStep, "{}");
    return endFlow(task, "done");
  }
  auto step = KILN_TRY(PlannedStep::fromJson(steps[static_cast<size_t>(index)]));
  info[keys.index] = index;
  task.node.setText(keys.currentField, dumpJson(steps[static_cast<size_t>(index)]));
  KILN_TRY_VOID(tasks_.saveNew(task));
  task.log.info(kind == StepKind::Clean    ? "running clean step"
                : kind == StepKind::Deploy ? "running deploy step"
                                           : "running service step",
                {{"step", step.key()}, {"index", std::to_string(index)}});

  return stepOutcome(task, kind, step, executeStep(task, step, kind));
}

Result<Conductor::Next> Conductor::stepOutcome(TaskContext& task, StepKind kind,
                                               const PlannedStep& step,
                                               const Result<StepResult>& result) {
  if (!result) {
    const std::string what = kind == StepKind::Clean    ? "cleaning"
                             : kind == StepKind::Deploy ? "deployment"
                                                        : "service";
    // The failed step stays in deploy_step (deployment steps spec); clean_step is cleared.
    return failFlow(task, "Node " + task.uuid() + " failed " + what + " step " + step.key() + ": " +
                              result.error().message);
  }
  if (*result == StepResult::Wait) {
    // A hold step (1.85) parks the flow in its hold state until unhold or abort.
    const bool hold = task.internalInfo.value(flow::kHold, false);
    task.internalInfo.erase(flow::kHold);
    return parkFlow(task, hold ? "hold" : "wait");
  }
  // Ironic's bios steps end by caching the settings they changed (@cache_bios_settings).
  if (step.interface == "bios") cacheBiosSettings(task);
  // And Ironic's firmware updates by caching the components they flashed.
  if (step.interface == "firmware") cacheFirmwareComponents(task, deps_.storage, deps_.clock);
  task.internalInfo[flow::keysFor(kind).completed] = true;
  KILN_TRY_VOID(tasks_.saveNew(task));
  return Next::Continue;
}

Result<StepResult> Conductor::executeStep(TaskContext& task, const PlannedStep& step, StepKind kind) {
  const auto timeout = std::chrono::seconds(deps_.config.powerStateChangeTimeout);
  if (step.interface == "power" && step.step == "power_on") {
    KILN_TRY_VOID(task.driver->power->setPowerState(task, state::kPowerOn, timeout));
    task.node.setText(kNodePowerState, std::string(state::kPowerOn));
    return StepResult::Done;
  }
  if (step.interface == "power" && step.step == "power_off") {
    KILN_TRY_VOID(task.driver->power->setPowerState(task, state::kPowerOff, timeout));
    task.node.setText(kNodePowerState, std::string(state::kPowerOff));
    return StepResult::Done;
  }
  if (step.interface == "power" && step.step == "reboot") {
    KILN_TRY_VOID(task.driver->power->reboot(task, false, timeout));
    task.node.setText(kNodePowerState, std::string(state::kPowerOn));
    return StepResult::Done;
  }
  if (step.step == "hold") {
    task.internalInfo[flow::kHold] = true;
    return StepResult::Wait;
  }
  if (step.interface == "deploy" && step.step == "wait") {
    const json& seconds = step.args.contains("seconds") ? step.args["seconds"] : json();
    if (!seconds.is_number_integer() || seconds.get<int64_t>() < 0) {
      return invalid("deploy.wait needs an integer seconds argument >= 0");
    }
    const auto until = std::chrono::system_clock::to_time_t(deps_.clock.now()) + seconds.get<int64_t>();
    task.internalInfo[flow::kWaitUntil] = static_cast<int64_t>(until);
    return StepResult::Wait;
  }
  const StepDefinition* def = findStepDefinition(*task.driver, step.interface, step.step);
  if (def && def->handler && !def->requiresRamdisk) return def->handler(task, step.args);
  if (step.requiresRamdisk || (def && def->requiresRamdisk)) {
    if (!agent::agentConnected(task)) {
      return fail(ErrorCode::Conflict,
                  "step " + step.key() + " runs in the agent, which is not running on the node (in "
                  "a deployment the agent boots at deploy.deploy, priority 100: give in-band "
                  "deploy steps a priority between 41 and 99)");
    }
    agent::queueStep(task,
                     kind == StepKind::Clean    ? "clean"
                     : kind == StepKind::Deploy ? "deploy"
                                                : "service",
                     step.toJson());
    return StepResult::Wait;
  }
  return invalid("the node's interfaces do not offer step " + step.key());
}

Result<Conductor::Next> Conductor::doDeleting(TaskContext& task) {
  if (auto r = task.driver->deploy->tearDown(task); !r) {
    return failFlow(task, "Failed to tear down node " + task.uuid() + ": " + r.error().message);
  }
  // The instance is gone: forget it, and the previous deployment's bookkeeping.
  task.instanceInfo = json::object();
  task.node.setNull(kNodeInstanceUuid);
  clearFlow(task.internalInfo, StepKind::Deploy);
  task.node.setText(kNodeDeployStep, "{}");
  clearFlow(task.internalInfo, StepKind::Clean);
  task.node.setText(kNodeCleanStep, "{}");
  tasks_.transition(task, "done");  // deleting -> cleaning (automated cleaning, if enabled)
  // The instance's allocation ends with it, as in Ironic, in the same transaction.
  task.node.setNull(kNodeAllocationUuid);
  FieldMask extra;
  extra.set(kNodeInstanceInfo).set(kNodeInstanceUuid).set(kNodeAllocationUuid);
  auto tx = KILN_TRY(deps_.storage.begin(Mode::Write));
  KILN_TRY(tx->allocations().removeWhere(kAllocNodeUuid, Value::text(task.uuid())));
  KILN_TRY_VOID(tasks_.save(*tx, task, extra));
  KILN_TRY_VOID(tx->commit());
  return Next::Continue;
}

Result<Conductor::Next> Conductor::doInspecting(TaskContext& task) {
  auto result = task.driver->inspect->inspectHardware(task);
  if (!result) {
    return failFlow(task, "Failed to inspect node " + task.uuid() + ": " + result.error().message);
  }
  if (*result == StepResult::Wait) {
    FieldMask extra;
    extra.set(kNodeProperties);
    return parkFlow(task, "wait", extra);
  }
  // The inventory, Ironic's plugin data and the inspection rules (conductor_inspection.cpp).
  return finishInspection(task);
}

Result<Conductor::Next> Conductor::doAdopting(TaskContext& task) {
  for (auto type : {InterfaceType::Power, InterfaceType::Deploy, InterfaceType::Boot}) {
    if (auto reason = task.driver->get(type)->validate(task)) {
      return failFlow(task, "Failed to adopt node " + task.uuid() + ": " +
                                std::string(interfaceInfo(type).name) + ": " + *reason);
    }
  }
  if (auto r = task.driver->boot->prepareInstance(task); !r) {
    return failFlow(task, "Failed to adopt node " + task.uuid() + ": " + r.error().message);
  }
  return endFlow(task, "done");
}

}  // namespace kiln::server
