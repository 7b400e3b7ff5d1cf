// The server's half of the kiln-agent protocol (docs/protocol.md) through the API: lookup,
// tokens, heartbeats carrying results, the direct deploy, in-band cleaning, agent inspection
// and agent RAID, driven by a scripted agent.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "server/conductor/node_events_recorder.h"
#include "server/drivers/agent/ramdisk_logs.h"
#include "server/model/node.h"
#include "server/model/versions.h"
#include "shared/core/base64.h"
#include "shared/core/gzip.h"
#include "shared/core/tar.h"
#include "tests/support/log_capture.h"
#include "tests/support/protocol_golden.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::Response;
using kiln::test::TestApi;

namespace {

constexpr const char* kMac = "52:54:00:12:34:56";

/// The step catalogue kiln-agent reports (ironic-python-agent's names and priorities).
Json agentSteps() {
  return Json::parse(R"({
    "clean": {
      "deploy": [
        {"interface": "deploy", "step": "erase_devices_metadata", "priority": 99, "abortable": true,
         "reboot_requested": false, "argsinfo": {}},
        {"interface": "deploy", "step": "erase_devices", "priority": 10, "abortable": true,
         "reboot_requested": false, "argsinfo": {}}],
      "raid": [
        {"interface": "raid", "step": "create_configuration", "priority": 0, "abortable": false,
         "reboot_requested": false, "argsinfo": {}},
        {"interface": "raid", "step": "delete_configuration", "priority": 0, "abortable": false,
         "reboot_requested": false, "argsinfo": {}}]},
    "hardware_manager_version": {"generic": "1"},
    "deploy": {
      "deploy": [
        {"interface": "deploy", "step": "write_image", "priority": 0, "abortable": false,
         "reboot_requested": false, "argsinfo": {}}],
      "raid": [
        {"interface": "raid", "step": "apply_configuration", "priority": 0, "abortable": false,
         "reboot_requested": false,
         "argsinfo": {"raid_config": {"description": "target_raid_config format", "required": true}}}]}
  })");
}

/// A scripted agent: looks the node up, heartbeats, reports results.
struct ScriptedAgent {
  TestApi& api;
  std::string uuid;
  std::string token;

  Response lookup() {
    auto r = api.get("/v1/lookup?addresses=" + std::string(kMac));
    if (r.status == 200) {
      uuid = r.json()["node"]["uuid"];
      const std::string t = r.json()["config"]["agent_token"];
      if (t != "******") token = t;
    }
    return r;
  }

  Json beatBody(Json results = Json::array()) const {
    return Json{{"callback_url", ""},      {"agent_version", "kiln-agent test"},
                {"agent_token", token},    {"protocol_version", 1},
                {"steps", agentSteps()},   {"results", std::move(results)},
                {"running", Json::array()}};
  }

  /// Sends a heartbeat and waits for the conductor to settle; returns the 202 body.
  Response beat(Json results = Json::array()) {
    auto r = api.post("/v1/heartbeat/" + uuid, beatBody(std::move(results)));
    api.settle();
    return r;
  }

  /// Reports `command` (from a heartbeat answer) as finished.
  Response finish(const Json& command, const std::string& status = "SUCCEEDED",
                  Json result = Json::object(), const std::string& error = "") {
    Json r{{"id", command["id"]}, {"name", command["name"]}, {"status", status}, {"result", result}};
    if (!error.empty()) r["error"] = error;
    return beat(Json::array({r}));
  }
};

Json node(TestApi& api, const std::string& ident) {
  api.settle();
  return api.get("/v1/nodes/" + ident).json();
}

Response verb(TestApi& api, const std::string& ident, const std::string& target, Json extra = Json::object()) {
  extra["target"] = target;
  auto r = api.put("/v1/nodes/" + ident + "/states/provision", extra);
  api.settle();
  return r;
}

/// A fake-hardware node using the agent interfaces, with one port.
void createAgentNode(TestApi& api, const std::string& name, Json extra = Json::object()) {
  extra["name"] = name;
  if (!extra.contains("deploy_interface")) extra["deploy_interface"] = "direct";
  if (!extra.contains("instance_info")) {
    extra["instance_info"] = {{"image_source", "http://127.0.0.1:8080/img.raw"},
                              {"image_os_hash_algo", "sha256"},
                              {"image_os_hash_value", std::string(64, 'a')}};
  }
  auto created = api.createNode(extra);
  auto port = api.post("/v1/ports", {{"address", kMac}, {"node_uuid", created["uuid"]}});
  REQUIRE(port.status == 201);
}

/// Makes the node available without cleaning (cleaning has its own tests).
void makeAvailable(TestApi& api, const std::string& name) {
  REQUIRE(api.patch("/v1/nodes/" + name, Json::array({{{"op", "add"}, {"path", "/automated_clean"}, {"value", false}}})).status == 200);
  REQUIRE(verb(api, name, "manage").status == 202);
  REQUIRE(verb(api, name, "provide").status == 202);
  REQUIRE(node(api, name)["provision_state"] == "available");
}

Json commandOf(const Response& r) {
  REQUIRE(r.status == 202);
  auto commands = r.json()["commands"];
  REQUIRE(commands.size() == 1);
  return commands[0];
}

}  // namespace

TEST_CASE("lookup: version, addresses, restricted states, token once", "[server][agent]") {
  TestApi api;
  createAgentNode(api, "n1");
  ScriptedAgent agent{api};

  api.version = "1.21";
  CHECK(api.get("/v1/lookup?addresses=" + std::string(kMac)).status == 404);
  api.version = "1.78";
  CHECK(api.get("/v1/lookup").status == 400);
  CHECK(api.get("/v1/lookup?addresses=not-a-mac").status == 400);
  CHECK(api.get("/v1/lookup?addresses=52:54:00:00:00:01").status == 404);
  // enroll: no agent is expected, indistinguishable from an unknown node.
  CHECK(agent.lookup().status == 404);

  makeAvailable(api, "n1");
  REQUIRE(verb(api, "n1", "active").status == 202);
  auto n = node(api, "n1");
  REQUIRE(n["provision_state"] == "wait call-back");
  CHECK(n["power_state"] == "power on");

  auto first = agent.lookup();
  REQUIRE(first.status == 200);
  auto body = first.json();
  CHECK(body["node"]["uuid"] == n["uuid"]);
  CHECK(body["config"]["agent_token"].get<std::string>().size() == 43);
  CHECK(body["config"]["heartbeat_timeout"] == 300);
  CHECK(body["config"]["agent_token_required"] == true);
  CHECK(body["config"]["kiln_protocol_version"] == 1);
  CHECK_FALSE(body["node"]["driver_internal_info"].contains("agent_secret_token"));
  // Uppercase MACs and several addresses work; the token is not issued twice.
  auto second = api.get("/v1/lookup?addresses=AA:BB:CC:DD:EE:FF,52:54:00:12:34:56");
  REQUIRE(second.status == 200);
  CHECK(second.json()["config"]["agent_token"] == "******");
  CHECK(api.get("/v1/lookup?node_uuid=" + n["uuid"].get<std::string>()).json()["config"]["agent_token"] == "******");
  // The API never shows the token.
  CHECK(node(api, "n1")["driver_internal_info"]["agent_secret_token"] == "******");
}

TEST_CASE("lookup and heartbeat are public under http_basic", "[server][agent]") {
  const std::string file = "/tmp/kiln-agent-htpasswd-" + std::to_string(getpid());
  // bcrypt (cost 4) of "s3cret", made with `htpasswd -nbB -C 4`.
  std::ofstream(file) << "admin:$2y$04$yNagjehOdvxOluZFDAQywegpKCB1ps1nWXjNykcOaEKe6JrnNyI.W\n";
  TestApi api("[DEFAULT]\nauth_strategy = http_basic\nhttp_basic_auth_user_file = " + file + "\n");
  std::filesystem::remove(file);
  CHECK(api.get("/v1/lookup?addresses=" + std::string(kMac)).status == 404);
  CHECK(api.get("/v1/nodes").status == 401);
  auto beat = api.post("/v1/heartbeat/1be26c0b-03f2-4d2e-ae87-c02d7f33c123",
                       {{"agent_version", "x"}, {"agent_token", "t"}, {"protocol_version", 1}});
  CHECK(beat.status == 404);
}

TEST_CASE("heartbeat: a wrong or missing token is 401 and changes nothing", "[server][agent]") {
  TestApi api;
  createAgentNode(api, "n1");
  makeAvailable(api, "n1");
  REQUIRE(verb(api, "n1", "active").status == 202);
  ScriptedAgent agent{api};
  REQUIRE(agent.lookup().status == 200);
  const Json before = node(api, "n1");

  ScriptedAgent impostor{api, agent.uuid, std::string(43, 'x')};
  auto r = impostor.beat();
  CHECK(r.status == 401);
  CHECK_THAT(r.fault(), Catch::Contains("token"));
  impostor.token = "";
  CHECK(impostor.beat().status == 401);
  const Json after = node(api, "n1");
  CHECK(after["provision_state"] == "wait call-back");
  CHECK(after["driver_internal_info"] == before["driver_internal_info"]);
  CHECK(after["updated_at"] == before["updated_at"]);

  // Bad input: no protocol version (ironic-python-agent), unknown version, missing version.
  auto body = agent.beatBody();
  body.erase("protocol_version");
  CHECK(api.post("/v1/heartbeat/" + agent.uuid, body).status == 400);
  body["protocol_version"] = 99;
  CHECK(api.post("/v1/heartbeat/" + agent.uuid, body).status == 400);
  body = agent.beatBody();
  body.erase("agent_version");
  CHECK(api.post("/v1/heartbeat/" + agent.uuid, body).status == 400);
  CHECK(api.call("POST", "/v1/heartbeat/" + agent.uuid, "{not json").status == 400);
  body = agent.beatBody();
  body["results"] = "nope";
  CHECK(api.post("/v1/heartbeat/" + agent.uuid, body).status == 400);
  CHECK(node(api, "n1")["driver_internal_info"] == before["driver_internal_info"]);
}

TEST_CASE("direct deploy through the agent: write_image, power off, boot", "[server][agent]") {
  TestApi api;
  createAgentNode(api, "n1", {{"properties", {{"root_device", {{"name", "/dev/vda"}}}}}});
  makeAvailable(api, "n1");
  REQUIRE(verb(api, "n1", "active").status == 202);
  auto n = node(api, "n1");
  CHECK(n["provision_state"] == "wait call-back");
  CHECK(n["deploy_step"]["step"] == "deploy");

  ScriptedAgent agent{api};
  REQUIRE(agent.lookup().status == 200);
  // The first heartbeat: deploy.deploy is done, write_image hands the image to the agent.
  auto write = commandOf(agent.beat());
  CHECK(write["name"] == "execute_step");
  CHECK(write["params"]["kind"] == "deploy");
  CHECK(write["params"]["step"]["step"] == "write_image");
  const Json image = write["params"]["step"]["args"]["image_info"];
  CHECK(image["urls"] == Json::array({"http://127.0.0.1:8080/img.raw"}));
  CHECK(image["os_hash_algo"] == "sha256");
  CHECK(image["disk_format"] == "raw");
  CHECK(write["params"]["node"]["properties"]["root_device"]["name"] == "/dev/vda");
  n = node(api, "n1");
  CHECK(n["deploy_step"]["step"] == "write_image");
  CHECK(n["driver_internal_info"]["agent_cached_deploy_steps"].contains("raid"));

  // An idle heartbeat (the command still running) changes nothing and repeats the command.
  Json running = agent.beatBody();
  running["running"] = Json::array({write["id"]});
  running["progress"] = {{"command_id", write["id"]}, {"bytes_done", 1048576}, {"bytes_total", 4194304}};
  auto idle = api.post("/v1/heartbeat/" + agent.uuid, running);
  REQUIRE(idle.status == 202);
  CHECK(commandOf(idle)["id"] == write["id"]);
  CHECK(idle.json()["heartbeat_interval"] == 2);
  CHECK(node(api, "n1")["driver_internal_info"]["agent_progress"]["bytes_done"] == 1048576);

  // Finished: prepare_instance_boot runs, tear_down_agent asks the agent to power off.
  auto off = agent.finish(write, "SUCCEEDED", {{"root_device", "/dev/vda"}});
  CHECK(off.json()["acknowledged"] == Json::array({write["id"]}));
  auto powerOff = commandOf(off);
  CHECK(powerOff["name"] == "power_off");
  n = node(api, "n1");
  CHECK(n["deploy_step"]["step"] == "tear_down_agent");
  CHECK(n["driver_internal_info"]["root_device"] == "/dev/vda");

  // The same result again (a retried heartbeat) is acknowledged but not applied twice.
  Json stale{{"id", write["id"]}, {"name", "execute_step"}, {"status", "SUCCEEDED"}, {"result", Json::object()}};
  auto retried = agent.beat(Json::array({stale}));
  CHECK(retried.json()["acknowledged"] == Json::array({write["id"]}));
  CHECK(node(api, "n1")["deploy_step"]["step"] == "tear_down_agent");

  auto done = agent.finish(powerOff);
  CHECK(done.status == 202);
  n = node(api, "n1");
  CHECK(n["provision_state"] == "active");
  CHECK(n["power_state"] == "power on");
  CHECK(n["last_error"].is_null());
  CHECK_FALSE(n["driver_internal_info"].contains("agent_secret_token"));
  // The session ended: the old token is refused, lookup no longer finds the node.
  CHECK(agent.beat().status == 401);
  CHECK(agent.lookup().status == 404);
}

namespace {

/// base64 -> gunzip of a config drive handed to write_image.
std::string configDriveImage(const std::string& text) {
  auto bytes = kiln::base64Decode(text);
  REQUIRE(bytes);
  auto image = kiln::gunzip(*bytes, 8 << 20);
  REQUIRE(image);
  return *image;
}

}  // namespace

/// Stands in for xorrisofs (the real one runs in tests/integration/configdrive_cloudinit_test.py):
/// records the files staged for the image and writes a small "image" to the -o path.
class FakeIsoBuilder final : public kiln::CommandRunner {
 public:
  std::vector<std::string> argv;
  std::map<std::string, std::string> files;  ///< path under the staged root -> content

  kiln::Result<kiln::CommandOutput> run(const kiln::Command& command) override {
    argv = command.argv;
    namespace fs = std::filesystem;
    const fs::path root = command.argv.back();
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      files[fs::relative(entry.path(), root).string()] =
          std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }
    std::ofstream(command.argv.at(2), std::ios::binary) << "ISO-IMAGE:" << files.size();
    return kiln::CommandOutput{};
  }
};

TEST_CASE("a JSON configdrive is built into an image handed to write_image",
          "[server][agent][configdrive]") {
  auto iso = std::make_shared<FakeIsoBuilder>();
  kiln::server::InterfaceDeps deps;
  deps.commands = iso;
  TestApi api("", deps);
  createAgentNode(api, "n1");
  makeAvailable(api, "n1");
  const Json cd{{"meta_data", {{"hostname", "web-1"}, {"public_keys", {{"k", "ssh-ed25519 AAAA"}}}}},
                {"user_data", "#cloud-config\nruncmd: [echo kiln-user-data]\n"},
                {"network_data", {{"links", Json::array()}, {"networks", Json::array()}}},
                {"vendor_data", {{"kiln", "vendor-value"}}}};
  REQUIRE(verb(api, "n1", "active", {{"configdrive", cd}}).status == 202);
  // Masked in the API like any secret.
  CHECK(node(api, "n1")["instance_info"]["configdrive"] == "******");
  CHECK(iso->argv.empty());  // built when write_image runs, not before

  ScriptedAgent agent{api};
  REQUIRE(agent.lookup().status == 200);
  auto write = commandOf(agent.beat());
  REQUIRE(write["params"]["step"]["step"] == "write_image");
  REQUIRE(iso->argv.size() == 15);
  CHECK(iso->argv[0] == "xorrisofs");
  CHECK(iso->argv[13] == "config-2");
  CHECK(iso->files.size() == 8);
  const Json meta = Json::parse(iso->files.at("openstack/latest/meta_data.json"));
  CHECK(meta["hostname"] == "web-1");
  CHECK(meta["name"] == "n1");
  CHECK(meta["uuid"] == agent.uuid);
  CHECK(iso->files.at("openstack/2012-08-10/user_data") == cd["user_data"]);
  CHECK(Json::parse(iso->files.at("openstack/latest/vendor_data2.json")) == cd["vendor_data"]);
  // The agent gets base64(gzip(image)), Ironic's form.
  const Json& sent = write["params"]["step"]["args"]["configdrive"];
  REQUIRE(sent.is_string());
  CHECK(configDriveImage(sent.get<std::string>()) == "ISO-IMAGE:8");
}

TEST_CASE("a config drive that cannot be built fails the deployment at write_image",
          "[server][agent][configdrive]") {
  struct Missing final : kiln::CommandRunner {
    kiln::Result<kiln::CommandOutput> run(const kiln::Command&) override {
      return kiln::fail(kiln::ErrorCode::Unavailable, "cannot start xorrisofs: No such file or directory");
    }
  };
  kiln::server::InterfaceDeps deps;
  deps.commands = std::make_shared<Missing>();
  // No ramdisk logs: with them the failure would wait for the agent's (ramdisk_logs tests).
  TestApi api("[agent]\ndeploy_logs_collect = never\n", deps);
  createAgentNode(api, "n1");
  makeAvailable(api, "n1");
  REQUIRE(verb(api, "n1", "active", {{"configdrive", {{"meta_data", {{"a", 1}}}}}}).status == 202);
  ScriptedAgent agent{api};
  REQUIRE(agent.lookup().status == 200);
  agent.beat();
  auto n = node(api, "n1");
  CHECK(n["provision_state"] == "deploy failed");
  CHECK_THAT(n["last_error"].get<std::string>(),
             Catch::Contains("deploy.write_image") && Catch::Contains("Debian package xorriso"));
  CHECK(n["power_state"] == "power off");
}

TEST_CASE("an empty configdrive ({}, \"\", null) means none, as in Ironic",
          "[server][agent][configdrive]") {
  TestApi api;
  createAgentNode(api, "n1");
  makeAvailable(api, "n1");
  auto empty = GENERATE(Json::object(), Json(""), Json(nullptr));
  REQUIRE(verb(api, "n1", "active", {{"configdrive", empty}}).status == 202);
  CHECK_FALSE(node(api, "n1")["instance_info"].contains("configdrive"));
  ScriptedAgent agent{api};
  REQUIRE(agent.lookup().status == 200);
  auto write = commandOf(agent.beat());
  REQUIRE(write["params"]["step"]["step"] == "write_image");
  CHECK_FALSE(write["params"]["step"]["args"].contains("configdrive"));
}

TEST_CASE("a bad configdrive is refused when the request arrives and changes nothing",
          "[server][agent][configdrive]") {
  TestApi api;
  createAgentNode(api, "n1");
  makeAvailable(api, "n1");
  struct Case {
    Json configdrive;
    std::string version;
    std::string message;
  };
  const Case cases[] = {
      {Json{{"meta_data", {{"a", 1}}}, {"bogus", 1}}, "1.78", "'bogus' was unexpected"},
      {Json{{"meta_data", "text"}}, "1.78", "is not of type 'object'"},
      {Json{{"network_data", Json::array()}}, "1.78", "is not of type 'object'"},
      {Json{{"user_data", 42}}, "1.78", "is not of type 'object', 'array', 'string', 'null'"},
      {Json(42), "1.78", "is not of type 'object', 'string'"},
      {Json("not base64 {}"), "1.78", "neither a JSON, nor a URL, nor a base64 string"},
      {Json{{"meta_data", {{"a", 1}}}}, "1.55", "only supported starting with API version 1.56"},
      {Json{{"vendor_data", {{"a", 1}}}}, "1.58", "vendor_data in configdrive is only supported"},
  };
  for (const Case& c : cases) {
    INFO(c.configdrive.dump() << " at " << c.version);
    api.version = c.version;
    auto r = verb(api, "n1", "active", {{"configdrive", c.configdrive}});
    CHECK(r.status == 400);
    CHECK_THAT(r.fault(), Catch::Contains(c.message));
    api.version = "1.78";
    auto n = node(api, "n1");
    CHECK(n["provision_state"] == "available");
    CHECK_FALSE(n["instance_info"].contains("configdrive"));
  }
  // A URL and base64 text pass as they are.
  REQUIRE(verb(api, "n1", "active", {{"configdrive", "http://127.0.0.1:9/cd.iso.gz"}}).status == 202);
}

TEST_CASE("a bad configdrive PATCHed into instance_info fails validation and the deploy request",
          "[server][agent][configdrive]") {
  TestApi api;
  createAgentNode(api, "n1");
  makeAvailable(api, "n1");
  auto n = node(api, "n1");
  Json info = n["instance_info"];
  info["configdrive"] = {{"meta_data", "text"}};
  REQUIRE(api.patch("/v1/nodes/n1", Json::array({{{"op", "replace"}, {"path", "/instance_info"},
                                                   {"value", info}}})).status == 200);
  auto v = api.get("/v1/nodes/n1/validate").json();
  CHECK(v["deploy"]["result"] == false);
  CHECK_THAT(v["deploy"]["reason"].get<std::string>(), Catch::Contains("is not of type 'object'"));
  auto r = verb(api, "n1", "active");
  CHECK(r.status == 400);
  CHECK(node(api, "n1")["provision_state"] == "available");
  // An empty one is "no config drive", as in Ironic.
  info["configdrive"] = Json::object();
  api.patch("/v1/nodes/n1", Json::array({{{"op", "replace"}, {"path", "/instance_info"}, {"value", info}}}));
  CHECK(api.get("/v1/nodes/n1/validate").json()["deploy"]["result"] == true);
}

TEST_CASE("a failed agent step fails the deployment naming the step", "[server][agent]") {
  TestApi api;
  createAgentNode(api, "n1");
  makeAvailable(api, "n1");
  REQUIRE(verb(api, "n1", "active").status == 202);
  ScriptedAgent agent{api};
  REQUIRE(agent.lookup().status == 200);
  auto write = commandOf(agent.beat());
  auto r = agent.finish(write, "FAILED", Json::object(),
                        "Image checksum mismatch for http://127.0.0.1:8080/img.raw: expected aaa, got bbb");
  CHECK(r.status == 202);
  CHECK(r.json()["commands"].empty());
  auto n = node(api, "n1");
  CHECK(n["provision_state"] == "deploy failed");
  CHECK_THAT(n["last_error"].get<std::string>(), Catch::Contains("deploy.write_image") &&
                                                     Catch::Contains("checksum mismatch"));
  CHECK(n["deploy_step"]["step"] == "write_image");
  // [deploy] power_off_after_deploy_failure (default true): the machine does not stay up.
  CHECK(n["power_state"] == "power off");
  // The agent is no longer handed the failed command, and beats at the idle interval.
  auto after = agent.beat();
  REQUIRE(after.status == 202);
  CHECK(after.json()["commands"].empty());
  CHECK(after.json()["heartbeat_interval"] == 10);

  // Undeploy: cleaning boots the ramdisk anew (a new session), it does not reuse the old one.
  api.patch("/v1/nodes/n1", Json::array({{{"op", "replace"}, {"path", "/automated_clean"}, {"value", true}}}));
  REQUIRE(verb(api, "n1", "deleted").status == 202);
  CHECK(node(api, "n1")["provision_state"] == "clean wait");
  CHECK(agent.beat().status == 401);
  REQUIRE(agent.lookup().status == 200);
  CHECK(commandOf(agent.beat())["params"]["step"]["step"] == "erase_devices_metadata");
}

TEST_CASE("power_off_after_deploy_failure = false leaves a failed node powered on",
          "[server][agent]") {
  TestApi api("[deploy]\npower_off_after_deploy_failure = false\n");
  createAgentNode(api, "n1");
  makeAvailable(api, "n1");
  REQUIRE(verb(api, "n1", "active").status == 202);
  ScriptedAgent agent{api};
  REQUIRE(agent.lookup().status == 200);
  auto write = commandOf(agent.beat());
  agent.finish(write, "FAILED", Json::object(), "no space left on device");
  auto n = node(api, "n1");
  CHECK(n["provision_state"] == "deploy failed");
  CHECK(n["power_state"] == "power on");
}

TEST_CASE("deploy: an image_source that is not http(s) fails validation", "[server][agent]") {
  TestApi api;
  createAgentNode(api, "n1", {{"instance_info", {{"image_source", "glance://abc"}, {"image_checksum", "x"}}}});
  auto v = api.get("/v1/nodes/n1/validate").json();
  CHECK(v["deploy"]["result"] == false);
  CHECK_THAT(v["deploy"]["reason"].get<std::string>(), Catch::Contains("http"));
  api.patch("/v1/nodes/n1", Json::array({{{"op", "replace"}, {"path", "/instance_info"},
                                          {"value", {{"image_source", "http://x/y"}}}}}));
  v = api.get("/v1/nodes/n1/validate").json();
  CHECK_THAT(v["deploy"]["reason"].get<std::string>(), Catch::Contains("image_checksum"));
}

TEST_CASE("automated cleaning runs the agent's steps; the cleaning steps endpoint shows them", "[server][agent]") {
  TestApi api;
  createAgentNode(api, "n1");
  CHECK(api.get("/v1/nodes/n1/cleaning/steps").status == 202);
  REQUIRE(verb(api, "n1", "manage").status == 202);
  REQUIRE(verb(api, "n1", "provide").status == 202);
  auto n = node(api, "n1");
  REQUIRE(n["provision_state"] == "clean wait");
  auto pending = api.get("/v1/nodes/n1/cleaning/steps");
  CHECK(pending.status == 202);
  CHECK(pending.header("Retry-Request-After") == "30");

  ScriptedAgent agent{api};
  REQUIRE(agent.lookup().status == 200);
  auto metadata = commandOf(agent.beat());
  CHECK(metadata["params"]["step"]["step"] == "erase_devices_metadata");
  CHECK(metadata["params"]["kind"] == "clean");

  auto steps = api.get("/v1/nodes/n1/cleaning/steps");
  REQUIRE(steps.status == 200);
  std::vector<std::string> names;
  for (const auto& s : steps.json()) names.push_back(s["interface"].get<std::string>() + "." + s["step"].get<std::string>());
  CHECK(std::find(names.begin(), names.end(), "deploy.erase_devices_metadata") != names.end());
  CHECK(std::find(names.begin(), names.end(), "raid.create_configuration") != names.end());
  CHECK(steps.json()[0]["priority"] == 99);

  auto erase = commandOf(agent.finish(metadata));
  CHECK(erase["params"]["step"]["step"] == "erase_devices");
  agent.finish(erase);
  n = node(api, "n1");
  CHECK(n["provision_state"] == "available");
  CHECK(n["power_state"] == "power off");
  CHECK(n["driver_internal_info"]["clean_steps"].size() == 2);
  // The catalogue stays visible after the ramdisk is gone.
  CHECK(api.get("/v1/nodes/n1/cleaning/steps").status == 200);
}

TEST_CASE("a failed clean step puts the node in clean failed", "[server][agent]") {
  TestApi api;
  createAgentNode(api, "n1");
  verb(api, "n1", "manage");
  verb(api, "n1", "provide");
  ScriptedAgent agent{api};
  REQUIRE(agent.lookup().status == 200);
  auto metadata = commandOf(agent.beat());
  agent.finish(metadata, "FAILED", Json::object(), "wipefs failed on /dev/vda: device busy");
  auto n = node(api, "n1");
  CHECK(n["provision_state"] == "clean failed");
  CHECK_THAT(n["last_error"].get<std::string>(), Catch::Contains("deploy.erase_devices_metadata") &&
                                                     Catch::Contains("device busy"));
}

TEST_CASE("manual cleaning with agent RAID stores the RAID configuration", "[server][agent]") {
  TestApi api;
  createAgentNode(api, "n1", {{"raid_interface", "agent"}});
  REQUIRE(api.put("/v1/nodes/n1/states/raid",
                  {{"logical_disks", {{{"size_gb", "MAX"}, {"raid_level", "1"}, {"is_root_volume", true}}}}})
              .status == 204);
  makeAvailable(api, "n1");
  verb(api, "n1", "manage");
  REQUIRE(verb(api, "n1", "clean", {{"clean_steps", {{{"interface", "raid"}, {"step", "create_configuration"}}}}}).status == 202);
  REQUIRE(node(api, "n1")["provision_state"] == "clean wait");
  ScriptedAgent agent{api};
  REQUIRE(agent.lookup().status == 200);
  auto create = commandOf(agent.beat());
  CHECK(create["params"]["step"]["step"] == "create_configuration");
  CHECK(create["params"]["node"]["target_raid_config"]["logical_disks"][0]["raid_level"] == "1");
  Json raid{{"logical_disks", {{{"size_gb", 9}, {"raid_level", "1"}, {"is_root_volume", true},
                                {"controller", "software"}, {"device", "/dev/md0"}}}}};
  agent.finish(create, "SUCCEEDED", {{"raid_config", raid}});
  auto n = node(api, "n1");
  CHECK(n["provision_state"] == "manageable");
  CHECK(n["raid_config"] == raid);
}

TEST_CASE("agent inspection stores the inventory's properties", "[server][agent]") {
  TestApi api;
  createAgentNode(api, "n1", {{"inspect_interface", "agent"}, {"properties", {{"capabilities", "x:y"}}}});
  verb(api, "n1", "manage");
  REQUIRE(verb(api, "n1", "inspect").status == 202);
  REQUIRE(node(api, "n1")["provision_state"] == "inspect wait");
  ScriptedAgent agent{api};
  REQUIRE(agent.lookup().status == 200);
  // A heartbeat without the inventory keeps waiting.
  agent.beat();
  CHECK(node(api, "n1")["provision_state"] == "inspect wait");
  Json body = agent.beatBody();
  body["inventory"] = Json::parse(R"({
    "cpu": {"count": 4, "architecture": "x86_64", "model_name": "QEMU"},
    "memory": {"total": 4294967296, "physical_mb": 4096},
    "disks": [{"name": "/dev/vda", "size": 21474836480}],
    "root_disk": {"name": "/dev/vda", "size": 21474836480},
    "interfaces": [{"name": "eth0", "mac_address": "52:54:00:12:34:56"}],
    "boot": {"current_boot_mode": "uefi"}})");
  REQUIRE(api.post("/v1/heartbeat/" + agent.uuid, body).status == 202);
  auto n = node(api, "n1");
  CHECK(n["provision_state"] == "manageable");
  CHECK(n["properties"]["cpus"] == 4);
  CHECK(n["properties"]["cpu_arch"] == "x86_64");
  CHECK(n["properties"]["memory_mb"] == 4096);
  CHECK(n["properties"]["local_gb"] == 19);
  CHECK(n["properties"]["capabilities"] == "x:y,boot_mode:uefi");
  CHECK(n["power_state"] == "power off");
}

TEST_CASE("inspect wait times out", "[server][agent]") {
  TestApi api("[conductor]\ninspect_wait_timeout = 60\n");
  createAgentNode(api, "n1", {{"inspect_interface", "agent"}});
  verb(api, "n1", "manage");
  verb(api, "n1", "inspect");
  REQUIRE(node(api, "n1")["provision_state"] == "inspect wait");
  api.clock().advance(std::chrono::seconds(61));
  api.runPeriodic();
  auto n = node(api, "n1");
  CHECK(n["provision_state"] == "inspect failed");
  CHECK_THAT(n["last_error"].get<std::string>(), Catch::Contains("Timeout"));
}

TEST_CASE("heartbeats keep the callback timeout from expiring", "[server][agent]") {
  // No ramdisk logs: with them the timeout would wait for the agent's (ramdisk_logs tests).
  TestApi api("[conductor]\ndeploy_callback_timeout = 100\n[agent]\ndeploy_logs_collect = never\n");
  createAgentNode(api, "n1");
  makeAvailable(api, "n1");
  verb(api, "n1", "active");
  ScriptedAgent agent{api};
  REQUIRE(agent.lookup().status == 200);
  auto write = commandOf(agent.beat());
  for (int i = 0; i < 3; ++i) {
    api.clock().advance(std::chrono::seconds(60));
    agent.beat();
    api.runPeriodic();
    REQUIRE(node(api, "n1")["provision_state"] == "wait call-back");
  }
  api.clock().advance(std::chrono::seconds(101));
  api.runPeriodic();
  auto n = node(api, "n1");
  CHECK(n["provision_state"] == "deploy failed");
  CHECK_THAT(n["last_error"].get<std::string>(), Catch::Contains("deploy.write_image"));
}

TEST_CASE("the server's messages carry the golden files' fields", "[server][agent][protocol]") {
  using kiln::test::goldenMessage;
  using kiln::test::keysOf;
  TestApi api;
  createAgentNode(api, "n1");
  makeAvailable(api, "n1");
  verb(api, "n1", "active");
  ScriptedAgent agent{api};
  auto lookup = agent.lookup();
  REQUIRE(lookup.status == 200);
  const Json goldenLookup = goldenMessage("lookup_response");
  CHECK(keysOf(lookup.json()) == keysOf(goldenLookup));
  CHECK(keysOf(lookup.json()["node"]) == keysOf(goldenLookup["node"]));
  for (const auto& key : keysOf(goldenLookup["config"])) CHECK(lookup.json()["config"].contains(key));

  // The golden heartbeat request is accepted as it is (with this session's token).
  Json golden = goldenMessage("heartbeat_request");
  golden["agent_token"] = agent.token;
  golden["results"] = Json::array();
  golden.erase("progress");
  golden["running"] = Json::array();
  auto beat = api.post("/v1/heartbeat/" + agent.uuid, golden);
  api.settle();
  REQUIRE(beat.status == 202);
  const Json goldenResponse = goldenMessage("heartbeat_response");
  CHECK(keysOf(beat.json()) == keysOf(goldenResponse));
  auto command = commandOf(beat);
  CHECK(keysOf(command) == keysOf(goldenResponse["commands"][0]));
  CHECK(keysOf(command["params"]) == keysOf(goldenResponse["commands"][0]["params"]));
  CHECK(keysOf(command["params"]["step"]) == keysOf(goldenResponse["commands"][0]["params"]["step"]));
  CHECK(keysOf(command["params"]["step"]["args"]["image_info"]) ==
        keysOf(goldenResponse["commands"][0]["params"]["step"]["args"]["image_info"]));
  CHECK(node(api, "n1")["driver_internal_info"]["hardware_manager_version"]["generic"] == "1");
}

TEST_CASE("deploy: partition images tell the agent their type and root size", "[server][agent][partition]") {
  TestApi api;
  const Json base{{"image_source", "http://127.0.0.1:8080/root.img"},
                  {"image_os_hash_algo", "sha256"}, {"image_os_hash_value", std::string(64, 'a')}};
  Json info = base;
  info["image_type"] = "partition";
  createAgentNode(api, "n1", {{"instance_info", info}});
  auto v = api.get("/v1/nodes/n1/validate").json();
  CHECK(v["deploy"]["result"] == false);
  CHECK_THAT(v["deploy"]["reason"].get<std::string>(), Catch::Contains("root_gb"));
  for (const Json& bad : {Json{{"root_gb", 10}, {"swap_mb", 512}}, Json{{"root_gb", -1}},
                          Json{{"root_gb", "ten"}}, Json{{"root_gb", 10}, {"image_type", "netboot"}}}) {
    INFO(bad.dump());
    Json patched = info;
    patched.update(bad);
    api.patch("/v1/nodes/n1", Json::array({{{"op", "replace"}, {"path", "/instance_info"}, {"value", patched}}}));
    CHECK(api.get("/v1/nodes/n1/validate").json()["deploy"]["result"] == false);
  }
  info["root_gb"] = "10";  // Ironic takes digit strings too
  api.patch("/v1/nodes/n1", Json::array({{{"op", "replace"}, {"path", "/instance_info"}, {"value", info}}}));
  CHECK(api.get("/v1/nodes/n1/validate").json()["deploy"]["result"] == true);
  makeAvailable(api, "n1");
  REQUIRE(verb(api, "n1", "active").status == 202);
  ScriptedAgent agent{api};
  REQUIRE(agent.lookup().status == 200);
  auto write = commandOf(agent.beat());
  const Json& image = write["params"]["step"]["args"]["image_info"];
  CHECK(image["image_type"] == "partition");
  CHECK(image["root_mb"] == 10240);
}

TEST_CASE("deploy: whole-disk images say so; kernel and ramdisk without image_type mean partition",
          "[server][agent][partition]") {
  TestApi api;
  createAgentNode(api, "n1");
  makeAvailable(api, "n1");
  REQUIRE(verb(api, "n1", "active").status == 202);
  ScriptedAgent agent{api};
  REQUIRE(agent.lookup().status == 200);
  auto write = commandOf(agent.beat());
  CHECK(write["params"]["step"]["args"]["image_info"]["image_type"] == "whole-disk");

  TestApi legacy;
  createAgentNode(legacy, "n2", {{"instance_info", {{"image_source", "http://127.0.0.1:8080/root.img"},
                                                    {"image_checksum", std::string(64, 'a')},
                                                    {"kernel", "http://x/vmlinuz"}, {"ramdisk", "http://x/initrd"}}}});
  auto v = legacy.get("/v1/nodes/n2/validate").json();
  CHECK_THAT(v["deploy"]["reason"].get<std::string>(), Catch::Contains("root_gb"));
}

TEST_CASE("in-band servicing boots the agent on the active node and boots the instance after",
          "[server][agent][service]") {
  TestApi api;
  api.version = "1." + std::to_string(kiln::server::ver::k87Service);
  createAgentNode(api, "s1", {{"deploy_interface", "fake"}, {"raid_interface", "agent"}});
  makeAvailable(api, "s1");
  REQUIRE(verb(api, "s1", "active").status == 202);
  REQUIRE(node(api, "s1")["provision_state"] == "active");
  const Json raid{{"logical_disks", {{{"size_gb", "MAX"}, {"raid_level", "1"}, {"is_root_volume", true}}}}};
  const Json steps = Json::array(
      {{{"interface", "raid"}, {"step", "apply_configuration"}, {"args", {{"raid_config", raid}}}}});

  SECTION("disable_ramdisk refuses the in-band step") {
    api.version = "1." + std::to_string(kiln::server::ver::k108ServiceDisableRamdisk);
    REQUIRE(verb(api, "s1", "service", {{"service_steps", steps}, {"disable_ramdisk", true}}).status == 202);
    const Json n = node(api, "s1");
    CHECK(n["provision_state"] == "service failed");
    CHECK(n["last_error"] == "Failed to validate the service steps of node " +
                                 n["uuid"].get<std::string>() +
                                 ": service step raid.apply_configuration requires booting a ramdisk");
    CHECK(n["power_state"] == "power on");  // the instance was not rebooted
  }

  SECTION("the step runs in the agent; the node returns to active, powered on") {
    REQUIRE(verb(api, "s1", "service", {{"service_steps", steps}}).status == 202);
    Json n = node(api, "s1");
    REQUIRE(n["provision_state"] == "service wait");
    CHECK(n["power_state"] == "power on");
    ScriptedAgent agent{api};
    REQUIRE(agent.lookup().status == 200);  // an agent is expected in service wait
    auto apply = commandOf(agent.beat());
    CHECK(apply["name"] == "execute_step");
    CHECK(apply["params"]["kind"] == "service");
    CHECK(apply["params"]["step"]["step"] == "apply_configuration");
    CHECK(apply["params"]["step"]["args"]["raid_config"] == raid);
    CHECK(node(api, "s1")["service_step"]["step"] == "apply_configuration");
    const Json built{{"logical_disks", {{{"size_gb", 9}, {"raid_level", "1"}, {"is_root_volume", true},
                                         {"controller", "software"}, {"device", "/dev/md0"}}}}};
    agent.finish(apply, "SUCCEEDED", {{"raid_config", built}});
    n = node(api, "s1");
    CHECK(n["provision_state"] == "active");
    CHECK(n["last_error"].is_null());
    CHECK(n["raid_config"] == built);
    CHECK(n["power_state"] == "power on");
    CHECK(n["service_step"] == Json::object());
    CHECK_FALSE(n["driver_internal_info"].contains("service_ramdisk"));
    CHECK(agent.lookup().status == 404);  // the session ended with the ramdisk
  }

  SECTION("a failed agent step leaves the ramdisk up until abort boots the instance") {
    REQUIRE(verb(api, "s1", "service", {{"service_steps", steps}}).status == 202);
    ScriptedAgent agent{api};
    REQUIRE(agent.lookup().status == 200);
    auto apply = commandOf(agent.beat());
    agent.finish(apply, "FAILED", Json::object(), "mdadm: cannot open /dev/vdb");
    Json n = node(api, "s1");
    REQUIRE(n["provision_state"] == "service failed");
    CHECK(n["last_error"].get<std::string>().find("mdadm: cannot open /dev/vdb") != std::string::npos);
    CHECK(n["driver_internal_info"]["service_ramdisk"] == true);
    REQUIRE(verb(api, "s1", "abort").status == 202);
    n = node(api, "s1");
    CHECK(n["provision_state"] == "active");
    CHECK(n["last_error"].is_null());
    CHECK(n["power_state"] == "power on");
    CHECK(n["reservation"].is_null());
    CHECK_FALSE(n["driver_internal_info"].contains("service_ramdisk"));
  }
}

TEST_CASE("manual cleaning with disable_ramdisk refuses an in-band step", "[server][agent]") {
  TestApi api;
  api.version = "1." + std::to_string(kiln::server::ver::k70CleanDisableRamdisk);
  createAgentNode(api, "c1", {{"raid_interface", "agent"}});
  makeAvailable(api, "c1");
  REQUIRE(verb(api, "c1", "manage").status == 202);
  REQUIRE(verb(api, "c1", "clean",
               {{"clean_steps", Json::array({{{"interface", "deploy"}, {"step", "erase_devices_metadata"}}})},
                {"disable_ramdisk", true}})
              .status == 202);
  const Json n = node(api, "c1");
  CHECK(n["provision_state"] == "clean failed");
  CHECK(n["last_error"] == "Failed to validate the clean steps of node " + n["uuid"].get<std::string>() +
                               ": clean step deploy.erase_devices_metadata requires booting a ramdisk");
  CHECK(n["power_state"] == "power off");  // no ramdisk was booted
}

TEST_CASE("disable_power_off: the agent flows never power the node off", "[server][agent]") {
  TestApi api;
  api.version = "1." + std::to_string(kiln::server::ver::k95DisablePowerOff);
  createAgentNode(api, "p1", {{"disable_power_off", true}});
  makeAvailable(api, "p1");
  SECTION("deployment: no power_off for the agent; the node is reset into the instance") {
    REQUIRE(verb(api, "p1", "active").status == 202);
    ScriptedAgent agent{api};
    REQUIRE(agent.lookup().status == 200);
    auto write = commandOf(agent.beat());
    REQUIRE(write["params"]["step"]["step"] == "write_image");
    auto after = agent.finish(write, "SUCCEEDED", {{"root_device", "/dev/vda"}});
    REQUIRE(after.status == 202);
    CHECK(after.json()["commands"].empty());  // no power_off command
    const Json n = node(api, "p1");
    CHECK(n["provision_state"] == "active");
    CHECK(n["power_state"] == "power on");
    CHECK(n["last_error"].is_null());
    CHECK(agent.lookup().status == 404);  // the ramdisk session is over
  }
  SECTION("cleaning ends with the node on (rebooted out of the ramdisk)") {
    REQUIRE(verb(api, "p1", "manage").status == 202);
    REQUIRE(verb(api, "p1", "clean",
                 {{"clean_steps", Json::array({{{"interface", "deploy"}, {"step", "erase_devices_metadata"}}})}})
                .status == 202);
    ScriptedAgent agent{api};
    REQUIRE(agent.lookup().status == 200);
    auto erase = commandOf(agent.beat());
    REQUIRE(erase["params"]["step"]["step"] == "erase_devices_metadata");
    agent.finish(erase);
    const Json n = node(api, "p1");
    CHECK(n["provision_state"] == "manageable");
    CHECK(n["power_state"] == "power on");
    CHECK(n["last_error"].is_null());
  }
}

// ---- ramdisk logs (server/drivers/agent/ramdisk_logs.h) ----------------------------------------

namespace {

/// A log bundle as the agent makes it: base64 of a gzip'd tar holding agent.log.
std::string bundleBase64(const std::string& agentLog) {
  auto tar = kiln::tarArchive({{"agent.log", agentLog}}, 1700000000);
  REQUIRE(tar);
  auto gz = kiln::gzipCompress(*tar);
  REQUIRE(gz);
  return kiln::base64Encode(*gz);
}

/// The .tar.gz files under `dir`.
std::vector<std::filesystem::path> storedBundles(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  if (!std::filesystem::exists(dir)) return out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path());
  return out;
}

std::string logsConfig(const kiln::test::TempDir& dir, const std::string& when) {
  return "[agent]\ndeploy_logs_collect = " + when +
         "\ndeploy_logs_local_path = " + dir.file("deploy") + "\n";
}

}  // namespace

TEST_CASE("ramdisk logs: a failed step's bundle is stored under Ironic's name, not in the node",
          "[server][agent][ramdisk_logs]") {
  kiln::test::TempDir dir("kiln-logs");
  TestApi api(logsConfig(dir, "on_failure"));
  createAgentNode(api, "n1");
  makeAvailable(api, "n1");
  REQUIRE(verb(api, "n1", "active").status == 202);
  ScriptedAgent agent{api};
  REQUIRE(agent.lookup().status == 200);
  auto write = commandOf(agent.beat());
  // The server asks for the logs of a failing step on the step itself.
  CHECK(write["params"]["collect_logs_on_failure"] == true);
  auto r = agent.finish(write, "FAILED",
                        {{"system_logs", bundleBase64("ERROR agent: checksum mismatch\n")}},
                        "Image checksum mismatch");
  CHECK(r.json()["acknowledged"] == Json::array({write["id"]}));
  auto n = node(api, "n1");
  CHECK(n["provision_state"] == "deploy failed");
  CHECK(n["driver_internal_info"].dump().find("system_logs") == std::string::npos);
  const auto files = storedBundles(dir.file("deploy"));
  REQUIRE(files.size() == 1);
  const std::string name = files[0].filename().string();
  INFO(name);
  // <node uuid>_<YYYY-mm-dd-HH-MM-SS>.tar.gz (no instance uuid on this node)
  CHECK(name.rfind(n["uuid"].get<std::string>() + "_", 0) == 0);
  CHECK(name.size() == 36 + 1 + 19 + 7);
  CHECK(name.substr(name.size() - 7) == ".tar.gz");
  std::ifstream in(files[0], std::ios::binary);
  const std::string stored((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto tar = kiln::gunzip(stored, 1 << 20);
  REQUIRE(tar);
  auto log = kiln::tarMemberContent(*tar, "agent.log");
  REQUIRE(log);
  CHECK_THAT(*log, Catch::Contains("checksum mismatch"));
}

TEST_CASE("ramdisk logs: never asks for none and stores none; a bad bundle is only logged",
          "[server][agent][ramdisk_logs]") {
  kiln::test::TempDir dir("kiln-logs");
  SECTION("never") {
    TestApi api(logsConfig(dir, "never"));
    createAgentNode(api, "n1");
    makeAvailable(api, "n1");
    REQUIRE(verb(api, "n1", "active").status == 202);
    ScriptedAgent agent{api};
    REQUIRE(agent.lookup().status == 200);
    auto write = commandOf(agent.beat());
    CHECK(write["params"]["collect_logs_on_failure"] == false);
    agent.finish(write, "FAILED", {{"system_logs", bundleBase64("x")}}, "failed");
    CHECK(node(api, "n1")["provision_state"] == "deploy failed");
    CHECK(storedBundles(dir.file("deploy")).empty());
  }
  SECTION("malformed bundles") {
    TestApi api(logsConfig(dir, "on_failure"));
    createAgentNode(api, "n1");
    makeAvailable(api, "n1");
    REQUIRE(verb(api, "n1", "active").status == 202);
    ScriptedAgent agent{api};
    REQUIRE(agent.lookup().status == 200);
    auto write = commandOf(agent.beat());
    auto r = agent.finish(write, "FAILED", {{"system_logs", "not base64!"}}, "failed");
    CHECK(r.status == 202);
    auto n = node(api, "n1");
    CHECK(n["provision_state"] == "deploy failed");
    CHECK_THAT(n["last_error"].get<std::string>(), Catch::Contains("failed"));
    CHECK(storedBundles(dir.file("deploy")).empty());
  }
}

TEST_CASE("ramdisk logs: always collects before tear_down_agent powers the agent off",
          "[server][agent][ramdisk_logs]") {
  kiln::test::TempDir dir("kiln-logs");
  TestApi api(logsConfig(dir, "always"));
  createAgentNode(api, "n1", {{"instance_uuid", "7a0b9d6c-56a4-4b0e-9f3a-1c2d3e4f5a6b"}});
  makeAvailable(api, "n1");
  REQUIRE(verb(api, "n1", "active").status == 202);
  ScriptedAgent agent{api};
  REQUIRE(agent.lookup().status == 200);
  auto write = commandOf(agent.beat());
  auto off = agent.finish(write, "SUCCEEDED", {{"root_device", "/dev/vda"}});
  auto commands = off.json()["commands"];
  REQUIRE(commands.size() == 2);
  // In this order: the agent answers collect_logs before it powers off.
  CHECK(commands[0]["name"] == "collect_logs");
  CHECK(commands[1]["name"] == "power_off");

  // Both answers in one heartbeat, as the agent sends them.
  Json logs{{"id", commands[0]["id"]},
            {"name", "collect_logs"},
            {"status", "SUCCEEDED"},
            {"result", {{"system_logs", bundleBase64("INFO agent: command succeeded\n")}}}};
  Json power{{"id", commands[1]["id"]},
             {"name", "power_off"},
             {"status", "SUCCEEDED"},
             {"result", Json::object()}};
  auto done = agent.beat(Json::array({logs, power}));
  CHECK(done.json()["acknowledged"].size() == 2);
  auto n = node(api, "n1");
  CHECK(n["provision_state"] == "active");
  const auto files = storedBundles(dir.file("deploy"));
  REQUIRE(files.size() == 1);
  // <node uuid>_<instance uuid>_<time>.tar.gz
  CHECK(files[0].filename().string().rfind(
            n["uuid"].get<std::string>() + "_7a0b9d6c-56a4-4b0e-9f3a-1c2d3e4f5a6b_", 0) == 0);
}

TEST_CASE("ramdisk logs: a collect_logs that fails or never comes does not hold the flow up",
          "[server][agent][ramdisk_logs]") {
  kiln::test::TempDir dir("kiln-logs");
  TestApi api(logsConfig(dir, "always"));
  createAgentNode(api, "n1");
  makeAvailable(api, "n1");
  REQUIRE(verb(api, "n1", "active").status == 202);
  ScriptedAgent agent{api};
  REQUIRE(agent.lookup().status == 200);
  auto write = commandOf(agent.beat());
  auto commands = agent.finish(write, "SUCCEEDED", Json::object()).json()["commands"];
  REQUIRE(commands.size() == 2);
  SECTION("failed") {
    Json logs{{"id", commands[0]["id"]},
              {"name", "collect_logs"},
              {"status", "FAILED"},
              {"result", Json::object()},
              {"error", "unknown command 'collect_logs'"}};
    auto r = agent.beat(Json::array({logs}));
    // The request is answered: only power_off is left.
    REQUIRE(r.json()["commands"].size() == 1);
    CHECK(r.json()["commands"][0]["name"] == "power_off");
    agent.finish(r.json()["commands"][0]);
  }
  SECTION("never answered") { agent.finish(commands[1]); }
  CHECK(node(api, "n1")["provision_state"] == "active");
  CHECK(storedBundles(dir.file("deploy")).empty());
}

TEST_CASE("ramdisk logs: bundles are checked before they are stored",
          "[server][agent][ramdisk_logs]") {
  using kiln::server::agent::decodeLogBundle;
  CHECK(decodeLogBundle(bundleBase64("line\n")));
  auto notBase64 = decodeLogBundle("%%%");
  REQUIRE_FALSE(notBase64);
  CHECK_THAT(notBase64.error().message, Catch::StartsWith("Invalid ramdisk log bundle: "));
  CHECK_FALSE(decodeLogBundle(kiln::base64Encode("plain text, not gzip")));
  CHECK_FALSE(
      decodeLogBundle(kiln::base64Encode(*kiln::gzipCompress("gzip, but not a tar archive"))));
  // Too large before decoding, and a bomb that inflates too far.
  CHECK_FALSE(decodeLogBundle(std::string(17 * 1024 * 1024, 'A')));
  auto bomb =
      kiln::gzipCompress(std::string(kiln::server::agent::kMaxLogBundleInflatedBytes + 1, '\0'));
  REQUIRE(bomb);
  CHECK_FALSE(decodeLogBundle(kiln::base64Encode(*bomb)));
  CHECK(kiln::server::agent::logFileName("u", "", std::chrono::system_clock::from_time_t(0)) ==
        "u_1970-01-01-00-00-00.tar.gz");
  CHECK(kiln::server::agent::logFileName("u", "i", std::chrono::system_clock::from_time_t(86399)) ==
        "u_i_1970-01-01-23-59-59.tar.gz");
}

namespace {

/// Node `name` (made available without cleaning) asked to deploy, and its agent looked up.
ScriptedAgent deployingAgent(TestApi& api, const std::string& name) {
  createAgentNode(api, name);
  makeAvailable(api, name);
  REQUIRE(verb(api, name, "active").status == 202);
  ScriptedAgent agent{api};
  REQUIRE(agent.lookup().status == 200);
  return agent;
}

/// The node's agent_log events, oldest first.
Json agentLogEvents(TestApi& api, const std::string& ident) {
  auto r = api.get("/v1/nodes/" + ident + "/events?kind=agent_log");
  REQUIRE(r.status == 200);
  return r.json()["events"];
}

}  // namespace

TEST_CASE("agent log lines in a heartbeat are journalled, read, masked and acknowledged",
          "[server][agent][events]") {
  TestApi api;
  ScriptedAgent agent = deployingAgent(api, "n1");
  Json body = agent.beatBody();
  body["log"] = {
      {"first_seq", 7},
      {"dropped", 3},
      {"lines",
       {"2026-12-06T15:41:38+00:00 INFO  agent: Writing image url=http://u:pw@10.0.2.2/i.img",
        "2026-12-06T15:41:39+00:00 WARN  agent: token " + agent.token + " seen",
        "no shape at all\n", std::string(5000, 'x'), "\xC3\xA9t\xC3\xA9"}}};
  auto beat = api.post("/v1/heartbeat/" + agent.uuid, body);
  api.settle();
  REQUIRE(beat.status == 202);
  CHECK(beat.json()["log_acknowledged"] == 11);

  const Json events = agentLogEvents(api, "n1");
  REQUIRE(events.size() == 6);
  CHECK(events[0]["dropped"] == 3);
  CHECK(events[0]["level"] == "warning");
  CHECK(events[1]["seq"] == 7);
  CHECK(events[1]["level"] == "info");
  CHECK(events[1]["agent_time"] == "2026-12-06T15:41:38+00:00");
  CHECK(events[1]["message"] == "Writing image url=http://10.0.2.2/******");
  CHECK(events[2]["level"] == "warning");
  CHECK(events[2]["message"] == "token ****** seen");
  CHECK(events[3]["level"].is_null());
  CHECK(events[3]["agent_time"].is_null());
  CHECK(events[3]["message"] == "no shape at all");
  CHECK(events[4]["message"].get<std::string>().size() == kiln::protocol::LogBatch::kMaxLineBytes);
  CHECK(events[4]["truncated_bytes"] == 5000 - kiln::protocol::LogBatch::kMaxLineBytes);
  CHECK(events[5]["seq"] == 11);
  CHECK(events[5]["message"] == "\xC3\xA9t\xC3\xA9");
  const std::string all = events.dump();
  CHECK(all.find(agent.token) == std::string::npos);
  CHECK(all.find("pw@") == std::string::npos);

  // A body whose strings are not UTF-8 is malformed JSON: 400, nothing journalled.
  std::string raw = agent.beatBody().dump();
  raw.insert(raw.size() - 1, R"(,"log":{"first_seq":20,"lines":["bad )" + std::string("\xFF\xFE") + R"("]})");
  auto bad = api.call("POST", "/v1/heartbeat/" + agent.uuid, raw);
  CHECK(bad.status == 400);
  CHECK(agentLogEvents(api, "n1").size() == 6);
}

TEST_CASE("a heartbeat keeps at most a bounded share of its log lines and acknowledges those",
          "[server][agent][events]") {
  TestApi api;
  ScriptedAgent agent = deployingAgent(api, "n1");
  Json body = agent.beatBody();
  Json lines = Json::array();
  for (int i = 0; i < 40; ++i) lines.push_back(std::string(2000, 'a' + i % 26));
  body["log"] = {{"first_seq", 1}, {"lines", lines}};
  auto beat = api.post("/v1/heartbeat/" + agent.uuid, body);
  api.settle();
  REQUIRE(beat.status == 202);
  const uint64_t kept = beat.json()["log_acknowledged"].get<uint64_t>();
  CHECK(kept == kiln::server::events::kMaxAgentLogBytesPerHeartbeat / 2000);
  CHECK(agentLogEvents(api, "n1").size() == kept);
}

TEST_CASE("agent log lines are journalled while a worker holds the node", "[server][agent][events]") {
  TestApi api;
  ScriptedAgent agent = deployingAgent(api, "n1");
  {
    auto tx = api.app().storage().begin(kiln::server::Storage::Mode::Write).value();
    auto rec = tx->nodes().findBy(kiln::server::kNodeName, kiln::server::Value::text("n1")).value();
    REQUIRE(rec);
    rec->setText(kiln::server::kNodeReservation, "elsewhere");
    REQUIRE(tx->nodes().update(*rec));
    REQUIRE(tx->commit());
  }
  Json body = agent.beatBody();
  body["log"] = {{"first_seq", 1}, {"lines", {"one", "two"}}};
  auto beat = api.post("/v1/heartbeat/" + agent.uuid, body);
  REQUIRE(beat.status == 202);
  CHECK(beat.json()["log_acknowledged"] == 2);
  CHECK(beat.json()["commands"].empty());
  CHECK(agentLogEvents(api, "n1").size() == 2);
  // Nothing else of the heartbeat was recorded: the worker's save would overwrite it.
  CHECK_FALSE(node(api, "n1")["driver_internal_info"].contains("agent_last_heartbeat"));
}

// ---- ramdisk logs at the end of every flow, and for failures that are not a step's own -------

namespace {

/// The collect_logs command a heartbeat answer carries (its only command).
Json logsCommandOf(const Response& r) {
  REQUIRE(r.status == 202);
  const Json commands = r.json()["commands"];
  REQUIRE(commands.size() == 1);
  REQUIRE(commands[0]["name"] == "collect_logs");
  return commands[0];
}

/// The agent's answer to `command`, with a bundle whose agent.log is `line`.
Json logsAnswer(const Json& command, const std::string& line) {
  return Json{{"id", command["id"]},
              {"name", "collect_logs"},
              {"status", "SUCCEEDED"},
              {"result", {{"system_logs", bundleBase64(line)}}}};
}

/// The single bundle under `dir`: named <node uuid>[_<instance uuid>]_<time>.tar.gz, holding
/// `line` in agent.log.
void checkOneBundle(const std::filesystem::path& dir, const std::string& nodeUuid,
                    const std::string& instanceUuid, const std::string& line) {
  const auto files = storedBundles(dir);
  REQUIRE(files.size() == 1);
  const std::string name = files[0].filename().string();
  INFO(name);
  const std::string prefix = nodeUuid + "_" + (instanceUuid.empty() ? "" : instanceUuid + "_");
  CHECK(name.rfind(prefix, 0) == 0);
  CHECK(name.size() == prefix.size() + 19 + 7);
  CHECK(name.substr(name.size() - 7) == ".tar.gz");
  std::ifstream in(files[0], std::ios::binary);
  const std::string stored((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto tar = kiln::gunzip(stored, 1 << 20);
  REQUIRE(tar);
  auto log = kiln::tarMemberContent(*tar, "agent.log");
  REQUIRE(log);
  CHECK(*log == line);
}

constexpr const char* kInventory = R"({
    "cpu": {"count": 4, "architecture": "x86_64"},
    "memory": {"total": 4294967296, "physical_mb": 4096},
    "root_disk": {"name": "/dev/vda", "size": 21474836480},
    "interfaces": [{"name": "eth0", "mac_address": "52:54:00:12:34:56"}]})";

}  // namespace

TEST_CASE(
    "ramdisk logs: always collects at the end of cleaning, inspection and servicing, "
    "before the ramdisk goes",
    "[server][agent][ramdisk_logs]") {
  kiln::test::TempDir dir("kiln-logs");
  TestApi api(logsConfig(dir, "always"));
  ScriptedAgent agent{api};

  SECTION("automated cleaning") {
    createAgentNode(api, "n1");
    verb(api, "n1", "manage");
    REQUIRE(verb(api, "n1", "provide").status == 202);
    REQUIRE(agent.lookup().status == 200);
    auto metadata = commandOf(agent.beat());
    auto erase = commandOf(agent.finish(metadata));
    const Json logs = logsCommandOf(agent.finish(erase));
    // The ramdisk is still up, waiting for the answer.
    Json n = node(api, "n1");
    CHECK(n["provision_state"] == "clean wait");
    CHECK(n["power_state"] == "power on");
    CHECK(storedBundles(dir.file("deploy")).empty());
    auto done = agent.beat(Json::array({logsAnswer(logs, "INFO agent: cleaned\n")}));
    CHECK(done.json()["acknowledged"] == Json::array({logs["id"]}));
    n = node(api, "n1");
    CHECK(n["provision_state"] == "available");
    CHECK(n["power_state"] == "power off");
    CHECK(n["last_error"].is_null());
    CHECK(n["driver_internal_info"].dump().find("agent_logs") == std::string::npos);
    checkOneBundle(dir.file("deploy"), n["uuid"], "", "INFO agent: cleaned\n");
  }

  SECTION("manual cleaning") {
    createAgentNode(api, "n1");
    makeAvailable(api, "n1");
    verb(api, "n1", "manage");
    REQUIRE(verb(api, "n1", "clean",
                 {{"clean_steps", {{{"interface", "deploy"}, {"step", "erase_devices_metadata"}}}}})
                .status == 202);
    REQUIRE(agent.lookup().status == 200);
    auto metadata = commandOf(agent.beat());
    const Json logs = logsCommandOf(agent.finish(metadata));
    CHECK(node(api, "n1")["provision_state"] == "clean wait");
    agent.beat(Json::array({logsAnswer(logs, "INFO agent: manual\n")}));
    const Json n = node(api, "n1");
    CHECK(n["provision_state"] == "manageable");
    CHECK(n["power_state"] == "power off");
    checkOneBundle(dir.file("deploy"), n["uuid"], "", "INFO agent: manual\n");
  }

  SECTION("inspection") {
    createAgentNode(api, "n1", {{"inspect_interface", "agent"}});
    verb(api, "n1", "manage");
    REQUIRE(verb(api, "n1", "inspect").status == 202);
    REQUIRE(agent.lookup().status == 200);
    Json body = agent.beatBody();
    body["inventory"] = Json::parse(kInventory);
    auto r = api.post("/v1/heartbeat/" + agent.uuid, body);
    api.settle();
    const Json logs = logsCommandOf(r);
    Json n = node(api, "n1");
    CHECK(n["provision_state"] == "inspect wait");
    CHECK(n["power_state"] == "power on");
    agent.beat(Json::array({logsAnswer(logs, "INFO agent: inventory sent\n")}));
    n = node(api, "n1");
    CHECK(n["provision_state"] == "manageable");
    CHECK(n["properties"]["cpus"] == 4);
    CHECK(n["power_state"] == "power off");
    checkOneBundle(dir.file("deploy"), n["uuid"], "", "INFO agent: inventory sent\n");
  }

  SECTION("servicing") {
    api.version = "1." + std::to_string(kiln::server::ver::k87Service);
    const std::string instance = "7a0b9d6c-56a4-4b0e-9f3a-1c2d3e4f5a6b";
    createAgentNode(
        api, "s1",
        {{"deploy_interface", "fake"}, {"raid_interface", "agent"}, {"instance_uuid", instance}});
    makeAvailable(api, "s1");
    REQUIRE(verb(api, "s1", "active").status == 202);
    const Json raid{{"logical_disks", {{{"size_gb", "MAX"}, {"raid_level", "1"}}}}};
    REQUIRE(verb(api, "s1", "service",
                 {{"service_steps", Json::array({{{"interface", "raid"},
                                                  {"step", "apply_configuration"},
                                                  {"args", {{"raid_config", raid}}}}})}})
                .status == 202);
    REQUIRE(agent.lookup().status == 200);
    auto apply = commandOf(agent.beat());
    const Json logs = logsCommandOf(agent.finish(apply, "SUCCEEDED", {{"raid_config", raid}}));
    CHECK(node(api, "s1")["provision_state"] == "service wait");
    agent.beat(Json::array({logsAnswer(logs, "INFO agent: serviced\n")}));
    const Json n = node(api, "s1");
    CHECK(n["provision_state"] == "active");
    CHECK(n["power_state"] == "power on");
    checkOneBundle(dir.file("deploy"), n["uuid"], instance, "INFO agent: serviced\n");
  }
}

TEST_CASE("ramdisk logs: never and on_failure collect nothing at the end of a successful flow",
          "[server][agent][ramdisk_logs]") {
  kiln::test::TempDir dir("kiln-logs");
  const std::string when = GENERATE("never", "on_failure");
  TestApi api(logsConfig(dir, when));
  ScriptedAgent agent{api};
  SECTION("cleaning") {
    createAgentNode(api, "n1");
    verb(api, "n1", "manage");
    verb(api, "n1", "provide");
    REQUIRE(agent.lookup().status == 200);
    auto metadata = commandOf(agent.beat());
    auto erase = commandOf(agent.finish(metadata));
    auto r = agent.finish(erase);
    CHECK(r.json()["commands"].empty());
    CHECK(node(api, "n1")["provision_state"] == "available");
  }
  SECTION("inspection") {
    createAgentNode(api, "n1", {{"inspect_interface", "agent"}});
    verb(api, "n1", "manage");
    verb(api, "n1", "inspect");
    REQUIRE(agent.lookup().status == 200);
    Json body = agent.beatBody();
    body["inventory"] = Json::parse(kInventory);
    auto r = api.post("/v1/heartbeat/" + agent.uuid, body);
    api.settle();
    CHECK(r.json()["commands"].empty());
    CHECK(node(api, "n1")["provision_state"] == "manageable");
  }
  CHECK(storedBundles(dir.file("deploy")).empty());
}

TEST_CASE(
    "ramdisk logs: an agent that does not answer holds a flow only until "
    "deploy_logs_collect_timeout, then a warning",
    "[server][agent][ramdisk_logs]") {
  kiln::test::TempDir dir("kiln-logs");
  TestApi api(logsConfig(dir, "always") + "deploy_logs_collect_timeout = 30\n");
  kiln::test::LogCapture logs(kiln::LogLevel::Warning);
  ScriptedAgent agent{api};
  std::string waitState, endState;
  SECTION("cleaning") {
    createAgentNode(api, "n1");
    verb(api, "n1", "manage");
    verb(api, "n1", "provide");
    REQUIRE(agent.lookup().status == 200);
    auto metadata = commandOf(agent.beat());
    auto erase = commandOf(agent.finish(metadata));
    logsCommandOf(agent.finish(erase));
    waitState = "clean wait";
    endState = "available";
  }
  SECTION("inspection") {
    createAgentNode(api, "n1", {{"inspect_interface", "agent"}});
    verb(api, "n1", "manage");
    verb(api, "n1", "inspect");
    REQUIRE(agent.lookup().status == 200);
    Json body = agent.beatBody();
    body["inventory"] = Json::parse(kInventory);
    logsCommandOf(api.post("/v1/heartbeat/" + agent.uuid, body));
    waitState = "inspect wait";
    endState = "manageable";
  }
  api.clock().advance(std::chrono::seconds(20));
  api.runPeriodic();
  REQUIRE(node(api, "n1")["provision_state"] == waitState);
  CHECK(logs.text().find("did not send its logs") == std::string::npos);
  api.clock().advance(std::chrono::seconds(11));
  api.runPeriodic();
  const Json n = node(api, "n1");
  CHECK(n["provision_state"] == endState);
  CHECK(n["power_state"] == "power off");
  CHECK(n["last_error"].is_null());
  CHECK(storedBundles(dir.file("deploy")).empty());
  CHECK_THAT(logs.text(), Catch::Contains("the agent did not send its logs in time"));
}

TEST_CASE(
    "ramdisk logs: on_failure collects before a server-side step failure fails cleaning; "
    "last_error keeps the step's error",
    "[server][agent][ramdisk_logs]") {
  kiln::test::TempDir dir("kiln-logs");
  TestApi api(logsConfig(dir, "on_failure") + "deploy_logs_collect_timeout = 30\n");
  createAgentNode(api, "n1");
  makeAvailable(api, "n1");
  verb(api, "n1", "manage");
  // An in-band step, then one kiln-server runs itself whose arguments make it fail.
  REQUIRE(verb(api, "n1", "clean",
               {{"clean_steps",
                 {{{"interface", "deploy"}, {"step", "erase_devices_metadata"}},
                  {{"interface", "deploy"}, {"step", "wait"}, {"args", {{"seconds", "x"}}}}}}})
              .status == 202);
  ScriptedAgent agent{api};
  REQUIRE(agent.lookup().status == 200);
  const Json erase = commandOf(agent.beat());
  const Response after = agent.finish(erase);
  // The failure waits for the logs: the node still waits, the agent is asked.
  Json n = node(api, "n1");
  REQUIRE(n["provision_state"] == "clean wait");
  CHECK(n["last_error"].is_null());
  Json logs = after.json()["commands"].empty() ? logsCommandOf(agent.beat())
                                               : after.json()["commands"][0];
  REQUIRE(logs["name"] == "collect_logs");
  SECTION("the agent answers") {
    agent.beat(Json::array({logsAnswer(logs, "INFO agent: erased\n")}));
    n = node(api, "n1");
    checkOneBundle(dir.file("deploy"), n["uuid"], "", "INFO agent: erased\n");
  }
  SECTION("the agent does not answer") {
    kiln::test::LogCapture warnings(kiln::LogLevel::Warning);
    api.clock().advance(std::chrono::seconds(31));
    api.runPeriodic();
    n = node(api, "n1");
    CHECK(storedBundles(dir.file("deploy")).empty());
    CHECK_THAT(warnings.text(), Catch::Contains("the agent did not send its logs in time"));
  }
  CHECK(n["provision_state"] == "clean failed");
  CHECK_THAT(n["last_error"].get<std::string>(), Catch::Contains("deploy.wait"));
  CHECK(n["reservation"].is_null());
  CHECK(n["driver_internal_info"].dump().find("agent_logs_then_fail") == std::string::npos);
}

TEST_CASE("ramdisk logs: a callback timeout fails at once without asking for logs",
          "[server][agent][ramdisk_logs]") {
  kiln::test::TempDir dir("kiln-logs");
  TestApi api(logsConfig(dir, "always") + "[conductor]\ndeploy_callback_timeout = 100\n");
  ScriptedAgent agent = deployingAgent(api, "n1");
  commandOf(agent.beat());  // write_image, never answered; the agent falls silent
  api.clock().advance(std::chrono::seconds(101));
  api.runPeriodic();
  const Json n = node(api, "n1");
  CHECK(n["provision_state"] == "deploy failed");
  CHECK_THAT(n["last_error"].get<std::string>(),
             Catch::StartsWith("Timeout reached while waiting for callback for node") &&
                 Catch::Contains("deploy.write_image"));
  CHECK(n["power_state"] == "power off");
  CHECK(storedBundles(dir.file("deploy")).empty());
}
