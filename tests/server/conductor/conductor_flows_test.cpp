#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>
#include <stdlib.h>

#include "server/model/node.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TestApi;
using namespace kiln::server;

namespace {

Json node(TestApi& api, const std::string& ident) {
  api.settle();
  return api.get("/v1/nodes/" + ident).json();
}

kiln::test::Response provision(TestApi& api, const std::string& ident, Json body) {
  auto r = api.put("/v1/nodes/" + ident + "/states/provision", body);
  api.settle();
  return r;
}

kiln::test::Response verb(TestApi& api, const std::string& ident, const std::string& target) {
  return provision(api, ident, {{"target", target}});
}

/// Edits a node row directly (to stage states a test cannot reach through the API).
void mutate(TestApi& api, const std::string& ident, const std::function<void(Record&)>& change) {
  auto tx = api.app().storage().begin(Storage::Mode::Write).value();
  auto rec = tx->nodes().findBy(kNodeName, Value::text(ident)).value();
  REQUIRE(rec);
  change(*rec);
  REQUIRE(tx->nodes().update(*rec));
  REQUIRE(tx->commit());
}

Json stepsOf(const Json& n, const char* key) {
  Json out = Json::array();
  for (const auto& s : n["driver_internal_info"][key]) {
    out.push_back(s["interface"].get<std::string>() + "." + s["step"].get<std::string>() + ":" +
                  std::to_string(s["priority"].get<int>()));
  }
  return out;
}

/// An available fake-hardware node.
void makeAvailable(TestApi& api, const std::string& name, Json extra = Json::object()) {
  extra["name"] = name;
  api.createNode(extra);
  REQUIRE(verb(api, name, "manage").status == 202);
  REQUIRE(verb(api, name, "provide").status == 202);
  REQUIRE(node(api, name)["provision_state"] == "available");
}

const Json kRaidTemplate = Json::parse(R"({"name": "CUSTOM_RAID1", "steps": [
    {"interface": "raid", "step": "apply_configuration", "priority": 95,
     "args": {"raid_config": {"logical_disks": [{"size_gb": "MAX", "raid_level": "1", "is_root_volume": true}]}}}]})");
const Json kBiosTemplate = Json::parse(R"({"name": "CUSTOM_VMX", "steps": [
    {"interface": "bios", "step": "apply_configuration", "priority": 90,
     "args": {"settings": [{"name": "VMX", "value": "on"}]}},
    {"interface": "deploy", "step": "write_image", "priority": 0, "args": {}}]})");

}  // namespace

TEST_CASE("manage verifies a node and reads its power state", "[server][conductor][flows]") {
  TestApi api;
  api.createNode({{"name", "v"}});
  auto r = verb(api, "v", "manage");
  CHECK(r.status == 202);
  CHECK(r.body.empty());
  CHECK_THAT(r.header("Location"), Catch::EndsWith("/states"));
  auto n = node(api, "v");
  CHECK(n["provision_state"] == "manageable");
  CHECK(n["target_provision_state"].is_null());
  CHECK(n["power_state"] == "power off");
  CHECK(n["reservation"].is_null());
  CHECK(n["provision_updated_at"] == "2026-01-01T00:00:00+00:00");
}

TEST_CASE("provide runs automated cleaning and the node becomes available", "[server][conductor][flows]") {
  TestApi api;
  api.createNode({{"name", "p"}});
  verb(api, "p", "manage");
  CHECK(verb(api, "p", "provide").status == 202);
  auto n = node(api, "p");
  CHECK(n["provision_state"] == "available");
  CHECK(n["clean_step"] == Json::object());
  CHECK(stepsOf(n, "clean_steps") ==
        Json{"deploy.erase_devices_metadata:99", "deploy.erase_devices:10"});
}

TEST_CASE("automated cleaning can be disabled globally, per node, or per step", "[server][conductor][flows]") {
  SECTION("[conductor] automated_clean = false") {
    TestApi api("[conductor]\nautomated_clean = false\n");
    makeAvailable(api, "a");
    CHECK_FALSE(node(api, "a")["driver_internal_info"].contains("clean_steps"));
  }
  SECTION("the node's automated_clean = false") {
    TestApi api;
    makeAvailable(api, "b", {{"automated_clean", false}});
    CHECK_FALSE(node(api, "b")["driver_internal_info"].contains("clean_steps"));
  }
  SECTION("a step's priority overridden to 0") {
    TestApi api("[conductor]\nclean_step_priority_override = deploy.erase_devices:0\n");
    makeAvailable(api, "c");
    CHECK(stepsOf(node(api, "c"), "clean_steps") == Json{"deploy.erase_devices_metadata:99"});
  }
  SECTION("[deploy] erase_devices_metadata_priority") {
    TestApi api("[deploy]\nerase_devices_metadata_priority = 5\n");
    makeAvailable(api, "d");
    CHECK(stepsOf(node(api, "d"), "clean_steps") ==
          Json{"deploy.erase_devices:10", "deploy.erase_devices_metadata:5"});
  }
}

TEST_CASE("deploy merges the templates named by instance traits into ordered deploy steps",
          "[server][conductor][flows][templates]") {
  TestApi api;
  REQUIRE(api.post("/v1/deploy_templates", kRaidTemplate).status == 201);
  REQUIRE(api.post("/v1/deploy_templates", kBiosTemplate).status == 201);
  makeAvailable(api, "d");
  REQUIRE(api.put("/v1/nodes/d/traits", {{"traits", {"CUSTOM_RAID1", "CUSTOM_VMX"}}}).status == 204);
  REQUIRE(api.patch("/v1/nodes/d", Json::parse(R"([{"op": "add", "path": "/instance_info/traits",
      "value": ["CUSTOM_RAID1", "CUSTOM_VMX"]}])")).status == 200);
  CHECK(api.get("/v1/nodes/d/validate").json()["deploy"]["result"] == true);
  CHECK(verb(api, "d", "active").status == 202);
  auto n = node(api, "d");
  CHECK(n["provision_state"] == "active");
  CHECK(n["power_state"] == "power on");
  CHECK(n["deploy_step"] == Json::object());
  CHECK(stepsOf(n, "deploy_steps") ==
        Json{"deploy.deploy:100", "raid.apply_configuration:95", "bios.apply_configuration:90",
             "deploy.prepare_instance_boot:60", "deploy.tear_down_agent:40",
             "deploy.switch_to_tenant_network:30", "deploy.boot_instance:20"});
  CHECK(n["raid_config"]["logical_disks"][0]["raid_level"] == "1");
  CHECK(n["driver_internal_info"]["fake_bios_settings"]["VMX"] == "on");
}

TEST_CASE("instance traits must be node traits for deploy and validate", "[server][conductor][flows][templates]") {
  TestApi api;
  makeAvailable(api, "t", {{"instance_info", {{"traits", {"CUSTOM_GOLD"}}}}});
  auto r = verb(api, "t", "deploy");
  CHECK(r.status == 400);
  CHECK_THAT(r.fault(), Catch::Contains("missing traits ['CUSTOM_GOLD']"));
  CHECK(node(api, "t")["provision_state"] == "available");
  CHECK(api.get("/v1/nodes/t/validate").json()["deploy"]["result"] == false);
}

TEST_CASE("validate fails when an enabled template's steps are not supported", "[server][conductor][flows][templates]") {
  TestApi api;
  REQUIRE(api.post("/v1/deploy_templates", Json::parse(R"({"name": "CUSTOM_FW", "steps": [
      {"interface": "management", "step": "update_firmware", "priority": 10, "args": {}}]})")).status == 201);
  makeAvailable(api, "f");
  CHECK(api.get("/v1/nodes/f/validate").json()["deploy"]["result"] == true);
  REQUIRE(api.putRaw("/v1/nodes/f/traits/CUSTOM_FW").status == 204);
  auto v = api.get("/v1/nodes/f/validate").json()["deploy"];
  CHECK(v["result"] == false);
  CHECK_THAT(v["reason"].get<std::string>(), Catch::Contains("management.update_firmware"));
  // Requesting it at deploy time fails the deployment, naming the problem.
  REQUIRE(api.patch("/v1/nodes/f", Json::parse(R"([{"op": "add", "path": "/instance_info/traits", "value": ["CUSTOM_FW"]}])")).status == 200);
  CHECK(verb(api, "f", "deploy").status == 202);
  auto n = node(api, "f");
  CHECK(n["provision_state"] == "deploy failed");
  CHECK_THAT(n["last_error"].get<std::string>(), Catch::Contains("update_firmware"));
}

TEST_CASE("deploy_steps in the request override template steps (1.69)", "[server][conductor][flows][templates]") {
  TestApi api;
  REQUIRE(api.post("/v1/deploy_templates", kRaidTemplate).status == 201);
  makeAvailable(api, "u", {{"instance_info", {{"traits", {"CUSTOM_RAID1"}}}}});
  REQUIRE(api.putRaw("/v1/nodes/u/traits/CUSTOM_RAID1").status == 204);
  Json user = Json::parse(R"([{"interface": "raid", "step": "apply_configuration", "priority": 85,
      "args": {"raid_config": {"logical_disks": [{"size_gb": 10, "raid_level": "0"}]}}}])");
  api.version = "1.68";
  CHECK(provision(api, "u", {{"target", "active"}, {"deploy_steps", user}}).status == 406);
  api.version = "1.78";
  CHECK(provision(api, "u", {{"target", "manage"}, {"deploy_steps", user}}).status == 400);
  CHECK(provision(api, "u", {{"target", "active"}, {"deploy_steps", user}}).status == 202);
  auto n = node(api, "u");
  CHECK(n["provision_state"] == "active");
  CHECK(stepsOf(n, "deploy_steps")[1] == "raid.apply_configuration:85");
  CHECK(n["raid_config"]["logical_disks"][0]["raid_level"] == "0");
}

TEST_CASE("a failing deploy step leaves deploy failed with the step in deploy_step and last_error",
          "[server][conductor][flows]") {
  TestApi api;
  makeAvailable(api, "x");
  // An invalid RAID configuration is refused on arrival (400), so the failure comes from a
  // step whose arguments only the step itself checks.
  Json badRaid = Json::parse(R"([{"interface": "raid", "step": "apply_configuration", "priority": 95,
      "args": {"raid_config": {"logical_disks": [{"size_gb": 10, "raid_level": "7"}]}}}])");
  auto refused = provision(api, "x", {{"target", "active"}, {"deploy_steps", badRaid}});
  CHECK(refused.status == 400);
  CHECK_THAT(refused.fault(), Catch::StartsWith("RAID config validation error"));
  REQUIRE(node(api, "x")["provision_state"] == "available");
  Json bad = Json::parse(R"([{"interface": "bios", "step": "apply_configuration", "priority": 95,
      "args": {"settings": "not a list"}}])");
  REQUIRE(provision(api, "x", {{"target", "active"}, {"deploy_steps", bad}}).status == 202);
  auto n = node(api, "x");
  CHECK(n["provision_state"] == "deploy failed");
  CHECK(n["deploy_step"]["step"] == "apply_configuration");
  CHECK_THAT(n["last_error"].get<std::string>(), Catch::Contains("bios.apply_configuration"));
  CHECK(n["reservation"].is_null());
  // deploy failed -> deploy again, or undeploy.
  CHECK(verb(api, "x", "deleted").status == 202);
  CHECK(node(api, "x")["provision_state"] == "available");
}

TEST_CASE("undeploy tears down, cleans and forgets the instance", "[server][conductor][flows]") {
  TestApi api;
  makeAvailable(api, "un");
  REQUIRE(api.patch("/v1/nodes/un", Json::parse(R"([{"op": "add", "path": "/instance_uuid", "value": "6b6d6a1c-0000-4000-8000-00000000000a"},
      {"op": "add", "path": "/instance_info/image_source", "value": "http://x/img"}])")).status == 200);
  REQUIRE(verb(api, "un", "deploy").status == 202);
  REQUIRE(node(api, "un")["provision_state"] == "active");
  CHECK(verb(api, "un", "undeploy").status == 202);
  auto n = node(api, "un");
  CHECK(n["provision_state"] == "available");
  CHECK(n["instance_uuid"].is_null());
  CHECK(n["instance_info"] == Json::object());
  CHECK(n["power_state"] == "power off");
  CHECK_FALSE(n["driver_internal_info"].contains("deploy_steps"));
  CHECK(n["driver_internal_info"].contains("clean_steps"));
  CHECK(verb(api, "un", "rebuild").status == 400);
}

TEST_CASE("manual cleaning runs the given steps in order and returns to manageable",
          "[server][conductor][flows][cleaning]") {
  TestApi api;
  api.createNode({{"name", "m"}});
  verb(api, "m", "manage");
  REQUIRE(api.put("/v1/nodes/m/states/raid", Json::parse(R"({"logical_disks": [{"size_gb": 10, "raid_level": "1"}]})")).status == 204);
  auto r = provision(api, "m", {{"target", "clean"}, {"clean_steps", Json::parse(R"([
      {"interface": "raid", "step": "create_configuration"},
      {"interface": "deploy", "step": "erase_devices"},
      {"interface": "bios", "step": "apply_configuration", "args": {"settings": [{"name": "A", "value": 1}]}}])")}});
  CHECK(r.status == 202);
  auto n = node(api, "m");
  CHECK(n["provision_state"] == "manageable");
  CHECK(stepsOf(n, "clean_steps") ==
        Json{"raid.create_configuration:0", "deploy.erase_devices:10", "bios.apply_configuration:0"});
  CHECK(n["raid_config"]["logical_disks"][0]["raid_level"] == "1");
  CHECK(n["driver_internal_info"]["fake_bios_settings"]["A"] == 1);
}

TEST_CASE("manual cleaning input rules", "[server][conductor][flows][cleaning]") {
  TestApi api;
  api.createNode({{"name", "r"}});
  SECTION("only from manageable") {
    auto bad = provision(api, "r", {{"target", "clean"}, {"clean_steps", Json::array()}});
    CHECK(bad.status == 400);
    CHECK_THAT(bad.fault(), Catch::Contains("while it is in state \"enroll\""));
  }
  verb(api, "r", "manage");
  SECTION("clean_steps are required, and only with clean") {
    CHECK(verb(api, "r", "clean").status == 400);
    CHECK(provision(api, "r", {{"target", "provide"}, {"clean_steps", Json::array()}}).status == 400);
  }
  SECTION("a priority in a manual step is a 400") {
    auto r = provision(api, "r", {{"target", "clean"}, {"clean_steps", Json::parse(R"([{"interface": "deploy", "step": "erase_devices", "priority": 10}])")}});
    CHECK(r.status == 400);
    CHECK_THAT(r.fault(), Catch::Contains("'priority' was unexpected"));
  }
  SECTION("malformed steps are 400") {
    for (const char* steps : {R"({})", R"([1])", R"([{"step": "x"}])", R"([{"interface": "network", "step": "x"}])",
                              R"([{"interface": "deploy", "step": ""}])", R"([{"interface": "deploy", "step": "x", "args": []}])"}) {
      INFO(steps);
      CHECK(provision(api, "r", {{"target", "clean"}, {"clean_steps", Json::parse(steps)}}).status == 400);
    }
  }
  SECTION("a missing required argument puts the node in clean failed naming it") {
    CHECK(provision(api, "r", {{"target", "clean"}, {"clean_steps", Json::parse(R"([{"interface": "bios", "step": "apply_configuration"}])")}}).status == 202);
    auto n = node(api, "r");
    CHECK(n["provision_state"] == "clean failed");
    CHECK_THAT(n["last_error"].get<std::string>(), Catch::Contains("missing these required arguments: settings"));
    CHECK(verb(api, "r", "manage").status == 202);
    CHECK(node(api, "r")["provision_state"] == "manageable");
  }
  SECTION("an unknown step puts the node in clean failed") {
    CHECK(provision(api, "r", {{"target", "clean"}, {"clean_steps", Json::parse(R"([{"interface": "raid", "step": "teleport"}])")}}).status == 202);
    CHECK(node(api, "r")["provision_state"] == "clean failed");
  }
}

TEST_CASE("a wait step parks the node in clean wait until the clock passes it",
          "[server][conductor][flows][cleaning]") {
  TestApi api;
  api.createNode({{"name", "w"}});
  verb(api, "w", "manage");
  REQUIRE(provision(api, "w", {{"target", "clean"}, {"clean_steps", Json::parse(R"([
      {"interface": "deploy", "step": "wait", "args": {"seconds": 120}},
      {"interface": "power", "step": "power_on"}])")}}).status == 202);
  auto n = node(api, "w");
  CHECK(n["provision_state"] == "clean wait");
  CHECK(n["target_provision_state"] == "manageable");
  CHECK(n["clean_step"]["step"] == "wait");
  CHECK(n["reservation"].is_null());
  api.clock().advance(std::chrono::seconds(60));
  api.runPeriodic();
  CHECK(node(api, "w")["provision_state"] == "clean wait");
  api.clock().advance(std::chrono::seconds(61));
  api.runPeriodic();
  n = node(api, "w");
  CHECK(n["provision_state"] == "manageable");
  CHECK(n["power_state"] == "power on");
}

TEST_CASE("abort stops an abortable waiting clean step", "[server][conductor][flows][cleaning]") {
  TestApi api;
  api.createNode({{"name", "ab"}});
  verb(api, "ab", "manage");
  REQUIRE(provision(api, "ab", {{"target", "clean"}, {"clean_steps", Json::parse(R"([{"interface": "deploy", "step": "wait", "args": {"seconds": 600}}])")}}).status == 202);
  REQUIRE(node(api, "ab")["provision_state"] == "clean wait");
  api.version = "1.12";
  CHECK(verb(api, "ab", "abort").status == 406);
  api.version = "1.78";
  CHECK(verb(api, "ab", "abort").status == 202);
  auto n = node(api, "ab");
  CHECK(n["provision_state"] == "clean failed");
  CHECK_THAT(n["last_error"].get<std::string>(), Catch::Contains("aborted") && Catch::Contains("deploy.wait"));
  CHECK(n["reservation"].is_null());
  CHECK(verb(api, "ab", "abort").status == 400);
  CHECK(verb(api, "ab", "manage").status == 202);
}

TEST_CASE("abort of a non-abortable step takes effect when the step finishes", "[server][conductor][flows][cleaning]") {
  TestApi api;
  api.createNode({{"name", "na"}});
  verb(api, "na", "manage");
  REQUIRE(provision(api, "na", {{"target", "clean"}, {"clean_steps", Json::parse(R"([
      {"interface": "deploy", "step": "wait", "args": {"seconds": 600}}, {"interface": "power", "step": "power_on"}])")}}).status == 202);
  // Stage the running step as not abortable (an in-band step in a real deployment).
  mutate(api, "na", [](Record& r) {
    auto step = Json::parse(r.str(kNodeCleanStep));
    step["abortable"] = false;
    r.setText(kNodeCleanStep, step.dump());
  });
  CHECK(verb(api, "na", "abort").status == 202);
  auto n = node(api, "na");
  CHECK(n["provision_state"] == "clean wait");
  CHECK(n["driver_internal_info"]["abort_after"] == true);
  api.clock().advance(std::chrono::seconds(601));
  api.runPeriodic();
  n = node(api, "na");
  CHECK(n["provision_state"] == "clean failed");
  CHECK(n["power_state"] != "power on");  // the step after the aborted one did not run
  CHECK_THAT(n["last_error"].get<std::string>(), Catch::Contains("aborted"));
}

TEST_CASE("callback timeouts fail waiting nodes naming the step", "[server][conductor][flows]") {
  TestApi api("[conductor]\nclean_callback_timeout = 300\ndeploy_callback_timeout = 600\n");
  api.createNode({{"name", "cw"}});
  api.createNode({{"name", "dw"}});
  // Stage nodes waiting for an agent callback (no wait_until: only the timeout ends them).
  mutate(api, "cw", [](Record& r) {
    r.setText(kNodeProvisionState, "clean wait");
    r.setText(kNodeTargetProvisionState, "available");
    r.setText(kNodeProvisionUpdatedAt, "2026-01-01T00:00:00+00:00");
    r.setText(kNodeCleanStep, R"({"interface":"deploy","step":"erase_devices","abortable":true})");
  });
  mutate(api, "dw", [](Record& r) {
    r.setText(kNodeProvisionState, "wait call-back");
    r.setText(kNodeTargetProvisionState, "active");
    r.setText(kNodeProvisionUpdatedAt, "2026-01-01T00:00:00+00:00");
    r.setText(kNodeDeployStep, R"({"interface":"deploy","step":"write_image"})");
  });
  api.clock().advance(std::chrono::seconds(299));
  api.runPeriodic();
  CHECK(node(api, "cw")["provision_state"] == "clean wait");
  api.clock().advance(std::chrono::seconds(2));
  api.runPeriodic();
  auto c = node(api, "cw");
  CHECK(c["provision_state"] == "clean failed");
  CHECK_THAT(c["last_error"].get<std::string>(), Catch::Contains("Timeout") && Catch::Contains("deploy.erase_devices"));
  CHECK(node(api, "dw")["provision_state"] == "wait call-back");
  api.clock().advance(std::chrono::seconds(300));
  api.runPeriodic();
  auto d = node(api, "dw");
  CHECK(d["provision_state"] == "deploy failed");
  CHECK_THAT(d["last_error"].get<std::string>(), Catch::Contains("deploy.write_image"));
  CHECK(d["deploy_step"]["step"] == "write_image");
}

TEST_CASE("a locked node refuses actions with 409", "[server][conductor][flows]") {
  TestApi api;
  api.createNode({{"name", "l"}});
  mutate(api, "l", [](Record& r) { r.setText(kNodeReservation, "other-host"); });
  auto r = verb(api, "l", "manage");
  CHECK(r.status == 409);
  CHECK_THAT(r.fault(), Catch::Contains("locked by host other-host"));
  CHECK(api.put("/v1/nodes/l/states/power", {{"target", "power on"}}).status == 409);
  CHECK(api.put("/v1/nodes/l/management/boot_device", {{"boot_device", "pxe"}}).status == 409);
  CHECK(api.del("/v1/nodes/l").status == 409);
}

TEST_CASE("provision verbs are checked against version, state and maintenance", "[server][conductor][flows]") {
  TestApi api;
  makeAvailable(api, "s");
  CHECK(verb(api, "s", "bogus").status == 400);
  CHECK(verb(api, "s", "clean").status == 400);
  CHECK(api.put("/v1/nodes/s/states/provision", Json::object()).status == 400);
  CHECK(api.call("PUT", "/v1/nodes/s/states/provision", "nope").status == 400);
  CHECK(provision(api, "s", {{"target", "deploy"}, {"colour", "red"}}).status == 400);
  api.version = "1.72";
  CHECK(verb(api, "s", "deploy").status == 406);
  CHECK(verb(api, "s", "undeploy").status == 406);
  api.version = "1.3";
  CHECK(verb(api, "s", "manage").status == 406);
  api.version = "1.78";
  REQUIRE(api.putRaw("/v1/nodes/s/maintenance").status == 202);
  auto m = verb(api, "s", "active");
  CHECK(m.status == 400);
  CHECK_THAT(m.fault(), Catch::Contains("maintenance"));
  CHECK(verb(api, "s", "manage").status == 202);  // allowed in maintenance
  CHECK(node(api, "s")["provision_state"] == "manageable");
}

TEST_CASE("configdrive is stored with the deployment and masked on output", "[server][conductor][flows]") {
  TestApi api;
  makeAvailable(api, "cd");
  CHECK(provision(api, "cd", {{"target", "active"}, {"configdrive", "H4sIAAAA"}}).status == 202);
  auto n = node(api, "cd");
  CHECK(n["provision_state"] == "active");
  CHECK(n["instance_info"]["configdrive"] == "******");
  CHECK(provision(api, "cd", {{"target", "rebuild"}, {"configdrive", 5}}).status == 400);
}

TEST_CASE("power state changes through the power interface", "[server][conductor][power]") {
  TestApi api;
  api.createNode({{"name", "pw"}});
  auto on = api.put("/v1/nodes/pw/states/power", {{"target", "power on"}});
  CHECK(on.status == 202);
  CHECK(node(api, "pw")["power_state"] == "power on");
  CHECK(node(api, "pw")["target_power_state"].is_null());
  CHECK(api.put("/v1/nodes/pw/states/power", {{"target", "power off"}}).status == 202);
  CHECK(node(api, "pw")["power_state"] == "power off");
  CHECK(api.put("/v1/nodes/pw/states/power", {{"target", "rebooting"}}).status == 202);
  CHECK(node(api, "pw")["power_state"] == "power on");
  CHECK(api.put("/v1/nodes/pw/states/power", {{"target", "soft power off"}, {"timeout", 30}}).status == 202);
  CHECK(node(api, "pw")["power_state"] == "power off");
  CHECK(api.put("/v1/nodes/pw/states/power", {{"target", "sleep"}}).status == 400);
  CHECK(api.put("/v1/nodes/pw/states/power", {{"target", "power on"}, {"timeout", 0}}).status == 400);
  CHECK(api.put("/v1/nodes/pw/states/power", Json::object()).status == 400);
  api.version = "1.26";
  CHECK(api.put("/v1/nodes/pw/states/power", {{"target", "soft power off"}}).status == 406);
  CHECK(api.put("/v1/nodes/pw/states/power", {{"target", "power on"}, {"timeout", 5}}).status == 406);
}

TEST_CASE("power changes are refused during cleaning", "[server][conductor][power]") {
  TestApi api;
  api.createNode({{"name", "pc"}});
  verb(api, "pc", "manage");
  REQUIRE(provision(api, "pc", {{"target", "clean"}, {"clean_steps", Json::parse(R"([{"interface": "deploy", "step": "wait", "args": {"seconds": 60}}])")}}).status == 202);
  REQUIRE(node(api, "pc")["provision_state"] == "clean wait");
  CHECK(api.put("/v1/nodes/pc/states/power", {{"target", "power on"}}).status == 400);
}

TEST_CASE("the boot device is read and set through the management interface", "[server][conductor][power]") {
  TestApi api;
  api.createNode({{"name", "bd"}});
  CHECK(api.get("/v1/nodes/bd/management/boot_device/supported").json()["supported_boot_devices"].size() == 5);
  CHECK(api.put("/v1/nodes/bd/management/boot_device", {{"boot_device", "pxe"}, {"persistent", true}}).status == 204);
  auto d = api.get("/v1/nodes/bd/management/boot_device").json();
  CHECK(d["boot_device"] == "pxe");
  CHECK(d["persistent"] == true);
  CHECK(api.put("/v1/nodes/bd/management/boot_device", {{"boot_device", "floppy"}}).status == 400);
  CHECK(api.put("/v1/nodes/bd/management/boot_device", Json::object()).status == 400);
  CHECK(node(api, "bd")["reservation"].is_null());
}

TEST_CASE("cleaning steps are listed sorted, filtered by min_priority", "[server][conductor][cleaning]") {
  TestApi api;
  api.createNode({{"name", "cs"}});
  auto r = api.get("/v1/nodes/cs/cleaning/steps");
  REQUIRE(r.status == 200);
  auto steps = r.json();
  REQUIRE(steps.is_array());
  CHECK(steps[0]["step"] == "erase_devices_metadata");
  CHECK(steps[0]["priority"] == 99);
  CHECK(steps[1]["step"] == "erase_devices");
  bool biosArgs = false;
  for (const auto& s : steps) {
    CHECK(s.contains("abortable"));
    if (s["interface"] == "bios" && s["step"] == "apply_configuration") {
      biosArgs = s["args"][0]["name"] == "settings" && s["args"][0]["required"] == true;
    }
  }
  CHECK(biosArgs);
  CHECK(api.get("/v1/nodes/cs/cleaning/steps?min_priority=1").json().size() == 2);
  CHECK(api.get("/v1/nodes/cs/cleaning/steps?min_priority=50").json().size() == 1);
  CHECK(api.get("/v1/nodes/cs/cleaning/steps?min_priority=-1").status == 400);
  CHECK(api.get("/v1/nodes/cs/cleaning/steps?min_priority=x").status == 400);
  api.version = "1.14";
  CHECK(api.get("/v1/nodes/cs/cleaning/steps").status == 404);
}

TEST_CASE("cleaning steps wait for the agent's report with 202 and Retry-Request-After",
          "[server][conductor][cleaning]") {
  TestApi api;
  api.createNode({{"name", "ag"}, {"deploy_interface", "direct"}});
  auto r = api.get("/v1/nodes/ag/cleaning/steps");
  CHECK(r.status == 202);
  CHECK(r.header("Retry-Request-After") == "-1");
  CHECK_THAT(r.json()["message"].get<std::string>(), Catch::Contains("not available yet"));
  // Once the agent's steps are cached they are listed with the out-of-band ones.
  mutate(api, "ag", [](Record& rec) {
    rec.setText(kNodeDriverInternalInfo, R"({"agent_cached_clean_steps": {"deploy": [
        {"interface": "deploy", "step": "erase_devices", "priority": 10, "abortable": true},
        {"interface": "deploy", "step": "erase_devices_metadata", "priority": 99, "abortable": true}]}})");
  });
  r = api.get("/v1/nodes/ag/cleaning/steps?min_priority=1");
  REQUIRE(r.status == 200);
  CHECK(r.json().size() == 2);
  CHECK(r.json()[0]["step"] == "erase_devices_metadata");
  CHECK(r.json()[0]["requires_ramdisk"] == true);
}

TEST_CASE("a restart fails nodes left mid-flow and keeps waiting nodes resumable",
          "[server][conductor][recovery]") {
  char tmpl[] = "/tmp/kiln-recovery-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string db = "[database]\nconnection = sqlite:///" + dir + "/kiln.sqlite\n";
  {
    TestApi api(db);
    for (const char* n : {"verifying", "cleaning", "deploying", "deleting", "inspecting", "adopting", "servicing", "waiting", "idle", "powering"}) {
      api.createNode({{"name", n}});
    }
    // Stage what a killed server leaves behind: working states held by its reservation.
    for (const char* n : {"verifying", "cleaning", "deploying", "deleting", "inspecting", "adopting"}) {
      mutate(api, n, [n](Record& r) {
        r.setText(kNodeProvisionState, n);
        r.setText(kNodeReservation, "test-conductor");
        r.setText(kNodeTargetProvisionState, "available");
        if (std::string(n) == "cleaning") r.setText(kNodeCleanStep, R"({"interface":"deploy","step":"erase_devices"})");
      });
    }
    // Servicing interrupted at a step, with an agent command still queued for it.
    mutate(api, "servicing", [](Record& r) {
      r.setText(kNodeProvisionState, "servicing");
      r.setText(kNodeReservation, "test-conductor");
      r.setText(kNodeTargetProvisionState, "active");
      r.setText(kNodeServiceStep, R"({"interface":"raid","step":"apply_configuration"})");
      r.setText(kNodeDriverInternalInfo, R"({"service_steps": [], "agent_command": {"id": "c1"}})");
    });
    mutate(api, "waiting", [](Record& r) {
      r.setText(kNodeProvisionState, "clean wait");
      r.setText(kNodeTargetProvisionState, "manageable");
      r.setText(kNodeDriverInternalInfo, R"({"clean_steps": [{"interface":"deploy","step":"wait","args":{"seconds":5},"priority":0}],
          "clean_step_index": 0, "clean_steps_requested": [], "wait_until": 1767225610})");
    });
    mutate(api, "powering", [](Record& r) {
      r.setText(kNodeTargetPowerState, "power on");
      r.setText(kNodeReservation, "test-conductor");
    });
  }
  TestApi api(db);  // the restarted server
  const std::map<std::string, std::string> expected = {
      {"verifying", "enroll"},          {"cleaning", "clean failed"}, {"deploying", "deploy failed"},
      {"deleting", "error"},            {"inspecting", "inspect failed"}, {"adopting", "adopt failed"},
      {"servicing", "service failed"},  {"waiting", "clean wait"},        {"idle", "enroll"},           {"powering", "enroll"}};
  for (const auto& [name, state] : expected) {
    INFO(name);
    auto n = node(api, name);
    CHECK(n["provision_state"] == state);
    CHECK(n["reservation"].is_null());
    CHECK(n["target_power_state"].is_null());
    if (name != "waiting" && name != "idle") {
      CHECK_THAT(n["last_error"].get<std::string>(), Catch::Contains("kiln-server stopped"));
    }
  }
  CHECK_THAT(node(api, "cleaning")["last_error"].get<std::string>(), Catch::Contains("deploy.erase_devices"));
  CHECK(node(api, "cleaning")["clean_step"] == Json::object());
  // Interrupted servicing, like every other flow: its step named and cleared, nothing queued
  // for the agent any more.
  api.version = "1.87";  // service_step
  const Json serviced = node(api, "servicing");
  CHECK_THAT(serviced["last_error"].get<std::string>(),
             Catch::Contains("(at step raid.apply_configuration)") &&
                 Catch::Contains("Service again or abort."));
  CHECK(serviced["service_step"] == Json::object());
  CHECK_FALSE(serviced["driver_internal_info"].contains("agent_command"));
  // The waiting node resumes when its timer passes.
  api.clock().advance(std::chrono::seconds(30));
  api.runPeriodic();
  CHECK(node(api, "waiting")["provision_state"] == "manageable");
  std::filesystem::remove_all(dir);
}
