#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "server/model/firmware_component.h"
#include "server/model/node.h"
#include "tests/support/test_api.h"

using kiln::server::Storage;
using kiln::test::Json;
using kiln::test::Response;
using kiln::test::TestApi;
namespace ks = kiln::server;

// These tests speak microversions 1.86 and 1.114: they need ver::kMax (server/model/versions.h)
// at 1.114 or above.

namespace {

constexpr const char* k86 = "1.86";
constexpr const char* k113 = "1.113";
constexpr const char* k114 = "1.114";

Response verb(TestApi& api, const std::string& ident, Json body) {
  auto r = api.put("/v1/nodes/" + ident + "/states/provision", body);
  api.settle();
  return r;
}

/// A manageable fake-hardware node with the fake firmware interface, whose BMC was updated
/// once through manual cleaning (so its components are cached).
void nodeWithFirmware(TestApi& api, const std::string& name) {
  api.version = k86;
  api.createNode({{"name", name}, {"firmware_interface", "fake"}});
  REQUIRE(verb(api, name, {{"target", "manage"}}).status == 202);
  Json step = {
      {"interface", "firmware"},
      {"step", "update"},
      {"args", {{"settings", {{{"component", "bmc"}, {"url", "http://fw.test/bmc-5.1.bin"}}}}}}};
  REQUIRE(verb(api, name, {{"target", "clean"}, {"clean_steps", {step}}}).status == 202);
  Json n = api.get("/v1/nodes/" + name).json();
  INFO(n["last_error"]);
  REQUIRE(n["provision_state"] == "manageable");
}

std::set<std::string> keysOf(const Json& object) {
  std::set<std::string> out;
  for (auto it = object.begin(); it != object.end(); ++it) out.insert(it.key());
  return out;
}

Json byComponent(const Json& list, const std::string& component) {
  for (const auto& c : list) {
    if (c["component"] == component) return c;
  }
  FAIL("no component " << component << " in " << list.dump());
  return Json();
}

}  // namespace

TEST_CASE("node firmware is not found below API 1.86", "[server][api][firmware]") {
  TestApi api;
  nodeWithFirmware(api, "n1");
  api.version = "1.85";
  CHECK(api.get("/v1/nodes/n1/firmware").status == 404);
  api.version = k86;
  CHECK(api.get("/v1/nodes/n1/firmware").status == 200);
  CHECK(api.get("/v1/nodes/nope/firmware").status == 404);
}

TEST_CASE("node firmware lists the cached components with Ironic's fields",
          "[server][api][firmware]") {
  TestApi api;
  nodeWithFirmware(api, "n1");
  auto r = api.get("/v1/nodes/n1/firmware");
  REQUIRE(r.status == 200);
  Json list = r.json()["firmware"];
  REQUIRE(list.size() == 2);
  CHECK(keysOf(r.json()) == std::set<std::string>{"firmware"});
  // 1.86: Ironic's default fields plus the timestamps, no identity, no links.
  const std::set<std::string> fields86 = {"created_at",      "updated_at",
                                          "component",       "initial_version",
                                          "current_version", "last_version_flashed"};
  Json bios = byComponent(list, "bios");
  CHECK(keysOf(bios) == fields86);
  CHECK(bios["initial_version"] == "1.0.0");
  CHECK(bios["current_version"] == "1.0.0");
  CHECK(bios["last_version_flashed"].is_null());
  Json bmc = byComponent(list, "bmc");
  CHECK(keysOf(bmc) == fields86);
  CHECK(bmc["current_version"] == "bmc-5.1.bin");
  CHECK(bmc["created_at"].is_string());

  // Another update: current_version and last_version_flashed move, initial_version stays.
  api.clock().advance(std::chrono::seconds(30));
  Json step = {
      {"interface", "firmware"},
      {"step", "update"},
      {"args", {{"settings", {{{"component", "bmc"}, {"url", "http://fw.test/bmc-5.2.bin"}}}}}}};
  REQUIRE(verb(api, "n1", {{"target", "clean"}, {"clean_steps", {step}}}).status == 202);
  Json after = byComponent(api.get("/v1/nodes/n1/firmware").json()["firmware"], "bmc");
  CHECK(after["initial_version"] == bmc["initial_version"]);
  CHECK(after["current_version"] == "bmc-5.2.bin");
  CHECK(after["last_version_flashed"] == "bmc-5.2.bin");
  CHECK(after["created_at"] == bmc["created_at"]);
  CHECK(after["updated_at"] == kiln::formatIsoTime(api.clock().now()));
  CHECK(byComponent(api.get("/v1/nodes/n1/firmware").json()["firmware"], "bios")["updated_at"]
            .is_null());
}

TEST_CASE("node firmware shows vendor, model and serial_number from API 1.114",
          "[server][api][firmware]") {
  TestApi api;
  nodeWithFirmware(api, "n1");
  api.version = k114;
  Json list = api.get("/v1/nodes/n1/firmware").json()["firmware"];
  Json bmc = byComponent(list, "bmc");
  CHECK(keysOf(bmc) == std::set<std::string>{"created_at", "updated_at", "component",
                                             "initial_version", "current_version",
                                             "last_version_flashed", "vendor", "model",
                                             "serial_number"});
  CHECK(bmc["model"] == "Fake BMC");
  CHECK(bmc["vendor"].is_null());
  CHECK(bmc["serial_number"].is_null());
  Json bios = byComponent(list, "bios");
  CHECK(bios["vendor"].is_null());
  CHECK(bios["model"].is_null());
  CHECK(api.get("/v1/nodes/n1/firmware?fields=model").status == 200);

  // Below 1.114 they are hidden, and asking for them is a 400 (not the 406 of node fields).
  api.version = k113;
  CHECK_FALSE(
      byComponent(api.get("/v1/nodes/n1/firmware").json()["firmware"], "bmc").contains("model"));
  auto r = api.get("/v1/nodes/n1/firmware?fields=model");
  CHECK(r.status == 400);
  CHECK(r.fault() ==
        "Fields model are not allowed in this API version. They require at least API "
        "version 1.114.");
  r = api.get("/v1/nodes/n1/firmware?fields=serial_number,component,vendor");
  CHECK(r.status == 400);
  CHECK(r.fault() ==
        "Fields serial_number, vendor are not allowed in this API version. They "
        "require at least API version 1.114.");
}

TEST_CASE("node firmware takes ?fields= as Ironic's query schema", "[server][api][firmware]") {
  TestApi api;
  nodeWithFirmware(api, "n1");
  auto r = api.get("/v1/nodes/n1/firmware?fields=current_version,COMPONENT,component");
  REQUIRE(r.status == 200);
  for (const auto& c : r.json()["firmware"]) {
    CHECK(keysOf(c) ==
          std::set<std::string>{"created_at", "updated_at", "current_version", "component"});
  }
  // The timestamps are always there; an empty list asks for nothing else.
  r = api.get("/v1/nodes/n1/firmware?fields=");
  REQUIRE(r.status == 200);
  CHECK(keysOf(r.json()["firmware"][0]) == std::set<std::string>{"created_at", "updated_at"});
  r = api.get("/v1/nodes/n1/firmware?fields=created_at,initial_version");
  CHECK(keysOf(r.json()["firmware"][0]) ==
        std::set<std::string>{"created_at", "updated_at", "initial_version"});

  // An unknown field is refused before the node is looked up.
  r = api.get("/v1/nodes/nope/firmware?fields=component,bogus");
  CHECK(r.status == 400);
  CHECK(r.fault() ==
        "Schema error: 'bogus' is not one of ['created_at', 'updated_at', "
        "'component', 'initial_version', 'current_version', "
        "'last_version_flashed', 'vendor', 'model', 'serial_number']");
  r = api.get("/v1/nodes/n1/firmware?detail=True");
  CHECK(r.status == 400);
  CHECK(r.fault() == "Schema error: 'True' is not of type 'boolean'");
}

TEST_CASE("firmware_interface is a node field from API 1.86", "[server][api][firmware]") {
  TestApi api;
  api.version = "1.85";
  CHECK(
      api.post("/v1/nodes", {{"driver", "fake-hardware"}, {"firmware_interface", "fake"}}).status ==
      406);
  Json n = api.createNode({{"name", "plain"}});
  CHECK_FALSE(n.contains("firmware_interface"));
  CHECK(api.get("/v1/nodes/plain?fields=firmware_interface").status == 406);
  api.version = k86;
  CHECK(api.get("/v1/nodes/plain").json()["firmware_interface"] == "no-firmware");
  CHECK(api.get("/v1/nodes?firmware_interface=no-firmware").json()["nodes"].size() == 1);
  n = api.createNode({{"name", "faked"}, {"firmware_interface", "fake"}});
  CHECK(n["firmware_interface"] == "fake");
  auto bad =
      api.post("/v1/nodes", {{"driver", "fake-hardware"}, {"firmware_interface", "redfish"}});
  CHECK(bad.status == 400);
  CHECK(
      api.patch("/v1/nodes/faked", Json::parse(R"([{"op": "replace", "path": "/firmware_interface",
      "value": "no-firmware"}])"))
          .status == 200);
  Json redfish = api.createNode({{"name", "rf"},
                                 {"driver", "redfish"},
                                 {"driver_info", {{"redfish_address", "https://bmc.test"}}}});
  CHECK(redfish["firmware_interface"] == "redfish");
  Json driver = api.get("/v1/drivers/redfish").json();
  CHECK(driver["default_firmware_interface"] == "redfish");
  CHECK(driver["enabled_firmware_interfaces"] == Json::array({"redfish", "no-firmware"}));
  api.version = "1.85";
  CHECK_FALSE(api.get("/v1/drivers/redfish").json().contains("default_firmware_interface"));
  // Validation reports the interface like the others.
  api.version = k86;
  Json v = api.get("/v1/nodes/plain/validate").json();
  REQUIRE(v.contains("firmware"));
  CHECK(v["firmware"]["result"] == false);
}

TEST_CASE("cached firmware components are deleted with their node", "[server][api][firmware]") {
  TestApi api;
  nodeWithFirmware(api, "n1");
  auto count = [&] {
    auto tx = api.app().storage().begin(Storage::Mode::Read).value();
    return tx->records(ks::Resource::FirmwareComponent).count({}).value();
  };
  CHECK(count() == 2);
  REQUIRE(api.del("/v1/nodes/n1").status == 204);
  CHECK(count() == 0);
}
