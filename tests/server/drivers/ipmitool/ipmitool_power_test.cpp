#include <catch2/catch.hpp>

#include "server/drivers/ipmitool/ipmitool_interfaces.h"
#include "server/drivers/ipmitool/ipmitool_management.h"
#include "server/drivers/ipmitool/ipmitool_power.h"
#include "tests/server/drivers/ipmitool/ipmitool_test_support.h"

using namespace kiln;
using namespace kiln::server;
using kiln::test::IpmiFixture;
using std::chrono::seconds;

namespace {

const std::initializer_list<std::string> kStatus = {"chassis", "power", "status"};

}  // namespace

TEST_CASE("IpmitoolPower reads the power state from the BMC", "[server][ipmitool]") {
  IpmiFixture f;
  f.expect(kStatus, "power_status_on").expect(kStatus, "power_status_off");
  IpmitoolPower power(Ipmitool(f.runner));
  CHECK(power.getPowerState(f.task) == "power on");
  CHECK(power.getPowerState(f.task) == "power off");
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("IpmitoolPower powers on and returns once the BMC reports it", "[server][ipmitool]") {
  IpmiFixture f;
  f.expect({"chassis", "power", "on"}, "power_on").expect(kStatus, "power_status_on");
  IpmitoolPower power(Ipmitool(f.runner));
  REQUIRE(power.setPowerState(f.task, "power on", seconds(30)));
  CHECK(f.waited().count() == 0);
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("IpmitoolPower waits until the BMC reports the target state", "[server][ipmitool]") {
  IpmiFixture f;
  f.expect({"chassis", "power", "off"}, "power_off")
      .expect(kStatus, "power_status_on")
      .expect(kStatus, "power_status_on")
      .expect(kStatus, "power_status_on")
      .expect(kStatus, "power_status_off");
  IpmitoolPower power(Ipmitool(f.runner));
  REQUIRE(power.setPowerState(f.task, "power off", seconds(30)));
  // Three polls that still saw "power on", one poll interval (1 s) after each.
  CHECK(f.waited() == seconds(3));
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("IpmitoolPower fails with DeadlineExceeded when the target is not reached in time",
          "[server][ipmitool]") {
  IpmiFixture f;
  f.expect({"chassis", "power", "on"}, "power_on");
  // Polls at 0, 1, 2 and 3 seconds; the last one is at the deadline.
  for (int i = 0; i < 4; ++i) f.expect(kStatus, "power_status_off");
  IpmitoolPower power(Ipmitool(f.runner));
  auto done = power.setPowerState(f.task, "power on", seconds(3));
  REQUIRE_FALSE(done);
  CHECK(done.error().code == ErrorCode::DeadlineExceeded);
  CHECK(done.error().message ==
        "Node 1be26c0b-03f2-4d2e-ae87-c02d7f33c123 did not reach power state \"power on\" "
        "within 3 seconds; the BMC still reports \"power off\".");
  CHECK(f.waited() == seconds(3));
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("IpmitoolPower polls at its configured interval without overshooting the timeout",
          "[server][ipmitool]") {
  IpmiFixture f;
  f.expect({"chassis", "power", "off"}, "power_off");
  // Polls at 0, 2 and 4 s, then one at 5 s (the wait is cut to the deadline).
  for (int i = 0; i < 4; ++i) f.expect(kStatus, "power_status_on");
  IpmitoolPower power(Ipmitool(f.runner), std::chrono::seconds(2));
  auto done = power.setPowerState(f.task, "power off", seconds(5));
  REQUIRE_FALSE(done);
  CHECK(done.error().code == ErrorCode::DeadlineExceeded);
  CHECK(f.waited() == seconds(5));
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("IpmitoolPower soft power off asks the OS to shut down and waits for power off",
          "[server][ipmitool]") {
  IpmiFixture f;
  f.expect({"chassis", "power", "soft"}, "power_soft")
      .expect(kStatus, "power_status_on")
      .expect(kStatus, "power_status_off");
  IpmitoolPower power(Ipmitool(f.runner));
  REQUIRE(power.setPowerState(f.task, "soft power off", seconds(60)));
  CHECK(f.waited() == seconds(1));
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("IpmitoolPower names the soft target when a soft power off times out",
          "[server][ipmitool]") {
  IpmiFixture f;
  f.expect({"chassis", "power", "soft"}, "power_soft");
  for (int i = 0; i < 3; ++i) f.expect(kStatus, "power_status_on");
  auto done = IpmitoolPower(Ipmitool(f.runner)).setPowerState(f.task, "soft power off", seconds(2));
  REQUIRE_FALSE(done);
  CHECK(done.error().code == ErrorCode::DeadlineExceeded);
  CHECK_THAT(done.error().message,
             Catch::Contains("did not reach power state \"power off\" (soft power off) within 2 "
                             "seconds"));
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("IpmitoolPower reports a soft power off the BMC refuses", "[server][ipmitool]") {
  IpmiFixture f;
  f.expect({"chassis", "power", "soft"}, "power_soft_not_supported");
  auto done = IpmitoolPower(Ipmitool(f.runner)).setPowerState(f.task, "soft power off", seconds(2));
  REQUIRE_FALSE(done);
  CHECK(done.error().code == ErrorCode::Internal);
  CHECK_THAT(done.error().message, Catch::Contains("Command not supported in present state"));
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("IpmitoolPower rejects targets it cannot set without running ipmitool",
          "[server][ipmitool]") {
  IpmiFixture f;
  IpmitoolPower power(Ipmitool(f.runner));
  for (const char* target : {"rebooting", "soft rebooting", "on", ""}) {
    auto done = power.setPowerState(f.task, target, seconds(5));
    REQUIRE_FALSE(done);
    CHECK(done.error().code == ErrorCode::InvalidArgument);
  }
  CHECK(f.runner->received().empty());
}

TEST_CASE("IpmitoolPower power cycles a node that is on", "[server][ipmitool]") {
  IpmiFixture f;
  f.expect(kStatus, "power_status_on")
      .expect({"chassis", "power", "cycle"}, "power_cycle")
      .expect(kStatus, "power_status_off")
      .expect(kStatus, "power_status_on");
  REQUIRE(IpmitoolPower(Ipmitool(f.runner)).reboot(f.task, false, seconds(30)));
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("IpmitoolPower reboot powers on a node that is off", "[server][ipmitool]") {
  IpmiFixture f;
  f.expect(kStatus, "power_status_off")
      .expect({"chassis", "power", "on"}, "power_on")
      .expect(kStatus, "power_status_on");
  REQUIRE(IpmitoolPower(Ipmitool(f.runner)).reboot(f.task, false, seconds(30)));
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("IpmitoolPower soft reboot shuts down gracefully, then powers on", "[server][ipmitool]") {
  IpmiFixture f;
  f.expect(kStatus, "power_status_on")
      .expect({"chassis", "power", "soft"}, "power_soft")
      .expect(kStatus, "power_status_on")
      .expect(kStatus, "power_status_off")
      .expect({"chassis", "power", "on"}, "power_on")
      .expect(kStatus, "power_status_off")
      .expect(kStatus, "power_status_on");
  REQUIRE(IpmitoolPower(Ipmitool(f.runner)).reboot(f.task, true, seconds(30)));
  CHECK(f.waited() == seconds(2));
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("IpmitoolPower soft reboot stops when the shutdown times out", "[server][ipmitool]") {
  IpmiFixture f;
  f.expect(kStatus, "power_status_on").expect({"chassis", "power", "soft"}, "power_soft");
  for (int i = 0; i < 2; ++i) f.expect(kStatus, "power_status_on");
  auto done = IpmitoolPower(Ipmitool(f.runner)).reboot(f.task, true, seconds(1));
  REQUIRE_FALSE(done);
  CHECK(done.error().code == ErrorCode::DeadlineExceeded);
  CHECK_THAT(done.error().message, Catch::Contains("(soft rebooting)"));
  CHECK_THAT(done.error().message, Catch::Contains(std::string(test::kIpmiNodeUuid)));
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("IpmitoolPower passes a failing status poll through", "[server][ipmitool]") {
  IpmiFixture f;
  f.expect({"chassis", "power", "on"}, "power_on");
  for (int i = 0; i < 3; ++i) f.expect(kStatus, "session_failed_lanplus");
  auto done = IpmitoolPower(Ipmitool(f.runner)).setPowerState(f.task, "power on", seconds(30));
  REQUIRE_FALSE(done);
  CHECK(done.error().code == ErrorCode::Unavailable);
  CHECK_THAT(done.error().message, Catch::Contains("Unable to establish IPMI v2 / RMCP+ session"));
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("IpmitoolPower validates driver_info with Ironic's message", "[server][ipmitool]") {
  IpmitoolPower power(Ipmitool(nullptr));
  IpmiFixture ok;
  CHECK_FALSE(power.validate(ok.task));
  IpmiFixture missing(nlohmann::json{{"ipmi_username", "admin"}});
  CHECK(power.validate(missing.task) ==
        "Missing the following IPMI credentials in node's driver_info: ['ipmi_address'].");
  IpmiFixture badPort(nlohmann::json{{"ipmi_address", "h"}, {"ipmi_port", 0}});
  CHECK(power.validate(badPort.task) ==
        "Invalid ipmi_port \"0\" in node's driver_info; expected an integer between 1 and 65535.");
  IpmiFixture badLevel(nlohmann::json{{"ipmi_address", "h"}, {"ipmi_priv_level", "ROOT"}});
  CHECK_THAT(*power.validate(badLevel.task), Catch::StartsWith("Invalid ipmi_priv_level \"ROOT\""));
  IpmiFixture badVersion(nlohmann::json{{"ipmi_address", "h"}, {"ipmi_protocol_version", "1.0"}});
  CHECK_THAT(*power.validate(badVersion.task),
             Catch::StartsWith("Invalid ipmi_protocol_version \"1.0\""));
}

TEST_CASE("IpmitoolPower describes itself as the ipmitool power interface", "[server][ipmitool]") {
  IpmitoolPower power(Ipmitool(nullptr));
  CHECK(power.name() == "ipmitool");
  CHECK(power.type() == InterfaceType::Power);
  CHECK_FALSE(power.isNoop());
  CHECK(power.supportedPowerStates() == std::vector<std::string>{"power on", "power off",
                                                                 "rebooting", "soft power off",
                                                                 "soft rebooting"});
}

TEST_CASE("makeIpmitoolInterfaces returns the ipmitool power and management implementations",
          "[server][ipmitool]") {
  auto impls = makeIpmitoolInterfaces(std::make_shared<test::ReplayCommandRunner>());
  REQUIRE(impls.size() == 2);
  CHECK(impls[0]->type() == InterfaceType::Power);
  CHECK(impls[0]->name() == "ipmitool");
  CHECK(dynamic_cast<IpmitoolPower*>(impls[0].get()));
  CHECK(impls[1]->type() == InterfaceType::Management);
  CHECK(impls[1]->name() == "ipmitool");
  CHECK(dynamic_cast<IpmitoolManagement*>(impls[1].get()));
  CHECK(makeIpmitoolInterfaces(nullptr).size() == 2);
}

TEST_CASE("makeIpmitoolInterfaces runs ipmitool with the options it is given",
          "[server][ipmitool]") {
  IpmiFixture f;
  f.expect(kStatus, "wrong_password_ipmi_sim").expect(kStatus, "wrong_password_ipmi_sim");
  auto impls =
      makeIpmitoolInterfaces(f.runner, IpmitoolOptions{.attempts = 2,
                                                       .retryDelay = std::chrono::milliseconds(0),
                                                       .commandTimeout = std::chrono::seconds(7)});
  auto* power = dynamic_cast<IpmitoolPower*>(impls.at(0).get());
  REQUIRE(power);
  auto state = power->getPowerState(f.task);
  REQUIRE_FALSE(state);
  CHECK_THAT(state.error().message, Catch::EndsWith("[2 attempts]"));
  CHECK(f.waited().count() == 0);
  for (const auto& c : f.runner->received()) CHECK(c.timeout == seconds(7));
  test::checkAllConsumed(*f.runner);
}
