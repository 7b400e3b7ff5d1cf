// The node console (GET/PUT /v1/nodes/{id}/states/console) with the fake and no-console
// interfaces, as Ironic answers.
#include <catch2/catch.hpp>

#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TestApi;

TEST_CASE("the fake console is enabled and disabled", "[server][api][console]") {
  TestApi api;
  api.createNode({{"name", "c1"}, {"console_interface", "fake"}});
  auto r = api.get("/v1/nodes/c1/states/console");
  REQUIRE(r.status == 200);
  CHECK(r.json() == Json({{"console_enabled", false}, {"console_info", nullptr}}));

  r = api.put("/v1/nodes/c1/states/console", {{"enabled", true}});
  INFO(r.body);
  REQUIRE(r.status == 202);
  CHECK(r.header("Location") == "http://kiln.test:6385/v1/nodes/c1/states/console");
  CHECK(api.get("/v1/nodes/c1/states/console").json() ==
        Json({{"console_enabled", true}, {"console_info", Json::object()}}));
  CHECK(api.get("/v1/nodes/c1").json()["console_enabled"] == true);
  CHECK(api.get("/v1/nodes/c1/states").json()["console_enabled"] == true);
  // Enabling twice changes nothing; strings are read as booleans.
  CHECK(api.put("/v1/nodes/c1/states/console", {{"enabled", true}}).status == 202);
  CHECK(api.put("/v1/nodes/c1/states/console", {{"enabled", "false"}}).status == 202);
  CHECK(api.get("/v1/nodes/c1").json()["console_enabled"] == false);
}

TEST_CASE("console requests are validated and no-console refuses them", "[server][api][console]") {
  TestApi api;
  api.createNode({{"name", "c2"}, {"console_interface", "no-console"}});
  // A disabled console answers without asking the interface.
  CHECK(api.get("/v1/nodes/c2/states/console").status == 200);
  auto r = api.put("/v1/nodes/c2/states/console", {{"enabled", true}});
  CHECK(r.status == 400);
  CHECK(r.fault() ==
        "Driver fake-hardware does not support console (disabled or not implemented).");
  CHECK(api.get("/v1/nodes/c2").json()["console_enabled"] == false);

  api.createNode({{"name", "c3"}, {"console_interface", "fake"}});
  r = api.put("/v1/nodes/c3/states/console", Json::object());
  CHECK(r.status == 400);
  CHECK(r.fault() == "Missing mandatory parameter: enabled");
  CHECK(api.put("/v1/nodes/c3/states/console", {{"enabled", "maybe"}}).status == 400);
  CHECK(api.put("/v1/nodes/c3/states/console", {{"enabled", 3}}).status == 400);
  r = api.put("/v1/nodes/c3/states/console", {{"enabled", true}, {"other", 1}});
  CHECK(r.status == 400);
  CHECK(r.fault() == "Unexpected arguments: other");
  CHECK(api.call("PUT", "/v1/nodes/c3/states/console", "[").status == 400);
  CHECK(api.put("/v1/nodes/missing/states/console", {{"enabled", true}}).status == 404);
  CHECK(api.get("/v1/nodes/c3").json()["console_enabled"] == false);
}

TEST_CASE("node sub-resources also answer with the node last, as Ironic's routing does",
          "[server][api][console][routing]") {
  TestApi api;
  const std::string uuid = api.createNode({{"name", "c4"}, {"console_interface", "fake"}})["uuid"];
  api.version = "1.1";
  auto r = api.get("/v1/nodes/states/console/" + uuid);
  REQUIRE(r.status == 200);
  CHECK(r.json() == Json({{"console_enabled", false}, {"console_info", nullptr}}));
  CHECK(api.get("/v1/nodes/states/" + uuid).json()["provision_state"] == "enroll");
  CHECK(api.putRaw("/v1/nodes/maintenance/" + uuid).status == 202);
  CHECK(api.get("/v1/nodes/" + uuid).json()["maintenance"] == true);
  CHECK(api.del("/v1/nodes/maintenance/" + uuid).status == 202);
  CHECK(api.get("/v1/nodes/management/boot_device/" + uuid).status == 200);
  CHECK(api.put("/v1/nodes/states/power/" + uuid, {{"target", "power on"}}).status == 202);
  // The usual spelling is unchanged, and an unknown node is still a 404.
  CHECK(api.get("/v1/nodes/" + uuid + "/states/console").status == 200);
  CHECK(api.get("/v1/nodes/states/console/nope").status == 404);
}
