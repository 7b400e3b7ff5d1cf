// File: server/conductor/conductor_requests.cpp
//
// The conductor's requests from the API (conductor.h): each checks the node in a write
// transaction, commits the transition (reserving the node for the worker that then adopts the
// reservation) and queues the work. provision() dispatches by verb: abort and unhold have their
// own functions; the verbs that start a flow are checked (validateForVerb), moved and seeded
// (seedFlowInfo). The flows themselves live in conductor.cpp.
#include <algorithm>

#include "server/conductor/conductor.h"
#include "server/conductor/conductor_detail.h"
#include "server/conductor/flow_keys.h"
#include "server/conductor/node_events_recorder.h"
#include "server/conductor/provision_state_machine.h"
#include "server/drivers/agent/agent_session.h"
#include "server/drivers/node_validation.h"
#include "server/drivers/ramdisk/ramdisk_deploy.h"
#include "server/model/node.h"
#include "server/model/provision_state.h"
#include "server/model/versions.h"
#include "shared/json/json_util.h"
#include "shared/raid/raid_config.h"

namespace kiln::server {
namespace {

using namespace detail;
using nlohmann::json;
using Mode = Storage::Mode;

void noteHandOff(json& info, bool mine, const std::string& user) {
  if (!mine && !user.empty()) {
    info[flow::kHandedOffUser] = user;
  } else {
    info.erase(flow::kHandedOffUser);
  }
}

std::unexpected<Error> invalidState(const ProvisionRequest& request, const std::string& uuid,
                                    const std::string& from) {
  return invalid("The requested action \"" + request.verb + "\" can not be performed on node \"" +
                 uuid + "\" while it is in state \"" + from + "\".");
}

}  // namespace

Result<void> Conductor::provision(const std::string& uuid, const ProvisionRequest& request) {
  const std::string event(verbToEvent(request.verb));
  auto tx = KILN_TRY(deps_.storage.begin(Mode::Write));
  TaskContext task = KILN_TRY(tasks_.load(*tx, uuid));
  Record& node = task.node;
  KILN_TRY_VOID(NodeLock::checkFree(node));
  const bool mine = registry_.owns(node);
  if (node.flag(kNodeProtected) && (event == "deleted" || event == "rebuild")) {
    return std::unexpected(nodeProtectedError(uuid));
  }
  if (event == "abort") return abortFrom(std::move(tx), task, request);
  if (event == "unhold") return unhold(std::move(tx), task, request, mine);

  const std::string from = node.str(kNodeProvisionState);
  const auto to = nextProvisionState(from, event);
  if (!to) return invalidState(request, uuid, from);
  auto driver = driverFor(node);
  if (!driver && state::isWorkingState(*to)) return invalid(driver.error().message);
  if (driver) task.driver = &*driver;
  FieldMask extra;
  if (driver && (event == "deploy" || event == "rebuild") &&
      node.str(kNodeDeployInterface) == ramdisk::kAutodetectName) {
    // Ironic's AutodetectDeploy.switch_interface: the deployment runs with the interface that
    // suits its instance_info; the next cleaning switches back (restoreDeployInterface).
    const std::string chosen =
        ramdisk::detectDeployInterface(deps_.config.autodetectDeployInterfaces, task.instanceInfo);
    task.log.info("autodetect switching to deploy interface",
                  {{"node", uuid}, {"deploy_interface", chosen}});
    task.internalInfo[ramdisk::kOriginalDeployInterface] = ramdisk::kAutodetectName;
    node.setText(kNodeDeployInterface, chosen);
    driver = driverFor(node);
    if (!driver) return invalid(driver.error().message);
    task.driver = &*driver;
    extra.set(kNodeDeployInterface);
  }
  KILN_TRY_VOID(validateForVerb(task, event, request));

  tasks_.transition(task, event);
  node.setNull(kNodeLastError);
  const bool queue = state::isWorkingState(*to);
  if (queue) {
    const auto target = verbTarget(request.verb);
    if (target) node.setText(kNodeTargetProvisionState, std::string(*target));
    KILN_TRY_VOID(NodeLock::reserve(node, host()));
    noteHandOff(task.internalInfo, mine, request.user);
  } else {
    node.setNull(kNodeTargetProvisionState);
  }
  seedFlowInfo(task, event, request);
  extra.set(kNodeInstanceInfo);
  KILN_TRY_VOID(tasks_.save(*tx, task, extra));
  KILN_TRY_VOID(tx->commit());
  tx.reset();
  if (queue) startFlow(adoptLock(uuid, "provision action " + request.verb), mine, request.user);
  return {};
}

Result<void> Conductor::validateForVerb(TaskContext& task, std::string_view event,
                                        const ProvisionRequest& request) {
  const Record& node = task.node;
  const std::string& uuid = task.uuid();
  if (node.flag(kNodeMaintenance) &&
      (event == "deploy" || event == "rebuild" || event == "clean" || event == "service")) {
    return invalid("The " + request.verb + " operation can't be performed on node " + uuid +
                   " because it's in maintenance mode.");
  }
  const NodeDriver* driver = task.driver;
  if (event == "deploy" || event == "rebuild") {
    // As Ironic's do_node_deploy: power, deploy and instance traits.
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
    // As Ironic's do_node_rescue / do_node_unrescue.
    const bool rescue = event == "rescue";
    if (node.flag(kNodeMaintenance)) {
      return invalid(std::string("The ") + (rescue ? "rescuing" : "unrescuing") +
                     " operation can't be performed on node " + uuid +
                     " because it's in maintenance mode.");
    }
    auto failure = [&](const std::string& why) {
      return invalid(std::string("Failed to ") + (rescue ? "rescue" : "unrescue") + " instance " +
                     node.str(kNodeInstanceUuid) + " for node " + uuid +
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
  return {};
}

void Conductor::seedFlowInfo(TaskContext& task, std::string_view event,
                             const ProvisionRequest& request) {
  json& info = task.internalInfo;
  Record& node = task.node;
  if (event == "clean" || event == "provide") {
    clearFlow(info, StepKind::Clean);
    node.setText(kNodeCleanStep, "{}");
    if (event == "clean") info[flow::kCleanStepsRequested] = *request.cleanSteps;
  }
  if (event == "service") {
    clearFlow(info, StepKind::Service);
    node.setText(kNodeServiceStep, "{}");
    info[flow::kServiceStepsRequested] = *request.serviceSteps;
  }
  if (event == "deploy" || event == "rebuild") {
    clearFlow(info, StepKind::Deploy);
    node.setText(kNodeDeployStep, "{}");
    if (request.deploySteps) info[flow::kUserDeploySteps] = *request.deploySteps;
    if (request.configdrive) task.instanceInfo["configdrive"] = *request.configdrive;
  }
  if (event == "inspect") {
    node.setText(kNodeInspectionStartedAt, formatIsoTime(deps_.clock.now()));
  }
}

Result<void> Conductor::abortFrom(TransactionPtr tx, TaskContext& task,
                                  const ProvisionRequest& request) {
  Record& node = task.node;
  const std::string uuid = task.uuid();  // a copy: saving replaces task.node
  const std::string from = node.str(kNodeProvisionState);
  if (from == state::kCleanWait) {
    const json current = objectField(node, kNodeCleanStep);
    if (!current.empty() && !current.value("abortable", false)) {
      // Ironic: the abort happens once the running step finishes.
      task.internalInfo[flow::kAbortAfter] = true;
      KILN_TRY_VOID(tasks_.save(*tx, task));
      return tx->commit();
    }
    tasks_.transition(task, "abort");
    node.setText(kNodeLastError, "By request, the clean operation was aborted for node " + uuid +
                                     (current.empty() ? "" : " on step " + stepName(current)) +
                                     ".");
    node.setText(kNodeCleanStep, "{}");
    node.setNull(kNodeTargetProvisionState);
    KILN_TRY_VOID(NodeLock::reserve(node, host()));
    KILN_TRY_VOID(tasks_.save(*tx, task));
    KILN_TRY_VOID(tx->commit());
    tx.reset();
    // The cleaning environment is torn down in the background, then the node released.
    submit(adoptLock(uuid, "abort cleaning"), [this](NodeLock& lock) {
      runLocked(lock, {"cannot record the aborted cleaning", "", {}, {}},
                [](TaskContext& t, FieldMask&) -> Result<void> {
                  if (auto r = t.driver->deploy->tearDownCleaning(t); !r) {
                    t.log.warning("tear down after abort failed", {{"error", r.error().message}});
                  }
                  clearFlow(t.internalInfo, StepKind::Clean);
                  return {};
                });
    });
    return {};
  }
  if (from == state::kInspectWait) {
    tasks_.transition(task, "abort");
    node.setText(kNodeLastError, "Inspection was aborted by request.");
    node.setNull(kNodeTargetProvisionState);
    KILN_TRY_VOID(tasks_.save(*tx, task));
    KILN_TRY_VOID(tasks_.recordHistory(
        *tx, node.id(),
        {node.str(kNodeLastError), std::string(history_event::kIntrospection), "ERROR",
         request.user}));
    return tx->commit();
  }
  // Holds (1.85), a deployment waiting for the agent (1.110) and servicing (1.87) fail in a
  // worker, which tears down what the flow set up.
  if (state::isHoldState(from) || from == state::kDeployWait || from == state::kServiceWait) {
    if (from == state::kDeployWait && request.version < ver::k110DeploywaitAbort) {
      return fail(ErrorCode::NotAcceptable,
                  "Request not acceptable. The provision verb \"abort\" in state \"" + from +
                      "\" requires API version 1." + std::to_string(ver::k110DeploywaitAbort) +
                      " or later.");
    }
    const std::string what = from == state::kCleanHold ? "clean"
                             : from == state::kServiceWait || from == state::kServiceHold
                                 ? "service"
                                 : "deploy";
    KILN_TRY_VOID(NodeLock::reserve(node, host()));
    KILN_TRY_VOID(tasks_.save(*tx, task));
    KILN_TRY_VOID(tx->commit());
    tx.reset();
    submit(adoptLock(uuid, "abort"), [this, uuid, what, user = request.user](NodeLock& lock) {
      failParked(lock, "By request, the " + what + " operation was aborted for node " + uuid + ".",
                 user);
    });
    return {};
  }
  if (from == state::kServiceFailed && task.internalInfo.value(flow::kServiceRamdisk, false)) {
    // The agent ramdisk is still up: a worker leaves it and boots the instance first (Ironic's
    // tear_down_service), then the node goes back to active.
    KILN_TRY_VOID(NodeLock::reserve(node, host()));
    KILN_TRY_VOID(tasks_.save(*tx, task));
    KILN_TRY_VOID(tx->commit());
    tx.reset();
    submit(adoptLock(uuid, "abort servicing"), [this](NodeLock& lock) { abortFailedService(lock); });
    return {};
  }
  if (from == state::kServiceFailed) {
    // Ironic takes a node whose servicing failed back to active.
    tasks_.transition(task, "abort");
    node.setNull(kNodeTargetProvisionState);
    node.setText(kNodeServiceStep, "{}");
    clearFlow(task.internalInfo, StepKind::Service);
    KILN_TRY_VOID(tasks_.save(*tx, task));
    return tx->commit();
  }
  return invalidState(request, uuid, from);
}

Result<void> Conductor::unhold(TransactionPtr tx, TaskContext& task,
                               const ProvisionRequest& request, bool mine) {
  // 1.85: the held flow goes back to its wait state and carries on with its next step.
  const std::string from = task.node.str(kNodeProvisionState);
  if (!state::isHoldState(from)) return invalidState(request, task.uuid(), from);
  tasks_.transition(task, "unhold");
  KILN_TRY_VOID(markResumed(task, true));
  noteHandOff(task.internalInfo, mine, request.user);
  task.node.setNull(kNodeLastError);
  KILN_TRY_VOID(tasks_.save(*tx, task));
  KILN_TRY_VOID(tx->commit());
  tx.reset();
  startFlow(adoptLock(task.uuid(), "unhold"), mine, request.user);
  return {};
}

Result<void> Conductor::changePower(const std::string& uuid, const std::string& target,
                                    std::optional<int> timeoutSeconds, const std::string& user) {
  const int timeout = timeoutSeconds.value_or(deps_.config.powerStateChangeTimeout);
  {
    auto tx = KILN_TRY(deps_.storage.begin(Mode::Write));
    TaskContext task = KILN_TRY(tasks_.load(*tx, uuid));
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
    // The node's conductor does the BMC I/O (its conductor group is the one that reaches the
    // BMC): another server reserves the node in the owner's name and leaves it a note.
    const std::string owner = registry_.ownerOf(node);
    const bool mine = owner == host();
    node.setText(kNodeTargetPowerState, target);
    KILN_TRY_VOID(NodeLock::reserve(node, owner));
    node.setNull(kNodeLastError);
    if (mine) {
      task.internalInfo.erase(flow::kHandedOffPower);
    } else {
      task.internalInfo[flow::kHandedOffPower] = {
          {"target", target}, {"timeout", timeout}, {"user", user}};
    }
    KILN_TRY_VOID(tasks_.save(*tx, task));
    KILN_TRY_VOID(tx->commit());
    if (!mine) {
      log_.info("power action handed to the node's conductor",
                {{"node", uuid}, {"target", target}, {"conductor", owner}});
      return {};
    }
  }
  submit(adoptLock(uuid, "power action " + target), [this, target, timeout, user](NodeLock& lock) {
    powerAction(lock, target, timeout, user);
  });
  return {};
}

void Conductor::powerAction(NodeLock& lock, const std::string& target, int timeoutSeconds,
                            const std::string& user) {
  runLocked(lock,
            {"cannot record power state", "Failed to change power state to '" + target + "'",
             // Ironic journals a failed power action with no event type ("UNKNOWN").
             history_event::kUnknown, user},
            [&](TaskContext& task, FieldMask&) -> Result<void> {
              const auto timeout = std::chrono::seconds(timeoutSeconds);
              PowerInterface& power = *task.driver->power;
              if (task.node.flag(kNodeDisablePowerOff) &&
                  (target == state::kPowerOff || target == "soft power off")) {
                // 1.95: such a node is never powered off (Ironic's node_power_action refuses).
                return fail(ErrorCode::Conflict,
                            "Failed to set node power state to " + target +
                                ": the node has disable_power_off set; reboot it instead");
              }
              if (target != state::kPowerOn &&
                  agent::fastTrackIdleState(task.node.str(kNodeProvisionState))) {
                // A power off or reboot ends fast track: the agent left up goes down with it
                // (Ironic wipes the agent's token on these actions).
                agent::endFastTrack(task.internalInfo);
              }
              if (target == "rebooting" || target == "soft rebooting") {
                KILN_TRY_VOID(power.reboot(task, target == "soft rebooting", timeout));
              } else {
                KILN_TRY_VOID(power.setPowerState(task, target, timeout));
              }
              if (auto state = power.getPowerState(task); state && *state) {
                task.node.setText(kNodePowerState, **state);
              }
              task.log.info("power state changed",
                            {{"power_state", task.node.str(kNodePowerState)}});
              return {};
            });
}

Result<ManagementInterface::BootDevice> Conductor::getBootDevice(const std::string& uuid) {
  events::BmcRequestJournal bmc(deps_.storage, {deps_.clock, host()}, uuid);
  TaskContext task = KILN_TRY(tasks_.loadFresh(uuid));
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
  events::BmcRequestJournal bmc(deps_.storage, {deps_.clock, host()}, uuid);
  TaskContext task = KILN_TRY(tasks_.loadFresh(uuid));  // a Redfish implementation asks the BMC
  auto driver = KILN_TRY(driverFor(task.node));
  task.driver = &driver;
  return driver.management->supportedBootDevices(task);
}

Result<void> Conductor::resume(const std::string& uuid, bool stepFinished) {
  bool mine = true;
  {
    auto tx = KILN_TRY(deps_.storage.begin(Mode::Write));
    TaskContext task = KILN_TRY(tasks_.load(*tx, uuid));
    mine = registry_.owns(task.node);
    const std::string s = task.node.str(kNodeProvisionState);
    if (s != state::kCleanWait && s != state::kDeployWait && s != state::kServiceWait) {
      return conflict("Node " + uuid + " is not waiting (state \"" + s + "\").");
    }
    KILN_TRY_VOID(NodeLock::checkFree(task.node));
    KILN_TRY_VOID(markResumed(task, stepFinished));
    KILN_TRY_VOID(tasks_.save(*tx, task));
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
    if (stepFinished) task.internalInfo[flow::keysFor(kind).completed] = true;
  }
  task.internalInfo.erase(flow::kWaitUntil);
  tasks_.transition(task, "resume");
  return NodeLock::reserve(task.node, host());
}

Result<CleaningStepsView> Conductor::cleaningSteps(const std::string& uuid, int minPriority) {
  TaskContext task = KILN_TRY(tasks_.loadFresh(uuid));
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
  std::string errors;
  for (const auto& t : templates) {
    auto steps = templateSteps(t);
    auto plan = steps ? deployPlan(available, *steps, json())
                      : Result<std::vector<PlannedStep>>(std::unexpected(steps.error()));
    if (!plan) errors += (errors.empty() ? "" : "; ") + plan.error().message;
  }
  if (errors.empty()) return {};
  return invalid(errors);
}

Result<std::vector<InterfaceValidation>> Conductor::validateNode(const std::string& uuid) {
  auto tx = KILN_TRY(deps_.storage.begin(Mode::Read));
  TaskContext task = KILN_TRY(tasks_.load(*tx, uuid));
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
      v.reason = "No implementation of the " + std::string(info.name) + " interface named " +
                 impl + ".";
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

}  // namespace kiln::server
