#include <catch2/catch.hpp>

#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::Response;
using kiln::test::TestApi;

namespace {

Response provision(TestApi& api, const std::string& ident, Json body) {
  auto r = api.put("/v1/nodes/" + ident + "/states/provision", body);
  api.settle();
  return r;
}

Response verb(TestApi& api, const std::string& ident, const std::string& target) {
  return provision(api, ident, {{"target", target}});
}

Json node(TestApi& api, const std::string& ident) { return api.get("/v1/nodes/" + ident).json(); }

void makeActive(TestApi& api, const std::string& name, Json extra = Json::object()) {
  extra["name"] = name;
  api.createNode(extra);
  REQUIRE(verb(api, name, "manage").status == 202);
  REQUIRE(verb(api, name, "provide").status == 202);
  REQUIRE(verb(api, name, "active").status == 202);
  REQUIRE(node(api, name)["provision_state"] == "active");
}

}  // namespace

TEST_CASE("rescue and unrescue move an active node through the rescue states",
          "[server][api][rescue]") {
  TestApi api;
  makeActive(api, "r1");
  REQUIRE(provision(api, "r1", {{"target", "rescue"}, {"rescue_password", "s3cret"}}).status ==
          202);
  Json n = node(api, "r1");
  CHECK(n["provision_state"] == "rescue");
  CHECK(n["target_provision_state"].is_null());
  CHECK(n["last_error"].is_null());
  // The password is kept for the rescue environment and masked like every secret.
  CHECK(n["instance_info"]["rescue_password"] == "******");
  CHECK(api.get("/v1/nodes/r1").body.find("s3cret") == std::string::npos);

  // A rescued node can be rescued again, then unrescued back to its instance.
  REQUIRE(provision(api, "r1", {{"target", "rescue"}, {"rescue_password", "other"}}).status == 202);
  CHECK(node(api, "r1")["provision_state"] == "rescue");
  REQUIRE(verb(api, "r1", "unrescue").status == 202);
  n = node(api, "r1");
  CHECK(n["provision_state"] == "active");
  CHECK_FALSE(n["instance_info"].contains("rescue_password"));
}

TEST_CASE("a rescued node can be undeployed", "[server][api][rescue]") {
  TestApi api;
  makeActive(api, "r2");
  REQUIRE(provision(api, "r2", {{"target", "rescue"}, {"rescue_password", "pw"}}).status == 202);
  REQUIRE(verb(api, "r2", "deleted").status == 202);
  Json n = node(api, "r2");
  CHECK(n["provision_state"] == "available");
  CHECK(n["instance_info"] == Json::object());
}

TEST_CASE("rescue requests are checked before anything changes", "[server][api][rescue]") {
  TestApi api;
  makeActive(api, "r3");
  auto noPassword = verb(api, "r3", "rescue");
  CHECK(noPassword.status == 400);
  CHECK(
      noPassword.fault() ==
      "A non-empty \"rescue_password\" is required when setting target provision state to rescue");
  CHECK(provision(api, "r3", {{"target", "rescue"}, {"rescue_password", "  "}}).status == 400);
  CHECK(provision(api, "r3", {{"target", "rescue"}, {"rescue_password", 5}}).status == 400);
  auto elsewhere = provision(api, "r3", {{"target", "deleted"}, {"rescue_password", "pw"}});
  CHECK(elsewhere.status == 400);
  CHECK(elsewhere.fault() ==
        "\"rescue_password\" is only valid when setting target provision state to rescue");
  // Not from a state without the transition.
  CHECK(verb(api, "r3", "unrescue").status == 400);
  api.version = "1.37";
  CHECK(provision(api, "r3", {{"target", "rescue"}, {"rescue_password", "pw"}}).status == 406);
  api.version = "1.78";
  // Maintenance refuses it.
  REQUIRE(api.put("/v1/nodes/r3/maintenance", Json::object()).status == 202);
  auto maint = provision(api, "r3", {{"target", "rescue"}, {"rescue_password", "pw"}});
  CHECK(maint.status == 400);
  CHECK_THAT(maint.fault(), Catch::Contains("because it's in maintenance mode"));
  Json n = node(api, "r3");
  CHECK(n["provision_state"] == "active");
  CHECK_FALSE(n["instance_info"].contains("rescue_password"));
}

TEST_CASE("rescue is refused when the node's rescue interface cannot rescue",
          "[server][api][rescue]") {
  TestApi api;
  makeActive(api, "r4", {{"rescue_interface", "no-rescue"}});
  auto r = provision(api, "r4", {{"target", "rescue"}, {"rescue_password", "pw"}});
  CHECK(r.status == 400);
  CHECK_THAT(r.fault(),
             Catch::Contains("Validation failed: Driver fake-hardware does not support rescue"));
  CHECK(node(api, "r4")["provision_state"] == "active");
}
