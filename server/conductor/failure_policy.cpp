#include "server/conductor/failure_policy.h"

#include <nlohmann/json.hpp>

#include "server/conductor/flow_keys.h"
#include "server/conductor/provision_state_machine.h"
#include "server/drivers/agent/agent_session.h"
#include "server/drivers/agent/ramdisk_logs.h"
#include "server/model/node.h"
#include "server/model/node_history.h"
#include "server/model/provision_state.h"
#include "shared/json/json_util.h"

namespace kiln::server {
namespace {

bool isCleaning(std::string_view s) {
  return s == state::kCleaning || s == state::kCleanWait || s == state::kCleanHold;
}
bool isServicing(std::string_view s) {
  return s == state::kServicing || s == state::kServiceWait || s == state::kServiceHold;
}
bool isDeploying(std::string_view s) {
  return s == state::kDeploying || s == state::kDeployWait || s == state::kDeployHold;
}
bool isInspecting(std::string_view s) {
  return s == state::kInspecting || s == state::kInspectWait;
}

/// The event type Ironic journals a failure under, by the state the node failed in.
std::string_view historyEventType(std::string_view s) {
  if (s == state::kVerifying) return history_event::kVerify;
  if (s == state::kCleaning || s == state::kCleanWait) return history_event::kCleaning;
  if (s == state::kDeploying || s == state::kDeployWait) return history_event::kDeploying;
  if (s == state::kDeleting) return history_event::kUnprovision;
  if (isInspecting(s)) return history_event::kIntrospection;
  if (s == state::kAdopting) return history_event::kAdoption;
  if (isServicing(s)) return history_event::kServicing;
  if (s == state::kRescuing || s == state::kRescueWait || s == state::kUnrescuing) {
    return history_event::kRescue;
  }
  return history_event::kProvisioning;
}

}  // namespace

FailurePlan planFailure(std::string_view s, FailureCause cause, bool powerAction) {
  FailurePlan plan;
  // A worker that failed or was interrupted ran the node's flow only in a working state; in any
  // other state it ran a power or management action, and the provision state stays.
  const bool workerOnly = cause == FailureCause::WorkerFailed || cause == FailureCause::Interrupted;
  if (workerOnly && !state::isWorkingState(s)) {
    plan.historyType = cause == FailureCause::Interrupted ? history_event::kTransition
                       : powerAction                        ? history_event::kUnknown
                                                            : historyEventType(s);
    return plan;
  }
  // Flows fail from the states they run or wait in; a hold state has no "fail" transition and
  // leaves through "abort".
  if (nextProvisionState(s, "fail")) {
    plan.event = "fail";
  } else if (state::isHoldState(s)) {
    plan.event = "abort";
  }
  if (isCleaning(s)) {
    plan.clearedSteps.push_back(kNodeCleanStep);
    plan.stepField = kNodeCleanStep;
    // The worker that failed may have left the cleaning environment half torn down; only a
    // flow with its driver at hand tears it down.
    plan.tearDownCleaning = cause == FailureCause::StepFailed || cause == FailureCause::Aborted ||
                            cause == FailureCause::TimedOut;
  } else if (isServicing(s)) {
    plan.clearedSteps.push_back(kNodeServiceStep);
    plan.stepField = kNodeServiceStep;
  } else if (isDeploying(s)) {
    plan.stepField = kNodeDeployStep;
    plan.powerOffAfterDeploy = cause == FailureCause::StepFailed ||
                               cause == FailureCause::Aborted || cause == FailureCause::TimedOut;
  }
  switch (cause) {
    case FailureCause::Interrupted:
      // Ironic journals the nodes it fails at start-up as a "transition".
      plan.historyType = history_event::kTransition;
      break;
    case FailureCause::TimedOut:
      plan.historyType = isInspecting(s) ? history_event::kTransition : historyEventType(s);
      break;
    case FailureCause::WorkerFailed: plan.historyType = historyEventType(s); break;
    case FailureCause::StepFailed:
    case FailureCause::Aborted: plan.historyType = historyEventType(s); break;
  }
  return plan;
}

const std::vector<const char*>& failureDroppedKeys() {
  static const std::vector<const char*> keys = {flow::kWaitUntil,     flow::kHold,
                                                agent::kCommand,      agent::kWaiting,
                                                agent::kLogsDeadline, agent::kFailAfterLogs};
  return keys;
}

std::string failedStepName(const FailurePlan& plan, const Record& node) {
  if (!plan.stepField) return "";
  const Json step = objectField(node, *plan.stepField);
  if (!step.is_object() || !step.contains("step")) return "";
  return step.value("interface", "") + "." + step.value("step", "");
}

std::string interruptedMessage(std::string_view s, const std::string& who,
                               const std::string& step) {
  std::string msg = who + " while the node was " + std::string(s);
  if (!step.empty()) msg += " (at step " + step + ")";
  msg += "; the operation was not completed. ";
  if (s == state::kCleaning) return msg + "Use \"manage\" and try again.";
  if (s == state::kDeploying) return msg + "Deploy again or undeploy.";
  if (s == state::kDeleting) return msg + "Undeploy again.";
  if (s == state::kVerifying) return msg + "Use \"manage\" again.";
  if (s == state::kInspecting) return msg + "Inspect again or use \"manage\".";
  if (s == state::kRescuing) return msg + "Rescue again, unrescue or undeploy.";
  if (s == state::kUnrescuing) return msg + "Unrescue again, rescue or undeploy.";
  if (s == state::kServicing) return msg + "Service again or abort.";
  return msg + "Adopt again or use \"manage\".";
}

void applyFailure(const FailurePlan& plan, Record& node, nlohmann::json* internalInfo,
                  const std::string& message) {
  node.setText(kNodeLastError, message);
  if (!plan.event.empty()) node.setNull(kNodeTargetProvisionState);
  node.setNull(kNodeTargetPowerState);
  node.setNull(kNodeReservation);
  for (size_t field : plan.clearedSteps) node.setText(field, "{}");
  // A failing flow leaves nothing waiting; a failed power or management action (no event) on a
  // parked flow leaves the flow's bookkeeping alone.
  if (!plan.event.empty() && internalInfo && internalInfo->is_object()) {
    for (const char* key : failureDroppedKeys()) internalInfo->erase(key);
  }
}

}  // namespace kiln::server
