// File: server/drivers/ipmitool/ipmitool_power.h
//
// The "ipmitool" power interface: IPMI chassis control through the ipmitool CLI.
//   getPowerState   `chassis power status`
//   setPowerState   "power on" -> `chassis power on`, "power off" -> `chassis power off`,
//                   "soft power off" -> `chassis power soft` (ACPI shutdown), then polls
//                   `chassis power status` until the BMC reports the target
//   reboot          `chassis power cycle` when on, `chassis power on` when off; soft: soft off,
//                   wait, power on, wait
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/drivers/interfaces.h"
#include "server/drivers/ipmitool/ipmitool.h"

namespace kiln::server {

class IpmitoolPower final : public PowerInterface {
 public:
  /// `pollInterval` is the wait between two `chassis power status` while waiting for a target
  /// state (through the task's clock).
  explicit IpmitoolPower(Ipmitool ipmitool,
                         std::chrono::milliseconds pollInterval = std::chrono::seconds(1));

  std::string_view name() const override { return "ipmitool"; }

  /// The driver_info checks of parseIpmiDriverInfo: ipmi_address present, ipmi_port an integer
  /// in 1-65535, ipmi_priv_level and ipmi_protocol_version known values.
  std::optional<std::string> validate(const TaskContext& task) const override;

  /// "power on" or "power off" as the BMC reports it. Errors as Ipmitool::run, plus Internal
  /// for output that is not a power status.
  Result<std::optional<std::string>> getPowerState(TaskContext& task) override;

  /// Sends the chassis control for `target` ("power on", "power off", "soft power off") and
  /// polls until the BMC reports it (soft power off: "power off"). InvalidArgument for another
  /// target; DeadlineExceeded (naming the node and the target) when `timeout` passes first;
  /// otherwise errors as Ipmitool::run.
  Result<void> setPowerState(TaskContext& task, std::string_view target,
                             std::chrono::seconds timeout) override;

  /// Hard: `chassis power cycle` when the node is on (`chassis power on` when it is off), then
  /// waits for "power on". Soft: soft power off and wait, then power on and wait; each phase
  /// gets its own `timeout` (as in Ironic). The node ends powered on.
  Result<void> reboot(TaskContext& task, bool soft, std::chrono::seconds timeout) override;

  /// power on, power off, rebooting, soft power off, soft rebooting.
  std::vector<std::string> supportedPowerStates() const override;

 private:
  /// Polls until the BMC reports `state` ("power on"/"power off"); `target` names the
  /// requested transition in the timeout message.
  Result<void> waitFor(TaskContext& task, std::string_view state, std::string_view target,
                       std::chrono::seconds timeout);

  Ipmitool ipmitool_;
  std::chrono::milliseconds pollInterval_;
};

}  // namespace kiln::server
