#include "server/conductor/conductor.h"

#include <algorithm>

#include "server/conductor/conductor_detail.h"
#include "server/conductor/firmware_cache.h"
#include "server/conductor/provision_state_machine.h"
#include "server/drivers/agent/agent_session.h"
#include "server/drivers/node_validation.h"
#include "server/model/bios_setting.h"
#include "server/model/node.h"
#include "server/model/node_inventory.h"
#include "server/model/provision_state.h"
#include "server/model/resources.h"
#include "server/model/versions.h"
#include "shared/json/json_util.h"
#include "shared/raid/raid_config.h"

namespace kiln::server {
namespace detail {

bool isWorkingState(std::string_view s) { return state::isWorkingState(s); }

bool isWaitState(std::string_view s) { return state::isWaitState(s); }

const FlowKeys& keysFor(StepKind kind) {
  static const FlowKeys clean{"clean_steps", "clean_step_index", "clean_step_completed", kNodeCleanStep};
  static const FlowKeys deploy{"deploy_steps", "deploy_step_index", "deploy_step_completed", kNodeDeployStep};
  static const FlowKeys service{"service_steps", "service_step_index", "service_step_completed",
                                kNodeServiceStep};
  return kind == StepKind::Clean ? clean : kind == StepKind::Deploy ? deploy : service;
}

void clearFlow(nlohmann::json& info, StepKind kind) {
  const auto& k = keysFor(kind);
  info.erase(k.steps);
  info.erase(k.index);
  info.erase(k.completed);
  info.erase("wait_until");
  if (kind == StepKind::Clean) {
    info.erase("clean_steps_requested");
    info.erase("abort_after");
  } else if (kind == StepKind::Deploy) {
    info.erase("user_deploy_steps");
  } else {
    info.erase("service_steps_requested");
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

namespace {

using namespace detail;

using nlohmann::json;
using Mode = Storage::Mode;

/// driver_internal_info key carrying the user who asked for a flow this server hands to the
/// node's conductor (startFlow, mine = false), so that the owner's history names them; the
/// owner's flow reads and drops it (advanceOnce).
constexpr const char* kHandedOffUser = "handed_off_user";

void noteHandOff(json& info, bool mine, const std::string& user) {
  if (!mine && !user.empty()) {
    info[kHandedOffUser] = user;
  } else {
    info.erase(kHandedOffUser);
  }
}

/// Conflict: the node this conductor worked on under `heldBy`'s reservation now shows another
/// (or none): a takeover happened meanwhile, and this conductor's results are dropped.
Error takenOverError(const std::string& uuid, const Record& stored, const std::string& heldBy) {
  const std::string now = stored[kNodeReservation].isNull() ? std::string("no reservation")
                                                            : "reservation " + stored.str(kNodeReservation);
  return Error{ErrorCode::Conflict, "Node " + uuid + " was taken over while conductor " + heldBy +
                                        " worked on it (it now has " + now +
                                        "); that work's results are dropped."};
}

bool isTakenOver(const Error& error) {
  return error.code == ErrorCode::Conflict &&
         error.message.find(" was taken over while conductor ") != std::string::npos;
}

/// The conductor-owned node fields saveTask() writes back.
FieldMask ownedFields() {
  FieldMask m;
  for (size_t f : {kNodeProvisionState, kNodeTargetProvisionState, kNodeProvisionUpdatedAt,
                   kNodeLastError, kNodeReservation, kNodeCleanStep, kNodeDeployStep,
                   kNodePowerState, kNodeTargetPowerState, kNodeDriverInternalInfo,
                   kNodeRaidConfig, kNodeFault, kNodeInspectionStartedAt,
                   kNodeInspectionFinishedAt, kNodeBootMode, kNodeServiceStep}) {
    m.set(f);
  }
  return m;
}

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

/// The event type Ironic journals a failure under, by the state the node failed in.
std::string_view historyEventType(std::string_view s) {
  if (s == state::kVerifying) return history_event::kVerify;
  if (s == state::kCleaning || s == state::kCleanWait) return history_event::kCleaning;
  if (s == state::kDeploying || s == state::kDeployWait) return history_event::kDeploying;
  if (s == state::kDeleting) return history_event::kUnprovision;
  if (s == state::kInspecting || s == state::kInspectWait) return history_event::kIntrospection;
  if (s == state::kAdopting) return history_event::kAdoption;
  if (s == state::kServicing || s == state::kServiceWait || s == state::kServiceHold) {
    return history_event::kServicing;
  }
  if (s == state::kRescuing || s == state::kRescueWait || s == state::kUnrescuing) {
    return history_event::kRescue;
  }
  return history_event::kProvisioning;
}


}  // namespace

namespace {

std::vector<std::string> hardwareTypeNames(const DriverRegistry& drivers) {
  std::vector<std::string> out;
  for (const auto& hw : drivers.hardwareTypes()) out.push_back(hw.name);
  return out;
}

}  // namespace

Conductor::Conductor(Deps deps)
    : deps_(deps),
      registry_({deps.storage, deps.config, deps.clock, hardwareTypeNames(deps.drivers)}) {
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

// ---- loading and saving ----------------------------------------------------------------------

Result<TaskContext> Conductor::loadTask(Transaction& tx, const std::string& uuid,
                                        bool withRelations) {
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
  task.config = &deps_.config;
  task.clock = &deps_.clock;
  task.log = Logger("conductor").with("node", uuid);
  return task;
}

Result<void> Conductor::saveTask(Transaction& tx, TaskContext& task, const FieldMask& extra) {
  // Re-read the row and copy only the fields the conductor owns: the API may have changed
  // others (maintenance, traits, descriptions) while the step ran.
  auto current = KILN_TRY(tx.nodes().findBy(kNodeUuid, Value::text(task.uuid())));
  if (!current) return notFound("Node " + task.uuid() + " was deleted while being worked on.");
  return saveTaskOver(tx, task, std::move(*current), extra);
}

Result<void> Conductor::saveTaskOver(Transaction& tx, TaskContext& task, Record stored,
                                     const FieldMask& extra) {
  if (!task.heldBy.empty() && stored.str(kNodeReservation) != task.heldBy) {
    return std::unexpected(takenOverError(task.uuid(), stored, task.heldBy));
  }
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
  stored.setText(kNodeUpdatedAt, formatIsoTime(deps_.clock.now()));
  changed.set(kNodeUpdatedAt);
  KILN_TRY_VOID(tx.nodes().updateFields(stored, changed));
  task.node = std::move(stored);
  // A save that gave the reservation up ends the guard above.
  if (!task.heldBy.empty() && task.node.str(kNodeReservation) != task.heldBy) task.heldBy.clear();
  return {};
}

Result<void> Conductor::saveInNewTransaction(TaskContext& task, const FieldMask& extra,
                                             const HistoryEvent* event) {
  auto tx = KILN_TRY(deps_.storage.begin(Mode::Write));
  KILN_TRY_VOID(saveTask(*tx, task, extra));
  if (event) KILN_TRY_VOID(recordHistory(*tx, task.node.id(), *event));
  return tx->commit();
}

void Conductor::saveAndRelease(TaskContext& task, NodeLock& lock, std::string_view what,
                               const FieldMask& extra, const HistoryEvent* event) {
  task.node.setNull(kNodeReservation);
  if (auto saved = saveInNewTransaction(task, extra, event); !saved) {
    task.log.error(what, {{"error", saved.error().message}});
    return;
  }
  lock.releasedInSave();
}

NodeLock Conductor::adoptLock(const std::string& uuid, std::string purpose) {
  return NodeLock::adopt(deps_.storage, deps_.clock, uuid, host(), std::move(purpose));
}

Result<NodeLock> Conductor::lockNode(const std::string& uuid, std::string purpose,
                                     const NodeLock::Precondition& precondition) {
  return NodeLock::acquire(deps_.storage, deps_.clock, uuid, host(), std::move(purpose),
                           precondition);
}

Result<void> Conductor::recordHistory(Transaction& tx, int64_t nodeId, const HistoryEvent& event) {
  return recordNodeHistory(tx, deps_.config, deps_.clock, nodeId, host(), event);
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

void Conductor::transition(TaskContext& task, std::string_view event) {
  const std::string from = task.node.str(kNodeProvisionState);
  const auto to = nextProvisionState(from, event);
  if (!to) {
    task.log.error("invalid transition", {{"from", from}, {"event", std::string(event)}});
    return;
  }
  task.node.setText(kNodeProvisionState, std::string(*to));
  task.node.setText(kNodeProvisionUpdatedAt, formatIsoTime(deps_.clock.now()));
  task.log.info("provision state changed", {{"from", from}, {"to", std::string(*to)},
                                            {"event", std::string(event)}});
}

// ---- requests from the API ---------------------------------------------------------------------

Result<void> Conductor::provision(const std::string& uuid, const ProvisionRequest& request) {
  const std::string event(verbToEvent(request.verb));
  bool queue = false;
  bool mine = true;
  {
    auto tx = KILN_TRY(deps_.storage.begin(Mode::Write));
    TaskContext task = KILN_TRY(loadTask(*tx, uuid));
    Record& node = task.node;
    KILN_TRY_VOID(NodeLock::checkFree(node));
    mine = registry_.owns(node);
    if (node.flag(kNodeProtected) && (event == "deleted" || event == "rebuild")) {
      return std::unexpected(nodeProtectedError(uuid));
    }
    const std::string from = node.str(kNodeProvisionState);
    const auto invalidState = [&] {
      return invalid("The requested action \"" + request.verb + "\" can not be performed on node \"" +
                     uuid + "\" while it is in state \"" + from + "\".");
    };

    if (event == "abort") {
      if (from == state::kCleanWait) {
        const json current = objectField(node, kNodeCleanStep);
        const bool abortable = current.empty() || current.value("abortable", false);
        if (!abortable) {
          // Ironic: the abort happens once the running step finishes.
          task.internalInfo["abort_after"] = true;
          KILN_TRY_VOID(saveTask(*tx, task));
          return tx->commit();
        }
        transition(task, "abort");
        node.setText(kNodeLastError, "By request, the clean operation was aborted for node " + uuid +
                                         (current.empty() ? "" : " on step " + stepName(current)) + ".");
        node.setText(kNodeCleanStep, "{}");
        node.setNull(kNodeTargetProvisionState);
        KILN_TRY_VOID(NodeLock::reserve(node, host()));
        KILN_TRY_VOID(saveTask(*tx, task));
        KILN_TRY_VOID(tx->commit());
        tx.reset();
        // Tear down the cleaning environment in the background, then release the node.
        submit(adoptLock(uuid, "abort cleaning"), [this, uuid](NodeLock& lock) {
          auto t = [&]() -> Result<TaskContext> {
            auto tx2 = KILN_TRY(deps_.storage.begin(Mode::Read));
            return loadTask(*tx2, uuid);
          }();
          if (!t) return failUnfinished(uuid, "Internal error: " + t.error().message, &lock);
          auto driver = driverFor(t->node);
          if (driver) {
            t->driver = &*driver;
            if (auto r = driver->deploy->tearDownCleaning(*t); !r) {
              t->log.warning("tear down after abort failed", {{"error", r.error().message}});
            }
          }
          clearFlow(t->internalInfo, StepKind::Clean);
          saveAndRelease(*t, lock, "cannot record the aborted cleaning");
        });
        return {};
      }
      if (from == state::kInspectWait) {
        transition(task, "abort");
        node.setText(kNodeLastError, "Inspection was aborted by request.");
        node.setNull(kNodeTargetProvisionState);
        KILN_TRY_VOID(saveTask(*tx, task));
        KILN_TRY_VOID(
            recordHistory(*tx, node.id(),
                          {node.str(kNodeLastError), std::string(history_event::kIntrospection),
                           "ERROR", request.user}));
        return tx->commit();
      }
      // Holds (1.85), a deployment waiting for the agent (1.110) and servicing (1.87) fail in
      // a worker, which tears down what the flow set up.
      if (state::isHoldState(from) || from == state::kDeployWait || from == state::kServiceWait) {
        if (from == state::kDeployWait && request.version < ver::k110DeploywaitAbort) {
          return fail(ErrorCode::NotAcceptable,
                      "Request not acceptable. The provision verb \"abort\" in state \"" + from +
                          "\" requires API version 1." +
                          std::to_string(ver::k110DeploywaitAbort) + " or later.");
        }
        const std::string what = from == state::kCleanHold                           ? "clean"
                                 : from == state::kServiceWait || from == state::kServiceHold ? "service"
                                                                                    : "deploy";
        KILN_TRY_VOID(NodeLock::reserve(node, host()));
        KILN_TRY_VOID(saveTask(*tx, task));
        KILN_TRY_VOID(tx->commit());
        tx.reset();
        submit(adoptLock(uuid, "abort"), [this, uuid, what, user = request.user](NodeLock& lock) {
          failParked(lock, "By request, the " + what + " operation was aborted for node " + uuid + ".",
                     user);
        });
        return {};
      }
      if (from == state::kServiceFailed && task.internalInfo.value("service_ramdisk", false)) {
        // The agent ramdisk is still up: a worker leaves it and boots the instance first
        // (Ironic's tear_down_service), then the node goes back to active.
        KILN_TRY_VOID(NodeLock::reserve(node, host()));
        KILN_TRY_VOID(saveTask(*tx, task));
        KILN_TRY_VOID(tx->commit());
        tx.reset();
        submit(adoptLock(uuid, "abort servicing"),
               [this](NodeLock& lock) { abortFailedService(lock); });
        return {};
      }
      if (from == state::kServiceFailed) {
        // Ironic takes a node whose servicing failed back to active.
        transition(task, "abort");
        node.setNull(kNodeTargetProvisionState);
        node.setText(kNodeServiceStep, "{}");
        clearFlow(task.internalInfo, StepKind::Service);
        KILN_TRY_VOID(saveTask(*tx, task));
        return tx->commit();
      }
      return invalidState();
    }

    if (event == "unhold") {
      // 1.85: the held flow goes back to its wait state and carries on with its next step.
      if (!state::isHoldState(from)) return invalidState();
      transition(task, "unhold");
      KILN_TRY_VOID(markResumed(task, true));
      noteHandOff(task.internalInfo, mine, request.user);
      node.setNull(kNodeLastError);
      KILN_TRY_VOID(saveTask(*tx, task));
      KILN_TRY_VOID(tx->commit());
      tx.reset();
      startFlow(adoptLock(uuid, "unhold"), mine, request.user);
      return {};
    }

    const auto to = nextProvisionState(from, event);
    if (!to) return invalidState();
    if (node.flag(kNodeMaintenance) &&
        (event == "deploy" || event == "rebuild" || event == "clean" || event == "service")) {
      return invalid("The " + request.verb + " operation can't be performed on node " + uuid +
                     " because it's in maintenance mode.");
    }
    auto driver = driverFor(node);
    if (!driver && isWorkingState(*to)) return invalid(driver.error().message);
    if (driver) task.driver = &*driver;

    if (event == "deploy" || event == "rebuild") {
      // Synchronous validation, as Ironic's do_node_deploy: power, deploy and instance traits.
      KILN_TRY_VOID(checkInstanceTraits(node, task.traits));
      for (auto type : {InterfaceType::Power, InterfaceType::Deploy}) {
        if (auto reason = driver->get(type)->validate(task)) {
          return invalid("Failed to validate " + std::string(interfaceInfo(type).name) +
                         " for node " + uuid + ": " + *reason);
        }
      }
    }
    if (event == "clean" || event == "service") {
      if (auto reason = driver->power->validate(task)) {
        return invalid("Failed to validate power for node " + uuid + ": " + *reason);
      }
    }
    if (event == "rescue" || event == "unrescue") {
      // Ironic's do_node_rescue / do_node_unrescue checks, synchronously.
      const bool rescue = event == "rescue";
      if (node.flag(kNodeMaintenance)) {
        return invalid(std::string("The ") + (rescue ? "rescuing" : "unrescuing") +
                       " operation can't be performed on node " + uuid +
                       " because it's in maintenance mode.");
      }
      auto failure = [&](const std::string& why) {
        return invalid(std::string("Failed to ") + (rescue ? "rescue" : "unrescue") +
                       " instance " + node.str(kNodeInstanceUuid) + " for node " + uuid +
                       ": Validation failed: " + why);
      };
      if (auto reason = driver->power->validate(task)) return failure(*reason);
      if (rescue) {
        HardwareInterface* impl = driver->get(InterfaceType::Rescue);
        if (!impl || impl->isNoop() || !dynamic_cast<RescueInterface*>(impl)) {
          return failure("Driver " + node.str(kNodeDriver) +
                         " does not support rescue (disabled or not implemented).");
        }
        if (auto reason = impl->validate(task)) return failure(*reason);
        task.instanceInfo["rescue_password"] = *request.rescuePassword;
      }
    }

    transition(task, event);
    node.setNull(kNodeLastError);
    if (isWorkingState(*to)) {
      const auto target = verbTarget(request.verb);
      if (target) node.setText(kNodeTargetProvisionState, std::string(*target));
      KILN_TRY_VOID(NodeLock::reserve(node, host()));
      noteHandOff(task.internalInfo, mine, request.user);
      queue = true;
    } else {
      node.setNull(kNodeTargetProvisionState);
    }
    json& info = task.internalInfo;
    if (event == "clean" || event == "provide") {
      clearFlow(info, StepKind::Clean);
      node.setText(kNodeCleanStep, "{}");
      if (event == "clean") info["clean_steps_requested"] = *request.cleanSteps;
    }
    if (event == "service") {
      clearFlow(info, StepKind::Service);
      node.setText(kNodeServiceStep, "{}");
      info["service_steps_requested"] = *request.serviceSteps;
    }
    if (event == "deploy" || event == "rebuild") {
      clearFlow(info, StepKind::Deploy);
      node.setText(kNodeDeployStep, "{}");
      if (request.deploySteps) info["user_deploy_steps"] = *request.deploySteps;
      if (request.configdrive) task.instanceInfo["configdrive"] = *request.configdrive;
    }
    if (event == "inspect") node.setText(kNodeInspectionStartedAt, formatIsoTime(deps_.clock.now()));
    FieldMask extra;
    extra.set(kNodeInstanceInfo);
    KILN_TRY_VOID(saveTask(*tx, task, extra));
    KILN_TRY_VOID(tx->commit());
  }
  if (queue) startFlow(adoptLock(uuid, "provision action " + request.verb), mine, request.user);
  return {};
}

Result<void> Conductor::changePower(const std::string& uuid, const std::string& target,
                                    std::optional<int> timeoutSeconds, const std::string& user) {
  bool mine = true;
  {
    auto tx = KILN_TRY(deps_.storage.begin(Mode::Write));
    TaskContext task = KILN_TRY(loadTask(*tx, uuid));
    Record& node = task.node;
    KILN_TRY_VOID(NodeLock::checkFree(node));
    const std::string provState = node.str(kNodeProvisionState);
    if (provState == state::kCleaning || provState == state::kCleanWait) {
      return invalid("Setting the power state of node " + uuid +
                     " is not allowed while it is in provision state \"" + provState + "\".");
    }
    auto driver = KILN_TRY(driverFor(node));
    const auto supported = driver.power->supportedPowerStates();
    if (std::find(supported.begin(), supported.end(), target) == supported.end()) {
      std::string list;
      for (const auto& s : supported) list += (list.empty() ? "" : ", ") + s;
      return invalid("The requested action \"" + target + "\" is not supported by the power "
                     "interface of node " + uuid + " (supported: " + list + ").");
    }
    task.driver = &driver;
    if (auto reason = driver.power->validate(task)) {
      return invalid("Failed to validate power for node " + uuid + ": " + *reason);
    }
    const int timeout = timeoutSeconds.value_or(deps_.config.powerStateChangeTimeout);
    // The node's conductor does the BMC I/O (its conductor group is the one that reaches the
    // BMC): another server reserves the node in the owner's name and leaves it a note.
    const std::string owner = registry_.ownerOf(node);
    mine = owner == host();
    node.setText(kNodeTargetPowerState, target);
    KILN_TRY_VOID(NodeLock::reserve(node, owner));
    node.setNull(kNodeLastError);
    if (mine) {
      task.internalInfo.erase(kHandedOffPower);
    } else {
      task.internalInfo[kHandedOffPower] = {{"target", target}, {"timeout", timeout}, {"user", user}};
    }
    KILN_TRY_VOID(saveTask(*tx, task));
    KILN_TRY_VOID(tx->commit());
    if (!mine) {
      log_.info("power action handed to the node's conductor",
                {{"node", uuid}, {"target", target}, {"conductor", owner}});
      return {};
    }
  }
  const int timeout = timeoutSeconds.value_or(deps_.config.powerStateChangeTimeout);
  submit(adoptLock(uuid, "power action " + target), [this, target, timeout, user](NodeLock& lock) {
    powerAction(lock, target, timeout, user);
  });
  return {};
}

void Conductor::powerAction(NodeLock& lock, const std::string& target, int timeoutSeconds,
                            const std::string& user) {
  const std::string& uuid = lock.uuid();
  TaskContext task;
  {
    auto loaded = [&]() -> Result<TaskContext> {
      auto tx = KILN_TRY(deps_.storage.begin(Mode::Read));
      return loadTask(*tx, uuid);
    }();
    if (!loaded) return failUnfinished(uuid, "Internal error: " + loaded.error().message, &lock);
    task = std::move(*loaded);
  }
  auto driver = driverFor(task.node);
  Result<void> done = driver ? Result<void>() : std::unexpected(driver.error());
  if (driver) {
    task.driver = &*driver;
    const auto timeout = std::chrono::seconds(timeoutSeconds);
    if (task.node.flag(kNodeDisablePowerOff) &&
        (target == state::kPowerOff || target == "soft power off")) {
      // 1.95: such a node is never powered off (Ironic's node_power_action refuses too).
      done = fail(ErrorCode::Conflict,
                  "Failed to set node power state to " + target +
                      ": the node has disable_power_off set; reboot it instead");
    } else if (target == "rebooting" || target == "soft rebooting") {
      done = driver->power->reboot(task, target == "soft rebooting", timeout);
    } else {
      done = driver->power->setPowerState(task, target, timeout);
    }
    if (done) {
      if (auto state = driver->power->getPowerState(task); state && *state) {
        task.node.setText(kNodePowerState, **state);
      }
    }
  }
  std::optional<HistoryEvent> failure;
  if (!done) {
    task.node.setText(kNodeLastError, "Failed to change power state to '" + target + "': " +
                                          done.error().message);
    // Ironic journals a failed power action with no event type ("UNKNOWN").
    failure = HistoryEvent{task.node.str(kNodeLastError), std::string(history_event::kUnknown),
                           "ERROR", user};
    task.log.error("power action failed", {{"target", target}, {"error", done.error().message}});
  } else {
    task.log.info("power state changed", {{"power_state", task.node.str(kNodePowerState)}});
  }
  task.node.setNull(kNodeTargetPowerState);
  saveAndRelease(task, lock, "cannot record power state", {}, failure ? &*failure : nullptr);
}

Result<ManagementInterface::BootDevice> Conductor::getBootDevice(const std::string& uuid) {
  auto tx = KILN_TRY(deps_.storage.begin(Mode::Read));
  TaskContext task = KILN_TRY(loadTask(*tx, uuid));
  tx.reset();
  auto driver = KILN_TRY(driverFor(task.node));
  task.driver = &driver;
  if (auto reason = driver.management->validate(task)) {
    return invalid("Failed to validate management for node " + uuid + ": " + *reason);
  }
  return driver.management->getBootDevice(task);
}

Result<void> Conductor::setBootDevice(const std::string& uuid, const std::string& device,
                                      bool persistent) {
  return withManagementLock(uuid, [&](TaskContext& task) -> Result<void> {
    const auto supported = task.driver->management->supportedBootDevices(task);
    if (std::find(supported.begin(), supported.end(), device) == supported.end()) {
      return invalid("Invalid boot device " + device + " specified.");
    }
    return task.driver->management->setBootDevice(task, device, persistent);
  });
}

Result<std::vector<std::string>> Conductor::supportedBootDevices(const std::string& uuid) {
  auto tx = KILN_TRY(deps_.storage.begin(Mode::Read));
  TaskContext task = KILN_TRY(loadTask(*tx, uuid));
  tx.reset();  // a Redfish implementation asks the BMC
  auto driver = KILN_TRY(driverFor(task.node));
  task.driver = &driver;
  return driver.management->supportedBootDevices(task);
}

Result<void> Conductor::resume(const std::string& uuid, bool stepFinished) {
  bool mine = true;
  {
    auto tx = KILN_TRY(deps_.storage.begin(Mode::Write));
    TaskContext task = KILN_TRY(loadTask(*tx, uuid));
    mine = registry_.owns(task.node);
    const std::string s = task.node.str(kNodeProvisionState);
    if (s != state::kCleanWait && s != state::kDeployWait && s != state::kServiceWait) {
      return conflict("Node " + uuid + " is not waiting (state \"" + s + "\").");
    }
    KILN_TRY_VOID(NodeLock::checkFree(task.node));
    KILN_TRY_VOID(markResumed(task, stepFinished));
    KILN_TRY_VOID(saveTask(*tx, task));
    KILN_TRY_VOID(tx->commit());
  }
  startFlow(adoptLock(uuid, "resume"), mine);
  return {};
}

Result<void> Conductor::markResumed(TaskContext& task, bool stepFinished) {
  const std::string s = task.node.str(kNodeProvisionState);
  if (s == state::kCleanWait || s == state::kDeployWait || s == state::kServiceWait) {
    const StepKind kind = s == state::kCleanWait    ? StepKind::Clean
                          : s == state::kDeployWait ? StepKind::Deploy
                                                    : StepKind::Service;
    if (stepFinished) task.internalInfo[keysFor(kind).completed] = true;
  }
  task.internalInfo.erase("wait_until");
  transition(task, "resume");
  return NodeLock::reserve(task.node, host());
}

Result<CleaningStepsView> Conductor::cleaningSteps(const std::string& uuid, int minPriority) {
  auto tx = KILN_TRY(deps_.storage.begin(Mode::Read));
  TaskContext task = KILN_TRY(loadTask(*tx, uuid));
  auto driver = KILN_TRY(driverFor(task.node));
  const json* agentSteps = task.internalInfo.contains(agent::kCachedCleanSteps)
                               ? &task.internalInfo[agent::kCachedCleanSteps]
                               : nullptr;
  CleaningStepsView view;
  for (auto& s : availableSteps(driver, StepKind::Clean, overrides_, agentSteps, &task.log)) {
    if (s.requiresRamdisk && !agentSteps) {
      view.complete = false;  // the agent has not reported its steps yet
      continue;
    }
    if (s.priority >= minPriority) view.steps.push_back(std::move(s));
  }
  orderSteps(view.steps);
  return view;
}

Result<void> Conductor::validateTemplates(Transaction& tx, const Record& node,
                                          const std::vector<std::string>& traits) {
  if (traits.empty()) return {};
  ListQuery q;
  q.limit = 0;
  q.filters.push_back({ListFilter::Op::In, kDtName, {}, traits});
  auto templates = KILN_TRY(tx.deployTemplates().list(q));
  if (templates.empty()) return {};
  auto driver = KILN_TRY(driverFor(node));
  const auto available = availableSteps(driver, StepKind::Deploy, overrides_);
  std::vector<std::string> errors;
  for (const auto& t : templates) {
    auto steps = templateSteps(t);
    if (!steps) {
      errors.push_back(steps.error().message);
      continue;
    }
    if (auto plan = deployPlan(available, *steps, json()); !plan) errors.push_back(plan.error().message);
  }
  if (errors.empty()) return {};
  std::string msg;
  for (const auto& e : errors) msg += (msg.empty() ? "" : "; ") + e;
  return invalid(msg);
}

Result<std::vector<InterfaceValidation>> Conductor::validateNode(const std::string& uuid) {
  auto tx = KILN_TRY(deps_.storage.begin(Mode::Read));
  TaskContext task = KILN_TRY(loadTask(*tx, uuid));
  const Record& node = task.node;
  const std::string& driverName = node.str(kNodeDriver);
  const EnabledHardwareType* hw = deps_.drivers.find(driverName);
  auto driver = hw ? deps_.interfaces.resolve(node) : Result<NodeDriver>(std::unexpected(Error{}));
  if (driver) task.driver = &*driver;
  std::vector<InterfaceValidation> out;
  for (const auto& info : kInterfaceTypes) {
    if (info.type == InterfaceType::Vendor) continue;
    InterfaceValidation v{info.type, true, std::nullopt};
    const std::string& impl = node.str(nodeInterfaceField(info.type));
    HardwareInterface* object = driver ? driver->get(info.type) : nullptr;
    if (!hw) {
      v.reason = DriverRegistry::unknownDriverMessage(driverName);
    } else if (impl.empty()) {
      v.reason = "No " + std::string(info.name) + " interface is set on the node.";
    } else if (auto enabled = deps_.drivers.checkInterface(*hw, info.type, impl); !enabled) {
      // The implementation was disabled (or the hardware type changed) after enrollment.
      v.reason = enabled.error().message;
    } else if (!object) {
      v.reason = "No implementation of the " + std::string(info.name) + " interface named " + impl + ".";
    } else if (object->isNoop()) {
      v.reason = "Driver " + driverName + " does not support " + std::string(info.name) +
                 " (disabled or not implemented).";
    } else if (auto reason = object->validate(task)) {
      v.reason = std::move(reason);
    } else if (info.type == InterfaceType::Deploy) {
      if (auto traits = checkInstanceTraits(node, task.traits); !traits) {
        v.reason = traits.error().message;
      } else if (auto templates = validateTemplates(*tx, node, task.traits); !templates) {
        v.reason = "Deploy templates enabled on the node (by its traits) are not supported: " +
                   templates.error().message;
      }
    } else if (info.type == InterfaceType::Raid) {
      const json target = objectField(node, kNodeTargetRaidConfig);
      if (!target.empty()) {
        if (auto parsed = parseRaidConfig(target); !parsed) v.reason = parsed.error().message;
      }
    }
    v.result = !v.reason.has_value();
    out.push_back(std::move(v));
  }
  return out;
}

// ---- flows ------------------------------------------------------------------------------------

void Conductor::advance(NodeLock& lock, const std::string& user) {
  const std::string& uuid = lock.uuid();
  std::string requester = user;
  for (int guard = 0; guard < 10000; ++guard) {
    auto next = advanceOnce(uuid, requester);
    if (!next && isTakenOver(next.error())) {
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
    if (*next == Next::Stop) {
      // The flow's last save gave the node up (or it was not ours any more): conductor.h.
      lock.releasedInSave();
      return;
    }
  }
}

Result<Conductor::Next> Conductor::advanceOnce(const std::string& uuid, std::string& user) {
  TaskContext task;
  {
    auto tx = KILN_TRY(deps_.storage.begin(Mode::Read));
    task = KILN_TRY(loadTask(*tx, uuid));
  }
  if (task.node.str(kNodeReservation) != host()) return Next::Stop;  // not ours (any more)
  task.heldBy = host();
  // A flow handed over by the server that took the request: its user, dropped at the next save.
  if (auto it = task.internalInfo.find(kHandedOffUser); it != task.internalInfo.end()) {
    if (user.empty() && it->is_string()) user = it->get<std::string>();
    task.internalInfo.erase(it);
  }
  task.user = user;
  KILN_TRY_VOID(checkStoredObjects(task.node));
  auto driver = KILN_TRY(driverFor(task.node));
  task.driver = &driver;
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
  task.node.setNull(kNodeReservation);
  KILN_TRY_VOID(saveInNewTransaction(task));
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
      [held, job = std::move(job)] {
        job(*held);
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
  pool_->submit(uuid, std::move(job), {});
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
    const std::string from = node.str(kNodeProvisionState);
    if (isWorkingState(from)) {
      transition(task, "fail");  // deploying -> deploy failed, cleaning -> clean failed, ...
      node.setNull(kNodeTargetProvisionState);
      if (from == state::kCleaning) node.setText(kNodeCleanStep, "{}");
    }
    node.setText(kNodeLastError, message);
    const bool powerAction = !node[kNodeTargetPowerState].isNull() && !isWorkingState(from);
    node.setNull(kNodeTargetPowerState);
    node.setNull(kNodeReservation);
    if (auto info = parseJson(node.str(kNodeDriverInternalInfo)); info && info->is_object()) {
      info->erase("wait_until");  // as failFlow: nothing waits for the agent any more
      info->erase(agent::kCommand);
      info->erase(agent::kWaiting);
      node.setText(kNodeDriverInternalInfo, dumpJson(*info));
    }
    node.setText(kNodeUpdatedAt, formatIsoTime(deps_.clock.now()));
    KILN_TRY_VOID(tx->nodes().update(node));
    const std::string_view type = powerAction ? history_event::kUnknown : historyEventType(from);
    KILN_TRY_VOID(recordHistory(*tx, node.id(), {message, std::string(type), "ERROR", {}}));
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
  transition(task, event);
  task.node.setNull(kNodeTargetProvisionState);
  task.node.setNull(kNodeReservation);
  KILN_TRY_VOID(saveInNewTransaction(task, extra));
  return Next::Stop;
}

Result<Conductor::Next> Conductor::parkFlow(TaskContext& task, std::string_view event,
                                            const FieldMask& extra) {
  transition(task, event);
  task.node.setNull(kNodeReservation);
  KILN_TRY_VOID(saveInNewTransaction(task, extra));
  return Next::Stop;
}

Result<Conductor::Next> Conductor::failFlow(TaskContext& task, const std::string& message,
                                            const FieldMask& extra, std::string_view eventType) {
  const std::string from = task.node.str(kNodeProvisionState);
  task.log.error("provisioning failed", {{"state", from}, {"error", message}});
  if (from == state::kServicing || from == state::kServiceWait || from == state::kServiceHold) {
    task.node.setText(kNodeServiceStep, "{}");
  }
  if (from == state::kCleaning || from == state::kCleanWait || from == state::kCleanHold) {
    if (auto r = task.driver->deploy->tearDownCleaning(task); !r) {
      task.log.warning("tear down after failed cleaning failed", {{"error", r.error().message}});
    }
    task.node.setText(kNodeCleanStep, "{}");
  }
  const bool deploying =
      from == state::kDeploying || from == state::kDeployWait || from == state::kDeployHold;
  if (deploying && deps_.config.powerOffAfterDeployFailure && task.driver && task.driver->power &&
      !task.node.flag(kNodeDisablePowerOff)) {
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
  // Hold states have no "fail" transition: an abort leaves them for the failure state.
  transition(task, nextProvisionState(from, "fail") ? "fail" : "abort");
  task.node.setText(kNodeLastError, message);
  task.node.setNull(kNodeTargetProvisionState);
  task.node.setNull(kNodeReservation);
  task.internalInfo.erase("wait_until");
  task.internalInfo.erase("hold");
  // Nothing is waiting for the agent any more: it stops being handed the failed command.
  task.internalInfo.erase(agent::kCommand);
  task.internalInfo.erase(agent::kWaiting);
  const HistoryEvent event{message,
                           std::string(eventType.empty() ? historyEventType(from) : eventType),
                           "ERROR", task.user, duration, from, failedTarget};
  KILN_TRY_VOID(saveInNewTransaction(task, extra, &event));
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
    const bool replan = info.value("clean_replan", false);
    info.erase("clean_replan");
    const bool manual = info.contains("clean_steps_requested");
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
      auto planned = manualCleanPlan(info["clean_steps_requested"], available);
      if (!planned) {
        return failFlow(task, "Failed to validate the clean steps of node " + task.uuid() + ": " +
                                  planned.error().message);
      }
      // disable_ramdisk (1.70): the API marks the requested steps; an in-band one is refused,
      // as Ironic's _validate_user_steps does.
      const json& requested = info["clean_steps_requested"];
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
    KILN_TRY_VOID(saveInNewTransaction(task));
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
  const bool manual = task.internalInfo.contains("clean_steps_requested");
  if (auto r = task.driver->deploy->tearDownCleaning(task); !r) {
    return failFlow(task, "Failed to tear down cleaning of node " + task.uuid() + ": " + r.error().message);
  }
  // Kiln keeps the last run's clean_steps for inspection; the index bookkeeping goes.
  json& info = task.internalInfo;
  info.erase("clean_step_index");
  info.erase("clean_step_completed");
  info.erase("clean_steps_requested");
  info.erase("abort_after");
  info.erase("wait_until");
  task.node.setText(kNodeCleanStep, "{}");
  return endFlow(task, manual ? "manage" : "done");
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
    const json user = info.contains("user_deploy_steps") ? info["user_deploy_steps"] : json();
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
    KILN_TRY_VOID(saveInNewTransaction(task));
    return Next::Continue;
  }
  return runNextStep(task, StepKind::Deploy);
}

Result<Conductor::Next> Conductor::runNextStep(TaskContext& task, StepKind kind) {
  const FlowKeys& keys = keysFor(kind);
  json& info = task.internalInfo;
  if (info.contains(agent::kResult)) return takeAgentResult(task, kind);
  const json& steps = info[keys.steps];
  int index = info.contains(keys.index) && info[keys.index].is_number_integer() ? info[keys.index].get<int>() : -1;
  if (index >= 0 && info.value(keys.completed, false)) {
    ++index;
    info.erase(keys.completed);
    if (kind == StepKind::Clean && info.value("abort_after", false)) {
      // An abort was requested while a non-abortable step ran.
      info.erase("abort_after");
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
    info.erase("user_deploy_steps");
    task.node.setText(kNodeDeployStep, "{}");
    return endFlow(task, "done");
  }
  auto step = KILN_TRY(PlannedStep::fromJson(steps[static_cast<size_t>(index)]));
  info[keys.index] = index;
  task.node.setText(keys.currentField, dumpJson(steps[static_cast<size_t>(index)]));
  KILN_TRY_VOID(saveInNewTransaction(task));
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
    const bool hold = task.internalInfo.value("hold", false);
    task.internalInfo.erase("hold");
    return parkFlow(task, hold ? "hold" : "wait");
  }
  // Ironic's bios steps end by caching the settings they changed (@cache_bios_settings).
  if (step.interface == "bios") cacheBiosSettings(task);
  // And Ironic's firmware updates by caching the components they flashed.
  if (step.interface == "firmware") cacheFirmwareComponents(task, deps_.storage, deps_.clock);
  task.internalInfo[keysFor(kind).completed] = true;
  KILN_TRY_VOID(saveInNewTransaction(task));
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
    task.internalInfo["hold"] = true;
    return StepResult::Wait;
  }
  if (step.interface == "deploy" && step.step == "wait") {
    const json& seconds = step.args.contains("seconds") ? step.args["seconds"] : json();
    if (!seconds.is_number_integer() || seconds.get<int64_t>() < 0) {
      return invalid("deploy.wait needs an integer seconds argument >= 0");
    }
    const auto until = std::chrono::system_clock::to_time_t(deps_.clock.now()) + seconds.get<int64_t>();
    task.internalInfo["wait_until"] = static_cast<int64_t>(until);
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
  task.internalInfo.erase("deploy_steps");
  task.node.setText(kNodeDeployStep, "{}");
  clearFlow(task.internalInfo, StepKind::Clean);
  task.node.setText(kNodeCleanStep, "{}");
  transition(task, "done");  // deleting -> cleaning (automated cleaning, if enabled)
  // The instance's allocation ends with it, as in Ironic, in the same transaction.
  task.node.setNull(kNodeAllocationUuid);
  FieldMask extra;
  extra.set(kNodeInstanceInfo).set(kNodeInstanceUuid).set(kNodeAllocationUuid);
  auto tx = KILN_TRY(deps_.storage.begin(Mode::Write));
  KILN_TRY(tx->allocations().removeWhere(kAllocNodeUuid, Value::text(task.uuid())));
  KILN_TRY_VOID(saveTask(*tx, task, extra));
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

// ---- periodic work and recovery -----------------------------------------------------------------

}  // namespace kiln::server
