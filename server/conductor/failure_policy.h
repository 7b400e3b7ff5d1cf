// File: server/conductor/failure_policy.h
//
// How a node fails, decided in one place for every failing path: a flow whose step failed
// (Conductor::failFlow), an abort of a parked flow, a callback timeout, a worker whose error or
// exception escaped it (failUnfinished), and a flow interrupted by a restart or a takeover
// (recoverNode). From the state the node fails in and why, planFailure() says which transition
// it takes, which current-step fields are cleared, which driver_internal_info keys go, what the
// history event is called and what a failing flow must still undo; applyFailure() writes the
// bookkeeping part onto the node. Pure: no I/O, no clock, no driver.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "server/schema/record.h"

namespace kiln::server {

/// Why a node fails.
enum class FailureCause {
  StepFailed,    ///< a flow's step, its planning or its preparation failed
  Aborted,       ///< an abort by request of a flow parked in a wait or hold state
  TimedOut,      ///< the callback (or inspection) timeout of a wait state expired
  WorkerFailed,  ///< an error or exception escaped the worker running the node's action
  Interrupted,   ///< the conductor running the flow stopped (a restart, a takeover)
};

/// What failing a node in one state for one cause does.
struct FailurePlan {
  /// The provision-state event to take: "fail", "abort" from a hold state (which has no fail
  /// transition); "" when the node is in no state a flow runs or waits in (a failed power or
  /// management action): its provision state stays.
  std::string_view event;
  /// Current-step fields (clean_step, service_step) reset to {}. deploy_step is kept: the
  /// deployment steps spec leaves the failed step there.
  std::vector<size_t> clearedSteps;
  /// The node field of the step the node was at, named in messages; nullopt when none.
  std::optional<size_t> stepField;
  /// The node history event type (Ironic's, by the state the node failed in).
  std::string_view historyType;
  /// A failing cleaning tears its environment down first (needs the driver: failFlow only).
  bool tearDownCleaning = false;
  /// A failing deployment powers the node off ([deploy] power_off_after_deploy_failure).
  bool powerOffAfterDeploy = false;
};

/// The plan for a node failing in provision state `state` for `cause`. `powerAction`: the node
/// had a power action pending (WorkerFailed of a power action: journalled as UNKNOWN, as Ironic
/// journals a failed power action).
FailurePlan planFailure(std::string_view state, FailureCause cause, bool powerAction = false);

/// The driver_internal_info keys every failure drops: nothing waits for the agent or a timer
/// any more (the wait deadline, a pending hold, the agent's command and waiting marker).
const std::vector<const char*>& failureDroppedKeys();

/// "interface.step" of the step the node was at when failing per `plan`; "" when none.
std::string failedStepName(const FailurePlan& plan, const Record& node);

/// last_error for a flow a stopped conductor left in working state `state`: "<who> while the node
/// was <state> (at step <step>); the operation was not completed. <what to do next>".
std::string interruptedMessage(std::string_view state, const std::string& who,
                               const std::string& step);

/// Writes the failure's bookkeeping onto the node (the caller took plan.event's transition):
/// last_error = `message`, no target provision state (when the state moves), no target power
/// state, no reservation, the plan's step
/// fields cleared, and, when a flow fails (plan.event set), `internalInfo` (the parsed
/// driver_internal_info; null when it does not parse, then left alone) without
/// failureDroppedKeys().
void applyFailure(const FailurePlan& plan, Record& node, nlohmann::json* internalInfo,
                  const std::string& message);

}  // namespace kiln::server
