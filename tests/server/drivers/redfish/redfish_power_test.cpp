#include "server/drivers/redfish/redfish_power.h"

#include "server/drivers/redfish/redfish_interfaces.h"
#include "tests/server/drivers/redfish/redfish_fixture.h"

using namespace kiln;
using namespace kiln::server;
using kiln::test::kRedfishNode;
using kiln::test::RedfishFixture;
using kiln::test::RedfishSystemState;
using nlohmann::json;
using std::chrono::seconds;

namespace {

constexpr const char* kResetPath = "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset";

void setPower(RedfishFixture& f, const std::string& state) {
  f.bmc.updateSystem("1", [&](RedfishSystemState& s) { s.powerState = state; });
}

std::vector<std::string> resetBodies(const RedfishFixture& f,
                                     const std::string& path = kResetPath) {
  std::vector<std::string> out;
  for (const auto& r : f.bmc.requests("POST", path)) {
    out.push_back(json::parse(r.body).at("ResetType").get<std::string>());
  }
  return out;
}

}  // namespace

TEST_CASE("RedfishPower maps the System's PowerState", "[server][drivers][redfish]") {
  RedfishFixture f;
  RedfishPower power(f.http);
  auto task = f.task();
  for (auto [redfish, ironic] :
       {std::pair{"On", "power on"}, std::pair{"Off", "power off"},
        std::pair{"PoweringOn", "power on"}, std::pair{"PoweringOff", "power off"}}) {
    setPower(f, redfish);
    INFO(redfish);
    CHECK(power.getPowerState(task) == std::string(ironic));
  }
  setPower(f, "Paused");
  auto state = power.getPowerState(task);
  REQUIRE_FALSE(state);
  CHECK_THAT(state.error().message, Catch::Contains("unknown PowerState 'Paused'"));
}

TEST_CASE("RedfishPower powers on and waits until the BMC reports On",
          "[server][drivers][redfish]") {
  RedfishFixture f;
  f.bmc.setPowerChangeDelay(3);
  RedfishPower power(f.http);
  auto task = f.task();
  REQUIRE(power.setPowerState(task, "power on", seconds(30)));
  CHECK(f.bmc.system().powerState == "On");
  CHECK(f.bmc.system().resets == std::vector<std::string>{"On"});
  CHECK(resetBodies(f) == std::vector<std::string>{"On"});
  // Three polls saw PoweringOn, each followed by one poll interval on the fake clock.
  CHECK(f.elapsedSeconds() == 3);
  // Initial GET, then four polls.
  CHECK(f.bmc.requests("GET", "/redfish/v1/Systems/1").size() == 5);
}

TEST_CASE("RedfishPower powers off hard and soft", "[server][drivers][redfish]") {
  RedfishFixture f;
  setPower(f, "On");
  f.bmc.setPowerChangeDelay(2);
  RedfishPower power(f.http);
  auto task = f.task();
  SECTION("power off") {
    REQUIRE(power.setPowerState(task, "power off", seconds(30)));
    CHECK(f.bmc.system().resets == std::vector<std::string>{"ForceOff"});
  }
  SECTION("soft power off") {
    REQUIRE(power.setPowerState(task, "soft power off", seconds(30)));
    CHECK(f.bmc.system().resets == std::vector<std::string>{"GracefulShutdown"});
  }
  CHECK(f.bmc.system().powerState == "Off");
  CHECK(f.elapsedSeconds() == 2);
}

TEST_CASE("RedfishPower sends nothing when the System is already in the target state",
          "[server][drivers][redfish]") {
  RedfishFixture f;
  setPower(f, "On");
  RedfishPower power(f.http);
  auto task = f.task();
  REQUIRE(power.setPowerState(task, "power on", seconds(30)));
  CHECK(f.bmc.system().resets.empty());
  CHECK(f.elapsedSeconds() == 0);
}

TEST_CASE("RedfishPower times out with DeadlineExceeded naming node and target",
          "[server][drivers][redfish]") {
  RedfishFixture f;
  f.bmc.setPowerChangeDelay(1000000);
  RedfishPower power(f.http);
  auto task = f.task();
  auto r = power.setPowerState(task, "power on", seconds(10));
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::DeadlineExceeded);
  CHECK(r.error().message == "Timed out after 10 seconds waiting for node " +
                                 std::string(kRedfishNode) +
                                 " to reach power state 'power on' (the BMC reports PowerState "
                                 "'PoweringOn')");
  CHECK(f.elapsedSeconds() == 10);
}

TEST_CASE("RedfishPower keeps polling through transient BMC failures",
          "[server][drivers][redfish]") {
  RedfishFixture f;
  RedfishPower power(f.http);
  auto task = f.task();
  // The initial GET goes through; the first two polls after the reset get 503.
  f.bmc.injectError({"GET", "/redfish/v1/Systems/1", 503, "Busy", 2, 1});
  REQUIRE(power.setPowerState(task, "power on", seconds(30)));
  CHECK(f.bmc.system().powerState == "On");
  CHECK(f.elapsedSeconds() == 2);
}

TEST_CASE("RedfishPower stops at once when the first GET fails", "[server][drivers][redfish]") {
  RedfishFixture f;
  RedfishPower power(f.http);
  auto task = f.task();
  f.bmc.injectError({"GET", "/redfish/v1/Systems/1", 503, "Busy", 1});
  auto r = power.setPowerState(task, "power on", seconds(30));
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::Unavailable);
  CHECK_THAT(r.error().message, Catch::EndsWith("HTTP 503: Busy"));
  CHECK(f.bmc.system().resets.empty());
}

TEST_CASE("RedfishPower reports the BMC's message when the reset fails",
          "[server][drivers][redfish]") {
  RedfishFixture f;
  f.bmc.injectError({"POST", kResetPath, 500, "Unable to power on: chassis intrusion.", 1});
  RedfishPower power(f.http);
  auto task = f.task();
  auto r = power.setPowerState(task, "power on", seconds(30));
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::Unavailable);
  CHECK_THAT(r.error().message, Catch::EndsWith("HTTP 500: Unable to power on: chassis "
                                                "intrusion."));
}

TEST_CASE("RedfishPower reboots with ForceRestart, GracefulRestart or On",
          "[server][drivers][redfish]") {
  RedfishFixture f;
  f.bmc.setPowerChangeDelay(2);
  RedfishPower power(f.http);
  auto task = f.task();
  SECTION("hard reboot of a running system") {
    setPower(f, "On");
    REQUIRE(power.reboot(task, false, seconds(30)));
    CHECK(f.bmc.system().resets == std::vector<std::string>{"ForceRestart"});
  }
  SECTION("soft reboot of a running system") {
    setPower(f, "On");
    REQUIRE(power.reboot(task, true, seconds(30)));
    CHECK(f.bmc.system().resets == std::vector<std::string>{"GracefulRestart"});
  }
  SECTION("reboot of a system that is off powers it on") {
    REQUIRE(power.reboot(task, false, seconds(30)));
    CHECK(f.bmc.system().resets == std::vector<std::string>{"On"});
  }
  SECTION("the rebooting target of setPowerState") {
    setPower(f, "On");
    REQUIRE(power.setPowerState(task, "rebooting", seconds(30)));
    CHECK(f.bmc.system().resets == std::vector<std::string>{"ForceRestart"});
  }
  CHECK(f.bmc.system().powerState == "On");
  CHECK(f.elapsedSeconds() == 2);
}

TEST_CASE("RedfishPower reboots by power cycling when the BMC offers no restart",
          "[server][drivers][redfish]") {
  RedfishFixture f;
  f.bmc.updateSystem("1", [](RedfishSystemState& s) {
    s.powerState = "On";
    s.allowedResetTypes = {"On", "ForceOff"};
  });
  f.bmc.setPowerChangeDelay(1);
  RedfishPower power(f.http);
  auto task = f.task();
  REQUIRE(power.reboot(task, false, seconds(30)));
  CHECK(f.bmc.system().resets == std::vector<std::string>{"ForceOff", "On"});
  CHECK(f.bmc.system().powerState == "On");
  CHECK(f.elapsedSeconds() == 2);
}

TEST_CASE("RedfishPower refuses a ResetType the BMC does not allow", "[server][drivers][redfish]") {
  RedfishFixture f;
  f.bmc.updateSystem("1", [](RedfishSystemState& s) {
    s.powerState = "On";
    s.allowedResetTypes = {"On", "ForceOff"};
  });
  RedfishPower power(f.http);
  auto task = f.task();
  auto r = power.setPowerState(task, "soft power off", seconds(30));
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::InvalidArgument);
  CHECK(r.error().message == "The Redfish BMC of node " + std::string(kRedfishNode) +
                                 " does not allow ResetType GracefulShutdown (it allows: On, "
                                 "ForceOff)");
  CHECK(f.bmc.requests("POST", kResetPath).empty());
}

TEST_CASE("RedfishPower uses the Reset action target the System advertises",
          "[server][drivers][redfish]") {
  RedfishFixture f;
  f.bmc.updateSystem("1", [](RedfishSystemState& s) { s.resetTarget = "/custom/reset/1"; });
  RedfishPower power(f.http);
  auto task = f.task();
  REQUIRE(power.setPowerState(task, "power on", seconds(30)));
  CHECK(resetBodies(f, "/custom/reset/1") == std::vector<std::string>{"On"});
  CHECK(f.bmc.requests("POST", kResetPath).empty());
}

TEST_CASE("RedfishPower rejects an unknown target", "[server][drivers][redfish]") {
  RedfishFixture f;
  RedfishPower power(f.http);
  auto task = f.task();
  auto r = power.setPowerState(task, "power sideways", seconds(30));
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::InvalidArgument);
  CHECK(f.bmc.requests().empty());
}

TEST_CASE("RedfishPower works against a BMC that requires a session",
          "[server][drivers][redfish]") {
  RedfishFixture f;
  f.bmc.requireCredentials("admin", "pw");
  f.bmc.setPowerChangeDelay(1);
  RedfishPower power(f.http);
  auto task = f.task({{"redfish_username", "admin"},
                      {"redfish_password", "pw"},
                      {"redfish_auth_type", "session"}});
  REQUIRE(power.setPowerState(task, "power on", seconds(30)));
  CHECK(f.bmc.system().powerState == "On");
  CHECK(f.bmc.requests("POST", "/redfish/v1/SessionService/Sessions").size() == 1);
  CHECK(f.bmc.activeSessions() == 0);
}

TEST_CASE("RedfishPower validates driver_info without contacting the BMC",
          "[server][drivers][redfish]") {
  RedfishFixture f;
  RedfishPower power(f.http);
  auto task = f.task();
  CHECK_FALSE(power.validate(task));
  task.driverInfo = json::object();
  CHECK(power.validate(task) == "Missing the following Redfish properties in node " +
                                    std::string(kRedfishNode) + " driver_info: redfish_address");
  task.driverInfo = {{"redfish_address", "https://bmc"}, {"redfish_verify_ca", "maybe"}};
  CHECK_THAT(*power.validate(task),
             Catch::StartsWith("Invalid value \"maybe\" set in driver_info/redfish_verify_ca"));
  CHECK(f.bmc.requests().empty());
}

TEST_CASE("makeRedfishInterfaces makes the redfish power, management, bios, inspect, raid and "
          "vendor interfaces",
          "[server][drivers][redfish]") {
  auto impls = makeRedfishInterfaces(makeHttpClient());
  REQUIRE(impls.size() == 6);
  CHECK(impls[0]->type() == InterfaceType::Power);
  CHECK(impls[0]->name() == "redfish");
  CHECK(impls[1]->type() == InterfaceType::Management);
  CHECK(impls[1]->name() == "redfish");
  CHECK(impls[2]->type() == InterfaceType::Bios);
  CHECK(impls[2]->name() == "redfish");
  CHECK(dynamic_cast<BiosInterface*>(impls[2].get()));
  CHECK(impls[3]->type() == InterfaceType::Inspect);
  CHECK(impls[3]->name() == "redfish");
  CHECK(impls[4]->type() == InterfaceType::Raid);
  CHECK(impls[4]->name() == "redfish");
  CHECK(impls[5]->type() == InterfaceType::Vendor);
  CHECK(impls[5]->name() == "redfish");
  auto* power = dynamic_cast<PowerInterface*>(impls[0].get());
  REQUIRE(power);
  CHECK(power->supportedPowerStates() == std::vector<std::string>{"power on", "power off",
                                                                  "rebooting", "soft power off",
                                                                  "soft rebooting"});
}
