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
  CHECK(management.supportedBootDevices(task) == std::vector<std::string>{"pxe", "disk"});
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
