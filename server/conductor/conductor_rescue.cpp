// The rescue and unrescue flows (API 1.38): Ironic's _do_node_rescue and _do_node_unrescue.
#include "server/conductor/conductor.h"
#include "server/model/node.h"
#include "server/model/provision_state.h"

namespace kiln::server {
namespace {

/// The rescue password leaves instance_info when the rescue ends or fails (Ironic's
/// remove_node_rescue_password).
void forgetRescuePassword(TaskContext& task) {
  task.instanceInfo.erase("rescue_password");
  task.instanceInfo.erase("hashed_rescue_password");
}

RescueInterface* rescueOf(const TaskContext& task) {
  return dynamic_cast<RescueInterface*>(task.driver->get(InterfaceType::Rescue));
}

}  // namespace

Result<Conductor::Next> Conductor::doRescuing(TaskContext& task) {
  FieldMask extra;
  extra.set(kNodeInstanceInfo);
  RescueInterface* rescue = rescueOf(task);
  Result<StepResult> result =
      rescue
          ? rescue->rescue(task)
          : Result<StepResult>(invalid("Driver " + task.node.str(kNodeDriver) +
                                       " does not support rescue (disabled or not implemented)."));
  if (!result) {
    forgetRescuePassword(task);
    return failFlow(task, "Failed to rescue: " + result.error().message, extra);
  }
  if (*result == StepResult::Wait) return parkFlow(task, "wait", extra);
  return endFlow(task, "done", extra);
}

Result<Conductor::Next> Conductor::doUnrescuing(TaskContext& task) {
  RescueInterface* rescue = rescueOf(task);
  Result<void> result =
      rescue ? rescue->unrescue(task)
             : Result<void>(invalid("Driver " + task.node.str(kNodeDriver) +
                                    " does not support rescue (disabled or not implemented)."));
  if (!result) return failFlow(task, "Failed to unrescue: " + result.error().message);
  forgetRescuePassword(task);
  FieldMask extra;
  extra.set(kNodeInstanceInfo);
  return endFlow(task, "done", extra);
}

}  // namespace kiln::server
