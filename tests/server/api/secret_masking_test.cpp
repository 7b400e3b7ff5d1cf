// Secrets never leave kiln-server: API answers (nodes, PATCH errors, /validate, deploy
// templates, last_error) and log lines show password-like values, image URLs and URLs with
// user:password@ masked (shared/core/secrets.h), while the stored values stay as given.
// Every secret in these tests contains "pw-", so a leak anywhere is one substring check.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "server/model/node.h"
#include "tests/support/log_capture.h"
#include "tests/support/basic_auth.h"
#include "tests/support/test_api.h"

using kiln::LogLevel;
using kiln::test::Json;
using kiln::test::LogCapture;
using kiln::test::Response;
using kiln::test::TestApi;
using namespace kiln::server;

using kiln::test::basicAuthorization;
using kiln::test::kTestHtpasswd;

namespace {

bool leaks(const std::string& text) { return text.find("pw-") != std::string::npos; }

Json op(const std::string& o, const std::string& path, Json value = nullptr) {
  Json j = {{"op", o}, {"path", path}};
  if (o != "remove") j["value"] = std::move(value);
  return j;
}

Json node(TestApi& api, const std::string& ident) {
  api.settle();
  return api.get("/v1/nodes/" + ident).json();
}

Response verb(TestApi& api, const std::string& ident, const std::string& target) {
  auto r = api.put("/v1/nodes/" + ident + "/states/provision", {{"target", target}});
  api.settle();
  return r;
}

/// The node's stored row, unmasked.
Record stored(TestApi& api, const std::string& name) {
  auto tx = api.app().storage().begin(Storage::Mode::Read).value();
  auto rec = tx->nodes().findBy(kNodeName, Value::text(name)).value();
  REQUIRE(rec);
  return *rec;
}

void mutate(TestApi& api, const std::string& name, const std::function<void(Record&)>& change) {
  auto tx = api.app().storage().begin(Storage::Mode::Write).value();
  auto rec = tx->nodes().findBy(kNodeName, Value::text(name)).value();
  REQUIRE(rec);
  change(*rec);
  REQUIRE(tx->nodes().update(*rec));
  REQUIRE(tx->commit());
}

const Json kDriverInfo = Json::parse(R"({
  "ipmi_address": "10.0.0.1",
  "ipmi_password": "pw-scalar",
  "pin_token": 1234,
  "old_password": null,
  "bmc": {"Redfish_Password": {"current": "pw-object"}, "port": 623,
          "users": [{"name": "u", "secret": ["pw-list"]}]},
  "deploy_kernel": "http://admin:pw-url@images.example/kernel"
})");

const Json kInstanceInfo = Json::parse(R"({
  "image_url": "http://images.example/disk?temp_url_sig=pw-sig",
  "image_source": "http://u:pw-source@images.example/disk.raw",
  "configdrive": {"meta_data": {"public_keys": {"k": "pw-configdrive"}}},
  "root_gb": 10
})");

void createSecretNode(TestApi& api, const std::string& name) {
  api.createNode(
      {{"name", name},
       {"driver_info", kDriverInfo},
       {"instance_info", kInstanceInfo},
       {"extra", {{"mirror", "https://x:pw-extra@mirror.example/p"}, {"token", "kept"}}}});
}

void checkMaskedNode(const Json& n) {
  const Json& di = n["driver_info"];
  CHECK(di["ipmi_address"] == "10.0.0.1");
  CHECK(di["ipmi_password"] == "******");
  CHECK(di["pin_token"] == "******");
  CHECK(di["old_password"].is_null());
  CHECK(di["bmc"]["Redfish_Password"] == "******");
  CHECK(di["bmc"]["port"] == 623);
  CHECK(di["bmc"]["users"] == Json::parse(R"([{"name": "u", "secret": "******"}])"));
  CHECK(di["deploy_kernel"] == "http://images.example/******");
  const Json& ii = n["instance_info"];
  CHECK(ii["image_url"] == "******");
  CHECK(ii["configdrive"] == "******");
  CHECK(ii["image_source"] == "http://images.example/******");
  CHECK(ii["root_gb"] == 10);
  // extra keeps Ironic's behaviour (keys shown as they are), but URLs never carry credentials.
  CHECK(n["extra"]["token"] == "kept");
  CHECK(n["extra"]["mirror"] == "https://mirror.example/******");
}

}  // namespace

TEST_CASE("node answers mask secrets of every type at any depth; storage keeps them",
          "[server][api][secrets]") {
  TestApi api;
  createSecretNode(api, "s");
  for (const std::string path :
       {"/v1/nodes/s", "/v1/nodes/detail", "/v1/nodes?fields=name,driver_info,instance_info,extra",
        "/v1/nodes/s?fields=driver_info,instance_info,extra"}) {
    INFO(path);
    auto r = api.get(path);
    REQUIRE(r.status == 200);
    CHECK_FALSE(leaks(r.body));
    const Json body = r.json();
    checkMaskedNode(body.contains("nodes") ? body["nodes"][0] : body);
  }
  auto patched =
      api.patch("/v1/nodes/s", Json::array({op("add", "/driver_info/bmc_password", "pw-new")}));
  REQUIRE(patched.status == 200);
  CHECK_FALSE(leaks(patched.body));
  CHECK(patched.json()["driver_info"]["bmc_password"] == "******");

  const Record row = stored(api, "s");
  const Json di = Json::parse(row.str(kNodeDriverInfo));
  CHECK(di["ipmi_password"] == "pw-scalar");
  CHECK(di["bmc"]["Redfish_Password"]["current"] == "pw-object");
  CHECK(di["bmc_password"] == "pw-new");
  CHECK(Json::parse(row.str(kNodeInstanceInfo))["image_url"] == kInstanceInfo["image_url"]);
}

TEST_CASE("PATCH errors quote the document with its secrets masked, in Ironic's shape",
          "[server][api][secrets][patch]") {
  TestApi api;
  createSecretNode(api, "p");
  auto r = api.patch("/v1/nodes/p", Json::array({op("add", "/driver_info/bmc/missing/x", 1)}));
  CHECK(r.status == 400);
  CHECK(r.fault() ==
        "Couldn't apply patch '{'op': 'add', 'path': '/driver_info/bmc/missing/x', 'value': 1}'. "
        "Reason: member 'missing' not found in {'Redfish_Password': '******', 'port': 623, "
        "'users': [{'name': 'u', 'secret': '******'}]}");

  r = api.patch("/v1/nodes/p", Json::array({op("add", "/driver_info/missing/x", 1)}));
  CHECK(r.status == 400);
  CHECK_THAT(r.fault(), Catch::StartsWith("Couldn't apply patch '{'op': 'add', 'path': "
                                          "'/driver_info/missing/x', 'value': 1}'. Reason: member "
                                          "'missing' not found in {"));
  CHECK_THAT(r.fault(), Catch::Contains("'ipmi_password': '******'") &&
                            Catch::Contains("'deploy_kernel': 'http://images.example/******'"));
  CHECK_FALSE(leaks(r.body));

  r = api.patch("/v1/nodes/p", Json::array({op("remove", "/instance_info/missing/x")}));
  CHECK(r.status == 400);
  CHECK_THAT(r.fault(), Catch::Contains("'image_url': '******'") &&
                            Catch::Contains("'configdrive': '******'"));
  CHECK_FALSE(leaks(r.body));

  // The op's own value: whole under a password-like path, searched otherwise.
  r = api.patch("/v1/nodes/p",
                Json::array({op("add", "/driver_info/ipmi_password/x", "pw-value")}));
  CHECK(r.status == 400);
  CHECK_THAT(r.fault(), Catch::Contains("'value': '******'"));
  CHECK_FALSE(leaks(r.body));
  r = api.patch(
      "/v1/nodes/p",
      Json::array({op("add", "/extra/missing/x", {{"user", "u"}, {"password", "pw-v"}})}));
  CHECK(r.status == 400);
  CHECK_THAT(r.fault(), Catch::Contains("'value': {'password': '******', 'user': 'u'}"));
  CHECK_FALSE(leaks(r.body));

  // A field patched to the wrong type quotes the value, masked.
  r = api.patch(
      "/v1/nodes/p",
      Json::array({op("replace", "/driver_info", Json::array({{{"password", "pw-type"}}}))}));
  CHECK(r.status == 400);
  CHECK_THAT(r.fault(), Catch::Contains("Value: [{\"password\":\"******\"}]"));
  CHECK_FALSE(leaks(r.body));

  // Any error answer masks a URL with credentials.
  r = api.patch("/v1/nodes/p", Json::array({op("replace", "/name", "http://u:pw-name@h/x")}));
  CHECK(r.status == 400);
  CHECK_FALSE(leaks(r.body));
}

TEST_CASE("deploy templates show password-like step arguments masked",
          "[server][api][secrets][templates]") {
  TestApi api;
  const Json args = Json::parse(R"({"settings": [{"name": "A", "value": "1"}],
      "bmc_password": "pw-t1", "auth": {"api_token": ["pw-t2"]},
      "nested": [{"secret": {"a": "pw-t3"}}, {"ok": "visible"}]})");
  auto created = api.post("/v1/deploy_templates", {{"name", "CUSTOM_PW"},
                                                   {"steps",
                                                    {{{"interface", "bios"},
                                                      {"step", "apply_configuration"},
                                                      {"priority", 90},
                                                      {"args", args}}}}});
  REQUIRE(created.status == 201);
  CHECK_FALSE(leaks(created.body));
  for (const std::string path :
       {"/v1/deploy_templates/CUSTOM_PW", "/v1/deploy_templates?detail=True"}) {
    INFO(path);
    auto r = api.get(path);
    REQUIRE(r.status == 200);
    CHECK_FALSE(leaks(r.body));
    const Json t =
        r.json().contains("deploy_templates") ? r.json()["deploy_templates"][0] : r.json();
    const Json& a = t["steps"][0]["args"];
    CHECK(a["bmc_password"] == "******");
    CHECK(a["auth"] == Json{{"api_token", "******"}});
    CHECK(a["nested"] == Json::parse(R"([{"secret": "******"}, {"ok": "visible"}])"));
    CHECK(a["settings"] == args["settings"]);
  }
  auto patched =
      api.patch("/v1/deploy_templates/CUSTOM_PW", Json::array({op("add", "/extra/k", "v")}));
  REQUIRE(patched.status == 200);
  CHECK_FALSE(leaks(patched.body));
  // A patch error quoting the steps masks them too.
  auto bad = api.patch("/v1/deploy_templates/CUSTOM_PW",
                       Json::array({op("add", "/steps/0/args/missing/x", 1)}));
  CHECK(bad.status == 400);
  CHECK_THAT(bad.fault(), Catch::Contains("not found in {'auth': {'api_token': '******'}"));
  CHECK_FALSE(leaks(bad.body));
}

TEST_CASE("template step arguments are masked in /validate, last_error, deploy_step and the log",
          "[server][api][secrets][templates]") {
  TestApi api;
  // bios.apply_configuration takes only `settings`: the other arguments make the template
  // invalid, and the messages quote the step.
  REQUIRE(api.post("/v1/deploy_templates", Json::parse(R"({"name": "CUSTOM_BAD", "steps": [
      {"interface": "bios", "step": "apply_configuration", "priority": 90,
       "args": {"settings": [], "bmc_password": "pw-arg", "creds": {"token": {"x": "pw-arg2"}}}}]})"))
              .status == 201);
  // A valid step whose handler fails: the failed step stays in deploy_step, arguments and all.
  REQUIRE(api.post("/v1/deploy_templates", Json::parse(R"({"name": "CUSTOM_FAILS", "steps": [
      {"interface": "bios", "step": "apply_configuration", "priority": 90,
       "args": {"settings": {"admin_password": "pw-step"}}}]})"))
              .status == 201);
  for (const std::string name : {"bad", "fails"}) {
    api.createNode({{"name", name}});
    REQUIRE(verb(api, name, "manage").status == 202);
    REQUIRE(verb(api, name, "provide").status == 202);
  }
  REQUIRE(api.put("/v1/nodes/bad/traits", {{"traits", {"CUSTOM_BAD"}}}).status == 204);
  REQUIRE(api.put("/v1/nodes/fails/traits", {{"traits", {"CUSTOM_FAILS"}}}).status == 204);
  REQUIRE(
      api.patch("/v1/nodes/bad", Json::array({op("add", "/instance_info/traits", {"CUSTOM_BAD"})}))
          .status == 200);
  REQUIRE(api.patch("/v1/nodes/fails",
                    Json::array({op("add", "/instance_info/traits", {"CUSTOM_FAILS"})}))
              .status == 200);

  LogCapture log(LogLevel::Trace);
  auto v = api.get("/v1/nodes/bad/validate");
  REQUIRE(v.status == 200);
  CHECK(v.json()["deploy"]["result"] == false);
  CHECK_THAT(v.json()["deploy"]["reason"].get<std::string>(),
             Catch::Contains("bios.apply_configuration") &&
                 Catch::Contains("'bmc_password': '******'") &&
                 Catch::Contains("'creds': {'token': '******'}"));
  CHECK_FALSE(leaks(v.body));

  REQUIRE(verb(api, "bad", "active").status == 202);
  auto n = node(api, "bad");
  CHECK(n["provision_state"] == "deploy failed");
  CHECK_THAT(n["last_error"].get<std::string>(),
             Catch::Contains("has these invalid arguments: bmc_password, creds") &&
                 Catch::Contains("'bmc_password': '******'"));
  CHECK_FALSE(leaks(api.get("/v1/nodes/bad").body));
  CHECK_FALSE(leaks(api.get("/v1/nodes/bad/states").body));

  REQUIRE(verb(api, "fails", "active").status == 202);
  n = node(api, "fails");
  CHECK(n["provision_state"] == "deploy failed");
  CHECK_THAT(n["last_error"].get<std::string>(), Catch::Contains("settings must be a list"));
  CHECK(n["deploy_step"]["args"] == Json{{"settings", {{"admin_password", "******"}}}});
  CHECK_FALSE(leaks(api.get("/v1/nodes/fails").body));
  CHECK_FALSE(leaks(api.get("/v1/nodes/detail").body));
  // The conductor still has the real argument.
  CHECK_THAT(stored(api, "fails").str(kNodeDeployStep), Catch::Contains("pw-step"));

  const std::string lines = log.text();
  CHECK_THAT(lines,
             Catch::Contains("provisioning failed") && Catch::Contains("'bmc_password': '******'"));
  CHECK_FALSE(leaks(lines));
}

TEST_CASE("messages and log lines mask image URLs; last_error never shows credentials",
          "[server][api][secrets][images]") {
  TestApi api;
  api.createNode({{"name", "img"},
                  {"deploy_interface", "direct"},
                  {"instance_info",
                   {{"image_source", "ftp://user:pw-ftp@images.example/disk.raw?sig=pw-sig"},
                    {"image_checksum", "abc"}}}});
  auto v = api.get("/v1/nodes/img/validate");
  REQUIRE(v.status == 200);
  CHECK(v.json()["deploy"]["result"] == false);
  CHECK_THAT(v.json()["deploy"]["reason"].get<std::string>(),
             Catch::Contains("got 'ftp://images.example/******'"));
  CHECK_FALSE(leaks(v.body));

  // A stored message quoting a URL with credentials (a BMC address, say) is masked on output.
  mutate(api, "img", [](Record& r) {
    r.setText(kNodeLastError, "Redfish GET https://root:pw-bmc@bmc.example/redfish/v1 failed");
    r.setText(kNodeMaintenanceReason, "see http://ops:pw-ops@wiki.example/page");
  });
  for (const std::string path : {"/v1/nodes/img", "/v1/nodes/img/states", "/v1/nodes/detail"}) {
    INFO(path);
    auto r = api.get(path);
    CHECK_FALSE(leaks(r.body));
    CHECK_THAT(r.body, Catch::Contains("Redfish GET https://bmc.example/****** failed"));
  }
}

TEST_CASE("an agent error quoting the image URL reaches last_error and the log masked",
          "[server][api][secrets][images]") {
  TestApi api;
  const std::string image =
      "http://127.0.0.1:8080/v1/AUTH_a/c/img.raw?temp_url_sig=pw-sig&temp_url_expires=9";
  auto created = api.createNode({{"name", "a"},
                                 {"deploy_interface", "direct"},
                                 {"automated_clean", false},
                                 {"instance_info",
                                  {{"image_source", image},
                                   {"image_os_hash_algo", "sha256"},
                                   {"image_os_hash_value", std::string(64, 'a')}}}});
  REQUIRE(api.post("/v1/ports", {{"address", "52:54:00:12:34:56"}, {"node_uuid", created["uuid"]}})
              .status == 201);
  REQUIRE(verb(api, "a", "manage").status == 202);
  REQUIRE(verb(api, "a", "provide").status == 202);
  REQUIRE(verb(api, "a", "active").status == 202);
  REQUIRE(node(api, "a")["provision_state"] == "wait call-back");

  LogCapture log(LogLevel::Trace);
  auto lookup = api.get("/v1/lookup?addresses=52:54:00:12:34:56");
  REQUIRE(lookup.status == 200);
  const std::string uuid = created["uuid"];
  const std::string token = lookup.json()["config"]["agent_token"];
  auto beat = [&](Json results) {
    auto r = api.post("/v1/heartbeat/" + uuid, {{"callback_url", ""},
                                                {"agent_version", "test"},
                                                {"agent_token", token},
                                                {"protocol_version", 1},
                                                {"steps", Json::object()},
                                                {"results", results},
                                                {"running", Json::array()}});
    api.settle();
    REQUIRE(r.status == 202);
    return r.json();
  };
  const Json commands = beat(Json::array())["commands"];
  REQUIRE(commands.size() == 1);
  REQUIRE(commands[0]["params"]["step"]["step"] == "write_image");
  // The agent itself needs the real URL.
  CHECK(commands[0]["params"]["step"]["args"]["image_info"]["urls"][0] == image);
  beat(Json::array({{{"id", commands[0]["id"]},
                     {"name", commands[0]["name"]},
                     {"status", "FAILED"},
                     {"result", Json::object()},
                     {"error", "Cannot download image from " + image + ": HTTP status 403"}}}));
  auto n = node(api, "a");
  CHECK(n["provision_state"] == "deploy failed");
  CHECK_THAT(
      n["last_error"].get<std::string>(),
      Catch::Contains("Cannot download image from http://127.0.0.1:8080/******: HTTP status 403"));
  // instance_info.image_source is shown as given, as Ironic shows it (only image_url is
  // masked there); nothing else quotes the URL.
  Json shown = api.get("/v1/nodes/a").json();
  CHECK(shown["instance_info"]["image_source"] == image);
  shown["instance_info"].erase("image_source");
  CHECK_FALSE(leaks(shown.dump()));
  const std::string lines = log.text();
  CHECK_THAT(lines, Catch::Contains("http://127.0.0.1:8080/******"));
  CHECK_FALSE(leaks(lines));
}

TEST_CASE("http_basic credentials never reach the log", "[server][api][secrets][auth]") {
  char tmpl[] = "/tmp/kiln-htpasswd-XXXXXX";
  const int fd = mkstemp(tmpl);
  REQUIRE(fd >= 0);
  close(fd);
  const std::filesystem::path file = tmpl;
  std::ofstream(file) << kTestHtpasswd;
  {
    TestApi api("[DEFAULT]\nauth_strategy = http_basic\nhttp_basic_auth_user_file = " +
                file.string() + "\n");
    LogCapture log(LogLevel::Trace);
    CHECK(api.call("GET", "/v1/nodes", "", {{"Authorization", basicAuthorization("admin", "s3cret")}})
              .status == 200);
    CHECK(
        api.call("GET", "/v1/nodes", "", {{"Authorization", basicAuthorization("admin", "pw-wrong")}})
            .status == 401);
    CHECK(api.call("POST", "/v1/nodes", R"({"driver": "fake-hardware", "name": "n"})",
                   {{"Authorization", basicAuthorization("admin", "s3cret")}})
              .status == 201);
    const std::string lines = log.text();
    CHECK_THAT(lines, Catch::Contains("node created"));  // the capture works
    CHECK_FALSE(leaks(lines));
    CHECK(lines.find("s3cret") == std::string::npos);
    CHECK(lines.find(basicAuthorization("admin", "s3cret").substr(6)) == std::string::npos);
    CHECK(lines.find(basicAuthorization("admin", "pw-wrong").substr(6)) == std::string::npos);
  }
  std::filesystem::remove(file);
}
