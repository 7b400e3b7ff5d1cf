// What Metal3's baremetal-operator sends when it enrolls a Redfish-family host, and its
// hardware RAID flow (docs: /work/shared/docs/metal3-call-surface.md, sections 2, 3.1 and 3.5).
#include <catch2/catch.hpp>

#include <string>

#include "server/model/versions.h"
#include "tests/support/redfish_test_server.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::RedfishStorage;
using kiln::test::RedfishSystemState;
using kiln::test::RedfishTestServer;
using kiln::test::Response;
using kiln::test::TestApi;
namespace ver = kiln::server::ver;

namespace {

/// BMO's microversion for an Ironic that advertises 1.95 to 1.108 (ChooseMicroversion).
const std::string kMetal3Version = "1." + std::to_string(ver::k95DisablePowerOff);

/// The test API with the idrac hardware type enabled as well (not a default, as in Ironic).
const char* kWithIdrac =
    "[DEFAULT]\nenabled_hardware_types = fake-hardware, ipmi, redfish, manual-management, idrac\n";

/// BMO's enrollNode body (register.go) for a host whose BMC address is `scheme`://...
Json metal3Body(const std::string& driver, const std::string& address) {
  return {{"driver", driver},
          {"name", "metal3~worker-0"},
          {"driver_info",
           {{"redfish_address", address},
            {"redfish_system_id", "/redfish/v1/Systems/1"},
            {"redfish_username", "admin"},
            {"redfish_password", "password"},
            {"redfish_verify_ca", false},
            {"deploy_kernel", "http://172.22.0.2:6180/images/ironic-python-agent.kernel"},
            {"deploy_ramdisk", "http://172.22.0.2:6180/images/ironic-python-agent.initramfs"}}},
          {"firmware_interface", "redfish"},
          {"inspect_interface", "agent"},
          {"disable_power_off", false},
          {"properties", {{"capabilities", "boot_mode:uefi"}, {"cpu_arch", "x86_64"}}}};
}

Response createNode(TestApi& api, const Json& body) {
  Response r = api.post("/v1/nodes", body);
  INFO(r.body);
  return r;
}

Json node(TestApi& api, const std::string& ident) { return api.get("/v1/nodes/" + ident).json(); }

Response provision(TestApi& api, const std::string& ident, Json body) {
  Response r = api.put("/v1/nodes/" + ident + "/states/provision", body);
  api.settle();
  return r;
}

}  // namespace

TEST_CASE("Metal3's body for a redfish-virtualmedia host creates a node",
          "[server][api][metal3][redfish]") {
  TestApi api;
  api.version = kMetal3Version;
  Json body = metal3Body("redfish", "https://192.168.111.1:8000");
  body["boot_interface"] = "redfish-virtual-media";
  body["raid_interface"] = "redfish";
  Response r = createNode(api, body);
  REQUIRE(r.status == 201);
  const Json n = r.json();
  CHECK(n["driver"] == "redfish");
  CHECK(n["raid_interface"] == "redfish");
  CHECK(n["firmware_interface"] == "redfish");
  CHECK(n["boot_interface"] == "redfish-virtual-media");
  CHECK(n["inspect_interface"] == "agent");
  CHECK(n["disable_power_off"] == false);
  CHECK(n["management_interface"] == "redfish");  // defaults for what BMO leaves out
  CHECK(n["power_interface"] == "redfish");
  CHECK(n["driver_info"]["redfish_password"] == "******");

  SECTION("and the plain redfish scheme (ipxe boot, an empty cpu_arch)") {
    Json plain = metal3Body("redfish", "https://192.168.111.2:8000");
    plain["name"] = "metal3~worker-1";
    plain["boot_interface"] = "ipxe";
    plain["raid_interface"] = "redfish";
    plain["properties"]["cpu_arch"] = "";
    CHECK(createNode(api, plain).status == 201);
  }
  SECTION("Metal3 switches to software RAID with a PATCH") {
    Response patched =
        api.patch("/v1/nodes/metal3~worker-0",
                  Json::array({{{"op", "add"}, {"path", "/raid_interface"}, {"value", "agent"}}}));
    INFO(patched.body);
    REQUIRE(patched.status == 200);
    CHECK(patched.json()["raid_interface"] == "agent");
  }
}

TEST_CASE("Metal3's body for an idrac host creates a node when idrac is enabled",
          "[server][api][metal3][idrac]") {
  Json body = metal3Body("idrac", "https://192.168.111.3");
  for (const char* field : {"bios_interface", "management_interface", "power_interface",
                            "vendor_interface", "raid_interface"}) {
    body[field] = "idrac-redfish";
  }
  SECTION("not enabled by default, as in Ironic") {
    TestApi api;
    api.version = kMetal3Version;
    body["boot_interface"] = "idrac-redfish-virtual-media";
    Response r = createNode(api, body);
    CHECK(r.status == 400);
    CHECK_THAT(r.fault(), Catch::Contains("idrac"));
  }
  SECTION("enabled") {
    TestApi api(kWithIdrac);
    api.version = kMetal3Version;
    for (const char* boot : {"idrac-redfish-virtual-media", "ipxe"}) {
      INFO(boot);
      body["boot_interface"] = boot;
      body["name"] = std::string("metal3~") + boot;
      Response r = createNode(api, body);
      REQUIRE(r.status == 201);
      const Json n = r.json();
      CHECK(n["driver"] == "idrac");
      CHECK(n["boot_interface"] == boot);
      for (const char* field : {"bios_interface", "management_interface", "power_interface",
                                "vendor_interface", "raid_interface"}) {
        INFO(field);
        CHECK(n[field] == "idrac-redfish");
      }
      CHECK(n["firmware_interface"] == "redfish");
      CHECK(n["inspect_interface"] == "agent");
      CHECK(n["disable_power_off"] == false);
      // The Redfish implementations validate the Redfish driver_info (no BMC contact).
      const Json v = api.get("/v1/nodes/metal3~" + std::string(boot) + "/validate").json();
      CHECK(v["power"]["result"] == true);
      CHECK(v["management"]["result"] == true);
      CHECK(v["raid"]["result"] == true);
    }
    // The driver lists Ironic's idrac names.
    const Json d = api.get("/v1/drivers/idrac").json();
    CHECK(d["default_power_interface"] == "idrac-redfish");
    CHECK(d["enabled_raid_interfaces"] == Json({"no-raid", "idrac-redfish", "agent"}));
    CHECK(d["enabled_boot_interfaces"] == Json({"ipxe", "pxe", "idrac-redfish-virtual-media"}));
    // A name the type does not support is still refused.
    Json other = body;
    other["name"] = "metal3~other";
    other["management_interface"] = "ipmitool";
    CHECK(createNode(api, other).status == 400);
  }
}

TEST_CASE("Metal3's hardware RAID flow builds the volume through the BMC",
          "[server][api][metal3][redfish][raid]") {
  RedfishTestServer bmc;
  REQUIRE(bmc.start());
  bmc.updateSystem("1", [](RedfishSystemState& s) {
    RedfishStorage st;
    for (int i = 0; i < 2; ++i) {
      st.drives.push_back(
          {"Disk.Bay." + std::to_string(i), "", 500LL * 1024 * 1024 * 1024, "SSD", "SATA"});
    }
    s.storage = {st};
  });
  TestApi api;
  api.version = kMetal3Version;
  Json body = metal3Body("redfish", bmc.address());
  body["driver_info"].erase("redfish_username");
  body["driver_info"].erase("redfish_password");
  body["boot_interface"] = "ipxe";
  body["raid_interface"] = "redfish";
  REQUIRE(createNode(api, body).status == 201);
  const std::string host = "metal3~worker-0";

  // setTargetRAIDCfg: size_gb null is "the whole disks".
  const Json target = {{"logical_disks", Json::array({{{"size_gb", nullptr},
                                                       {"raid_level", "1"},
                                                       {"volume_name", "root"},
                                                       {"controller", "RAID.Integrated.1-1"}}})}};
  Response set = api.put("/v1/nodes/" + host + "/states/raid", target);
  INFO(set.body);
  REQUIRE(set.status == 204);
  CHECK(node(api, host)["target_raid_config"] == target);

  REQUIRE(provision(api, host, {{"target", "manage"}}).status == 202);
  INFO(node(api, host)["last_error"]);
  REQUIRE(node(api, host)["provision_state"] == "manageable");

  const Json steps = Json::array({{{"interface", "raid"}, {"step", "delete_configuration"}},
                                  {{"interface", "raid"}, {"step", "create_configuration"}}});
  REQUIRE(provision(api, host, {{"target", "clean"}, {"clean_steps", steps}}).status == 202);
  const Json n = node(api, host);
  INFO(n["last_error"]);
  REQUIRE(n["provision_state"] == "manageable");
  REQUIRE(n["raid_config"]["logical_disks"].size() == 1);
  CHECK(n["raid_config"]["logical_disks"][0]["raid_level"] == "1");
  CHECK(n["raid_config"]["logical_disks"][0]["name"] == "root");
  CHECK(n["raid_config"]["logical_disks"][0]["size_gb"] == 500);
  CHECK(n["raid_config"]["logical_disks"][0]["controller"] == "RAID.Integrated.1-1");
  const auto volumes = bmc.system().storage[0].volumes;
  REQUIRE(volumes.size() == 1);
  CHECK(volumes[0].raidType == "RAID1");
  CHECK(volumes[0].drives.size() == 2);
}
