#include <catch2/catch.hpp>

#include <set>

#include "tests/support/test_api.h"

using kiln::test::TestApi;

TEST_CASE("a request without a version header is served at 1.1", "[server][api][version]") {
  TestApi api;
  api.version = "";
  auto r = api.get("/v1");
  CHECK(r.status == 200);
  CHECK(r.header("X-OpenStack-Ironic-API-Version") == "1.1");
  CHECK(r.header("X-OpenStack-Ironic-API-Minimum-Version") == "1.1");
  CHECK(r.header("X-OpenStack-Ironic-API-Maximum-Version") == "1.115");
  // Fields newer than 1.1 are hidden.
  api.version = "1.78";
  auto node = api.createNode({{"name", "n1"}});
  api.version = "";
  auto shown = api.get("/v1/nodes/" + node["uuid"].get<std::string>()).json();
  CHECK(shown.contains("uuid"));
  CHECK_FALSE(shown.contains("name"));
  CHECK_FALSE(shown.contains("traits"));
  CHECK_FALSE(shown.contains("driver_internal_info"));
  CHECK(shown["provision_state"] == "enroll");
}

TEST_CASE("latest and both version headers negotiate as in Ironic", "[server][api][version]") {
  TestApi api;
  api.version = "latest";
  CHECK(api.get("/v1").header("X-OpenStack-Ironic-API-Version") == "1.115");
  api.version = "";
  auto std = api.call("GET", "/v1", "", {{"OpenStack-API-Version", "baremetal 1.37"}});
  CHECK(std.header("X-OpenStack-Ironic-API-Version") == "1.37");
  auto other = api.call("GET", "/v1", "", {{"OpenStack-API-Version", "compute 2.1, baremetal 1.40"}});
  CHECK(other.header("X-OpenStack-Ironic-API-Version") == "1.40");
  // The standard header wins over the legacy one.
  auto both = api.call("GET", "/v1", "", {{"OpenStack-API-Version", "baremetal 1.20"},
                                          {"X-OpenStack-Ironic-API-Version", "1.30"}});
  CHECK(both.header("X-OpenStack-Ironic-API-Version") == "1.20");
}

TEST_CASE("unknown and out-of-range microversions are 406 with min and max headers",
          "[server][api][version]") {
  TestApi api;
  for (std::string v : {"1.116", "1.0", "2.1", "abc", "1.", "1.2.3"}) {
    INFO(v);
    api.version = v;
    auto r = api.get("/v1/nodes");
    CHECK(r.status == 406);
    CHECK(r.header("X-OpenStack-Ironic-API-Minimum-Version") == "1.1");
    CHECK(r.header("X-OpenStack-Ironic-API-Maximum-Version") == "1.115");
    CHECK_FALSE(r.fault().empty());
  }
  api.version = "1.120";
  CHECK_THAT(api.get("/v1/nodes").fault(),
             Catch::Contains("The supported version range is: [1.1, 1.115]"));
}

TEST_CASE("endpoints newer than the requested version are hidden", "[server][api][version]") {
  TestApi api;
  auto node = api.createNode();
  const std::string uuid = node["uuid"];
  api.version = "1.36";
  CHECK(api.get("/v1/nodes/" + uuid + "/traits").status == 406);  // as Ironic (trait_api_test)
  CHECK(api.putRaw("/v1/nodes/" + uuid + "/traits/CUSTOM_X").status == 405);
  CHECK(api.del("/v1/nodes/" + uuid + "/traits").status == 404);
  api.version = "1.54";
  CHECK(api.get("/v1/deploy_templates").status == 404);
  CHECK(api.post("/v1/deploy_templates", {{"name", "CUSTOM_X"}}).status == 405);
  api.version = "1.11";
  CHECK(api.put("/v1/nodes/" + uuid + "/states/raid", kiln::test::Json::object()).status == 406);
  api.version = "1.7";
  CHECK(api.get("/v1/nodes?fields=uuid").status == 406);
}

TEST_CASE("the root and v1 documents advertise the version range", "[server][api][version]") {
  TestApi api;
  auto root = api.get("/").json();
  CHECK(root["default_version"]["version"] == "1.115");
  CHECK(root["default_version"]["min_version"] == "1.1");
  CHECK(root["versions"].size() == 1);
  CHECK(root["default_version"]["links"][0]["href"] == "http://kiln.test:6385/v1/");
  auto v1 = api.get("/v1").json();
  CHECK(v1["id"] == "v1");
  CHECK(v1["nodes"][0]["href"] == "http://kiln.test:6385/v1/nodes/");
  CHECK(v1.contains("deploy_templates"));
  api.version = "1.1";
  CHECK_FALSE(api.get("/v1").json().contains("deploy_templates"));
  // Paths without /v1 are served by v1, trailing slashes are tolerated.
  api.version = "1.78";
  CHECK(api.get("/nodes").status == 200);
  CHECK(api.get("/v1/nodes/").status == 200);
}

TEST_CASE("errors are double-encoded and unknown paths are 404, wrong methods 405",
          "[server][api][errors]") {
  TestApi api;
  auto r = api.get("/v1/nodes/does-not-exist");
  CHECK(r.status == 404);
  const auto body = r.json();
  REQUIRE(body["error_message"].is_string());
  const auto inner = kiln::test::Json::parse(body["error_message"].get<std::string>());
  CHECK(inner["faultcode"] == "Client");
  CHECK(inner["faultstring"] == "Node does-not-exist could not be found.");
  CHECK(inner["debuginfo"].is_null());
  CHECK(api.get("/v1/bogus").status == 404);
  auto m = api.call("PUT", "/v1/nodes");
  CHECK(m.status == 405);
  CHECK_THAT(m.header("Allow"), Catch::Contains("GET"));
  CHECK_FALSE(r.header("Openstack-Request-Id").empty());
}
