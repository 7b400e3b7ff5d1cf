// The Redfish sensor parsers (server/drivers/redfish/redfish_sensors.h) and the samples made of
// their readings (server/drivers/sensor_metrics.h): ironic-prometheus-exporter's names and
// labels, and the bounds on what a BMC can make of them.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "server/drivers/redfish/redfish_sensors.h"
#include "server/drivers/sensor_metrics.h"
#include "shared/metrics/metrics.h"

using namespace kiln::server;
using nlohmann::json;

namespace {

const SensorNode kNode{"1be26c0b-03f2-4d2e-ae87-c02d7f33c123", "node-1", ""};

const json kThermal = json::parse(R"({
  "Id": "Thermal",
  "Temperatures": [
    {"MemberId": "0", "Name": "CPU1 Temp", "PhysicalContext": "CPU", "ReadingCelsius": 62,
     "MaxReadingRangeTemp": 120, "MinReadingRangeTemp": 0, "SensorNumber": 5,
     "Status": {"State": "Enabled", "Health": "OK"}},
    {"MemberId": "1", "PhysicalContext": "SystemBoard", "ReadingCelsius": 30.5,
     "Status": {"State": "Disabled", "Health": "OK"}},
    {"MemberId": "2", "PhysicalContext": "Intake", "ReadingCelsius": 21.0,
     "Status": {"State": "Enabled", "Health": "Unknown"}}
  ],
  "Fans": [
    {"MemberId": "0", "PhysicalContext": "Backplane", "Reading": 6000, "ReadingUnits": "RPM",
     "MaxReadingRange": 10000, "MinReadingRange": 0, "SerialNumber": "F1",
     "Status": {"State": "enabled", "Health": "Warning"}}
  ]
})");

const json kPower = json::parse(R"({
  "Id": "Power",
  "PowerSupplies": [
    {"MemberId": "0", "PowerCapacityWatts": 1450, "LastPowerOutputWatts": 650,
     "LineInputVoltage": 220, "SerialNumber": "PSU1", "Status": {"State": "Enabled", "Health": "Critical"}}
  ],
  "PowerControl": [{"MemberId": "0", "PowerConsumedWatts": 300}]
})");

std::string render(const SensorNode& node, const SensorData& data) {
  SensorMetrics store;
  store.publish("host-1", node, data);
  std::string out;
  kiln::metrics::TextWriter writer(out);
  store.render(writer);
  return out;
}

}  // namespace

TEST_CASE("Redfish sensors get the exporter's names and labels when the BMC reports them",
          "[server][drivers][redfish][sensors]") {
  SensorData data = parseRedfishSystemExtra(
      json{{"Manufacturer", "Kiln"}, {"Model", "Test Server"}, {"UUID", "sys-uuid"}});
  for (auto& r : parseRedfishThermal(kThermal, "1")) data.sensors.push_back(r);
  for (auto& r : parseRedfishPower(kPower, "1")) data.sensors.push_back(r);
  data.sensors.push_back(*parseRedfishDrive(json{{"Name", "Disk 0"},
                                                 {"Model", "IBM 350A"},
                                                 {"CapacityBytes", 3750000000LL},
                                                 {"Status", {{"Health", "OK"}}}},
                                            "RAID.1", "sys-1"));
  const std::string text = render(kNode, data);
  INFO(text);
  const std::string node = R"(node_name="node-1",node_uuid="1be26c0b-03f2-4d2e-ae87-c02d7f33c123",)"
                           R"(instance_uuid="1be26c0b-03f2-4d2e-ae87-c02d7f33c123",)";
  const std::string system = node + R"(manufacturer="Kiln",model="Test Server",)"
                                    R"(redfish_system_uuid="sys-uuid",)";
  const std::string cpu = system +
                          R"(identity="0",max_reading_range_temp="120",min_reading_range_temp="0",)"
                          R"(physical_context="CPU",sensor_number="5",state="Enabled",health="OK",)"
                          R"(sensor_id="0@1")";
  CHECK_THAT(text, Catch::Contains("# TYPE baremetal_temp_cpu_celsius gauge\n"));
  CHECK_THAT(text, Catch::Contains("\nbaremetal_temp_cpu_celsius{" + cpu + "} 62\n"));
  CHECK_THAT(text, Catch::Contains("\nbaremetal_temperature_status{" + cpu + "} 0\n"));
  // A disabled sensor is left out; an unknown health gives the reading but no status.
  CHECK_THAT(text, !Catch::Contains("systemboard"));
  CHECK_THAT(text, Catch::Contains("\nbaremetal_temp_intake_celsius{"));
  CHECK_THAT(text, !Catch::Contains(R"(health="Unknown",sensor_id="2@1"} 0)"));
  // The fan: its reading and units are not labels.
  CHECK_THAT(text,
             Catch::Contains("\nbaremetal_fan_status{" + system +
                             R"(identity="0",max_reading_range="10000",min_reading_range="0",)"
                             R"(serial_number="F1",physical_context="Backplane",)"
                             R"(state="enabled",health="Warning",sensor_id="0@1"} 1)"));
  CHECK_THAT(text,
             Catch::Contains("\nbaremetal_power_status{" + system +
                             R"(power_capacity_watts="1450",serial_number="PSU1",)"
                             R"(state="Enabled",health="Critical",sensor_id="0:Power@1"} 2)"));
  // The drive's model replaces the System's; a drive with a health and no state is enabled.
  CHECK_THAT(text, Catch::Contains("\nbaremetal_drive_status{" + node +
                                   R"(manufacturer="Kiln",model="IBM 350A",)"
                                   R"(redfish_system_uuid="sys-uuid",name="Disk 0",)"
                                   R"(capacity_bytes="3750000000",health="OK",state="Enabled",)"
                                   R"(sensor_id="Disk 0:RAID.1@sys-1"} 0)"));
  CHECK_THAT(text, !Catch::Contains("650"));  // LastPowerOutputWatts is no label
}

TEST_CASE("Sensor samples stay bounded and valid when the BMC sends odd names and many sensors",
          "[server][drivers][redfish][sensors]") {
  CHECK(sensorContextName("SystemBoard") == "systemboard");
  CHECK(sensorContextName("CPU 1/Die") == "cpu_1_die");
  CHECK(sensorContextName(" !\"") == "");
  CHECK(sensorContextName(std::string(100, 'x')).size() == kMaxSensorContextChars);

  json thermal = {{"Temperatures", json::array()}};
  for (int i = 0; i < 1000; ++i) {
    thermal["Temperatures"].push_back({{"MemberId", std::to_string(i % 150)},
                                       {"PhysicalContext", "Ctx\n\"" + std::to_string(i)},
                                       {"ReadingCelsius", i},
                                       {"Name", std::string(1000, 'n')},
                                       {"SerialNumber", std::string(1000, 's')},
                                       {"Status", {{"State", "Enabled"}, {"Health", "OK"}}}});
  }
  thermal["Temperatures"].push_back("not an object");
  SensorData data;
  data.sensors = parseRedfishThermal(thermal, "c");
  CHECK(data.sensors.size() == kMaxRedfishSensorMembers);
  const auto samples = sensorSamples({"u", "", ""}, data);
  CHECK(samples.size() <= kMaxSensorSeriesPerNode);
  for (const auto& s : samples) {
    CHECK(kiln::metrics::isValidMetricName(s.metric));
    CHECK(s.labelNames.front() == "node_uuid");  // no node_name: the node has none
    for (const auto& name : s.labelNames) CHECK(kiln::metrics::isValidLabelName(name));
    for (const auto& value : s.labelValues) CHECK(value.size() <= kMaxSensorLabelValueBytes);
  }
  // The instance UUID defaults to the node's.
  CHECK(samples.front().labelValues[1] == "u");

  // A sensor listed twice is one series.
  json twice = {{"Fans", json::array()}};
  for (int i = 0; i < 2; ++i) {
    twice["Fans"].push_back(
        {{"MemberId", "0"}, {"Status", {{"State", "Enabled"}, {"Health", "OK"}}}});
  }
  SensorData fans;
  fans.sensors = parseRedfishThermal(twice, "c");
  CHECK(fans.sensors.size() == 2);
  CHECK(sensorSamples({"u", "n", ""}, fans).size() == 1);
}

TEST_CASE("Redfish sensor parsers keep what has the expected type when members are malformed",
          "[server][drivers][redfish][sensors]") {
  CHECK(parseRedfishThermal(json("text"), "c").empty());
  CHECK(parseRedfishThermal(json{{"Temperatures", 5}}, "c").empty());
  CHECK(parseRedfishPower(json::array(), "c").empty());
  CHECK_FALSE(parseRedfishDrive(json(nullptr), "s", "1"));
  const auto temps = parseRedfishThermal(
      json::parse(R"({"Temperatures": [{"ReadingCelsius": "hot", "PhysicalContext": 7,
                       "MaxReadingRangeTemp": 120.0, "SensorNumber": true, "Status": []}]})"),
      "c");
  REQUIRE(temps.size() == 1);
  CHECK_FALSE(temps[0].readingCelsius);
  CHECK(temps[0].id == "0@c");  // no MemberId: its position
  REQUIRE(temps[0].field("max_reading_range_temp"));
  CHECK(*temps[0].field("max_reading_range_temp") == "120.0");  // as Python prints a float
  CHECK(*temps[0].field("sensor_number") == "True");
  CHECK(*temps[0].field("physical_context") == "7");
  CHECK_FALSE(temps[0].field("state"));
  // SimpleStorage devices without a capacity are no drives.
  const auto devices =
      parseRedfishSimpleStorage(json::parse(R"({"Id": "1", "Devices": [{"Name": "Backplane"},
                      {"Name": "SSD 1", "CapacityBytes": 1000,
                       "Status": {"State": "Enabled", "Health": "OK"}}]})"),
                                "sys");
  REQUIRE(devices.size() == 1);
  CHECK(devices[0].id == "SSD 1:1@sys");
}
