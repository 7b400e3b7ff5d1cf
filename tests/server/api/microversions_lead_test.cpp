// The microversions whose behaviour needs a BMC or an agent: the inspection callback (1.84),
// virtual media (1.89, 1.93), disable_power_off (1.95) and node health (1.109).
#include <catch2/catch.hpp>

#include <string>

#include "server/model/versions.h"
#include "tests/support/redfish_test_server.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::RedfishSystemState;
using kiln::test::RedfishTestServer;
using kiln::test::TestApi;
namespace ver = kiln::server::ver;

namespace {

std::string v(int minor) { return "1." + std::to_string(minor); }

Json node(TestApi& api, const std::string& ident) {
  api.settle();
  return api.get("/v1/nodes/" + ident).json();
}

}  // namespace

TEST_CASE("API 1.89 and 1.93: virtual media is attached, listed and detached through Redfish",
          "[server][api][microversions][vmedia]") {
  RedfishTestServer bmc;
  REQUIRE(bmc.start());
  bmc.updateSystem("1", [](RedfishSystemState& s) { s.manager = true; });
  TestApi api;
  api.version = v(ver::k93GetVmedia);
  api.createNode({{"name", "vm"}, {"driver", "redfish"},
                  {"driver_info", {{"redfish_address", bmc.address()}}}});
  const Json attach{{"device_type", "cdrom"},
                    {"image_url", "http://images.test/live.iso"},
                    {"image_download_source", "http"}};
  // Older versions do not have the endpoints.
  api.version = v(ver::k88PortName);
  CHECK(api.post("/v1/nodes/vm/vmedia", attach).status == 404);
  api.version = v(ver::k89AttachDetachVmedia);
  CHECK(api.get("/v1/nodes/vm/vmedia").status == 404);
  REQUIRE(api.post("/v1/nodes/vm/vmedia", attach).status == 204);
  api.settle();
  CHECK(bmc.system("1").cdImage == "http://images.test/live.iso");
  CHECK(bmc.system("1").cdInserted);
  CHECK(node(api, "vm")["reservation"].is_null());

  api.version = v(ver::k93GetVmedia);
  auto listed = api.get("/v1/nodes/vm/vmedia");
  REQUIRE(listed.status == 200);
  REQUIRE(listed.json().is_array());  // a bare list, as Metal3 parses it
  REQUIRE(listed.json().size() == 1);
  CHECK(listed.json()[0]["inserted"] == true);
  CHECK(listed.json()[0]["image"] == "http://images.test/live.iso");
  CHECK(listed.json()[0]["media_types"].size() >= 1);

  REQUIRE(api.del("/v1/nodes/vm/vmedia?device_types=cdrom").status == 204);
  api.settle();
  CHECK_FALSE(bmc.system("1").cdInserted);

  // Bad requests change nothing.
  CHECK(api.post("/v1/nodes/vm/vmedia", {{"device_type", "tape"}, {"image_url", "http://x/y"}})
            .status == 400);
  CHECK(api.post("/v1/nodes/vm/vmedia", {{"device_type", "cdrom"}, {"image_url", "ftp://x/y"}})
            .status == 400);
  CHECK(api.post("/v1/nodes/vm/vmedia",
                 {{"device_type", "cdrom"}, {"image_url", "http://x/y"}, {"extra", 1}})
            .status == 400);
  CHECK(api.del("/v1/nodes/vm/vmedia?device_types=tape").status == 400);
  CHECK_FALSE(bmc.system("1").cdInserted);

  // A driver without virtual media: 400 naming the extension, as Ironic.
  api.createNode({{"name", "plain"}});
  auto unsupported = api.post("/v1/nodes/plain/vmedia", attach);
  CHECK(unsupported.status == 400);
  CHECK_THAT(unsupported.fault(), Catch::Contains("attach_virtual_media"));
  CHECK(api.get("/v1/nodes/plain/vmedia").status == 400);
}

TEST_CASE("API 1.95: a node with disable_power_off is never powered off",
          "[server][api][microversions]") {
  TestApi api;
  api.version = v(ver::k95DisablePowerOff);
  api.createNode({{"name", "on"}, {"disable_power_off", true}});
  CHECK(node(api, "on")["disable_power_off"] == true);
  REQUIRE(api.put("/v1/nodes/on/states/power", {{"target", "power on"}}).status == 202);
  CHECK(node(api, "on")["power_state"] == "power on");
  REQUIRE(api.put("/v1/nodes/on/states/power", {{"target", "power off"}}).status == 202);
  Json n = node(api, "on");
  CHECK(n["power_state"] == "power on");
  CHECK_THAT(n["last_error"].get<std::string>(), Catch::Contains("disable_power_off"));
  // Rebooting is what such a node gets instead.
  REQUIRE(api.put("/v1/nodes/on/states/power", {{"target", "rebooting"}}).status == 202);
  CHECK(node(api, "on")["power_state"] == "power on");
  // Older versions neither see nor set the field.
  api.version = v(ver::k94PortNodename);
  CHECK_FALSE(api.get("/v1/nodes/on").json().contains("disable_power_off"));
  CHECK(api.post("/v1/nodes", {{"driver", "fake-hardware"}, {"disable_power_off", true}}).status ==
        406);
}

TEST_CASE("API 1.109: the power sync records the health the BMC reports",
          "[server][api][microversions][redfish]") {
  RedfishTestServer bmc;
  REQUIRE(bmc.start());
  bmc.updateSystem("1", [](RedfishSystemState& s) { s.health = "OK"; });
  TestApi api;
  api.version = v(ver::k109NodeHealth);
  api.createNode({{"name", "h"}, {"driver", "redfish"},
                  {"driver_info", {{"redfish_address", bmc.address()}}}});
  REQUIRE(api.put("/v1/nodes/h/states/provision", {{"target", "manage"}}).status == 202);
  api.settle();
  CHECK(node(api, "h")["health"].is_null());  // not read before the first sync
  api.runPeriodic();
  CHECK(node(api, "h")["health"] == "OK");
  bmc.updateSystem("1", [](RedfishSystemState& s) { s.health = "Critical"; });
  api.clock().advance(std::chrono::hours(1));  // the next power sync is due
  api.runPeriodic();
  CHECK(node(api, "h")["health"] == "Critical");
  // The change is journalled.
  auto history = api.get("/v1/nodes/h/history?detail=true").json()["history"];
  bool journalled = false;
  for (const auto& e : history) {
    journalled = journalled || e["event"] == "Node health changed from OK to Critical";
  }
  CHECK(journalled);
  // Hidden below 1.109, and 406 when asked for.
  api.version = v(ver::k108ServiceDisableRamdisk);
  CHECK_FALSE(api.get("/v1/nodes/h").json().contains("health"));
  CHECK(api.get("/v1/nodes/h?fields=health").status == 406);
}

TEST_CASE("API 1.84: continue_inspection finishes an agent inspection with its inventory",
          "[server][api][microversions][inspection]") {
  TestApi api;
  api.version = v(ver::k84ContinueInspection);
  api.createNode({{"name", "insp"}, {"inspect_interface", "agent"}});
  const std::string uuid = api.get("/v1/nodes/insp").json()["uuid"];
  REQUIRE(api.post("/v1/ports", {{"node_uuid", uuid}, {"address", "52:54:00:12:34:56"}}).status ==
          201);
  const Json inventory{
      {"interfaces", Json::array({{{"name", "eth0"}, {"mac_address", "52:54:00:12:34:56"}}})},
      {"cpu", {{"count", 4}, {"architecture", "x86_64"}, {"frequency", "2400"}}},
      {"memory", {{"physical_mb", 8192}}}};
  // Not waiting for inspection data yet: found by no lookup (restrict_lookup), 404.
  CHECK(api.post("/v1/continue_inspection", {{"inventory", inventory}}).status == 404);
  REQUIRE(api.put("/v1/nodes/insp/states/provision", {{"target", "manage"}}).status == 202);
  api.settle();
  REQUIRE(api.put("/v1/nodes/insp/states/provision", {{"target", "inspect"}}).status == 202);
  Json n = node(api, "insp");
  INFO(n["last_error"]);
  REQUIRE(n["provision_state"] == "inspect wait");
  // Between 1.2 and 1.83 the endpoint does not exist; bad bodies are 400.
  api.version = v(ver::k83ParentChildNodes);
  CHECK(api.post("/v1/continue_inspection", {{"inventory", inventory}}).status == 404);
  api.version = v(ver::k84ContinueInspection);
  CHECK(api.post("/v1/continue_inspection", {{"nothing", 1}}).status == 400);
  CHECK(api.post("/v1/continue_inspection", {{"inventory", {{"interfaces", Json::array()}}}})
            .status == 400);
  auto r = api.post("/v1/continue_inspection", {{"inventory", inventory}});
  REQUIRE(r.status == 202);
  CHECK(r.json()["node"]["uuid"] == uuid);
  n = node(api, "insp");
  CHECK(n["provision_state"] == "manageable");
  CHECK(n["properties"]["cpus"] == 4);
  auto stored = api.get("/v1/nodes/insp/inventory");
  REQUIRE(stored.status == 200);
  CHECK(stored.json()["inventory"]["memory"]["physical_mb"] == 8192);
  CHECK(stored.json()["plugin_data"]["macs"][0] == "52:54:00:12:34:56");
}
