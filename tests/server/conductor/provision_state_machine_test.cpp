#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "server/conductor/provision_state_machine.h"
#include "server/model/provision_state.h"
#include "tests/support/replay_command_runner.h"

using namespace kiln::server;

namespace {
std::filesystem::path sourceRoot() {
  return kiln::test::sourceDir();
}
}  // namespace

TEST_CASE("the committed state diagram matches the transition table", "[server][conductor][states]") {
  const auto path = sourceRoot() / "docs" / "states.dot";
  const std::string expected = provisionStatesDot();
  if (std::getenv("KILN_UPDATE_STATES_DOT")) {
    std::ofstream(path) << expected;
  }
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream committed;
  committed << in.rdbuf();
  INFO("docs/states.dot is stale: run `KILN_UPDATE_STATES_DOT=1 build/tests/kiln_server_tests "
       "\"the committed state diagram matches the transition table\"` and commit the result");
  CHECK(committed.str() == expected);
}

TEST_CASE("the API verbs follow Ironic's transitions", "[server][conductor][states]") {
  CHECK(nextProvisionState("enroll", "manage") == "verifying");
  CHECK(nextProvisionState("manageable", "provide") == "cleaning");
  CHECK(nextProvisionState("manageable", "clean") == "cleaning");
  CHECK(nextProvisionState("available", verbToEvent("active")) == "deploying");
  CHECK(nextProvisionState("available", verbToEvent("deploy")) == "deploying");
  CHECK(nextProvisionState("active", verbToEvent("undeploy")) == "deleting");
  CHECK(nextProvisionState("active", "rebuild") == "deploying");
  CHECK(nextProvisionState("clean wait", "abort") == "clean failed");
  CHECK(nextProvisionState("clean failed", "manage") == "manageable");
  CHECK(nextProvisionState("deploy failed", "deleted") == "deleting");
  CHECK(nextProvisionState("error", "rebuild") == "deploying");
  CHECK(nextProvisionState("manageable", "adopt") == "adopting");
  CHECK(nextProvisionState("inspect failed", "inspect") == "inspecting");
  CHECK_FALSE(nextProvisionState("enroll", "provide"));
  CHECK_FALSE(nextProvisionState("active", "clean"));
  CHECK_FALSE(nextProvisionState("available", "abort"));
  CHECK_FALSE(nextProvisionState("manageable", "bogus"));
}

TEST_CASE("internal events move working states to waiting, done and failed states",
          "[server][conductor][states]") {
  CHECK(nextProvisionState("cleaning", "wait") == "clean wait");
  CHECK(nextProvisionState("clean wait", "resume") == "cleaning");
  CHECK(nextProvisionState("cleaning", "done") == "available");
  CHECK(nextProvisionState("cleaning", "manage") == "manageable");
  CHECK(nextProvisionState("deploying", "wait") == "wait call-back");
  CHECK(nextProvisionState("wait call-back", "resume") == "deploying");
  CHECK(nextProvisionState("deploying", "fail") == "deploy failed");
  CHECK(nextProvisionState("deleting", "done") == "cleaning");
  CHECK(nextProvisionState("verifying", "fail") == "enroll");
}

TEST_CASE("every state in the table is a known provision state and every working state can fail",
          "[server][conductor][states]") {
  std::set<std::string> froms;
  for (const auto& t : provisionTransitions()) {
    CHECK(state::isValid(t.from));
    CHECK(state::isValid(t.to));
    froms.insert(std::string(t.from));
  }
  for (auto s : {"verifying", "cleaning", "deploying", "deleting", "inspecting", "adopting",
                 "clean wait", "wait call-back", "inspect wait", "rescuing", "rescue wait",
                 "unrescuing"}) {
    INFO(s);
    CHECK(nextProvisionState(s, "fail"));
  }
}

TEST_CASE("verbs have Ironic's minimum microversions and targets", "[server][conductor][states]") {
  CHECK(verbSince("manage") == 4);
  CHECK(verbSince("clean") == 15);
  CHECK(verbSince("deploy") == 73);
  CHECK(verbSince("active") == 1);
  CHECK(verbSince("rescue") == 38);
  CHECK(verbSince("unrescue") == 38);
  CHECK(verbSince("unhold") == 85);
  CHECK(verbSince("service") == 87);
  CHECK_FALSE(verbSince("bogus"));
  CHECK(verbTarget("rescue") == "rescue");
  CHECK(verbTarget("unrescue") == "active");
  CHECK(verbTarget("provide") == "available");
  CHECK(verbTarget("clean") == "manageable");
  CHECK(verbTarget("undeploy") == "available");
  CHECK(verbTarget("deploy") == "active");
}
