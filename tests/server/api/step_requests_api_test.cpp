// The provision verbs check their step lists through the shared kiln::parseStepRequests
// (shared/step/step.h): these pin the answers clients see, which the refactor kept as they were.
#include <catch2/catch.hpp>

#include "server/model/versions.h"
#include "tests/support/microversion_helpers.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TestApi;
namespace ver = kiln::server::ver;

namespace {

const std::string kInterfaces =
    "['vendor', 'power', 'management', 'firmware', 'deploy', 'bios', 'raid']";

std::string state(TestApi& api, const std::string& node) {
  return api.get("/v1/nodes/" + node).json()["provision_state"].get<std::string>();
}

}  // namespace

TEST_CASE("manual clean_steps are refused with the clean_steps messages and change nothing",
          "[server][api][steps]") {
  TestApi api;
  api.createNode({{"name", "n1"}});
  REQUIRE(api.provision("n1", "manage").status == 202);
  auto fault = [&](Json steps) {
    auto r = api.provision("n1", "clean", {{"clean_steps", std::move(steps)}});
    CHECK(r.status == 400);
    return r.fault();
  };
  const std::string p = "Invalid clean_steps: ";
  CHECK(fault("x") == p + "'x' is not of type 'array'");
  CHECK(fault({5}) == p + "5 is not of type 'object'");
  CHECK(fault(Json::parse(R"([{"interface": "deploy", "step": "erase_devices", "priority": 1}])")) ==
        p + "Additional properties are not allowed ('priority' was unexpected); manual clean steps "
            "run in the order given");
  CHECK(fault(Json::parse(R"([{"step": "erase_devices"}])")) == p + "'interface' is a required property");
  CHECK(fault(Json::parse(R"([{"interface": "network", "step": "x"}])")) ==
        p + "'network' is not one of " + kInterfaces);
  CHECK(fault(Json::parse(R"([{"interface": "deploy", "step": ""}])")) == p + "'' is not a valid step name");
  CHECK(fault(Json::parse(R"([{"interface": "deploy", "step": "x", "args": [1]}])")) ==
        p + "[1] is not of type 'object'");
  CHECK(state(api, "n1") == "manageable");
}

TEST_CASE("service_steps are refused as manual steps", "[server][api][steps]") {
  TestApi api;
  api.version = kiln::test::mv::v(ver::k87Service);
  api.createActiveNode({{"name", "s1"}});
  auto r = api.provision("s1", "service",
                         {{"service_steps", Json::parse(R"([{"interface": "bios",
                             "step": "apply_configuration", "priority": 1}])")}});
  CHECK(r.status == 400);
  CHECK_THAT(r.fault(), Catch::Contains("Additional properties are not allowed ('priority' was "
                                        "unexpected); manual clean steps run in the order given"));
  CHECK(state(api, "s1") == "active");
}

TEST_CASE("a provision request's deploy_steps are refused with the deploy template messages",
          "[server][api][steps]") {
  TestApi api;
  api.createNode({{"name", "d1"}});
  REQUIRE(api.provision("d1", "manage").status == 202);
  REQUIRE(api.provision("d1", "provide").status == 202);
  auto fault = [&](Json steps) {
    auto r = api.provision("d1", "active", {{"deploy_steps", std::move(steps)}});
    CHECK(r.status == 400);
    return r.fault();
  };
  const std::string p = "Schema error for deploy_steps: ";
  CHECK(fault(Json::array()) == p + "[] is too short");
  CHECK(fault(Json::parse(R"([{"interface": "deploy", "step": "x", "args": {}}])")) ==
        p + "'priority' is a required property");
  CHECK(fault(Json::parse(R"([{"interface": "deploy", "step": "x", "args": {}, "priority": -1}])")) ==
        p + "-1 is less than the minimum of 0");
  CHECK(fault(Json::parse(R"([{"interface": "deploy", "step": "x", "args": {}, "priority": "soon"}])")) ==
        p + "'soon' does not match '^[0-9]+$'");
  const Json a = Json::parse(R"({"interface": "deploy", "step": "x", "args": {"n": 1}, "priority": 5})");
  CHECK(fault({a, a}) ==
        "Deploy template invalid: Duplicate deploy steps. A deploy template cannot have the same "
        "deploy step twice with the same arguments. Duplicates: interface: deploy, step: x, "
        "args: {\"n\":1}.");
  CHECK(state(api, "d1") == "available");
}
