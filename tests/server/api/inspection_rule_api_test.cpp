#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "server/api/version.h"
#include "server/model/inspection_rule.h"
#include "server/model/versions.h"
#include "server/storage/queries/inspection_rules.h"
#include "server/storage/storage.h"
#include "tests/support/basic_auth.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TestApi;
namespace ks = kiln::server;

using kiln::test::basicAuthorization;
using kiln::test::kTestHtpasswd;

namespace {

const std::string kRulesVersion = ks::versionString(ks::ver::k96InspectionRules);
const std::string kBeforeRules = ks::versionString(ks::ver::k95DisablePowerOff);

/// The api-ref's show sample (a rule that copies inventory facts into properties).
Json propertiesRule() {
  return Json::parse(R"({
    "description": "Set properties on discovered data",
    "phase": "main",
    "priority": 50,
    "sensitive": false,
    "conditions": [{"op": "is-true", "args": {"value": "{inventory[cpu][count]}"}}],
    "actions": [
      {"op": "set-attribute", "args": {"path": "/properties/cpus", "value": "{inventory[cpu][count]}"}},
      {"op": "set-attribute", "args": {"path": "/properties/memory_mb", "value": "{inventory[memory][physical_mb]}"}}
    ]})");
}

/// The api-ref's create sample: a sensitive rule holding BMC credentials.
Json credentialsRule() {
  return Json::parse(R"({
    "description": "BMC credentials",
    "phase": "main",
    "priority": 100,
    "sensitive": true,
    "conditions": [
      {"op": "contains", "args": {"value": "{inventory[system_vendor][manufacturer]}", "regex": "(?i)dell"}},
      {"op": "is-true", "args": {"value": "{node.auto_discovered}"}}
    ],
    "actions": [
      {"op": "set-attribute", "args": {"path": "/driver", "value": "idrac"}},
      {"op": "set-attribute", "args": {"path": "/driver_info/redfish_password", "value": "password"}}
    ]})");
}

Json minimalRule() {
  return Json::parse(R"({"actions": [{"op": "log", "args": {"msg": "hello"}}]})");
}

std::set<std::string> keysOf(const Json& object) {
  std::set<std::string> out;
  for (auto it = object.begin(); it != object.end(); ++it) out.insert(it.key());
  return out;
}

}  // namespace

TEST_CASE("inspection rules are created, shown, listed, patched and deleted",
          "[server][api][inspection_rules]") {
  TestApi api;
  api.version = kRulesVersion;
  auto created = api.post("/v1/inspection_rules", propertiesRule());
  INFO(created.body);
  REQUIRE(created.status == 201);
  const Json rule = created.json();
  const std::string uuid = rule["uuid"];
  CHECK(created.header("Location") == "http://kiln.test:6385/v1/inspection_rules/" + uuid);
  CHECK(keysOf(rule) == std::set<std::string>{"uuid", "description", "phase", "priority",
                                              "sensitive", "conditions", "actions", "created_at",
                                              "updated_at", "links"});
  CHECK(rule["priority"] == 50);
  CHECK(rule["phase"] == "main");
  CHECK(rule["sensitive"] == false);
  CHECK(rule["conditions"] == propertiesRule()["conditions"]);
  CHECK(rule["actions"] == propertiesRule()["actions"]);
  CHECK(rule["updated_at"].is_null());
  CHECK(rule["links"][0]["href"] == "http://kiln.test:6385/v1/inspection_rules/" + uuid);
  CHECK(rule["links"][1]["href"] == "http://kiln.test:6385/inspection_rules/" + uuid);

  auto shown = api.get("/v1/inspection_rules/" + uuid);
  REQUIRE(shown.status == 200);
  CHECK(shown.json()["actions"] == propertiesRule()["actions"]);
  CHECK(keysOf(api.get("/v1/inspection_rules/" + uuid + "?fields=priority").json()) ==
        std::set<std::string>{"priority", "links"});

  auto list = api.get("/v1/inspection_rules").json()["inspection_rules"];
  REQUIRE(list.size() == 1);
  CHECK(keysOf(list[0]) ==
        std::set<std::string>{"uuid", "priority", "phase", "description", "links"});
  auto detail = api.get("/v1/inspection_rules?detail=true").json()["inspection_rules"];
  CHECK(detail[0]["conditions"] == propertiesRule()["conditions"]);
  CHECK(keysOf(api.get("/v1/inspection_rules?fields=uuid,sensitive").json()["inspection_rules"][0]) ==
        std::set<std::string>{"uuid", "sensitive", "links"});

  // The api-ref's update sample.
  auto patched = api.patch("/v1/inspection_rules/" + uuid, Json::parse(R"([
    {"path": "/description", "value": "Updated rule for setting hardware properties", "op": "replace"},
    {"path": "/priority", "value": 75, "op": "replace"},
    {"path": "/actions/-", "value": {"op": "set-attribute",
        "args": {"path": "/properties/local_gb", "value": "{inventory[disks][0][size]}"}}, "op": "add"}])"));
  INFO(patched.body);
  REQUIRE(patched.status == 200);
  CHECK(patched.json()["priority"] == 75);
  CHECK(patched.json()["description"] == "Updated rule for setting hardware properties");
  CHECK(patched.json()["actions"].size() == 3);
  CHECK(patched.json()["updated_at"].is_string());
  CHECK(api.get("/v1/inspection_rules/" + uuid).json()["actions"][2]["args"]["path"] ==
        "/properties/local_gb");

  CHECK(api.del("/v1/inspection_rules/" + uuid).status == 204);
  auto gone = api.get("/v1/inspection_rules/" + uuid);
  CHECK(gone.status == 404);
  CHECK(gone.fault() == "Rule " + uuid + " could not be found.");
  CHECK(api.del("/v1/inspection_rules/" + uuid).status == 404);
}

TEST_CASE("inspection rules are 404 for GET and 405 for writes below API 1.96",
          "[server][api][inspection_rules]") {
  TestApi api;
  api.version = kRulesVersion;
  auto created = api.post("/v1/inspection_rules", minimalRule());
  REQUIRE(created.status == 201);
  const std::string path = "/v1/inspection_rules/" + created.json()["uuid"].get<std::string>();

  api.version = kBeforeRules;
  auto list = api.get("/v1/inspection_rules");
  CHECK(list.status == 404);
  CHECK(list.fault() == "The API version does not allow inspection rules");
  CHECK(api.get(path).status == 404);
  CHECK(api.post("/v1/inspection_rules", minimalRule()).status == 405);
  CHECK(api.patch(path, Json::parse(R"([{"op": "replace", "path": "/priority", "value": 1}])"))
            .status == 405);
  CHECK(api.del(path).status == 405);

  api.version = kRulesVersion;
  CHECK(api.get(path).json()["priority"] == 0);
  // Ironic has no bulk delete on the collection.
  CHECK(api.del("/v1/inspection_rules").status == 405);
}

TEST_CASE("inspection rules take the client's UUID and refuse a duplicate with 409",
          "[server][api][inspection_rules]") {
  TestApi api;
  api.version = kRulesVersion;
  Json body = minimalRule();
  body["uuid"] = "783BF33A-A8E3-1E23-A645-1E95A1F95186";
  auto first = api.post("/v1/inspection_rules", body);
  REQUIRE(first.status == 201);
  CHECK(first.json()["uuid"] == "783bf33a-a8e3-1e23-a645-1e95a1f95186");
  auto dup = api.post("/v1/inspection_rules", body);
  CHECK(dup.status == 409);
  CHECK(dup.fault() == "A rule with UUID 783bf33a-a8e3-1e23-a645-1e95a1f95186 already exists.");
  body["uuid"] = "not-a-uuid";
  auto bad = api.post("/v1/inspection_rules", body);
  CHECK(bad.status == 400);
  CHECK(bad.fault() == "Expected UUID for uuid: not-a-uuid");
  auto badPath = api.get("/v1/inspection_rules/not-a-uuid");
  CHECK(badPath.status == 400);
  CHECK(badPath.fault() == "Schema error: 'not-a-uuid' is not a 'uuid'");
  CHECK(api.get("/v1/inspection_rules").json()["inspection_rules"].size() == 1);
}

TEST_CASE("inspection rule bodies are validated as Ironic's schema and validate_rule",
          "[server][api][inspection_rules]") {
  TestApi api;
  api.version = kRulesVersion;
  auto fault = [&](const Json& body) {
    auto r = api.post("/v1/inspection_rules", body);
    INFO(r.body);
    CHECK(r.status == 400);
    return r.fault();
  };
  auto with = [](const char* key, Json value) {
    Json body = minimalRule();
    body[key] = std::move(value);
    return body;
  };
  CHECK(fault(Json::parse(R"({"conditions": []})")) ==
        "Schema error: 'actions' is a required property");
  CHECK(fault(with("actions", Json::array())) == "Schema error: [] is too short");
  CHECK(fault(with("name", "x")) ==
        "Schema error: Additional properties are not allowed ('name' was unexpected)");
  CHECK(fault(with("priority", -1)) == "Schema error: -1 is less than the minimum of 0");
  CHECK(fault(with("priority", "5")) == "Schema error: '5' is not of type 'integer'");
  CHECK(fault(with("priority", 10000)) ==
        "Priority must be between 0 and 9999 for user-defined rules.");
  CHECK(fault(with("phase", "late")) == "Invalid phase: late. Valid phases are: main");
  CHECK(fault(with("sensitive", "yes")) ==
        "Schema error: 'yes' is not of type 'boolean', 'null'");
  CHECK(fault(with("description", std::string(256, 'd'))) ==
        "Schema error: '" + std::string(256, 'd') + "' is too long");
  CHECK_THAT(fault(with("actions", Json::parse(R"([{"op": "noop", "args": {}}])"))),
             Catch::StartsWith("Schema error: 'noop' is not one of ['fail', 'log',"));
  CHECK_THAT(fault(with("conditions", Json::parse(R"([{"op": "!!eq", "args": {}}])"))),
             Catch::StartsWith("Schema error: '!!eq' is not one of ['eq', 'lt',"));
  CHECK(fault(with("actions", Json::parse(R"([{"op": "log"}])"))) ==
        "Schema error: 'args' is a required property");
  CHECK(fault(with("actions", Json::parse(R"([{"op": "log", "args": "hi"}])"))) ==
        "Schema error: 'hi' is not of type 'array', 'object'");
  CHECK(fault(with("conditions",
                   Json::parse(R"([{"op": "eq", "args": {"values": [1, 1]}, "multiple": "most"}])"))) ==
        "Schema error: 'most' is not one of ['any', 'all', 'first', 'last']");
  CHECK(fault(with("conditions", Json::parse(R"([{"op": "eq", "args": {}}])"))) ==
        "Invalid parameters for condition operator eq: missing required argument(s): values");
  CHECK(fault(with("conditions", Json::parse(R"([{"op": "!is-true", "args": {"value": 1, "x": 2}}])"))) ==
        "Invalid parameters for condition operator is-true: unexpected argument(s): x");
  CHECK(fault(with("conditions", Json::parse(R"([{"op": "eq", "args": {"values": "{item}"}}])"))) ==
        "Invalid parameters for condition operator eq: argument 'values' must be a list, not str");
  CHECK(fault(with("actions", Json::parse(R"([{"op": "set-attribute", "args": {"path": 5, "value": 1}}])"))) ==
        "Invalid parameters for action operator set-attribute: argument 'path' must be a string, "
        "not int");
  CHECK(fault(with("actions", Json::parse(R"([{"op": "set-attribute", "args": ["/extra/a"]}])"))) ==
        "Invalid parameters for action operator set-attribute: Not enough arguments provided. "
        "Missing: value");
  CHECK(fault(with("actions", Json::parse(R"([{"op": "api-call", "args": {"url": "http://hook"}}])"))) ==
        "Unsupported action operator: api-call. Kiln's inspection rules make no outbound HTTP "
        "calls.");
  Json twoErrors = with("priority", 10000);
  twoErrors["phase"] = "late";
  CHECK(fault(twoErrors) ==
        "Multiple validation errors occurred: Invalid phase: late. Valid phases are: main; "
        "Priority must be between 0 and 9999 for user-defined rules.");
  CHECK(api.get("/v1/inspection_rules").json()["inspection_rules"].empty());

  // What Ironic accepts: negated operators, positional (deprecated) args, plugin_data given by
  // the client, loops; a condition's `multiple` defaults to "any" and is kept only with a loop.
  Json good = minimalRule();
  good["priority"] = 9999;
  good["conditions"] = Json::parse(R"([
      {"op": "!eq", "args": [[1, 2]]},
      {"op": "contains", "args": {"value": "{item}", "regex": "4"}, "loop": ["a4", "b5"]},
      {"op": "is-none", "args": {"value": null}, "multiple": "all", "force_strings": true}])");
  good["actions"] = Json::parse(R"([
      {"op": "set-plugin-data", "args": {"path": "a.b", "value": 1, "plugin_data": {}}},
      {"op": "log", "args": {"msg": "x"}, "loop": []}])");
  auto ok = api.post("/v1/inspection_rules", good);
  INFO(ok.body);
  REQUIRE(ok.status == 201);
  const Json stored = ok.json();
  CHECK(stored["priority"] == 9999);
  CHECK(stored["conditions"][0] == Json::parse(R"({"op": "!eq", "args": [[1, 2]]})"));
  CHECK(stored["conditions"][1]["multiple"] == "any");
  CHECK(stored["conditions"][2] == Json::parse(R"({"op": "is-none", "args": {"value": null}})"));
  CHECK(stored["actions"][1] == Json::parse(R"({"op": "log", "args": {"msg": "x"}})"));
}

TEST_CASE("sensitive inspection rules hide their conditions and actions and stay sensitive",
          "[server][api][inspection_rules]") {
  TestApi api;
  api.version = kRulesVersion;
  auto secret = api.post("/v1/inspection_rules", credentialsRule());
  REQUIRE(secret.status == 201);
  CHECK(secret.json()["sensitive"] == true);
  CHECK(secret.json()["conditions"].is_null());
  CHECK(secret.json()["actions"].is_null());
  const std::string secretPath = "/v1/inspection_rules/" + secret.json()["uuid"].get<std::string>();
  CHECK(api.get(secretPath).json()["actions"].is_null());
  CHECK(api.get(secretPath + "?fields=actions").json()["actions"].is_null());
  CHECK(secret.body.find("redfish_password") == std::string::npos);

  auto open = api.post("/v1/inspection_rules", propertiesRule());
  REQUIRE(open.status == 201);
  const std::string openUuid = open.json()["uuid"];
  for (const auto& r : api.get("/v1/inspection_rules?detail=True").json()["inspection_rules"]) {
    const bool isSecret = r["uuid"] != openUuid;
    CHECK(r["sensitive"] == isSecret);
    CHECK(r["conditions"].is_null() == isSecret);
    CHECK(r["actions"].is_null() == isSecret);
  }

  // A rule can become sensitive ...
  const std::string openPath = "/v1/inspection_rules/" + openUuid;
  auto marked = api.patch(openPath, Json::parse(R"([{"op": "replace", "path": "/sensitive", "value": true}])"));
  REQUIRE(marked.status == 200);
  CHECK(marked.json()["actions"].is_null());
  // ... but never stop being so: not with false, not by removing or nulling the flag.
  for (const char* patch : {R"([{"op": "replace", "path": "/sensitive", "value": false}])",
                            R"([{"op": "remove", "path": "/sensitive"}])",
                            R"([{"op": "add", "path": "/sensitive", "value": null}])"}) {
    INFO(patch);
    auto r = api.patch(openPath, Json::parse(patch));
    CHECK(r.status == 400);
    CHECK_THAT(r.fault(), Catch::StartsWith("Couldn't apply patch '[{'op': "));
    CHECK_THAT(r.fault(),
               Catch::EndsWith("Reason: Inspection rules cannot have the sensitive flag unset."));
  }
  CHECK(api.get(openPath + "?fields=sensitive").json()["sensitive"] == true);
  // Other changes to a sensitive rule are fine.
  CHECK(api.patch(secretPath, Json::parse(R"([{"op": "replace", "path": "/sensitive", "value": true},
                                              {"op": "replace", "path": "/priority", "value": 1}])"))
            .status == 200);
}

TEST_CASE("inspection rule patches are validated and change nothing when they fail",
          "[server][api][inspection_rules]") {
  TestApi api;
  api.version = kRulesVersion;
  auto created = api.post("/v1/inspection_rules", propertiesRule());
  REQUIRE(created.status == 201);
  const std::string path = "/v1/inspection_rules/" + created.json()["uuid"].get<std::string>();
  auto patch = [&](const char* ops) { return api.patch(path, Json::parse(ops)); };

  auto negative = patch(R"([{"op": "replace", "path": "/priority", "value": -1}])");
  CHECK(negative.status == 400);
  CHECK(negative.fault() == "Schema error for patch: -1 is less than the minimum of 0");
  auto noActions = patch(R"([{"op": "replace", "path": "/actions", "value": []}])");
  CHECK(noActions.fault() == "Schema error for patch: [] is too short");
  auto badArgs = patch(R"([{"op": "add", "path": "/conditions/-", "value": {"op": "in-net", "args": {"address": "x"}}}])");
  CHECK(badArgs.fault() ==
        "Invalid parameters for condition operator in-net: missing required argument(s): subnet");
  auto uuid = patch(R"([{"op": "replace", "path": "/uuid", "value": "1f3ee449-08cd-9e3f-e1e5-9cfda674081a"}])");
  CHECK(uuid.status == 400);
  CHECK_THAT(uuid.fault(), Catch::StartsWith("Cannot patch /uuid."));
  CHECK(api.patch("/v1/inspection_rules/nope", Json::array()).fault() ==
        "Expected UUID for inspection_rule_uuid: nope");
  // Two changes, the second invalid: neither is kept.
  auto mixed = patch(R"([{"op": "replace", "path": "/priority", "value": 7},
                         {"op": "replace", "path": "/phase", "value": "late"}])");
  CHECK(mixed.fault() == "Invalid phase: late. Valid phases are: main");

  const Json after = api.get(path).json();
  CHECK(after["priority"] == 50);
  CHECK(after["phase"] == "main");
  CHECK(after["conditions"] == propertiesRule()["conditions"]);
  CHECK(after["actions"] == propertiesRule()["actions"]);
  CHECK(after["updated_at"].is_null());

  auto description = patch(R"([{"op": "remove", "path": "/description"}])");
  REQUIRE(description.status == 200);
  CHECK(description.json()["description"].is_null());
}

TEST_CASE("inspection rule lists filter by phase, sort and page", "[server][api][inspection_rules]") {
  TestApi api;
  api.version = kRulesVersion;
  for (int priority : {10, 30, 20}) {
    Json body = minimalRule();
    body["priority"] = priority;
    REQUIRE(api.post("/v1/inspection_rules", body).status == 201);
  }
  auto sorted = api.get("/v1/inspection_rules?sort_key=priority&sort_dir=desc").json()["inspection_rules"];
  REQUIRE(sorted.size() == 3);
  CHECK(sorted[0]["priority"] == 30);
  CHECK(sorted[2]["priority"] == 10);
  CHECK(api.get("/v1/inspection_rules?phase=main").json()["inspection_rules"].size() == 3);
  CHECK(api.get("/v1/inspection_rules?phase=other").json()["inspection_rules"].empty());
  auto badSort = api.get("/v1/inspection_rules?sort_key=actions");
  CHECK(badSort.status == 400);
  CHECK(badSort.fault() == "The sort_key value actions is an invalid field for sorting");
  auto page = api.get("/v1/inspection_rules?limit=2").json();
  CHECK(page["inspection_rules"].size() == 2);
  CHECK_THAT(page["next"].get<std::string>(),
             Catch::StartsWith("http://kiln.test:6385/v1/inspection_rules?limit=2&marker="));
  auto badField = api.get("/v1/inspection_rules?fields=name");
  CHECK(badField.status == 400);
}

TEST_CASE("loadInspectionRules returns a phase's rules, highest priority first",
          "[server][api][inspection_rules]") {
  TestApi api;
  api.version = kRulesVersion;
  std::vector<std::string> uuids;
  for (int priority : {10, 500, 10, 9999, 0}) {
    Json body = minimalRule();
    body["priority"] = priority;
    body["description"] = "p" + std::to_string(priority) + "-" + std::to_string(uuids.size());
    auto r = api.post("/v1/inspection_rules", body);
    REQUIRE(r.status == 201);
    uuids.push_back(r.json()["uuid"]);
  }
  auto tx = api.app().storage().begin(ks::Storage::Mode::Read).value();
  auto rules = ks::loadInspectionRules(*tx);
  REQUIRE(rules);
  REQUIRE(rules->size() == 5);
  std::vector<std::string> order;
  for (const auto& r : *rules) order.push_back(r.str(ks::kIrDescription));
  // Equal priorities keep their creation order, as Ironic's stable sort does.
  CHECK(order == std::vector<std::string>{"p9999-3", "p500-1", "p10-0", "p10-2", "p0-4"});
  CHECK(ks::loadInspectionRules(*tx, "other")->empty());
}

TEST_CASE("an observer reads inspection rules and cannot write them",
          "[server][api][inspection_rules]") {
  char tmpl[] = "/tmp/kiln-htpasswd-XXXXXX";
  const int fd = mkstemp(tmpl);
  REQUIRE(fd >= 0);
  close(fd);
  const std::filesystem::path file = tmpl;
  std::ofstream(file) << kTestHtpasswd;
  {
    TestApi api("[DEFAULT]\nauth_strategy = http_basic\nhttp_basic_auth_user_file = " +
                file.string() + "\n[http_basic_roles]\nviewer = observer\n");
    api.version = kRulesVersion;
    api.extraHeaders = {{"authorization", basicAuthorization("admin", "s3cret")}};
    auto created = api.post("/v1/inspection_rules", minimalRule());
    REQUIRE(created.status == 201);
    const std::string path = "/v1/inspection_rules/" + created.json()["uuid"].get<std::string>();

    api.extraHeaders = {{"authorization", basicAuthorization("viewer", "watch")}};
    CHECK(api.get("/v1/inspection_rules").status == 200);
    CHECK(api.get(path).status == 200);
    const std::pair<std::string, std::string> writes[] = {
        {"POST", "baremetal:inspection_rule:create"},
        {"PATCH", "baremetal:inspection_rule:update"},
        {"DELETE", "baremetal:inspection_rule:delete"}};
    for (const auto& [method, policy] : writes) {
      INFO(method);
      auto r = method == "POST" ? api.post("/v1/inspection_rules", minimalRule())
               : method == "PATCH" ? api.patch(path, Json::array())
                                   : api.del(path);
      CHECK(r.status == 403);
      CHECK(r.fault() == "Access was denied to the following resource: " + policy);
    }
    api.extraHeaders = {{"authorization", basicAuthorization("admin", "s3cret")}};
    CHECK(api.get("/v1/inspection_rules").json()["inspection_rules"].size() == 1);
  }
  std::filesystem::remove(file);
}

TEST_CASE("no inspection rule body produces a server error", "[server][api][inspection_rules]") {
  TestApi api;
  api.version = kRulesVersion;
  auto created = api.post("/v1/inspection_rules", propertiesRule());
  REQUIRE(created.status == 201);
  const std::string path = "/v1/inspection_rules/" + created.json()["uuid"].get<std::string>();
  const std::vector<std::string> bodies = {
      "", "null", "true", "0", "\"str\"", "[]", "{}", "[{}]", "[null]", "{\"a\":",
      R"({"actions": null})", R"({"actions": [null]})", R"({"actions": [[]]})",
      R"({"actions": [{"op": 1, "args": {}}]})", R"({"actions": [{"op": "log", "args": null}]})",
      R"({"actions": [{"op": "log", "args": {"msg": "x"}, "loop": 5}]})",
      R"({"actions": [{"op": "fail", "args": []}]})",
      R"({"actions": [{"op": "set-attribute", "args": [1, 2, 3, 4, 5]}]})",
      R"({"actions": [{"op": "log", "args": {"msg": "x"}}], "conditions": {}})",
      R"({"actions": [{"op": "log", "args": {"msg": "x"}}], "conditions": [{"op": "eq"}]})",
      R"({"actions": [{"op": "log", "args": {"msg": "x"}}], "conditions": [{"op": "eq", "args": [1]}]})",
      R"({"actions": [{"op": "log", "args": {"msg": "x"}}], "priority": 1e300})",
      R"({"actions": [{"op": "log", "args": {"msg": "x"}}], "priority": 18446744073709551615})",
      R"({"actions": [{"op": "log", "args": {"msg": "x"}}], "priority": -9223372036854775808})",
      R"({"actions": [{"op": "log", "args": {"msg": "x"}}], "priority": 2.5})",
      R"({"actions": [{"op": "log", "args": {"msg": "x"}}], "phase": null})",
      R"({"actions": [{"op": "log", "args": {"msg": "x"}}], "uuid": 5})",
      R"([{"op": "replace", "path": "/conditions", "value": null}])",
      R"([{"op": "replace", "path": "/actions/0", "value": 5}])",
      R"([{"op": "remove", "path": "/actions"}])",
      R"([{"op": "add", "path": "/conditions/0/loop", "value": "x"}])",
      R"([{"op": "replace", "path": "/priority", "value": true}])",
      R"([{"op": "remove", "path": "/"}])",
  };
  for (const auto& [method, target] : {std::pair<std::string, std::string>{"POST", "/v1/inspection_rules"},
                                       {"PATCH", path}}) {
    for (const auto& body : bodies) {
      const auto r = api.call(method, target, body);
      INFO(method << " body=" << body << " -> " << r.status << " " << r.body.substr(0, 200));
      CHECK(r.status < 500);
    }
  }
  CHECK(api.get(path).json()["actions"] == propertiesRule()["actions"]);
}
