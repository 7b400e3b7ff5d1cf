// Retired nodes (API 1.61): as Ironic's ConductorManager._check_update_retired, an available
// node cannot be retired (it could be scheduled meanwhile), clearing the flag clears the reason,
// and a reason needs the flag.
#include <catch2/catch.hpp>

#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TestApi;

namespace {

Json replace(const std::string& path, Json value) {
  return Json::array({{{"op", "replace"}, {"path", path}, {"value", std::move(value)}}});
}

}  // namespace

TEST_CASE("an available node refuses retired with 409 and stays unretired",
          "[server][api][retired]") {
  TestApi api;
  const std::string uuid = api.createNode({{"name", "r1"}})["uuid"];
  REQUIRE(api.provision("r1", "manage").status == 202);
  REQUIRE(api.provision("r1", "provide").status == 202);
  REQUIRE(api.get("/v1/nodes/r1").json()["provision_state"] == "available");

  auto r = api.patch("/v1/nodes/r1", Json::array({{{"op", "replace"}, {"path", "/retired"},
                                                   {"value", true}},
                                                  {{"op", "replace"}, {"path", "/retired_reason"},
                                                   {"value", "old"}}}));
  CHECK(r.status == 409);
  CHECK(r.fault() == "Node " + uuid +
                         " can not have 'retired' set in provision state 'available', the "
                         "current state is 'available'");
  const Json node = api.get("/v1/nodes/r1").json();
  CHECK(node["retired"] == false);
  CHECK(node["retired_reason"].is_null());
}

TEST_CASE("a manageable node is retired, and unretiring clears the reason",
          "[server][api][retired]") {
  TestApi api;
  api.createNode({{"name", "r2"}});
  REQUIRE(api.provision("r2", "manage").status == 202);
  auto r = api.patch("/v1/nodes/r2", Json::array({{{"op", "replace"}, {"path", "/retired"},
                                                   {"value", true}},
                                                  {{"op", "replace"}, {"path", "/retired_reason"},
                                                   {"value", "old"}}}));
  REQUIRE(r.status == 200);
  CHECK(r.json()["retired"] == true);
  CHECK(r.json()["retired_reason"] == "old");

  r = api.patch("/v1/nodes/r2", replace("/retired", false));
  REQUIRE(r.status == 200);
  CHECK(r.json()["retired_reason"].is_null());

  // A reason needs the flag (Ironic's InvalidParameterValue).
  r = api.patch("/v1/nodes/r2", replace("/retired_reason", "x"));
  CHECK(r.status == 400);
  CHECK(r.fault() == "The retired_reason field can only be set when retired is True");
  CHECK(api.get("/v1/nodes/r2").json()["retired_reason"].is_null());
}
