#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "server/conductor/failure_policy.h"
#include "server/model/node.h"
#include "server/model/node_history.h"
#include "server/model/provision_state.h"

using namespace kiln::server;
using nlohmann::json;

namespace {

Record nodeIn(const std::string& state) {
  Record n = defaultRecord(nodeSchema());
  n.setText(kNodeUuid, "1be26c0b-03f2-4d2e-ae87-c02d7f33c123");
  n.setText(kNodeProvisionState, state);
  n.setText(kNodeTargetProvisionState, "active");
  n.setText(kNodeReservation, "conductor-1");
  n.setText(kNodeCleanStep, R"({"interface": "deploy", "step": "erase_devices"})");
  n.setText(kNodeDeployStep, R"({"interface": "deploy", "step": "write_image"})");
  n.setText(kNodeServiceStep, R"({"interface": "bios", "step": "apply_configuration"})");
  return n;
}

bool clears(const FailurePlan& plan, size_t field) {
  return std::find(plan.clearedSteps.begin(), plan.clearedSteps.end(), field) !=
         plan.clearedSteps.end();
}

}  // namespace

TEST_CASE("failure policy: every failing path clears the step of the flow that failed",
          "[server][conductor][failure]") {
  for (auto cause : {FailureCause::StepFailed, FailureCause::Aborted, FailureCause::TimedOut,
                     FailureCause::WorkerFailed, FailureCause::Interrupted}) {
    INFO(static_cast<int>(cause));
    const bool worker = cause == FailureCause::WorkerFailed || cause == FailureCause::Interrupted;
    // Servicing: the service step goes and is the one named (an interrupted servicing kept it).
    const std::string servicing = worker ? "servicing" : "service wait";
    auto plan = planFailure(servicing, cause);
    CHECK(plan.event == "fail");
    CHECK(clears(plan, kNodeServiceStep));
    CHECK_FALSE(clears(plan, kNodeDeployStep));
    CHECK(failedStepName(plan, nodeIn(servicing)) == "bios.apply_configuration");
    // Cleaning: the clean step goes.
    plan = planFailure(worker ? "cleaning" : "clean wait", cause);
    CHECK(clears(plan, kNodeCleanStep));
    CHECK(failedStepName(plan, nodeIn("cleaning")) == "deploy.erase_devices");
    // Deployment: the failed step stays in deploy_step (deployment steps spec).
    plan = planFailure(worker ? "deploying" : "wait call-back", cause);
    CHECK(plan.clearedSteps.empty());
    CHECK(failedStepName(plan, nodeIn("deploying")) == "deploy.write_image");
  }
}

TEST_CASE("failure policy: transitions, history types and what only a flow undoes",
          "[server][conductor][failure]") {
  // A hold state has no fail transition: an abort leaves it.
  CHECK(planFailure("clean hold", FailureCause::Aborted).event == "abort");
  CHECK(planFailure("service hold", FailureCause::Aborted).event == "abort");
  // Only a flow with its driver tears cleaning down and powers a failed deployment off.
  CHECK(planFailure("cleaning", FailureCause::StepFailed).tearDownCleaning);
  CHECK_FALSE(planFailure("cleaning", FailureCause::WorkerFailed).tearDownCleaning);
  CHECK(planFailure("deploying", FailureCause::StepFailed).powerOffAfterDeploy);
  CHECK_FALSE(planFailure("deploying", FailureCause::Interrupted).powerOffAfterDeploy);
  // History: by the state, as Ironic; a restart or takeover journals a transition, a failed
  // power action UNKNOWN, an inspection timeout a transition.
  CHECK(planFailure("deploying", FailureCause::StepFailed).historyType == history_event::kDeploying);
  CHECK(planFailure("clean wait", FailureCause::TimedOut).historyType == history_event::kCleaning);
  CHECK(planFailure("inspect wait", FailureCause::TimedOut).historyType == history_event::kTransition);
  CHECK(planFailure("deploying", FailureCause::Interrupted).historyType == history_event::kTransition);
  CHECK(planFailure("active", FailureCause::WorkerFailed, true).historyType == history_event::kUnknown);
  // A worker that failed outside a flow (a power action on a parked node) moves no state.
  const auto parked = planFailure("wait call-back", FailureCause::WorkerFailed, true);
  CHECK(parked.event.empty());
  CHECK(parked.clearedSteps.empty());
  CHECK(planFailure("active", FailureCause::Interrupted, true).event.empty());
}

TEST_CASE("failure policy: applyFailure writes the bookkeeping and drops what waits",
          "[server][conductor][failure]") {
  Record n = nodeIn("cleaning");
  n.setText(kNodeTargetPowerState, "power on");
  json info = {{"wait_until", 5}, {"hold", true}, {"agent_command", {{"id", "c"}}},
               {"agent_waiting", "boot"}, {"clean_steps", json::array()}};
  applyFailure(planFailure("cleaning", FailureCause::StepFailed), n, &info, "it broke");
  CHECK(n.str(kNodeLastError) == "it broke");
  CHECK(n[kNodeTargetProvisionState].isNull());
  CHECK(n[kNodeTargetPowerState].isNull());
  CHECK(n[kNodeReservation].isNull());
  CHECK(n.str(kNodeCleanStep) == "{}");
  CHECK(info == json{{"clean_steps", json::array()}});

  // A failed power action on a parked deployment leaves the deployment's bookkeeping alone.
  Record parked = nodeIn("wait call-back");
  json waiting = {{"agent_command", {{"id", "c"}}}, {"agent_waiting", "boot"}};
  applyFailure(planFailure("wait call-back", FailureCause::WorkerFailed, true), parked, &waiting,
               "power failed");
  CHECK(parked.str(kNodeTargetProvisionState) == "active");
  CHECK(waiting.contains("agent_command"));
  // driver_internal_info that does not parse is left alone.
  applyFailure(planFailure("deploying", FailureCause::WorkerFailed), parked, nullptr, "x");
  CHECK(parked.str(kNodeLastError) == "x");
}

TEST_CASE("failure policy: an interrupted flow's message says where it stopped and what next",
          "[server][conductor][failure]") {
  CHECK(interruptedMessage("servicing", "kiln-server stopped", "bios.apply_configuration") ==
        "kiln-server stopped while the node was servicing (at step bios.apply_configuration); the "
        "operation was not completed. Service again or abort.");
  CHECK(interruptedMessage("deploying", "conductor a stopped heartbeating", "") ==
        "conductor a stopped heartbeating while the node was deploying; the operation was not "
        "completed. Deploy again or undeploy.");
}
