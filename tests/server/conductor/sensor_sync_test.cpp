// The BMC sensor metrics ([sensor_data] send_sensor_data): the power-state sync reads a Redfish
// node's Thermal, Power and drives and GET /metrics serves them with ironic-prometheus-exporter's
// names; a BMC without them, or answering garbage, costs the sync nothing; a node that goes
// takes its series along.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include "server/drivers/sensor_metrics.h"
#include "tests/support/metrics_sample.h"
#include "tests/support/redfish_test_server.h"
#include "tests/support/test_api.h"

using kiln::server::processSensorMetrics;
using kiln::test::InjectedError;
using kiln::test::Json;
using kiln::test::RedfishDrive;
using kiln::test::RedfishStorage;
using kiln::test::RedfishSystemState;
using kiln::test::RedfishTestServer;
using kiln::test::TestApi;

namespace {

constexpr const char* kSensorsOn =
    "[sensor_data]\nsend_sensor_data = true\nenable_for_undeployed_nodes = true\n";

constexpr const char* kThermal = R"({"@odata.id": "/redfish/v1/Chassis/1/Thermal", "Id": "Thermal",
  "Temperatures": [{"MemberId": "0", "PhysicalContext": "CPU", "ReadingCelsius": 62,
                    "Status": {"State": "Enabled", "Health": "OK"}}],
  "Fans": [{"MemberId": "0", "Reading": 6000, "Status": {"State": "Enabled", "Health": "OK"}}]})";
constexpr const char* kPower = R"({"@odata.id": "/redfish/v1/Chassis/1/Power", "Id": "Power",
  "PowerSupplies": [{"MemberId": "0", "PowerCapacityWatts": 800,
                     "Status": {"State": "Enabled", "Health": "Warning"}}]})";

std::string scrape(TestApi& api) {
  kiln::server::ApiRequest req;
  req.method = "GET";
  req.path = "/metrics";
  return api.app().api().handle(req).body;
}

/// A Redfish node "s" on `bmc`, manageable (so the sync visits it).
std::string enrol(TestApi& api, RedfishTestServer& bmc) {
  const Json node = api.createNode({{"name", "s"},
                                    {"driver", "redfish"},
                                    {"driver_info", {{"redfish_address", bmc.address()}}}});
  REQUIRE(api.provision("s", "manage").status == 202);
  api.settle();
  return node["uuid"].get<std::string>();
}

void sync(TestApi& api) {
  api.clock().advance(std::chrono::hours(1));  // the next power sync is due
  api.runPeriodic();
  api.settle();
}

void withSensors(RedfishSystemState& s) {
  s.thermalBody = kThermal;
  s.powerBody = kPower;
  RedfishStorage storage;
  storage.id = "RAID.1";
  storage.drives = {RedfishDrive{
      .id = "d0", .name = "Disk 0", .capacityBytes = 1000000, .model = "M1", .health = "OK"}};
  s.storage = {storage};
}

}  // namespace

TEST_CASE(
    "The power sync publishes a Redfish node's sensors with the exporter's names when "
    "send_sensor_data is set",
    "[server][conductor][sensors][metrics]") {
  processSensorMetrics().clear();
  RedfishTestServer bmc;
  REQUIRE(bmc.start());
  bmc.updateSystem("1", withSensors);
  TestApi api(kSensorsOn);
  const std::string uuid = enrol(api, bmc);
  sync(api);
  const std::string text = scrape(api);
  INFO(text);
  const std::string labels = R"(node_name="s",node_uuid=")" + uuid + R"(",instance_uuid=")" + uuid +
                             R"(",manufacturer="Kiln",model="Test Server",)" +
                             R"(redfish_system_uuid="8b3a4b1c-5d6e-4f70-8192-a3b4c5d6e7f8",)";
  CHECK(kiln::test::sampleValue(
            text, "baremetal_temp_cpu_celsius{" + labels +
                      R"(identity="0",physical_context="CPU",state="Enabled",health="OK",)"
                      R"(sensor_id="0@1"})") == 62);
  CHECK(kiln::test::sampleValue(text, "baremetal_fan_status{" + labels +
                                          R"(identity="0",state="Enabled",health="OK",)"
                                          R"(sensor_id="0@1"})") == 0);
  CHECK(kiln::test::sampleValue(text, "baremetal_power_status{" + labels +
                                          R"(power_capacity_watts="800",state="Enabled",)"
                                          R"(health="Warning",sensor_id="0:Power@1"})") == 1);
  CHECK(kiln::test::sampleValue(
            text, std::string("baremetal_drive_status{") + R"(node_name="s",node_uuid=")" + uuid +
                      R"(",instance_uuid=")" + uuid +
                      R"(",manufacturer="Kiln",model="M1",)"
                      R"(redfish_system_uuid="8b3a4b1c-5d6e-4f70-8192-a3b4c5d6e7f8",)"
                      R"(name="Disk 0",capacity_bytes="1000000",state="Enabled",health="OK",)"
                      R"(sensor_id="Disk 0:RAID.1@1"})") == 0);
  // One read per node per sync: the Thermal resource was asked once.
  CHECK(bmc.requests("GET", "/redfish/v1/Chassis/1/Thermal").size() == 1);

  // A reading that changes is the new value at the next sync.
  bmc.updateSystem("1", [](RedfishSystemState& s) {
    s.thermalBody = std::string(kThermal).replace(std::string(kThermal).find("62"), 2, "71");
  });
  sync(api);
  CHECK_THAT(scrape(api), Catch::Contains(R"(sensor_id="0@1"} 71)"));
}

TEST_CASE(
    "The power sync reads no sensors when send_sensor_data is off or the node is not "
    "active",
    "[server][conductor][sensors][metrics]") {
  processSensorMetrics().clear();
  RedfishTestServer bmc;
  REQUIRE(bmc.start());
  bmc.updateSystem("1", withSensors);
  SECTION("send_sensor_data off (the default)") {
    TestApi api;
    enrol(api, bmc);
    sync(api);
    CHECK_THAT(scrape(api), !Catch::Contains("baremetal_"));
  }
  SECTION("a manageable node without enable_for_undeployed_nodes") {
    TestApi api("[sensor_data]\nsend_sensor_data = true\n");
    enrol(api, bmc);
    sync(api);
    CHECK_THAT(scrape(api), !Catch::Contains("baremetal_"));
  }
  CHECK(bmc.requests("GET", "/redfish/v1/Chassis/1/Thermal").empty());
}

TEST_CASE(
    "A BMC without Thermal and Power or answering garbage gives no series and no "
    "power-sync failure",
    "[server][conductor][sensors][metrics]") {
  processSensorMetrics().clear();
  RedfishTestServer bmc;
  REQUIRE(bmc.start());
  SECTION("404") {
    bmc.updateSystem("1", withSensors);
    for (const char* path : {"/redfish/v1/Chassis/1/Thermal", "/redfish/v1/Chassis/1/Power",
                             "/redfish/v1/Systems/1/Storage"}) {
      bmc.injectError(InjectedError{.method = "GET", .path = path, .status = 404, .count = -1});
    }
    bmc.updateSystem("1", [](RedfishSystemState& s) { s.storage.clear(); });
  }
  SECTION("malformed JSON") {
    bmc.updateSystem("1", [](RedfishSystemState& s) {
      s.thermalBody = "{\"Temperatures\": [ not json";
      s.powerBody = "<html>Power</html>";
    });
  }
  SECTION("JSON of the wrong shape") {
    bmc.updateSystem("1", [](RedfishSystemState& s) {
      s.thermalBody = R"({"Temperatures": {"0": 1}, "Fans": [null, 3, "x"]})";
      s.powerBody = R"([1, 2, 3])";
    });
  }
  TestApi api(kSensorsOn);
  enrol(api, bmc);
  for (int i = 0; i < 4; ++i) sync(api);  // more passes than power_state_sync_max_retries
  const Json node = api.get("/v1/nodes/s").json();
  CHECK(node["maintenance"] == false);
  CHECK(node["power_state"] == "power off");
  CHECK_FALSE(node["driver_internal_info"].contains("power_sync_failures"));
  CHECK_THAT(scrape(api), !Catch::Contains("baremetal_"));
  CHECK(processSensorMetrics().nodes() == 0);
}

TEST_CASE("A node's sensor series go when it is deleted or loses its redfish driver",
          "[server][conductor][sensors][metrics]") {
  processSensorMetrics().clear();
  RedfishTestServer bmc;
  REQUIRE(bmc.start());
  bmc.updateSystem("1", withSensors);
  TestApi api(kSensorsOn);
  enrol(api, bmc);
  sync(api);
  REQUIRE_THAT(scrape(api), Catch::Contains("baremetal_temp_cpu_celsius{"));
  SECTION("deleted") { REQUIRE(api.del("/v1/nodes/s").status == 204); }
  SECTION("another driver") {
    api.version = "1.45";  // reset_interfaces
    const auto r = api.patch(
        "/v1/nodes/s?reset_interfaces=true",
        Json::array({{{"op", "replace"}, {"path", "/driver"}, {"value", "fake-hardware"}}}));
    INFO(r.body);
    REQUIRE(r.status == 200);
  }
  sync(api);
  CHECK_THAT(scrape(api), !Catch::Contains("baremetal_"));
}
