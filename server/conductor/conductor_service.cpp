// Servicing (API 1.87): a list of requested steps run on an active node, which returns to
// active when they are done ("service failed" otherwise; abort from there goes back to active).
// Out-of-band service steps (bios, firmware and RAID through the BMC, the flow steps
// power_on/power_off/reboot/wait/hold) run at once. When a step runs in the agent (the agent's
// raid.apply_configuration, as Ironic's AgentRAID offers it), the node boots the agent ramdisk
// first and waits in "service wait" for it, as Ironic's prepare_service does; at the end (and
// on an abort from "service failed") the ramdisk is left and the instance booted again
// (tear_down_service). disable_ramdisk (1.108) refuses such steps instead. Also here: failing a
// node parked in a wait or hold state on request (abort, 1.85/1.87/1.110).
#include "server/conductor/conductor.h"
#include "server/conductor/conductor_detail.h"
#include "server/conductor/firmware_cache.h"
#include "server/drivers/agent/agent_session.h"
#include "server/drivers/agent/ramdisk_logs.h"
#include "server/model/node.h"
#include "server/model/provision_state.h"
#include "shared/json/json_util.h"

namespace kiln::server {

using detail::clearFlow;
using nlohmann::json;
using Mode = Storage::Mode;


Result<Conductor::Next> Conductor::doServicing(TaskContext& task) {
  json& info = task.internalInfo;
  if (!info.contains(flow::keysFor(StepKind::Service).steps)) {
    // As Ironic's do_node_service: the caches are refreshed before any step runs.
    cacheBiosSettings(task);
    cacheFirmwareComponents(task, deps_.storage, deps_.clock);
    const auto available = availableSteps(*task.driver, StepKind::Service, overrides_, nullptr);
    const json requested =
        info.contains(flow::kServiceStepsRequested) ? info[flow::kServiceStepsRequested] : json::array();
    auto planned = manualCleanPlan(requested, available);
    if (!planned) {
      return failFlow(task, "Failed to validate the service steps of node " + task.uuid() + ": " +
                                planned.error().message);
    }
    const bool disableRamdisk =
        requested.is_array() && std::any_of(requested.begin(), requested.end(), [](const json& r) {
          return r.is_object() && r.value("__out_of_band_only", false);
        });
    const auto inBand = std::find_if(planned->begin(), planned->end(),
                                     [](const PlannedStep& p) { return p.requiresRamdisk; });
    if (inBand != planned->end() && disableRamdisk) {
      // Ironic's _validate_user_steps with disable_ramdisk.
      return failFlow(task, "Failed to validate the service steps of node " + task.uuid() +
                                ": service step " + inBand->key() + " requires booting a ramdisk");
    }
    json steps = json::array();
    for (const auto& p : *planned) steps.push_back(p.toJson());
    info[flow::keysFor(StepKind::Service).steps] = steps;
    info.erase(flow::keysFor(StepKind::Service).index);
    info.erase(flow::keysFor(StepKind::Service).completed);
    KILN_TRY_VOID(tasks_.saveNew(task));
    if (inBand != planned->end()) {
      // Ironic's prepare_service: boot the agent ramdisk and wait for its first heartbeat.
      const auto timeout = std::chrono::seconds(deps_.config.powerStateChangeTimeout);
      if (auto booted = agent::bootRamdisk(task, timeout); !booted) {
        return failFlow(task, "Failed to prepare node " + task.uuid() + " for servicing: " +
                                  booted.error().message);
      }
      info[flow::kServiceRamdisk] = true;
      return parkFlow(task, "wait");
    }
    return Next::Continue;
  }
  return runNextStep(task, StepKind::Service);
}

Result<void> Conductor::tearDownServiceRamdisk(TaskContext& task) {
  json& info = task.internalInfo;
  if (!info.value(flow::kServiceRamdisk, false)) return {};
  // Ironic's tear_down_inband_service: out of the ramdisk, the instance's boot configuration
  // back, the instance started (rebooted into, when the node must not be powered off).
  const auto timeout = std::chrono::seconds(deps_.config.powerStateChangeTimeout);
  if (task.node.flag(kNodeDisablePowerOff)) {
    KILN_TRY_VOID(task.driver->boot->cleanUpRamdisk(task));
    agent::resetSession(info);
    KILN_TRY_VOID(task.driver->boot->prepareInstance(task));
    KILN_TRY_VOID(task.driver->power->reboot(task, false, timeout));
  } else {
    KILN_TRY_VOID(agent::leaveRamdisk(task, timeout));
    KILN_TRY_VOID(task.driver->boot->prepareInstance(task));
    KILN_TRY_VOID(task.driver->power->setPowerState(task, state::kPowerOn, timeout));
  }
  task.node.setText(kNodePowerState, std::string(state::kPowerOn));
  info.erase(flow::kServiceRamdisk);
  return {};
}

Result<Conductor::Next> Conductor::finishServicing(TaskContext& task) {
  json& info = task.internalInfo;
  // deploy_logs_collect = always: the agent's logs before the ramdisk goes (as Ironic's
  // do_next_service_step, label "service"); the flow waits for them in service wait.
  if (info.value(flow::kServiceRamdisk, false) &&
      agent::awaitLogs(task, "service", /*failed=*/false)) {
    return parkFlow(task, "wait");
  }
  if (auto r = tearDownServiceRamdisk(task); !r) {
    return failFlow(task, "Failed to tear down servicing of node " + task.uuid() + ": " + r.error().message);
  }
  // Kiln keeps the last run's service_steps for inspection; the bookkeeping goes.
  info.erase(flow::keysFor(StepKind::Service).index);
  info.erase(flow::keysFor(StepKind::Service).completed);
  info.erase(flow::kServiceStepsRequested);
  info.erase(flow::kWaitUntil);
  cacheBiosSettings(task);
  cacheFirmwareComponents(task, deps_.storage, deps_.clock);
  task.node.setText(kNodeServiceStep, "{}");
  return endFlow(task, "done");
}

void Conductor::abortFailedService(NodeLock& lock) {
  const std::string uuid = lock.uuid();
  runLocked(lock, {"cannot record the aborted servicing", "Failed to tear down servicing of node " + uuid, {}, {}},
            [&](TaskContext& task, FieldMask&) -> Result<void> {
              KILN_TRY_VOID(tearDownServiceRamdisk(task));
              tasks_.transition(task, "abort");  // service failed -> active
              task.node.setNull(kNodeTargetProvisionState);
              task.node.setText(kNodeServiceStep, "{}");
              task.node.setNull(kNodeLastError);
              clearFlow(task.internalInfo, StepKind::Service);
              return {};
            });
}

void Conductor::failParked(NodeLock& lock, const std::string& message, const std::string& user) {
  const std::string& uuid = lock.uuid();
  auto run = [&]() -> Result<void> {
    TaskContext task = KILN_TRY(tasks_.loadFresh(uuid));
    task.heldBy = host();
    task.user = user;
    task.onReleased = [&lock] { lock.releasedInSave(); };
    auto driver = KILN_TRY(driverFor(task.node));
    task.driver = &driver;
    KILN_TRY(failFlow(task, message, {}, FailureCause::Aborted));
    return {};
  }();
  if (!run) failUnfinished(uuid, message + " (" + run.error().message + ")", &lock);
}

}  // namespace kiln::server
