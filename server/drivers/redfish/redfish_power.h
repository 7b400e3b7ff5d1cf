// File: server/drivers/redfish/redfish_power.h
//
// The "redfish" power interface: reads the ComputerSystem's PowerState and switches it with
// the ComputerSystem.Reset action, then polls the System (through the task's clock) until the
// new state shows.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "server/drivers/interfaces.h"
#include "shared/http/http_client.h"

namespace kiln::server {

/// Power control through Redfish. Thread-safe across nodes (no state of its own); each call
/// opens its own client (and session) for the task's node.
class RedfishPower final : public PowerInterface {
 public:
  /// How often the System is polled while a power change is under way.
  static constexpr std::chrono::seconds kPollInterval{1};

  explicit RedfishPower(HttpClientPtr http) : http_(std::move(http)) {}

  std::string_view name() const override { return "redfish"; }
  /// Checks driver_info only (see parseRedfishConfig); does not contact the BMC.
  std::optional<std::string> validate(const TaskContext& task) const override;
  /// "power on" for PowerState On or PoweringOn, "power off" for Off or PoweringOff (the state
  /// the machine is heading to). Internal for any other PowerState.
  Result<std::optional<std::string>> getPowerState(TaskContext& task) override;
  /// "power on" (Reset On), "power off" (ForceOff), "soft power off" (GracefulShutdown);
  /// "rebooting" and "soft rebooting" are passed to reboot(). Nothing is sent when the System
  /// is already in (or heading to) the target state. Waits up to `timeout` for the final
  /// PowerState: DeadlineExceeded naming the node and the target. InvalidArgument for another
  /// target or a ResetType the BMC does not allow.
  Result<void> setPowerState(TaskContext& task, std::string_view target,
                             std::chrono::seconds timeout) override;
  /// ForceRestart (soft: GracefulRestart) when the System is on, On when it is off, then waits
  /// for PowerState On. When the BMC lists its ResetTypes and the restart is not among them,
  /// powers off (ForceOff / GracefulShutdown) and on again.
  Result<void> reboot(TaskContext& task, bool soft, std::chrono::seconds timeout) override;
  /// power on, power off, rebooting, soft power off, soft rebooting.
  std::vector<std::string> supportedPowerStates() const override;

 private:
  HttpClientPtr http_;
};

}  // namespace kiln::server
