// Fast track ([deploy] fast_track, fast_track_timeout, driver_info/fast_track): the agent stays
// up after cleaning and inspection and heartbeats while the node is manageable or available;
// a deployment or cleaning started within the timeout uses it with no power action and no boot
// device change (counted at a Redfish test BMC), one started later boots the ramdisk again.
#include <catch2/catch.hpp>

#include "tests/support/redfish_test_server.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::RedfishTestServer;
using kiln::test::Response;
using kiln::test::TestApi;

namespace {

constexpr const char* kMac = "52:54:00:12:34:56";
constexpr const char* kReset = "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset";
constexpr const char* kSystem = "/redfish/v1/Systems/1";

Json agentSteps() {
  return Json::parse(R"({
    "clean": {
      "deploy": [
        {"interface": "deploy", "step": "erase_devices_metadata", "priority": 99, "abortable": true,
         "reboot_requested": false, "argsinfo": {}}]},
    "hardware_manager_version": {"generic": "1"},
    "deploy": {
      "deploy": [
        {"interface": "deploy", "step": "write_image", "priority": 0, "abortable": false,
         "reboot_requested": false, "argsinfo": {}}]}
  })");
}

/// A redfish node with the ipxe boot and direct deploy interfaces, its BMC, and a scripted agent.
struct Rig {
  RedfishTestServer bmc;
  TestApi api;
  std::string uuid;
  std::string token;

  explicit Rig(const std::string& config, Json driverInfo = Json::object()) : api(config) {
    REQUIRE(bmc.start());
    driverInfo["redfish_address"] = bmc.address();
    driverInfo["deploy_kernel"] = "http://img.example/k";
    driverInfo["deploy_ramdisk"] = "http://img.example/r";
    auto created = api.createNode({{"name", "ft"},
                                   {"driver", "redfish"},
                                   {"boot_interface", "ipxe"},
                                   {"deploy_interface", "direct"},
                                   {"driver_info", driverInfo},
                                   {"instance_info",
                                    {{"image_source", "http://img.example/disk.raw"},
                                     {"image_os_hash_algo", "sha256"},
                                     {"image_os_hash_value", std::string(64, 'a')}}}});
    uuid = created["uuid"];
    REQUIRE(api.post("/v1/ports", {{"address", kMac}, {"node_uuid", uuid}}).status == 201);
  }

  Json node() {
    api.settle();
    return api.get("/v1/nodes/ft").json();
  }
  Response verb(const std::string& target, Json extra = Json::object()) {
    extra["target"] = target;
    auto r = api.put("/v1/nodes/ft/states/provision", extra);
    api.settle();
    return r;
  }
  Response lookup() {
    auto r = api.get("/v1/lookup?addresses=" + std::string(kMac));
    if (r.status == 200 && r.json()["config"]["agent_token"] != "******") {
      token = r.json()["config"]["agent_token"];
    }
    return r;
  }
  Response beat(Json results = Json::array(), Json inventory = Json()) {
    Json body{{"callback_url", ""},      {"agent_version", "kiln-agent test"},
              {"agent_token", token},    {"protocol_version", 1},
              {"steps", agentSteps()},   {"results", std::move(results)},
              {"running", Json::array()}};
    if (!inventory.is_null()) body["inventory"] = std::move(inventory);
    auto r = api.post("/v1/heartbeat/" + uuid, body);
    api.settle();
    return r;
  }
  /// Reports `command` as finished; returns the heartbeat's answer.
  Response finish(const Json& command, Json result = Json::object()) {
    return beat(Json::array({Json{{"id", command["id"]},
                                  {"name", command["name"]},
                                  {"status", "SUCCEEDED"},
                                  {"result", result}}}));
  }
  /// The one command of a heartbeat's answer.
  static Json commandOf(const Response& r) {
    REQUIRE(r.status == 202);
    const Json commands = r.json()["commands"];
    REQUIRE(commands.size() == 1);
    return commands[0];
  }
  /// Power actions and boot device (or mode) changes the BMC received.
  size_t resets() const { return bmc.requests("POST", kReset).size(); }
  size_t patches() const { return bmc.requests("PATCH", kSystem).size(); }

  /// manage, then provide: automated cleaning boots the agent, which runs its one clean step.
  void cleanToAvailable() {
    REQUIRE(verb("manage").status == 202);
    REQUIRE(node()["provision_state"] == "manageable");
    REQUIRE(verb("provide").status == 202);
    REQUIRE(node()["provision_state"] == "clean wait");
    REQUIRE(lookup().status == 200);
    const Json step = commandOf(beat());
    REQUIRE(step["params"]["step"]["step"] == "erase_devices_metadata");
    REQUIRE(finish(step).status == 202);
    REQUIRE(node()["provision_state"] == "available");
  }
};

/// Whether the node still has the agent fast track keeps: session and boot_target "agent".
bool agentKept(const Json& node) {
  const Json& info = node["driver_internal_info"];
  return info.value("agent_secret_token", "") == "******" &&
         info.value("boot_target", "") == "agent";
}

}  // namespace

TEST_CASE(
    "fast track keeps the agent after cleaning and deploys through it without a power "
    "action or a boot device change when the agent heartbeated within the timeout",
    "[server][agent][fast_track]") {
  Rig rig("[deploy]\nfast_track = true\n");
  rig.cleanToAvailable();
  Json n = rig.node();
  CHECK(n["power_state"] == "power on");
  CHECK(agentKept(n));
  CHECK(rig.bmc.system("1").powerState == "On");

  // The idle agent heartbeats in available: accepted and recorded, no command, same token.
  rig.api.clock().advance(std::chrono::seconds(100));
  auto idle = rig.beat();
  REQUIRE(idle.status == 202);
  CHECK(idle.json()["commands"].empty());
  n = rig.node();
  CHECK(n["provision_state"] == "available");
  CHECK(agentKept(n));
  // Lookup finds the node (the token went out once).
  auto lookup = rig.lookup();
  REQUIRE(lookup.status == 200);
  CHECK(lookup.json()["config"]["agent_token"] == "******");

  // The periodic check leaves a live agent alone.
  rig.api.clock().advance(std::chrono::seconds(100));
  rig.api.runPeriodic();
  CHECK(agentKept(rig.node()));

  // Deploy 100 s after the last heartbeat: within fast_track_timeout (300).
  rig.bmc.clearRequests();
  REQUIRE(rig.verb("active").status == 202);
  n = rig.node();
  CHECK(n["provision_state"] == "wait call-back");
  CHECK(n["deploy_step"]["step"] == "write_image");
  const Json write = Rig::commandOf(rig.beat());
  CHECK(write["params"]["step"]["step"] == "write_image");
  CHECK(rig.resets() == 0);
  CHECK(rig.patches() == 0);
  CHECK(rig.bmc.system("1").powerState == "On");

  // The rest of the deployment is as always: the agent powers off, the instance boots.
  const Json off = Rig::commandOf(rig.finish(write, {{"root_device", "/dev/vda"}}));
  CHECK(off["name"] == "power_off");
  rig.finish(off);
  n = rig.node();
  CHECK(n["provision_state"] == "active");
  CHECK(n["last_error"].is_null());
  CHECK(n["driver_internal_info"]["boot_target"] == "disk");
  CHECK_FALSE(n["driver_internal_info"].contains("agent_secret_token"));
}

TEST_CASE("fast track: a deployment after fast_track_timeout boots the agent again",
          "[server][agent][fast_track]") {
  Rig rig("[deploy]\nfast_track = true\n");
  rig.cleanToAvailable();
  REQUIRE(agentKept(rig.node()));
  rig.api.clock().advance(std::chrono::seconds(301));  // no heartbeat since cleaning ended
  rig.bmc.clearRequests();
  REQUIRE(rig.verb("active").status == 202);
  const Json n = rig.node();
  CHECK(n["provision_state"] == "wait call-back");
  CHECK(n["deploy_step"]["step"] == "deploy");
  CHECK(rig.resets() >= 1);  // the reboot into the ramdisk
  CHECK(rig.patches() >= 1);  // the boot device (pxe)
  CHECK(rig.bmc.system("1").bootTarget == "Pxe");
  // A new session: the old token is refused, the rebooted agent looks up anew.
  CHECK(rig.beat().status == 401);
  REQUIRE(rig.lookup().status == 200);
  CHECK(Rig::commandOf(rig.beat())["params"]["step"]["step"] == "write_image");
}

TEST_CASE("fast track: the periodic check ends it once the agent stops heartbeating",
          "[server][agent][fast_track]") {
  Rig rig("[deploy]\nfast_track = true\nfast_track_timeout = 60\n");
  rig.cleanToAvailable();
  REQUIRE(agentKept(rig.node()));
  rig.api.clock().advance(std::chrono::seconds(50));
  rig.api.runPeriodic();
  REQUIRE(agentKept(rig.node()));
  rig.api.clock().advance(std::chrono::seconds(20));
  rig.api.runPeriodic();
  const Json info = rig.node()["driver_internal_info"];
  CHECK_FALSE(info.contains("boot_target"));
  CHECK_FALSE(info.contains("agent_secret_token"));
  // An agent that was only slow is refused, looks up again and is back in fast track.
  CHECK(rig.beat().status == 401);
  REQUIRE(rig.lookup().status == 200);
  REQUIRE(rig.beat().status == 202);
  CHECK(agentKept(rig.node()));
}

TEST_CASE("fast track: manual cleaning within the timeout runs in the running agent",
          "[server][agent][fast_track]") {
  Rig rig("[deploy]\nfast_track = true\n");
  rig.cleanToAvailable();
  REQUIRE(rig.verb("manage").status == 202);
  Json n = rig.node();
  REQUIRE(n["provision_state"] == "manageable");
  CHECK(agentKept(n));
  REQUIRE(rig.beat().status == 202);  // heartbeats in manageable too
  rig.bmc.clearRequests();
  REQUIRE(rig.verb("clean", {{"clean_steps", Json::array({{{"interface", "deploy"},
                                                           {"step", "erase_devices_metadata"}}})}})
              .status == 202);
  CHECK(rig.node()["provision_state"] == "clean wait");
  const Json step = Rig::commandOf(rig.beat());
  CHECK(step["params"]["step"]["step"] == "erase_devices_metadata");
  REQUIRE(rig.finish(step).status == 202);
  n = rig.node();
  CHECK(n["provision_state"] == "manageable");
  CHECK(agentKept(n));
  CHECK(rig.resets() == 0);
  CHECK(rig.patches() == 0);
}

TEST_CASE("fast track off: cleaning powers the node off and lookup does not find it in available",
          "[server][agent][fast_track]") {
  Rig rig("");
  rig.cleanToAvailable();
  const Json n = rig.node();
  CHECK(n["power_state"] == "power off");
  CHECK_FALSE(n["driver_internal_info"].contains("agent_secret_token"));
  CHECK_FALSE(n["driver_internal_info"].contains("boot_target"));
  CHECK(rig.beat().status == 401);
  CHECK(rig.lookup().status == 404);
}

TEST_CASE("driver_info/fast_track overrides [deploy] fast_track both ways",
          "[server][agent][fast_track]") {
  SECTION("on for the node, off in the configuration") {
    Rig rig("", {{"fast_track", "true"}});
    rig.cleanToAvailable();
    const Json n = rig.node();
    CHECK(n["power_state"] == "power on");
    CHECK(agentKept(n));
    CHECK(rig.lookup().status == 200);
  }
  SECTION("off for the node, on in the configuration") {
    Rig rig("[deploy]\nfast_track = true\n", {{"fast_track", false}});
    rig.cleanToAvailable();
    const Json n = rig.node();
    CHECK(n["power_state"] == "power off");
    CHECK_FALSE(n["driver_internal_info"].contains("agent_secret_token"));
    CHECK(rig.lookup().status == 404);
  }
  SECTION("turned off while the agent idles: its next heartbeat ends fast track") {
    Rig rig("[deploy]\nfast_track = true\n");
    rig.cleanToAvailable();
    REQUIRE(agentKept(rig.node()));
    REQUIRE(rig.api
                .patch("/v1/nodes/ft", Json::array({{{"op", "add"},
                                                     {"path", "/driver_info/fast_track"},
                                                     {"value", "False"}}}))
                .status == 200);
    CHECK(rig.beat().status == 401);
    const Json info = rig.node()["driver_internal_info"];
    CHECK_FALSE(info.contains("boot_target"));
    CHECK_FALSE(info.contains("agent_secret_token"));
    CHECK(rig.lookup().status == 404);
  }
  SECTION("a value that is not a boolean fails validation and the deploy request") {
    Rig rig("[deploy]\nfast_track = true\n", {{"fast_track", "maybe"}});
    auto v = rig.api.get("/v1/nodes/ft/validate").json();
    CHECK(v["deploy"]["result"] == false);
    CHECK_THAT(v["deploy"]["reason"].get<std::string>(), Catch::Contains("fast_track"));
  }
}

TEST_CASE("fast track ends with a power action or maintenance", "[server][agent][fast_track]") {
  Rig rig("[deploy]\nfast_track = true\n");
  rig.cleanToAvailable();
  REQUIRE(agentKept(rig.node()));
  SECTION("power off") {
    REQUIRE(rig.api.put("/v1/nodes/ft/states/power", {{"target", "power off"}}).status == 202);
    const Json n = rig.node();
    CHECK(n["power_state"] == "power off");
    CHECK_FALSE(n["driver_internal_info"].contains("agent_secret_token"));
    CHECK_FALSE(n["driver_internal_info"].contains("boot_target"));
    CHECK(rig.beat().status == 401);
  }
  SECTION("reboot") {
    REQUIRE(rig.api.put("/v1/nodes/ft/states/power", {{"target", "rebooting"}}).status == 202);
    const Json n = rig.node();
    CHECK_FALSE(n["driver_internal_info"].contains("agent_secret_token"));
    CHECK_FALSE(n["driver_internal_info"].contains("boot_target"));
  }
  SECTION("maintenance") {
    REQUIRE(rig.api.put("/v1/nodes/ft/maintenance", {{"reason", "test"}}).status == 202);
    CHECK(rig.beat().status == 401);
    const Json info = rig.node()["driver_internal_info"];
    CHECK_FALSE(info.contains("boot_target"));
    CHECK_FALSE(info.contains("agent_secret_token"));
    CHECK(rig.lookup().status == 404);
  }
}

TEST_CASE("fast track keeps the agent after an agent inspection; a second inspection uses it",
          "[server][agent][fast_track]") {
  Rig rig("[deploy]\nfast_track = true\n");
  REQUIRE(rig.api
              .patch("/v1/nodes/ft",
                     Json::array(
                         {{{"op", "replace"}, {"path", "/inspect_interface"}, {"value", "agent"}}}))
              .status == 200);
  const Json inventory = Json::parse(R"({"cpu": {"count": 4, "architecture": "x86_64"},
    "memory": {"physical_mb": 4096},
    "interfaces": [{"name": "eth0", "mac_address": "52:54:00:12:34:56"}]})");
  REQUIRE(rig.verb("manage").status == 202);
  REQUIRE(rig.verb("inspect").status == 202);
  REQUIRE(rig.node()["provision_state"] == "inspect wait");
  REQUIRE(rig.lookup().status == 200);
  REQUIRE(rig.beat(Json::array(), inventory).status == 202);
  Json n = rig.node();
  REQUIRE(n["provision_state"] == "manageable");
  CHECK(n["properties"]["cpus"] == 4);
  CHECK(n["power_state"] == "power on");
  CHECK(agentKept(n));
  REQUIRE(rig.beat().status == 202);  // idle in manageable

  rig.bmc.clearRequests();
  REQUIRE(rig.verb("inspect").status == 202);
  REQUIRE(rig.node()["provision_state"] == "inspect wait");
  // The running agent's session ended: it looks up again and sends its inventory.
  CHECK(rig.beat().status == 401);
  REQUIRE(rig.lookup().status == 200);
  Json bigger = inventory;
  bigger["cpu"]["count"] = 8;
  REQUIRE(rig.beat(Json::array(), bigger).status == 202);
  n = rig.node();
  CHECK(n["provision_state"] == "manageable");
  CHECK(n["properties"]["cpus"] == 8);
  CHECK(agentKept(n));
  CHECK(rig.resets() == 0);
  CHECK(rig.patches() == 0);
}
