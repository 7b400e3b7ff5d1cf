// Protected nodes (API 1.48): only active or rescued nodes can be protected, and a protected
// node cannot be undeployed, rebuilt or deleted (403), as in Ironic.
#include <catch2/catch.hpp>

#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TestApi;

namespace {

Json op(const std::string& o, const std::string& path, Json value = nullptr) {
  Json j = {{"op", o}, {"path", path}};
  if (o != "remove") j["value"] = std::move(value);
  return j;
}

Json protect(bool on) { return Json::array({op("replace", "/protected", on)}); }

}  // namespace

TEST_CASE("a protected node refuses undeploy, rebuild and delete with 403",
          "[server][api][protected]") {
  TestApi api;
  api.createActiveNode({{"name", "p1"}});
  auto r = api.patch("/v1/nodes/p1", Json::array({op("replace", "/protected", true),
                                                  op("replace", "/protected_reason", "prod")}));
  INFO(r.body);
  REQUIRE(r.status == 200);
  CHECK(r.json()["protected"] == true);
  CHECK(r.json()["protected_reason"] == "prod");
  const std::string uuid = r.json()["uuid"];
  const std::string message =
      "Node " + uuid + " is protected and cannot be undeployed, rebuilt or deleted";

  for (const char* target : {"deleted", "undeploy", "rebuild"}) {
    auto refused = api.provision("p1", target);
    INFO(target);
    CHECK(refused.status == 403);
    CHECK(refused.fault() == message);
  }
  REQUIRE(api.put("/v1/nodes/p1/maintenance", Json::object()).status == 202);
  auto del = api.del("/v1/nodes/p1");
  CHECK(del.status == 403);
  CHECK(del.fault() == message);
  REQUIRE(api.del("/v1/nodes/p1/maintenance").status == 202);
  Json n = api.get("/v1/nodes/p1").json();
  CHECK(n["provision_state"] == "active");

  // Unprotecting clears the reason and allows undeploying again.
  r = api.patch("/v1/nodes/p1", protect(false));
  REQUIRE(r.status == 200);
  CHECK(r.json()["protected_reason"].is_null());
  CHECK(api.provision("p1", "deleted").status == 202);
  CHECK(api.get("/v1/nodes/p1").json()["provision_state"] == "available");
}

TEST_CASE("only active or rescued nodes can be protected", "[server][api][protected]") {
  TestApi api;
  const std::string uuid = api.createNode({{"name", "p2"}})["uuid"];
  auto r = api.patch("/v1/nodes/p2", protect(true));
  CHECK(r.status == 409);
  CHECK(r.fault() == "Node " + uuid +
                         " can only be made protected in provision states 'active' or 'rescue', "
                         "the current state is 'enroll'");
  CHECK(api.get("/v1/nodes/p2").json()["protected"] == false);
  // A reason needs the flag.
  r = api.patch("/v1/nodes/p2", Json::array({op("replace", "/protected_reason", "x")}));
  CHECK(r.status == 400);
  CHECK(r.fault() == "The protected_reason field can only be set when protected is True");

  api.createActiveNode({{"name", "p3"}});
  REQUIRE(api.provision("p3", "rescue", {{"rescue_password", "pw"}}).status == 202);
  REQUIRE(api.get("/v1/nodes/p3").json()["provision_state"] == "rescue");
  CHECK(api.patch("/v1/nodes/p3", protect(true)).status == 200);
  // A rescued, protected node can still be unrescued (not an undeploy).
  CHECK(api.provision("p3", "unrescue").status == 202);
  CHECK(api.get("/v1/nodes/p3").json()["provision_state"] == "active");
}

TEST_CASE("protected is hidden below 1.48", "[server][api][protected]") {
  TestApi api;
  api.createActiveNode({{"name", "p4"}});
  api.version = "1.47";
  CHECK_FALSE(api.get("/v1/nodes/p4").json().contains("protected"));
  CHECK(api.patch("/v1/nodes/p4", protect(true)).status == 406);
  CHECK(api.get("/v1/nodes/p4?fields=protected").status == 406);
}
