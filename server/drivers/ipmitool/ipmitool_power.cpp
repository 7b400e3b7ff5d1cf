#include "server/drivers/ipmitool/ipmitool_power.h"

#include <algorithm>

namespace kiln::server {

IpmitoolPower::IpmitoolPower(Ipmitool ipmitool, std::chrono::milliseconds pollInterval)
    : ipmitool_(std::move(ipmitool)), pollInterval_(pollInterval) {}

std::optional<std::string> IpmitoolPower::validate(const TaskContext& task) const {
  auto info = parseIpmiDriverInfo(task.driverInfo);
  if (!info) return info.error().message;
  return std::nullopt;
}

Result<std::optional<std::string>> IpmitoolPower::getPowerState(TaskContext& task) {
  return ipmitool_.powerStatus(task);
}

Result<void> IpmitoolPower::setPowerState(TaskContext& task, std::string_view target,
                                          std::chrono::seconds timeout) {
  std::string_view action;
  std::string_view state;
  if (target == "power on") {
    action = "on";
    state = "power on";
  } else if (target == "power off") {
    action = "off";
    state = "power off";
  } else if (target == "soft power off") {
    action = "soft";
    state = "power off";
  } else {
    return invalid("The ipmitool power interface cannot set power state \"" + std::string(target) +
                   "\"; expected one of power on, power off, soft power off.");
  }
  KILN_TRY_VOID(ipmitool_.powerControl(task, action));
  return waitFor(task, state, target, timeout);
}

Result<void> IpmitoolPower::reboot(TaskContext& task, bool soft, std::chrono::seconds timeout) {
  // NOTE(kiln): not KILN_TRY: GCC 12 warns (falsely) that the string may be uninitialized.
  const auto current = ipmitool_.powerStatus(task);
  if (!current) return std::unexpected(current.error());
  const std::string_view target = soft ? "soft rebooting" : "rebooting";
  if (*current == "power on") {
    if (!soft) {
      // NOTE(kiln): a power cycle is ignored by BMCs in S4/S5, hence the status check first.
      KILN_TRY_VOID(ipmitool_.powerControl(task, "cycle"));
      return waitFor(task, "power on", target, timeout);
    }
    KILN_TRY_VOID(ipmitool_.powerControl(task, "soft"));
    KILN_TRY_VOID(waitFor(task, "power off", target, timeout));
  }
  KILN_TRY_VOID(ipmitool_.powerControl(task, "on"));
  return waitFor(task, "power on", target, timeout);
}

std::vector<std::string> IpmitoolPower::supportedPowerStates() const {
  return {"power on", "power off", "rebooting", "soft power off", "soft rebooting"};
}

Result<void> IpmitoolPower::waitFor(TaskContext& task, std::string_view state,
                                    std::string_view target, std::chrono::seconds timeout) {
  const Clock& clock = Ipmitool::clockOf(task);
  const auto deadline = clock.monotonic() + timeout;
  for (;;) {
    const std::string current = KILN_TRY(ipmitool_.powerStatus(task));
    if (current == state) return {};
    const auto now = clock.monotonic();
    if (now >= deadline) {
      std::string message =
          "Node " + task.uuid() + " did not reach power state \"" + std::string(state) + "\"";
      if (target != state) message += " (" + std::string(target) + ")";
      message += " within " + std::to_string(timeout.count()) +
                 " seconds; the BMC still reports \"" + current + "\".";
      return fail(ErrorCode::DeadlineExceeded, std::move(message));
    }
    // Rounded up, so a sub-millisecond remainder still advances the clock.
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
    clock.sleepFor(std::min(pollInterval_, left));
  }
}

}  // namespace kiln::server
