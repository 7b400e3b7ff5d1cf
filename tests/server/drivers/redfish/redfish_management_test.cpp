#include "server/drivers/redfish/redfish_management.h"

#include "tests/server/drivers/redfish/redfish_fixture.h"

using namespace kiln;
using namespace kiln::server;
using kiln::test::kRedfishNode;
using kiln::test::RedfishFixture;
using kiln::test::RedfishSystemState;
using nlohmann::json;

TEST_CASE("RedfishManagement sets the boot source override", "[server][drivers][redfish]") {
  RedfishFixture f;
  RedfishManagement management(f.http);
  auto task = f.task();
  SECTION("pxe once") {
    REQUIRE(management.setBootDevice(task, "pxe", false));
    CHECK(f.bmc.system().bootTarget == "Pxe");
    CHECK(f.bmc.system().bootEnabled == "Once");
    const auto patches = f.bmc.requests("PATCH", "/redfish/v1/Systems/1");
    REQUIRE(patches.size() == 1);
    CHECK(json::parse(patches[0].body) ==
          json{{"Boot",
                {{"BootSourceOverrideTarget", "Pxe"}, {"BootSourceOverrideEnabled", "Once"}}}});
    CHECK(patches[0].header("content-type") == "application/json");
  }
  SECTION("disk persistently") {
    REQUIRE(management.setBootDevice(task, "disk", true));
    CHECK(f.bmc.system().bootTarget == "Hdd");
    CHECK(f.bmc.system().bootEnabled == "Continuous");
  }
  SECTION("cdrom and bios") {
    REQUIRE(management.setBootDevice(task, "cdrom", false));
    CHECK(f.bmc.system().bootTarget == "Cd");
    REQUIRE(management.setBootDevice(task, "bios", false));
    CHECK(f.bmc.system().bootTarget == "BiosSetup");
  }
}

TEST_CASE("RedfishManagement reads the boot device back", "[server][drivers][redfish]") {
  RedfishFixture f;
  RedfishManagement management(f.http);
  auto task = f.task();
  auto initial = management.getBootDevice(task);
  REQUIRE(initial);
  CHECK(initial->device.empty());
  CHECK_FALSE(initial->persistent.has_value());

  REQUIRE(management.setBootDevice(task, "disk", true));
  auto device = management.getBootDevice(task);
  REQUIRE(device);
  CHECK(device->device == "disk");
  CHECK(device->persistent == true);

  REQUIRE(management.setBootDevice(task, "pxe", false));
  device = management.getBootDevice(task);
  REQUIRE(device);
  CHECK(device->device == "pxe");
  CHECK(device->persistent == false);
}

TEST_CASE("RedfishManagement refuses devices it cannot map or the BMC does not allow",
          "[server][drivers][redfish]") {
  RedfishFixture f;
  f.bmc.updateSystem("1", [](RedfishSystemState& s) { s.allowedBootTargets = {"Pxe", "Hdd"}; });
  RedfishManagement management(f.http);
  auto task = f.task();
  auto r = management.setBootDevice(task, "safe", false);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::InvalidArgument);
  CHECK(r.error().message ==
        "The redfish management interface cannot set boot device 'safe' "
        "on node " +
            std::string(kRedfishNode) + "; supported: pxe, disk, cdrom, bios");

  r = management.setBootDevice(task, "cdrom", true);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::InvalidArgument);
  CHECK(r.error().message == "The Redfish BMC of node " + std::string(kRedfishNode) +
                                 " does not allow boot device 'cdrom' (BootSourceOverrideTarget "
                                 "Cd; it allows: Pxe, Hdd)");
  CHECK(f.bmc.requests("PATCH", "/redfish/v1/Systems/1").empty());
}

TEST_CASE("RedfishManagement passes the BMC's refusal on", "[server][drivers][redfish]") {
  RedfishFixture f;
  f.bmc.injectError({"PATCH", "/redfish/v1/Systems/1", 400, "Boot override is locked.", 1});
  RedfishManagement management(f.http);
  auto task = f.task();
  auto r = management.setBootDevice(task, "pxe", false);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::InvalidArgument);
  CHECK_THAT(r.error().message, Catch::EndsWith("HTTP 400: Boot override is locked."));
}

TEST_CASE("RedfishManagement lists the boot devices the BMC allows", "[server][drivers][redfish]") {
  RedfishFixture f;
  RedfishManagement management(f.http);
  auto task = f.task();
  CHECK(management.supportedBootDevices(task) ==
        std::vector<std::string>{"pxe", "disk", "cdrom", "bios"});
  f.bmc.updateSystem("1", [](RedfishSystemState& s) {
    s.allowedBootTargets = {"None", "Hdd", "Pxe", "UefiHttp"};
  });
  // UefiHttp is Ironic's "uefi http" (boot_devices.UEFIHTTP), offered only where listed.
  CHECK(management.supportedBootDevices(task) == std::vector<std::string>{"pxe", "disk", "uefi http"});
  REQUIRE(management.setBootDevice(task, "uefi http", false));
  CHECK(f.bmc.system().bootTarget == "UefiHttp");
  CHECK(f.bmc.system().bootEnabled == "Once");
  auto device = management.getBootDevice(task);
  REQUIRE(device);
  CHECK(device->device == "uefi http");
  f.bmc.updateSystem("1", [](RedfishSystemState& s) { s.allowedBootTargets.clear(); });
  CHECK(management.supportedBootDevices(task) ==
        std::vector<std::string>{"pxe", "disk", "cdrom", "bios"});
}

TEST_CASE("RedfishManagement uses the system named by redfish_system_id",
          "[server][drivers][redfish]") {
  RedfishFixture f;
  RedfishSystemState second;
  second.id = "2";
  f.bmc.addSystem(second);
  RedfishManagement management(f.http);
  auto ambiguous = f.task();
  auto r = management.setBootDevice(ambiguous, "pxe", false);
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Catch::Contains("set driver_info/redfish_system_id"));

  auto task = f.task({{"redfish_system_id", "/redfish/v1/Systems/2"}});
  REQUIRE(management.setBootDevice(task, "pxe", true));
  CHECK(f.bmc.system("2").bootTarget == "Pxe");
  CHECK(f.bmc.system("1").bootTarget == "None");
  CHECK(management.validate(task) == std::nullopt);
}

// ---- boot mode, secure boot, NMI, indicators ------------------------------------------------

TEST_CASE("RedfishManagement reads and sets the boot mode through BootSourceOverrideMode",
          "[server][drivers][redfish][management]") {
  RedfishFixture f;
  RedfishManagement management(f.http);
  auto task = f.task();
  auto mode = management.getBootMode(task);
  REQUIRE(mode);
  CHECK(*mode == std::optional<std::string>("uefi"));

  REQUIRE(management.setBootMode(task, "bios"));
  CHECK(f.bmc.system().bootMode == "Legacy");
  const auto patches = f.bmc.requests("PATCH", "/redfish/v1/Systems/1");
  REQUIRE(patches.size() == 1);
  CHECK(json::parse(patches[0].body) == json{{"Boot", {{"BootSourceOverrideMode", "Legacy"}}}});
  CHECK(management.getBootMode(task).value() == std::optional<std::string>("bios"));

  REQUIRE(management.setBootMode(task, "uefi"));
  CHECK(f.bmc.system().bootMode == "UEFI");
}

TEST_CASE("RedfishManagement reports no boot mode, and cannot set one, on a BMC without it",
          "[server][drivers][redfish][management]") {
  RedfishFixture f;
  f.bmc.updateSystem("1", [](RedfishSystemState& s) { s.bootMode.clear(); });
  RedfishManagement management(f.http);
  auto task = f.task();
  task.node.setText(kNodeDriver, "redfish");
  auto mode = management.getBootMode(task);
  REQUIRE(mode);
  CHECK_FALSE(mode->has_value());
  auto set = management.setBootMode(task, "uefi");
  REQUIRE_FALSE(set);
  CHECK(set.error().message ==
        "Driver redfish does not support set_boot_mode (disabled or not implemented).");
  CHECK(set.error().is(kiln::Reason::Unsupported));
}

TEST_CASE("RedfishManagement reports a BMC refusing the boot mode in Ironic's words",
          "[server][drivers][redfish][management]") {
  RedfishFixture f;
  f.bmc.injectError({"PATCH", "/redfish/v1/Systems/1", 500, "Boot mode locked", 1, 0});
  RedfishManagement management(f.http);
  auto task = f.task();
  auto set = management.setBootMode(task, "bios");
  REQUIRE_FALSE(set);
  CHECK_THAT(set.error().message,
             Catch::StartsWith("Redfish exception occurred. Error: Setting boot mode to bios "
                               "failed for node " +
                               std::string(kRedfishNode) + ". Error: "));
  CHECK_THAT(set.error().message, Catch::Contains("Boot mode locked"));
  CHECK(f.bmc.system().bootMode == "UEFI");
}

TEST_CASE("RedfishManagement reads and sets secure boot through the SecureBoot resource",
          "[server][drivers][redfish][management]") {
  RedfishFixture f;
  RedfishManagement management(f.http);
  auto task = f.task();
  CHECK(management.getSecureBoot(task).value() == std::optional<bool>(false));

  REQUIRE(management.setSecureBoot(task, true));
  CHECK(f.bmc.system().secureBootEnable);
  const auto patches = f.bmc.requests("PATCH", "/redfish/v1/Systems/1/SecureBoot");
  REQUIRE(patches.size() == 1);
  CHECK(json::parse(patches[0].body) == json{{"SecureBootEnable", true}});
  CHECK(management.getSecureBoot(task).value() == std::optional<bool>(true));

  // Already enabled: nothing is sent.
  f.bmc.clearRequests();
  REQUIRE(management.setSecureBoot(task, true));
  CHECK(f.bmc.requests("PATCH", "/redfish/v1/Systems/1/SecureBoot").empty());
}

TEST_CASE("RedfishManagement refuses secure boot in Legacy mode and without a SecureBoot resource",
          "[server][drivers][redfish][management]") {
  RedfishFixture f;
  RedfishManagement management(f.http);
  auto task = f.task();
  task.node.setText(kNodeDriver, "redfish");
  SECTION("legacy boot mode") {
    f.bmc.updateSystem("1", [](RedfishSystemState& s) { s.bootMode = "Legacy"; });
    auto set = management.setSecureBoot(task, true);
    REQUIRE_FALSE(set);
    CHECK(set.error().message ==
          "Redfish exception occurred. Error: Configuring secure boot requires UEFI for node " +
              std::string(kRedfishNode));
    CHECK_FALSE(f.bmc.system().secureBootEnable);
  }
  SECTION("no SecureBoot resource") {
    f.bmc.updateSystem("1", [](RedfishSystemState& s) { s.hasSecureBoot = false; });
    auto get = management.getSecureBoot(task);
    REQUIRE_FALSE(get);
    CHECK(get.error().message ==
          "Driver redfish does not support get_secure_boot_state (disabled or not implemented).");
    auto set = management.setSecureBoot(task, false);
    REQUIRE_FALSE(set);
    CHECK(set.error().is(kiln::Reason::Unsupported));
  }
}

TEST_CASE("RedfishManagement injects an NMI through the Reset action",
          "[server][drivers][redfish][management]") {
  RedfishFixture f;
  RedfishManagement management(f.http);
  auto task = f.task();
  REQUIRE(management.injectNmi(task));
  CHECK(f.bmc.system().resets == std::vector<std::string>{"Nmi"});
  const auto posts = f.bmc.requests("POST", "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset");
  REQUIRE(posts.size() == 1);
  CHECK(json::parse(posts[0].body) == json{{"ResetType", "Nmi"}});

  f.bmc.updateSystem("1", [](RedfishSystemState& s) { s.allowedResetTypes = {"On", "ForceOff"}; });
  auto refused = management.injectNmi(task);
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message,
             Catch::StartsWith("Redfish exception occurred. Error: Redfish inject NMI failed for "
                               "node " +
                               std::string(kRedfishNode) + ". Error: "));
  CHECK_THAT(refused.error().message, Catch::Contains("does not allow ResetType Nmi"));
  CHECK(f.bmc.system().resets.size() == 1);
}

TEST_CASE("RedfishManagement lists, reads and sets the system and chassis indicators",
          "[server][drivers][redfish][management]") {
  RedfishFixture f;
  f.bmc.updateSystem("1", [](RedfishSystemState& s) {
    s.indicatorLed = "Lit";
    s.chassisIndicatorLed = "Off";
  });
  const std::string systemLed = f.bmc.system().uuid;
  const std::string chassisLed = f.bmc.system().chassisUuid;
  RedfishManagement management(f.http);
  auto task = f.task();

  auto all = management.supportedIndicators(task, "");
  REQUIRE(all);
  REQUIRE(all->size() == 2);
  const auto& system = all->at("system").at(systemLed);
  CHECK_FALSE(system.readonly);
  CHECK(system.states == std::vector<std::string>{"BLINKING", "OFF", "ON"});
  CHECK(all->at("chassis").count(chassisLed) == 1);
  auto onlyChassis = management.supportedIndicators(task, "chassis");
  REQUIRE(onlyChassis);
  CHECK(onlyChassis->size() == 1);
  CHECK(onlyChassis->count("chassis") == 1);

  CHECK(management.getIndicatorState(task, "system", systemLed).value() == "ON");
  CHECK(management.getIndicatorState(task, "chassis", chassisLed).value() == "OFF");

  REQUIRE(management.setIndicatorState(task, "system", systemLed, "BLINKING"));
  CHECK(f.bmc.system().indicatorLed == "Blinking");
  const auto patches = f.bmc.requests("PATCH", "/redfish/v1/Systems/1");
  REQUIRE(patches.size() == 1);
  CHECK(json::parse(patches[0].body) == json{{"IndicatorLED", "Blinking"}});
  REQUIRE(management.setIndicatorState(task, "chassis", chassisLed, "ON"));
  CHECK(f.bmc.system().chassisIndicatorLed == "Lit");
  CHECK(management.getIndicatorState(task, "chassis", chassisLed).value() == "ON");
  REQUIRE(management.setIndicatorState(task, "system", systemLed, "OFF"));
  CHECK(management.getIndicatorState(task, "system", systemLed).value() == "OFF");
}

TEST_CASE("RedfishManagement refuses unknown indicators and states",
          "[server][drivers][redfish][management]") {
  RedfishFixture f;
  RedfishManagement management(f.http);
  auto task = f.task();
  const std::string systemLed = f.bmc.system().uuid;

  auto unknown = management.getIndicatorState(task, "system", "nope");
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().code == ErrorCode::InvalidArgument);
  CHECK(unknown.error().message ==
        "Unknown indicator nope for component system of node " + std::string(kRedfishNode));
  // The system links no chassis here.
  auto noChassis = management.setIndicatorState(task, "chassis", systemLed, "ON");
  REQUIRE_FALSE(noChassis);
  CHECK_THAT(noChassis.error().message, Catch::StartsWith("Unknown indicator "));
  auto badState = management.setIndicatorState(task, "system", systemLed, "GREEN");
  REQUIRE_FALSE(badState);
  CHECK(badState.error().code == ErrorCode::InvalidArgument);
  CHECK(f.bmc.requests("PATCH", "/redfish/v1/Systems/1").empty());

  // A system without an IndicatorLED offers none.
  f.bmc.updateSystem("1", [](RedfishSystemState& s) { s.indicatorLed.clear(); });
  auto none = management.supportedIndicators(task, "");
  REQUIRE(none);
  CHECK(none->empty());
}
