#include "server/drivers/redfish/redfish_power.h"

#include <algorithm>

#include "server/drivers/redfish/redfish_common.h"
#include "server/model/provision_state.h"

namespace kiln::server {
namespace {

using nlohmann::json;

std::string powerStateOf(const json& system) {
  return redfishStringAt(system, "PowerState").value_or("");
}

bool allows(const std::vector<std::string>& allowed, std::string_view type) {
  return allowed.empty() || std::find(allowed.begin(), allowed.end(), type) != allowed.end();
}

/// Polls the System until its PowerState is `wanted` ("On"/"Off"), up to `deadline` on the
/// task's clock. Failures that may pass (Unavailable, DeadlineExceeded) are retried until then.
Result<void> waitFor(const TaskContext& task, RedfishTarget& target, std::string_view wanted,
                     std::string_view ironicState, std::chrono::steady_clock::time_point deadline,
                     std::chrono::seconds timeout) {
  const Clock& clock = redfishClock(task);
  std::string last;
  std::string lastError;
  for (;;) {
    auto system = target.client->get(target.systemPath);
    if (system) {
      last = powerStateOf(*system);
      lastError.clear();
      if (last == wanted) {
        return {};
      }
    } else if (system.error().code == ErrorCode::Unavailable ||
               system.error().code == ErrorCode::DeadlineExceeded) {
      lastError = system.error().message;
    } else {
      return std::unexpected(system.error());
    }
    const auto now = clock.monotonic();
    if (now >= deadline) {
      std::string message = "Timed out after " + std::to_string(timeout.count()) +
                            " seconds waiting for node " + task.uuid() + " to reach power state '" +
                            std::string(ironicState) + "'";
      if (!lastError.empty()) {
        message += " (last error: " + lastError + ")";
      } else if (last.empty()) {
        message += " (the BMC reports no PowerState)";
      } else {
        message += " (the BMC reports PowerState '" + last + "')";
      }
      return fail(ErrorCode::DeadlineExceeded, std::move(message));
    }
    clock.sleepFor(std::min<std::chrono::milliseconds>(
        RedfishPower::kPollInterval,
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now)));
  }
}

}  // namespace

std::optional<std::string> RedfishPower::validate(const TaskContext& task) const {
  return validateRedfishDriverInfo(task);
}

Result<std::optional<std::string>> RedfishPower::getPowerState(TaskContext& task) {
  auto target = KILN_TRY(connectRedfish(http_, task));
  const json system = KILN_TRY(target.client->get(target.systemPath));
  const auto state = powerStateOf(system);
  if (state == "On" || state == "PoweringOn") return std::string(state::kPowerOn);
  if (state == "Off" || state == "PoweringOff") return std::string(state::kPowerOff);
  return internalError(
      "The Redfish BMC of node " + task.uuid() + " reports " +
      (state.empty() ? std::string("no PowerState") : "an unknown PowerState '" + state + "'") +
      " for " + target.systemPath);
}

Result<void> RedfishPower::setPowerState(TaskContext& task, std::string_view target,
                                         std::chrono::seconds timeout) {
  if (target == "rebooting") return reboot(task, false, timeout);
  if (target == "soft rebooting") return reboot(task, true, timeout);
  std::string_view resetType;
  std::string_view wanted;
  if (target == "power on") {
    resetType = "On";
    wanted = "On";
  } else if (target == "power off") {
    resetType = "ForceOff";
    wanted = "Off";
  } else if (target == "soft power off") {
    resetType = "GracefulShutdown";
    wanted = "Off";
  } else {
    return invalid("The redfish power interface cannot set node " + task.uuid() +
                   " to power state '" + std::string(target) +
                   "'; supported: power on, power off, soft power off, rebooting, soft rebooting");
  }
  const auto deadline = redfishClock(task).monotonic() + timeout;
  auto bmc = KILN_TRY(connectRedfish(http_, task));
  const json system = KILN_TRY(bmc.client->get(bmc.systemPath));
  const auto current = powerStateOf(system);
  const std::string inProgress = wanted == "On" ? "PoweringOn" : "PoweringOff";
  if (current != wanted && current != inProgress) {
    KILN_TRY_VOID(redfishReset(task, bmc, system, resetType));
  }
  return waitFor(task, bmc, wanted, target, deadline, timeout);
}

Result<void> RedfishPower::reboot(TaskContext& task, bool soft, std::chrono::seconds timeout) {
  const auto deadline = redfishClock(task).monotonic() + timeout;
  auto bmc = KILN_TRY(connectRedfish(http_, task));
  const json system = KILN_TRY(bmc.client->get(bmc.systemPath));
  const auto current = powerStateOf(system);
  const std::string_view restart = soft ? "GracefulRestart" : "ForceRestart";
  if (current == "Off" || current == "PoweringOff") {
    KILN_TRY_VOID(redfishReset(task, bmc, system, "On"));
  } else if (allows(redfishResetTypes(system), restart)) {
    KILN_TRY_VOID(redfishReset(task, bmc, system, restart));
  } else {
    // NOTE(kiln): some BMCs offer no restart; an off/on cycle is the same thing to the node.
    KILN_TRY_VOID(redfishReset(task, bmc, system, soft ? "GracefulShutdown" : "ForceOff"));
    KILN_TRY_VOID(
        waitFor(task, bmc, "Off", soft ? "soft power off" : "power off", deadline, timeout));
    KILN_TRY_VOID(redfishReset(task, bmc, system, "On"));
  }
  return waitFor(task, bmc, "On", soft ? "soft rebooting" : "rebooting", deadline, timeout);
}

std::vector<std::string> RedfishPower::supportedPowerStates() const {
  return {"power on", "power off", "rebooting", "soft power off", "soft rebooting"};
}

}  // namespace kiln::server
