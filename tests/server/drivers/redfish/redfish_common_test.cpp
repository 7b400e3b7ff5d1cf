#include "server/drivers/redfish/redfish_common.h"

#include <catch2/catch.hpp>

#include "tests/support/fake_clock.h"

using namespace kiln;
using namespace kiln::server;
using nlohmann::json;
using Paths = std::vector<std::string>;

TEST_CASE("redfishStringAt reads string members, empty ones included",
          "[server][drivers][redfish]") {
  const json object = {{"Id", "1"}, {"Name", ""}, {"Size", 4}, {"Model", nullptr}};
  CHECK(redfishStringAt(object, "Id") == std::optional<std::string>("1"));
  CHECK(redfishStringAt(object, "Name") == std::optional<std::string>(""));
  CHECK_FALSE(redfishStringAt(object, "Size"));
  CHECK_FALSE(redfishStringAt(object, "Model"));
  CHECK_FALSE(redfishStringAt(object, "Missing"));
  CHECK_FALSE(redfishStringAt(json::array({"Id"}), "Id"));
  CHECK_FALSE(redfishStringAt(json(), "Id"));
}

TEST_CASE("redfishNonEmptyStringAt takes an empty string for absent",
          "[server][drivers][redfish]") {
  const json object = {{"Id", "1"}, {"Name", ""}, {"Size", 4}};
  CHECK(redfishNonEmptyStringAt(object, "Id") == std::optional<std::string>("1"));
  CHECK_FALSE(redfishNonEmptyStringAt(object, "Name"));
  CHECK_FALSE(redfishNonEmptyStringAt(object, "Size"));
  CHECK_FALSE(redfishNonEmptyStringAt(object, "Missing"));
  CHECK_FALSE(redfishNonEmptyStringAt(json("Id"), "Id"));
}

TEST_CASE("redfishOdataIdAt keeps the @odata.id as written; redfishLinkAt gives its path",
          "[server][drivers][redfish]") {
  const json bios = {
      {"@odata.id", "https://bmc.example:8443/redfish/v1/Systems/1/Bios"},
      {"@Redfish.Settings",
       {{"SettingsObject", {{"@odata.id", "/redfish/v1/Systems/1/Bios/Settings"}}}}},
      {"SecureBoot", {{"@odata.id", 42}}},
      {"Volumes", {{"@odata.id", ""}}},
      {"Storage", "/redfish/v1/Systems/1/Storage"},
  };
  // No keys: the object itself is the link.
  CHECK(redfishOdataIdAt(bios) == "https://bmc.example:8443/redfish/v1/Systems/1/Bios");
  CHECK(redfishLinkAt(bios) == "/redfish/v1/Systems/1/Bios");
  // Nested keys, one level each.
  CHECK(redfishOdataIdAt(bios, {"@Redfish.Settings", "SettingsObject"}) ==
        "/redfish/v1/Systems/1/Bios/Settings");
  CHECK(redfishLinkAt(bios, {"@Redfish.Settings", "SettingsObject"}) ==
        "/redfish/v1/Systems/1/Bios/Settings");
  // A missing level, a level that is no object, no string @odata.id, an empty one.
  CHECK(redfishLinkAt(bios, {"@Redfish.Settings", "Missing"}).empty());
  CHECK(redfishLinkAt(bios, {"Storage", "Members"}).empty());
  CHECK(redfishLinkAt(bios, {"Storage"}).empty());
  CHECK(redfishOdataIdAt(bios, {"SecureBoot"}).empty());
  CHECK(redfishLinkAt(bios, {"Volumes"}).empty());
  CHECK(redfishLinkAt(json::array({bios}), {"SecureBoot"}).empty());
  CHECK(redfishLinkAt(json()).empty());
}

TEST_CASE("redfishLinksAt gives the paths of an array of links", "[server][drivers][redfish]") {
  const json system = {
      {"Links",
       {{"Chassis", json::array({{{"@odata.id", "/redfish/v1/Chassis/1"}},
                                 "not a link",
                                 {{"@odata.id", nullptr}},
                                 {{"@odata.id", ""}},
                                 {{"@odata.id", "http://bmc/redfish/v1/Chassis/2"}}})},
        {"ManagedBy", {{"@odata.id", "/redfish/v1/Managers/1"}}}}},
      {"Members", json::array({{{"@odata.id", "/redfish/v1/Systems/1"}}})},
  };
  CHECK(redfishLinksAt(system, {"Members"}) == Paths{"/redfish/v1/Systems/1"});
  // Entries with no string @odata.id are skipped; an empty one stays, as "".
  CHECK(redfishLinksAt(system, {"Links", "Chassis"}) ==
        Paths{"/redfish/v1/Chassis/1", "", "/redfish/v1/Chassis/2"});
  CHECK(redfishNonEmptyLinksAt(system, {"Links", "Chassis"}) ==
        Paths{"/redfish/v1/Chassis/1", "/redfish/v1/Chassis/2"});
  // Not an array, a missing level, no object.
  CHECK(redfishLinksAt(system, {"Links", "ManagedBy"}).empty());
  CHECK(redfishLinksAt(system, {"Links", "Missing"}).empty());
  CHECK(redfishNonEmptyLinksAt(system, {"Missing", "Chassis"}).empty());
  CHECK(redfishLinksAt(json::array({system}), {"Members"}).empty());
}

TEST_CASE("redfishClock is the task's clock, else the system clock", "[server][drivers][redfish]") {
  TaskContext task;
  CHECK(dynamic_cast<const SystemClock*>(&redfishClock(task)) != nullptr);
  const kiln::test::FakeClock clock;
  task.clock = &clock;
  CHECK(&redfishClock(task) == &clock);
}
