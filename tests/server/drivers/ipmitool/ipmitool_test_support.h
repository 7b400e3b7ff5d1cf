// File: tests/server/drivers/ipmitool/ipmitool_test_support.h
//
// A node with IPMI credentials, a FakeClock and a ReplayCommandRunner, shared by the ipmitool
// tests.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/drivers/interfaces.h"
#include "server/drivers/ipmitool/ipmitool.h"
#include "server/model/node.h"
#include "tests/support/fake_clock.h"
#include "tests/support/replay_command_runner.h"

namespace kiln::test {

inline constexpr std::string_view kIpmiNodeUuid = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123";
inline constexpr std::string_view kIpmiPassword = "s3cr3t-Pa55";

/// driver_info of a typical IPMI node: lanplus, a user and a password.
inline nlohmann::json ipmiDriverInfo() {
  return {{"ipmi_address", "10.20.30.40"},
          {"ipmi_username", "admin"},
          {"ipmi_password", std::string(kIpmiPassword)}};
}

struct IpmiFixture {
  explicit IpmiFixture(nlohmann::json driverInfo = ipmiDriverInfo()) {
    task.node = server::defaultRecord(server::nodeSchema());
    task.node.setText(server::kNodeUuid, std::string(kIpmiNodeUuid));
    task.driverInfo = std::move(driverInfo);
    task.clock = &clock;
  }

  /// Makes the node boot in `mode` ("bios" or "uefi") through properties.capabilities.
  IpmiFixture& bootMode(const std::string& mode, const std::string& vendor = "") {
    nlohmann::json properties{{"capabilities", "boot_mode:" + mode}};
    if (!vendor.empty()) properties["vendor"] = vendor;
    task.node.setText(server::kNodeProperties, properties.dump());
    return *this;
  }

  /// The argv ipmitool gets for `command` on the default node.
  static std::vector<std::string> argv(std::initializer_list<std::string> command) {
    std::vector<std::string> out = {"ipmitool", "-I",    "lanplus", "-H", "10.20.30.40",
                                    "-U",       "admin", "-E",      "-R", "1"};
    out.insert(out.end(), command.begin(), command.end());
    return out;
  }

  /// Expects `command` on the default node, with the password in the environment, answering
  /// the recorded output tests/data/commands/ipmitool/<fixture>.txt.
  IpmiFixture& expect(std::initializer_list<std::string> command, std::string_view fixture) {
    ExpectedCommand e;
    e.argv = argv(command);
    e.env = std::vector<std::pair<std::string, std::string>>{
        {"IPMI_PASSWORD", std::string(kIpmiPassword)}};
    e.output = recordedOutput("ipmitool/" + std::string(fixture) + ".txt");
    runner->expect(std::move(e));
    return *this;
  }

  /// Monotonic time the task has waited so far.
  std::chrono::milliseconds waited() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
        clock.monotonic().time_since_epoch());
  }

  std::shared_ptr<ReplayCommandRunner> runner = std::make_shared<ReplayCommandRunner>();
  FakeClock clock;
  server::TaskContext task;
};

}  // namespace kiln::test
