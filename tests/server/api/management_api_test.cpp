// The management API beyond the boot device: boot mode and secure boot (1.76), inject NMI
// (1.29) and indicators (1.63), on fake hardware (and ipmi nodes for what it lacks).
#include <catch2/catch.hpp>

#include <functional>

#include "server/model/node.h"
#include "tests/support/test_api.h"

using kiln::server::Record;
using kiln::server::Storage;
using kiln::server::Value;
using kiln::test::Json;
using kiln::test::Response;
using kiln::test::TestApi;
namespace ks = kiln::server;

namespace {

const std::string kBase = "http://kiln.test:6385";

Json node(TestApi& api, const std::string& ident) { return api.get("/v1/nodes/" + ident).json(); }

void mutateNode(TestApi& api, const std::string& name, const std::function<void(Record&)>& change) {
  auto tx = api.app().storage().begin(Storage::Mode::Write).value();
  auto rec = tx->nodes().findBy(ks::kNodeName, Value::text(name)).value();
  REQUIRE(rec);
  change(*rec);
  REQUIRE(tx->nodes().update(*rec));
  REQUIRE(tx->commit());
}

Response bootMode(TestApi& api, const std::string& ident, const Json& body) {
  auto r = api.put("/v1/nodes/" + ident + "/states/boot_mode", body);
  api.settle();
  return r;
}

Response secureBoot(TestApi& api, const std::string& ident, const Json& body) {
  auto r = api.put("/v1/nodes/" + ident + "/states/secure_boot", body);
  api.settle();
  return r;
}

/// An ipmi node whose management interface validates (ipmitool has no boot mode, secure boot or
/// indicators).
void createIpmiNode(TestApi& api, const std::string& name) {
  api.createNode({{"name", name},
                  {"driver", "ipmi"},
                  {"driver_info", {{"ipmi_address", "192.0.2.10"}, {"ipmi_username", "admin"}}}});
}

}  // namespace

// ---- boot mode and secure boot -----------------------------------------------------------------

TEST_CASE("boot mode PUT answers 202 with a Location and the worker records the new mode",
          "[server][api][management]") {
  TestApi api;
  api.createNode({{"name", "bm1"}});
  auto r = bootMode(api, "bm1", {{"target", "bios"}});
  REQUIRE(r.status == 202);
  CHECK(r.body.empty());
  CHECK(r.header("Location") == kBase + "/v1/nodes/bm1/states");
  Json n = node(api, "bm1");
  CHECK(n["boot_mode"] == "bios");
  CHECK(n["reservation"].is_null());
  CHECK(n["last_error"].is_null());
  CHECK(n["driver_internal_info"]["fake_boot_mode"] == "bios");
  Json states = api.get("/v1/nodes/bm1/states").json();
  CHECK(states["boot_mode"] == "bios");
  CHECK(states["secure_boot"].is_null());

  REQUIRE(bootMode(api, "bm1", {{"target", "uefi"}}).status == 202);
  CHECK(node(api, "bm1")["boot_mode"] == "uefi");
}

TEST_CASE("boot mode PUT changes nothing when the node already boots in that mode",
          "[server][api][management]") {
  TestApi api;
  api.createNode({{"name", "same"}});
  // Fake hardware boots in UEFI; as Ironic, an identical mode is neither set nor recorded.
  REQUIRE(bootMode(api, "same", {{"target", "uefi"}}).status == 202);
  Json n = node(api, "same");
  CHECK(n["boot_mode"].is_null());
  CHECK_FALSE(n["driver_internal_info"].contains("fake_boot_mode"));
}

TEST_CASE("secure boot PUT answers 202 and the worker records the new state",
          "[server][api][management]") {
  TestApi api;
  auto created = api.createNode({{"name", "sb1"}});
  auto r = secureBoot(api, created["uuid"].get<std::string>(), {{"target", true}});
  REQUIRE(r.status == 202);
  CHECK(r.header("Location") ==
        kBase + "/v1/nodes/" + created["uuid"].get<std::string>() + "/states");
  CHECK(node(api, "sb1")["secure_boot"] == true);
  // Ironic's args.boolean: strings strutils reads as Booleans are accepted.
  REQUIRE(secureBoot(api, "sb1", {{"target", "off"}}).status == 202);
  CHECK(node(api, "sb1")["secure_boot"] == false);
  REQUIRE(secureBoot(api, "sb1", {{"target", "1"}}).status == 202);
  CHECK(node(api, "sb1")["secure_boot"] == true);
}

TEST_CASE("boot mode and secure boot PUT check the body first, then the node, then the version",
          "[server][api][management]") {
  TestApi api;
  api.createNode({{"name", "v1"}});
  const std::string uuid = node(api, "v1")["uuid"];
  api.version = "1.75";
  auto old = bootMode(api, "v1", {{"target", "bios"}});
  CHECK(old.status == 404);
  CHECK(old.fault() == "This endpoint is supported starting with the API version 1.76");
  auto oldSecure = secureBoot(api, "v1", {{"target", true}});
  CHECK(oldSecure.status == 404);
  CHECK(oldSecure.fault() == "This endpoint is supported starting with the API version 1.76");
  // The node is looked up before the version is checked, the body before both.
  auto missing = bootMode(api, "nope", {{"target", "bios"}});
  CHECK(missing.status == 404);
  CHECK(missing.fault() == "Node nope could not be found.");
  auto badBody = bootMode(api, "nope", {{"target", 5}});
  CHECK(badBody.status == 400);
  CHECK(badBody.fault() == "Expected string for target: 5");
  api.version = "1.1";
  CHECK(bootMode(api, uuid, {{"target", "bios"}}).status == 404);
  api.version = "1.78";
  CHECK(node(api, "v1")["boot_mode"].is_null());
}

TEST_CASE("boot mode PUT refuses bad bodies with Ironic's messages", "[server][api][management]") {
  TestApi api;
  api.createNode({{"name", "b1"}});
  struct Case {
    Json body;
    const char* fault;
  };
  for (const auto& c : std::vector<Case>{
           {Json::object(), "Missing mandatory parameter: target"},
           {{{"target", "efi"}},
            "Invalid boot mode efi requested for node. Allowed boot modes are: bios, uefi"},
           {{{"target", nullptr}},
            "Invalid boot mode None requested for node. Allowed boot modes are: bios, uefi"},
           {{{"target", true}}, "Expected string for target: True"},
           {{{"target", "bios"}, {"mode", "x"}}, "Unexpected arguments: mode"},
       }) {
    INFO(c.body.dump());
    auto r = bootMode(api, "b1", c.body);
    CHECK(r.status == 400);
    CHECK(r.fault() == c.fault);
  }
  auto list = api.call("PUT", "/v1/nodes/b1/states/boot_mode", "[]");
  CHECK(list.status == 400);
  Json n = node(api, "b1");
  CHECK(n["boot_mode"].is_null());
  CHECK_FALSE(n["driver_internal_info"].contains("fake_boot_mode"));
}

TEST_CASE("secure boot PUT refuses bad bodies with Ironic's messages",
          "[server][api][management]") {
  TestApi api;
  api.createNode({{"name", "s1"}});
  auto missing = secureBoot(api, "s1", Json::object());
  CHECK(missing.status == 400);
  CHECK(missing.fault() == "Missing mandatory parameter: target");
  auto maybe = secureBoot(api, "s1", {{"target", "maybe"}});
  CHECK(maybe.status == 400);
  CHECK(maybe.fault() ==
        "Invalid target: Unrecognized value 'maybe', acceptable values are: '0', '1', 'f', "
        "'false', 'n', 'no', 'off', 'on', 't', 'true', 'y', 'yes'");
  auto five = secureBoot(api, "s1", {{"target", 5}});
  CHECK(five.status == 400);
  CHECK_THAT(five.fault(), Catch::StartsWith("Invalid target: Unrecognized value '5'"));
  auto none = secureBoot(api, "s1", {{"target", nullptr}});
  CHECK(none.status == 400);
  CHECK(none.fault() ==
        "Invalid secure_boot None requested for node. Allowed secure_boot states are: True, "
        "False) ");
  CHECK(node(api, "s1")["secure_boot"].is_null());
}

TEST_CASE("boot mode and secure boot PUT answer 409 while the node is transitioning or locked",
          "[server][api][management]") {
  TestApi api;
  api.createNode({{"name", "busy"}});
  const std::string transitioning =
      "Node is in %(state)s state. Since node is transitioning, the boot mode will not be set as "
      "this may interfere with ongoing changes and result in erroneous modification. Try again "
      "later.";
  for (const char* state : {"clean wait", "wait call-back", "inspect wait", "rescue wait",
                            "deploying", "verifying", "adopting"}) {
    INFO(state);
    mutateNode(api, "busy", [&](Record& n) { n.setText(ks::kNodeProvisionState, state); });
    auto r = bootMode(api, "busy", {{"target", "bios"}});
    CHECK(r.status == 409);
    CHECK(r.fault() == transitioning);
    CHECK(secureBoot(api, "busy", {{"target", true}}).status == 409);
  }
  mutateNode(api, "busy", [](Record& n) {
    n.setText(ks::kNodeProvisionState, "manageable");
    n.setText(ks::kNodeReservation, "elsewhere");
  });
  auto locked = bootMode(api, "busy", {{"target", "bios"}});
  CHECK(locked.status == 409);
  CHECK_THAT(locked.fault(), Catch::Contains("is locked by host elsewhere"));
  CHECK(secureBoot(api, "busy", {{"target", true}}).status == 409);
  Json n = node(api, "busy");
  CHECK(n["boot_mode"].is_null());
  CHECK(n["secure_boot"].is_null());
  CHECK(n["reservation"] == "elsewhere");
}

TEST_CASE("boot mode and secure boot failures land in last_error, the node released",
          "[server][api][management]") {
  TestApi api;
  createIpmiNode(api, "ipmi1");
  REQUIRE(bootMode(api, "ipmi1", {{"target", "uefi"}}).status == 202);
  Json n = node(api, "ipmi1");
  CHECK(n["last_error"] ==
        "Failed to change boot mode to 'uefi: Driver ipmi does not support set_boot_mode "
        "(disabled or not implemented).");
  CHECK(n["boot_mode"].is_null());
  CHECK(n["reservation"].is_null());
  REQUIRE(secureBoot(api, "ipmi1", {{"target", false}}).status == 202);
  n = node(api, "ipmi1");
  CHECK(n["last_error"] ==
        "Failed to change secure_boot state to 'False': Driver ipmi does not support "
        "set_secure_boot_state (disabled or not implemented).");
  CHECK(n["secure_boot"].is_null());
  CHECK(n["reservation"].is_null());

  // A management interface that does not validate is a 400 before anything starts.
  api.createNode({{"name", "ipmi2"}, {"driver", "ipmi"}});
  auto invalid = bootMode(api, "ipmi2", {{"target", "bios"}});
  CHECK(invalid.status == 400);
  CHECK_THAT(invalid.fault(), Catch::StartsWith("Failed to validate management for node "));
  CHECK_THAT(invalid.fault(), Catch::Contains("ipmi_address"));
  CHECK(node(api, "ipmi2")["last_error"].is_null());
}

TEST_CASE("a new boot mode request clears the previous last_error", "[server][api][management]") {
  TestApi api;
  api.createNode({{"name", "le"}});
  mutateNode(api, "le", [](Record& n) { n.setText(ks::kNodeLastError, "old failure"); });
  REQUIRE(bootMode(api, "le", {{"target", "bios"}}).status == 202);
  CHECK(node(api, "le")["last_error"].is_null());
}

TEST_CASE("node states show boot_mode and secure_boot from 1.75", "[server][api][management]") {
  TestApi api;
  api.createNode({{"name", "st"}});
  REQUIRE(secureBoot(api, "st", {{"target", true}}).status == 202);
  api.version = "1.75";
  Json states = api.get("/v1/nodes/st/states").json();
  REQUIRE(states.contains("boot_mode"));
  CHECK(states["boot_mode"].is_null());
  CHECK(states["secure_boot"] == true);
  api.version = "1.74";
  states = api.get("/v1/nodes/st/states").json();
  CHECK_FALSE(states.contains("boot_mode"));
  CHECK_FALSE(states.contains("secure_boot"));
}

TEST_CASE("verification and the power sync cache the boot mode and secure boot",
          "[server][api][management]") {
  TestApi api;
  api.createNode({{"name", "cache"}});
  REQUIRE(api.put("/v1/nodes/cache/states/provision", {{"target", "manage"}}).status == 202);
  api.settle();
  Json n = node(api, "cache");
  REQUIRE(n["provision_state"] == "manageable");
  CHECK(n["boot_mode"] == "uefi");
  CHECK(n["secure_boot"] == false);

  // Changed behind Kiln's back: the next power sync notices.
  mutateNode(api, "cache", [](Record& r) {
    r.setText(ks::kNodeDriverInternalInfo,
              R"({"fake_boot_mode": "bios", "fake_secure_boot": true})");
  });
  api.runPeriodic();
  n = node(api, "cache");
  CHECK(n["boot_mode"] == "bios");
  CHECK(n["secure_boot"] == true);
}

TEST_CASE("a management interface without boot mode support caches nulls",
          "[server][api][management]") {
  TestApi api;
  // manual-management: fake power, noop management.
  api.createNode({{"name", "manual"}, {"driver", "manual-management"}});
  REQUIRE(api.put("/v1/nodes/manual/states/provision", {{"target", "manage"}}).status == 202);
  api.settle();
  REQUIRE(node(api, "manual")["provision_state"] == "manageable");
  mutateNode(api, "manual", [](Record& r) {
    r.setText(ks::kNodeBootMode, "uefi");
    r.setBool(ks::kNodeSecureBoot, false);
  });
  api.runPeriodic();
  Json n = node(api, "manual");
  CHECK(n["boot_mode"].is_null());
  CHECK(n["secure_boot"].is_null());
  CHECK(n["last_error"].is_null());
}

// ---- inject NMI --------------------------------------------------------------------------------

TEST_CASE("inject NMI answers 204 from 1.29 and 404 below", "[server][api][management]") {
  TestApi api;
  api.createNode({{"name", "nmi"}});
  auto r = api.put("/v1/nodes/nmi/management/inject_nmi", Json::object());
  CHECK(r.status == 204);
  CHECK(r.body.empty());
  CHECK(api.putRaw("/v1/nodes/nmi/management/inject_nmi").status == 204);
  CHECK(node(api, "nmi")["reservation"].is_null());
  api.version = "1.28";
  auto old = api.put("/v1/nodes/nmi/management/inject_nmi", Json::object());
  CHECK(old.status == 404);
  CHECK(old.fault() == "Resource could not be found.");
}

TEST_CASE("inject NMI refuses arguments, unknown nodes, locked nodes and unsupported drivers",
          "[server][api][management]") {
  TestApi api;
  api.createNode({{"name", "nmi2"}});
  auto extra = api.put("/v1/nodes/nmi2/management/inject_nmi", {{"force", true}});
  CHECK(extra.status == 400);
  CHECK(extra.fault() == "Unexpected arguments: force");
  auto missing = api.put("/v1/nodes/nope/management/inject_nmi", Json::object());
  CHECK(missing.status == 404);
  CHECK(missing.fault() == "Node nope could not be found.");

  mutateNode(api, "nmi2", [](Record& n) { n.setText(ks::kNodeReservation, "elsewhere"); });
  auto locked = api.put("/v1/nodes/nmi2/management/inject_nmi", Json::object());
  CHECK(locked.status == 409);
  CHECK_THAT(locked.fault(), Catch::Contains("is locked by host elsewhere"));
  CHECK(node(api, "nmi2")["reservation"] == "elsewhere");

  api.createNode({{"name", "manual"}, {"driver", "manual-management"}});
  auto unsupported = api.put("/v1/nodes/manual/management/inject_nmi", Json::object());
  CHECK(unsupported.status == 400);
  CHECK(unsupported.fault() ==
        "Driver manual-management does not support inject_nmi (disabled or not implemented).");
  CHECK(node(api, "manual")["reservation"].is_null());
}

// ---- indicators --------------------------------------------------------------------------------

TEST_CASE("indicators list Ironic's fake indicators with links", "[server][api][management]") {
  TestApi api;
  api.createNode({{"name", "leds"}});
  auto r = api.get("/v1/nodes/leds/management/indicators");
  REQUIRE(r.status == 200);
  const std::string self = kBase + "/v1/nodes/leds/management/indicators/";
  const std::string bookmark = kBase + "/nodes/leds/management/indicators/";
  const Json expected = {{"indicators",
                          {{{"name", "led-0@chassis"},
                            {"component", "chassis"},
                            {"readonly", true},
                            {"states", {"OFF", "ON"}},
                            {"links",
                             {{{"href", self + "led-0@chassis"}, {"rel", "self"}},
                              {{"href", bookmark + "led-0@chassis"}, {"rel", "bookmark"}}}}},
                           {{"name", "led@system"},
                            {"component", "system"},
                            {"readonly", false},
                            {"states", {"BLINKING", "OFF", "ON"}},
                            {"links",
                             {{{"href", self + "led@system"}, {"rel", "self"}},
                              {{"href", bookmark + "led@system"}, {"rel", "bookmark"}}}}}}}};
  CHECK(r.json() == expected);
  // Ironic gates the indicators by no microversion.
  const std::string uuid = node(api, "leds")["uuid"];
  api.version = "1.1";
  CHECK(api.get("/v1/nodes/" + uuid + "/management/indicators").status == 200);
  CHECK(api.get("/v1/nodes/nope/management/indicators").status == 404);
}

TEST_CASE("an indicator reads ON until it is set, then its new state",
          "[server][api][management]") {
  TestApi api;
  api.createNode({{"name", "led"}});
  auto r = api.get("/v1/nodes/led/management/indicators/led@system");
  REQUIRE(r.status == 200);
  CHECK(r.json() == Json{{"state", "ON"}});
  CHECK(api.get("/v1/nodes/led/management/indicators/led-0@chassis").json() ==
        Json{{"state", "ON"}});

  auto set = api.put("/v1/nodes/led/management/indicators/led@system", {{"state", "BLINKING"}});
  CHECK(set.status == 204);
  CHECK(set.body.empty());
  CHECK(api.get("/v1/nodes/led/management/indicators/led@system").json() ==
        Json{{"state", "BLINKING"}});
  CHECK(node(api, "led")["reservation"].is_null());
}

TEST_CASE("indicator requests are checked with Ironic's messages", "[server][api][management]") {
  TestApi api;
  api.createNode({{"name", "chk"}});
  const std::string base = "/v1/nodes/chk/management/indicators/";
  auto malformed = api.get(base + "led");
  CHECK(malformed.status == 400);
  CHECK(malformed.fault() == "Malformed indicator name \"led\"");
  CHECK(api.put(base + "led", {{"state", "ON"}}).fault() == "Malformed indicator name \"led\"");
  auto component = api.get(base + "led@nope");
  CHECK(component.status == 400);
  CHECK(component.fault() == "Invalid component nope specified.");
  auto indicator = api.get(base + "nope@system");
  CHECK(indicator.status == 400);
  CHECK(indicator.fault() == "Invalid indicator nope specified.");
  auto readonly = api.put(base + "led-0@chassis", {{"state", "OFF"}});
  CHECK(readonly.status == 400);
  CHECK(readonly.fault() == "Indicator led-0 of component chassis is read-only.");
  auto badState = api.put(base + "led@system", {{"state", "GREEN"}});
  CHECK(badState.status == 400);
  CHECK_THAT(badState.fault(), Catch::StartsWith("Invalid state GREEN for indicator led"));

  auto noState = api.put(base + "led@system", Json::object());
  CHECK(noState.status == 400);
  CHECK(noState.fault() == "Missing mandatory parameter: state");
  auto number = api.put(base + "led@system", {{"state", 1}});
  CHECK(number.status == 400);
  CHECK(number.fault() == "Expected string for state: 1");
  auto extra = api.put(base + "led@system", {{"state", "ON"}, {"color", "red"}});
  CHECK(extra.status == 400);
  CHECK(extra.fault() == "Unexpected arguments: color");
  CHECK(api.get("/v1/nodes/nope/management/indicators/led@system").status == 404);

  // Nothing was stored by the refused requests.
  CHECK_FALSE(node(api, "chk")["driver_internal_info"].contains("fake_indicator_states"));

  mutateNode(api, "chk", [](Record& n) { n.setText(ks::kNodeReservation, "elsewhere"); });
  CHECK(api.get(base + "led@system").status == 409);
  CHECK(api.put(base + "led@system", {{"state", "OFF"}}).status == 409);
  // The list takes no lock, as Ironic's shared task.
  CHECK(api.get("/v1/nodes/chk/management/indicators").status == 200);
}

TEST_CASE("indicators are unsupported on a driver without them", "[server][api][management]") {
  TestApi api;
  createIpmiNode(api, "noled");
  auto r = api.get("/v1/nodes/noled/management/indicators");
  CHECK(r.status == 400);
  CHECK(r.fault() ==
        "Driver ipmi does not support get_supported_indicators (disabled or not implemented).");
  auto get = api.get("/v1/nodes/noled/management/indicators/led@system");
  CHECK(get.status == 400);
  CHECK(get.fault() ==
        "Driver ipmi does not support get_indicator_state (disabled or not implemented).");
  auto set = api.put("/v1/nodes/noled/management/indicators/led@system", {{"state", "ON"}});
  CHECK(set.fault() ==
        "Driver ipmi does not support set_indicator_state (disabled or not implemented).");
  CHECK(node(api, "noled")["reservation"].is_null());
}

// ---- waiting for a node's lock -----------------------------------------------------------------

TEST_CASE("every change to a locked node waits for the lock as Ironic's task acquisition does; "
          "reads answer at once",
          "[server][api][management][lock]") {
  // ironic-tempest-plugin's power test asks for "power off" as soon as a reboot shows
  // "power on", while the reboot still holds the node: Ironic's conductor retries the lock
  // ([conductor] node_locked_retry_attempts = 3, node_locked_retry_interval = 1 s) before its 409.
  TestApi api;
  const std::string uuid = api.createNode({{"name", "held"}})["uuid"].get<std::string>();
  mutateNode(api, "held", [](Record& n) { n.setText(ks::kNodeReservation, "elsewhere"); });
  const std::string lockedFault =
      "Node " + uuid + " is locked by host elsewhere, please retry after the current operation "
      "is completed.";
  struct Change {
    const char* method;
    const char* path;
    Json body;
  };
  // Ironic's update_node, add/remove_node_traits and set_target_raid_config lock the node too.
  const std::vector<Change> changes = {
      {"PUT", "/v1/nodes/held/states/power", {{"target", "power on"}}},
      {"PUT", "/v1/nodes/held/states/provision", {{"target", "manage"}}},
      {"PUT", "/v1/nodes/held/management/boot_device", {{"boot_device", "pxe"}}},
      {"PUT", "/v1/nodes/held/states/boot_mode", {{"target", "bios"}}},
      {"PUT", "/v1/nodes/held/states/console", {{"enabled", true}}},
      {"PATCH", "/v1/nodes/held", Json::parse(R"([{"op": "add", "path": "/extra/a", "value": 1}])")},
      {"PUT", "/v1/nodes/held/maintenance", {{"reason", "x"}}},
      {"DELETE", "/v1/nodes/held/maintenance", nullptr},
      {"PUT", "/v1/nodes/held/traits/CUSTOM_A", nullptr},
      {"PUT", "/v1/nodes/held/traits", {{"traits", {"CUSTOM_B"}}}},
      {"DELETE", "/v1/nodes/held/traits", nullptr},
      {"DELETE", "/v1/nodes/held/traits/CUSTOM_A", nullptr},
      {"PUT", "/v1/nodes/held/states/raid", Json::object()},
  };
  for (const auto& change : changes) {
    INFO(change.method << " " << change.path);
    const auto before = api.clock().monotonic();
    auto r = api.call(change.method, change.path, change.body.is_null() ? "" : change.body.dump());
    CHECK(api.clock().monotonic() - before == std::chrono::seconds(2));
    CHECK(r.status == 409);
    CHECK(r.fault() == lockedFault);
  }
  const auto before = api.clock().monotonic();
  CHECK(api.get("/v1/nodes/held").status == 200);
  CHECK(api.get("/v1/nodes/held/states").status == 200);
  CHECK(api.clock().monotonic() == before);
  // A refusal that is not about the lock is not repeated either.
  auto bad = api.put("/v1/nodes/held/states/power", {{"target", "sideways"}});
  CHECK(bad.status == 400);
  CHECK(api.clock().monotonic() == before);
  // Nothing changed while the node was held.
  Json n = node(api, "held");
  CHECK(n["reservation"] == "elsewhere");
  CHECK(n["provision_state"] == "enroll");
  CHECK(n["power_state"].is_null());
  CHECK(n["console_enabled"] == false);
  CHECK(n["extra"].empty());
  CHECK(n["maintenance"] == false);
  CHECK(api.get("/v1/nodes/held/traits").json()["traits"].empty());
}
