#include <catch2/catch.hpp>

#include <set>

#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TestApi;

// Client input must never produce a 5xx: every write endpoint gets a battery of malformed and
// mistyped bodies, and every read endpoint odd identifiers and query strings.
TEST_CASE("no client input produces a server error", "[server][api][errors]") {
  TestApi api;
  const std::string node = api.createNode({{"name", "victim"}})["uuid"];
  REQUIRE(api.post("/v1/deploy_templates", Json::parse(R"({"name": "CUSTOM_V", "steps": [
      {"interface": "bios", "step": "apply_configuration", "args": {}, "priority": 10}]})")).status == 201);
  const std::string port = api.post("/v1/ports", {{"address", "52:54:00:00:00:99"}, {"node_uuid", node}}).json()["uuid"];
  const std::string chassis = api.post("/v1/chassis", Json::object()).json()["uuid"];

  const std::vector<std::string> bodies = {
      "", " ", "null", "true", "0", "-1", "1e999", "\"str\"", "[]", "{}", "[{}]", "[null]", "{\"a\":",
      "{\"driver\": null}", "{\"driver\": []}", "{\"driver\": {}}", "{\"traits\": null}",
      "{\"traits\": [null]}", "{\"traits\": [[]]}", "{\"name\": 1}", "{\"steps\": {}}",
      "{\"steps\": [null]}", "{\"steps\": [{\"interface\": 1, \"step\": [], \"args\": 2, \"priority\": {}}]}",
      "{\"address\": 5, \"node_uuid\": 5}", "{\"node_uuid\": null}", "{\"reason\": []}",
      "{\"logical_disks\": [null]}", "{\"logical_disks\": [{\"size_gb\": [], \"raid_level\": {}}]}",
      "[{\"op\": \"add\", \"path\": \"/\", \"value\": 1}]", "[{\"op\": \"add\", \"path\": \"//\", \"value\": 1}]",
      "[{\"op\": \"replace\", \"path\": \"/extra/a/b/c\", \"value\": 1}]",
      "[{\"op\": \"replace\", \"path\": \"/steps/99/priority\", \"value\": 1}]",
      "[{\"op\": \"replace\", \"path\": \"/steps/-/priority\", \"value\": 1}]",
      "[{\"op\": \"add\", \"path\": \"/steps/0\", \"value\": null}]",
      "[{\"op\": \"remove\", \"path\": \"/steps\"}]", "[{\"op\": \"remove\", \"path\": \"/name\"}]",
      "[{\"op\": \"replace\", \"path\": \"/driver\", \"value\": null}]",
      "[{\"op\": \"replace\", \"path\": \"/properties\", \"value\": [1]}]",
      "[{\"op\": \"replace\", \"path\": \"/local_link_connection\", \"value\": {\"switch_id\": 1}}]",
      "[{\"op\": \"replace\", \"path\": \"/node_uuid\", \"value\": \"x\"}]",
      "[{\"op\": \"add\", \"path\": \"/extra/~2\", \"value\": 1}]",
      std::string(100000, '['), "{\"\xff\xfe\": 1}",
  };
  const std::vector<std::pair<std::string, std::string>> writes = {
      {"POST", "/v1/nodes"},
      {"PATCH", "/v1/nodes/" + node},
      {"PUT", "/v1/nodes/" + node + "/traits"},
      {"PUT", "/v1/nodes/" + node + "/traits/CUSTOM_X"},
      {"PUT", "/v1/nodes/" + node + "/maintenance"},
      {"PUT", "/v1/nodes/" + node + "/states/raid"},
      {"POST", "/v1/deploy_templates"},
      {"PATCH", "/v1/deploy_templates/CUSTOM_V"},
      {"POST", "/v1/ports"},
      {"PATCH", "/v1/ports/" + port},
      {"POST", "/v1/portgroups"},
      {"POST", "/v1/chassis"},
      {"PATCH", "/v1/chassis/" + chassis},
  };
  for (const auto& [method, path] : writes) {
    for (const auto& body : bodies) {
      const auto r = api.call(method, path, body);
      INFO(method << " " << path << " body=" << body.substr(0, 60) << " -> " << r.status << " " << r.body.substr(0, 200));
      CHECK(r.status < 500);
    }
  }
  for (const std::string& path : std::vector<std::string>{"/v1/nodes/%00", "/v1/nodes/..", "/v1/nodes/" + std::string(300, 'a'), "/v1/nodes?limit=99999999999999",
        "/v1/nodes?limit=-5", "/v1/nodes?sort_key=id&sort_dir=", "/v1/nodes?fields=", "/v1/nodes?fields=,,,",
        "/v1/nodes?traits=,", "/v1/ports?address=", "/v1/ports/%ZZ", "/v1/deploy_templates/%C3%28",
        "/v1/drivers/%2F", "/v1/nodes/victim/traits/%20", "/v1/nodes?marker=", "/v1/chassis/x/nodes",
        "/v1/nodes/victim/validate?node=x", "/v1/nodes/validate", "/v1/conductors?fields=x"}) {
    const auto r = api.get(path);
    INFO(path << " -> " << r.status << " " << r.body.substr(0, 200));
    CHECK(r.status < 500);
  }
  // The resources are still there and readable (some bodies above were valid requests, such as
  // removing the node's name, so only their survival is checked).
  CHECK(api.get("/v1/nodes/" + node).status == 200);
  CHECK(api.get("/v1/ports/" + port).status == 200);
  CHECK(api.get("/v1/nodes/detail").status == 200);
}
