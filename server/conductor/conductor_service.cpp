// Servicing (API 1.87): a list of requested steps run on an active node, which returns to
// active when they are done ("service failed" otherwise; abort from there goes back to active).
// Kiln runs out-of-band service steps (bios, firmware and RAID through the BMC, the flow steps
// power_on/power_off/reboot/wait/hold); it boots no agent ramdisk on an active node, so a step
// that runs in the agent fails the request with a message saying so. Also here: failing a node
// parked in a wait or hold state on request (abort, 1.85/1.87/1.110).
#include "server/conductor/conductor.h"
#include "server/conductor/conductor_detail.h"
#include "server/conductor/firmware_cache.h"
#include "server/model/node.h"
#include "server/model/provision_state.h"
#include "shared/json/json_util.h"

namespace kiln::server {

using detail::keysFor;
using nlohmann::json;
using Mode = Storage::Mode;

Result<Conductor::Next> Conductor::doServicing(TaskContext& task) {
  json& info = task.internalInfo;
  if (!info.contains(keysFor(StepKind::Service).steps)) {
    // As Ironic's do_node_service: the caches are refreshed before any step runs.
    cacheBiosSettings(task);
    cacheFirmwareComponents(task, deps_.storage, deps_.clock);
    const auto available = availableSteps(*task.driver, StepKind::Service, overrides_, nullptr);
    const json requested =
        info.contains("service_steps_requested") ? info["service_steps_requested"] : json::array();
    auto planned = manualCleanPlan(requested, available);
    if (!planned) {
      return failFlow(task, "Failed to validate the service steps of node " + task.uuid() + ": " +
                                planned.error().message);
    }
    for (const auto& step : *planned) {
      if (step.requiresRamdisk) {
        return failFlow(task, "Cannot service node " + task.uuid() + ": step " + step.key() +
                                  " runs in the agent ramdisk, which Kiln does not boot on an "
                                  "active node; only out-of-band service steps are supported");
      }
    }
    json steps = json::array();
    for (const auto& p : *planned) steps.push_back(p.toJson());
    info[keysFor(StepKind::Service).steps] = steps;
    info.erase(keysFor(StepKind::Service).index);
    info.erase(keysFor(StepKind::Service).completed);
    KILN_TRY_VOID(saveInNewTransaction(task));
    return Next::Continue;
  }
  return runNextStep(task, StepKind::Service);
}

Result<Conductor::Next> Conductor::finishServicing(TaskContext& task) {
  json& info = task.internalInfo;
  // Kiln keeps the last run's service_steps for inspection; the bookkeeping goes.
  info.erase(keysFor(StepKind::Service).index);
  info.erase(keysFor(StepKind::Service).completed);
  info.erase("service_steps_requested");
  info.erase("wait_until");
  cacheBiosSettings(task);
  cacheFirmwareComponents(task, deps_.storage, deps_.clock);
  task.node.setText(kNodeServiceStep, "{}");
  transition(task, "done");
  task.node.setNull(kNodeTargetProvisionState);
  task.node.setNull(kNodeReservation);
  KILN_TRY_VOID(saveInNewTransaction(task));
  return Next::Stop;
}

void Conductor::failParked(const std::string& uuid, const std::string& message,
                           const std::string& user) {
  auto run = [&]() -> Result<void> {
    TaskContext task;
    {
      auto tx = KILN_TRY(deps_.storage.begin(Mode::Read));
      task = KILN_TRY(loadTask(*tx, uuid));
    }
    task.user = user;
    auto driver = driverFor(task.node);
    if (!driver) return std::unexpected(driver.error());
    task.driver = &*driver;
    KILN_TRY(failFlow(task, message));
    return {};
  }();
  if (!run) failUnfinished(uuid, message + " (" + run.error().message + ")");
}

}  // namespace kiln::server
