#include "server/drivers/redfish/redfish_firmware.h"

#include "server/drivers/redfish/redfish_power.h"
#include "tests/server/drivers/redfish/redfish_fixture.h"

using namespace kiln;
using namespace kiln::server;
using kiln::test::kRedfishNode;
using kiln::test::RedfishFirmwareImage;
using kiln::test::RedfishFixture;
using kiln::test::RedfishNetworkAdapter;
using kiln::test::RedfishSystemState;
using nlohmann::json;

namespace {

constexpr const char* kSimpleUpdate =
    "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate";
constexpr const char* kMonitor1 = "/redfish/v1/TaskService/TaskMonitors/1";

/// A BMC whose system 1 reports a BIOS version, a manager (an iDRAC) and one NIC.
void giveFirmware(RedfishFixture& f) {
  f.bmc.updateSystem("1", [](RedfishSystemState& s) {
    s.biosVersion = "U30 v2.54";
    s.manager = true;
    s.managerFirmwareVersion = "2.80";
    s.managerModel = "iDRAC 9";
    s.networkAdapters = {RedfishNetworkAdapter{}};
  });
}

/// The firmware interface and a power interface for its reboots, on one task.
struct Updater {
  RedfishFixture& f;
  RedfishFirmware firmware;
  RedfishPower power;
  NodeDriver driver;
  TaskContext task;

  explicit Updater(RedfishFixture& fixture, RedfishFirmwareTiming timing = {},
                   const json& driverInfo = json::object())
      : f(fixture),
        firmware(fixture.http, timing),
        power(fixture.http),
        task(fixture.task(driverInfo)) {
    driver.power = &power;
    task.driver = &driver;
  }

  Result<StepResult> update(const json& settings) {
    REQUIRE(firmware.steps().size() == 1);
    return firmware.steps()[0].handler(task, {{"settings", settings}});
  }

  std::map<std::string, FirmwareComponentInfo> components() {
    auto list = firmware.cacheFirmwareComponents(task);
    REQUIRE(list);
    std::map<std::string, FirmwareComponentInfo> out;
    for (auto& c : *list) out[c.component] = c;
    return out;
  }
};

json setting(const std::string& component, const std::string& url) {
  return json::array({{{"component", component}, {"url", url}}});
}

}  // namespace

TEST_CASE("RedfishFirmware declares firmware.update as a clean and deploy step",
          "[server][drivers][redfish][firmware]") {
  RedfishFixture f;
  RedfishFirmware firmware(f.http);
  CHECK(firmware.type() == InterfaceType::Firmware);
  CHECK(firmware.name() == "redfish");
  REQUIRE(firmware.steps().size() == 1);
  const StepDefinition& s = firmware.steps()[0];
  CHECK(s.interface == "firmware");
  CHECK(s.name == "update");
  CHECK(s.cleanPriority == 0);
  CHECK(s.deployPriority == 0);
  CHECK_FALSE(s.abortable);
  CHECK_FALSE(s.requiresRamdisk);  // out-of-band: the BMC flashes
  REQUIRE(s.argsinfo.size() == 1);
  CHECK(s.argsinfo[0].name == "settings");
  CHECK(s.argsinfo[0].required);
  CHECK(s.handler);
}

TEST_CASE("RedfishFirmware reads the BIOS, BMC and NIC versions with their identity",
          "[server][drivers][redfish][firmware]") {
  RedfishFixture f;
  giveFirmware(f);
  Updater u(f);
  auto c = u.components();
  REQUIRE(c.size() == 3);
  CHECK(c["bios"].currentVersion == "U30 v2.54");
  CHECK_FALSE(c["bios"].vendor);
  CHECK_FALSE(c["bios"].model);
  CHECK_FALSE(c["bios"].serialNumber);
  CHECK(c["bmc"].currentVersion == "2.80");
  CHECK(c["bmc"].model == std::optional<std::string>("iDRAC 9"));  // 1.114: the BMC's model only
  CHECK_FALSE(c["bmc"].vendor);
  CHECK_FALSE(c["bmc"].serialNumber);
  const auto& nic = c["nic:ABC12345"];  // named by the adapter's serial number
  CHECK(nic.currentVersion == "22.0.9");
  CHECK(nic.vendor == std::optional<std::string>("Intel Corporation"));
  CHECK(nic.model == std::optional<std::string>("Intel(R) 25GbE 2P XXV710 Adptr"));
  CHECK(nic.serialNumber == std::optional<std::string>("ABC12345"));
  CHECK(f.bmc.requests("GET", "/redfish/v1/Managers/1").size() == 1);
  CHECK(f.bmc.requests("GET", "/redfish/v1/Chassis/1/NetworkAdapters/NIC.Slot.1").size() == 1);
}

TEST_CASE("RedfishFirmware names a NIC without a serial number by its adapter id",
          "[server][drivers][redfish][firmware]") {
  RedfishFixture f;
  f.bmc.updateSystem("1", [](RedfishSystemState& s) {
    RedfishNetworkAdapter nic;
    nic.serialNumber.clear();
    s.networkAdapters = {nic};
  });
  Updater u(f);
  auto c = u.components();
  REQUIRE(c.size() == 1);
  CHECK(c.count("nic:NIC.Slot.1"));
  CHECK_FALSE(c["nic:NIC.Slot.1"].serialNumber);
}

TEST_CASE("RedfishFirmware leaves out the NICs when NetworkAdapters cannot be read",
          "[server][drivers][redfish][firmware]") {
  RedfishFixture f;
  giveFirmware(f);
  f.bmc.injectError(
      {"GET", "/redfish/v1/Chassis/1/NetworkAdapters", 400, "Not while the OS boots", 1});
  Updater u(f);
  auto c = u.components();
  CHECK(c.size() == 2);
  CHECK(c.count("bios"));
  CHECK(c.count("bmc"));
}

TEST_CASE("RedfishFirmware reports a BMC without any firmware version as unsupported",
          "[server][drivers][redfish][firmware]") {
  RedfishFixture f;
  Updater u(f);
  auto c = u.firmware.cacheFirmwareComponents(u.task);
  REQUIRE_FALSE(c);
  CHECK(c.error().code == ErrorCode::Unimplemented);
  CHECK(c.error().message == std::string("Cannot retrieve firmware for node ") + kRedfishNode +
                                 ": no supported components");
}

TEST_CASE("RedfishFirmware updates the BMC through SimpleUpdate and its task, without a reboot",
          "[server][drivers][redfish][firmware]") {
  RedfishFixture f;
  giveFirmware(f);
  f.bmc.addFirmwareImage({"http://fw.test/bmc-2.90.bin", "bmc", "2.90"});
  f.bmc.setFirmwareTaskPolls(2);
  Updater u(f);
  auto r = u.update(setting("bmc", "http://fw.test/bmc-2.90.bin"));
  INFO((r ? "" : r.error().message));
  REQUIRE(r);
  CHECK(*r == StepResult::Done);
  const auto posts = f.bmc.requests("POST", kSimpleUpdate);
  REQUIRE(posts.size() == 1);
  // The URL as ImageURI; TransferProtocol because the action lists HTTP; no Targets (one system).
  CHECK(json::parse(posts[0].body) ==
        json{{"ImageURI", "http://fw.test/bmc-2.90.bin"}, {"TransferProtocol", "HTTP"}});
  // Two polls saw the task running (202), the third its end.
  CHECK(f.bmc.requests("GET", kMonitor1).size() == 3);
  CHECK(f.bmc.system().resets.empty());
  CHECK(u.components()["bmc"].currentVersion == "2.90");
}

TEST_CASE("RedfishFirmware reboots for a BIOS update as soon as its task waits for it",
          "[server][drivers][redfish][firmware]") {
  RedfishFixture f;
  giveFirmware(f);
  f.bmc.addFirmwareImage({"https://fw.test/bios-2.60.exe", "bios", "U30 v2.60"});
  Updater u(f);
  auto r = u.update(setting("bios", "https://fw.test/bios-2.60.exe"));
  INFO((r ? "" : r.error().message));
  REQUIRE(r);
  // The test BMC keeps a BIOS task Pending until a reset: the step could only end after it.
  CHECK(f.bmc.system().resets == std::vector<std::string>{"On"});  // it was off
  CHECK(json::parse(f.bmc.requests("POST", kSimpleUpdate)[0].body)["TransferProtocol"] == "HTTPS");
  CHECK(u.task.node.str(kNodePowerState) == "power on");
  CHECK(u.components()["bios"].currentVersion == "U30 v2.60");
}

TEST_CASE("RedfishFirmware reboots after a NIC update and flashes components in order",
          "[server][drivers][redfish][firmware]") {
  RedfishFixture f;
  giveFirmware(f);
  f.bmc.addFirmwareImage({"http://fw.test/nic.bin", "ABC12345", "22.5.0"});
  f.bmc.addFirmwareImage({"http://fw.test/bmc.bin", "bmc", "2.90"});
  Updater u(f);
  json settings = setting("nic:ABC12345", "http://fw.test/nic.bin");
  settings.push_back({{"component", "bmc"}, {"url", "http://fw.test/bmc.bin"}, {"wait", 60}});
  auto r = u.update(settings);
  INFO((r ? "" : r.error().message));
  REQUIRE(r);
  const auto posts = f.bmc.requests("POST", kSimpleUpdate);
  REQUIRE(posts.size() == 2);
  CHECK(json::parse(posts[0].body)["ImageURI"] == "http://fw.test/nic.bin");
  CHECK(json::parse(posts[1].body)["ImageURI"] == "http://fw.test/bmc.bin");
  CHECK(f.bmc.system().resets.size() == 1);  // the NIC's; the BMC's version showed at once
  auto c = u.components();
  CHECK(c["nic:ABC12345"].currentVersion == "22.5.0");
  CHECK(c["bmc"].currentVersion == "2.90");
}

TEST_CASE("RedfishFirmware tells a BMC with several systems which one to update",
          "[server][drivers][redfish][firmware]") {
  RedfishFixture f;
  giveFirmware(f);
  RedfishSystemState other;
  other.id = "2";
  f.bmc.addSystem(other);
  f.bmc.addFirmwareImage({"http://fw.test/bmc.bin", "bmc", "2.90"});
  Updater u(f, {}, {{"redfish_system_id", "/redfish/v1/Systems/1"}});
  REQUIRE(u.update(setting("bmc", "http://fw.test/bmc.bin")));
  const auto posts = f.bmc.requests("POST", kSimpleUpdate);
  REQUIRE(posts.size() == 1);
  CHECK(json::parse(posts[0].body)["Targets"] == json::array({"/redfish/v1/Systems/1"}));
}

TEST_CASE("RedfishFirmware fails the step with the task's messages when the update fails",
          "[server][drivers][redfish][firmware]") {
  RedfishFixture f;
  giveFirmware(f);
  Updater u(f);
  auto r = u.update(setting("bmc", "http://fw.test/missing.bin"));
  REQUIRE_FALSE(r);
  CHECK(r.error().message == std::string("Firmware update failed for node ") + kRedfishNode +
                                 ", firmware http://fw.test/missing.bin. Error: Transfer of image "
                                 "'http://fw.test/missing.bin' to the update service failed.");
  CHECK(u.components()["bmc"].currentVersion == "2.80");
}

TEST_CASE("RedfishFirmware asks an unanswering task monitor again and takes a purged task as done",
          "[server][drivers][redfish][firmware]") {
  RedfishFixture f;
  giveFirmware(f);
  f.bmc.addFirmwareImage({"http://fw.test/bmc.bin", "bmc", "2.90"});
  SECTION("a BMC restarting answers 503 for a while") {
    f.bmc.injectError({"GET", kMonitor1, 503, "Resetting", 2});
    Updater u(f);
    REQUIRE(u.update(setting("bmc", "http://fw.test/bmc.bin")));
    CHECK(f.bmc.requests("GET", kMonitor1).size() == 4);  // 2 refused, running, completed
    CHECK(u.components()["bmc"].currentVersion == "2.90");
  }
  SECTION("a purged task (404) counts as success, as in Ironic") {
    f.bmc.injectError({"GET", kMonitor1, 404, "No such task", -1});
    Updater u(f);
    auto r = u.update(setting("bmc", "http://fw.test/bmc.bin"));
    INFO((r ? "" : r.error().message));
    REQUIRE(r);
    CHECK(f.bmc.requests("GET", kMonitor1).size() == 1);
    CHECK(f.bmc.system().resets.empty());  // the BMC still tells its (old) version: no reboot
  }
}

TEST_CASE("RedfishFirmware gives up after the overall timeout",
          "[server][drivers][redfish][firmware]") {
  RedfishFixture f;
  giveFirmware(f);
  f.bmc.addFirmwareImage({"http://fw.test/bmc.bin", "bmc", "2.90"});
  f.bmc.setFirmwareTaskPolls(1000);
  RedfishFirmwareTiming timing;
  timing.overallTimeout = std::chrono::seconds(300);
  Updater u(f, timing);
  auto r = u.update(setting("bmc", "http://fw.test/bmc.bin"));
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::DeadlineExceeded);
  CHECK(r.error().message == std::string("Firmware update on node ") + kRedfishNode +
                                 " has exceeded the overall timeout of 300 seconds. Elapsed "
                                 "time: 300 seconds.");
  CHECK(f.bmc.requests("GET", kMonitor1).size() == 5);  // at 0, 60, ..., 240 s
}

TEST_CASE("RedfishFirmware fails when the BMC does not come back after an update",
          "[server][drivers][redfish][firmware]") {
  RedfishFixture f;
  giveFirmware(f);
  f.bmc.addFirmwareImage({"http://fw.test/nic.bin", "ABC12345", "22.5.0"});
  f.bmc.injectError({"GET", "/redfish/v1/Managers/1", 503, "Manager restarting", -1});
  Updater u(f);
  auto r = u.update(setting("nic:ABC12345", "http://fw.test/nic.bin"));
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message,
             Catch::StartsWith(std::string("BMC resources failed to stabilize within 480 seconds "
                                           "for node ") +
                               kRedfishNode + ", last error: "));
  CHECK_THAT(r.error().message, Catch::Contains("Manager restarting"));
}

TEST_CASE("RedfishFirmware refuses URLs the BMC cannot fetch before contacting it",
          "[server][drivers][redfish][firmware]") {
  RedfishFixture f;
  giveFirmware(f);
  Updater u(f);
  auto r = u.update(setting("bios", "swift://container/bios.exe"));
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::InvalidArgument);
  CHECK_THAT(r.error().message, Catch::Contains("from an http:// or https:// URL"));
  r = u.update(setting("cpld", "http://fw.test/cpld.bin"));
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message,
             Catch::EndsWith("'cpld' is not valid under any of the given schemas"));
  CHECK(f.bmc.requests().empty());
}
