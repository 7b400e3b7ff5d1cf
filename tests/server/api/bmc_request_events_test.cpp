// bmc_request node events (issue 27, docs/observability.md "Events"): every BMC request the
// conductor makes for a node, with its driver, operation, duration and result, listed at
// GET /v1/nodes/{node}/events?kind=bmc_request; and the power-state sync's rule (only a sync
// that writes the node records its requests).
#include <catch2/catch.hpp>

#include <memory>

#include "server/model/node.h"
#include "tests/server/drivers/ipmitool/ipmitool_test_support.h"
#include "tests/support/redfish_test_server.h"
#include "tests/support/replay_command_runner.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TestApi;
using namespace kiln::server;

namespace {

constexpr const char* kRedfishPassword = "redfish-Pa55";

Json journal(TestApi& api, const std::string& ident, const std::string& query = "") {
  auto r = api.get("/v1/nodes/" + ident + "/events" + query);
  REQUIRE(r.status == 200);
  return r.json()["events"];
}

int64_t lastEventId(TestApi& api, const std::string& ident) {
  const Json all = journal(api, ident);
  return all.empty() ? 0 : all.back()["id"].get<int64_t>();
}

/// A redfish node "r1" on `bmc` (which requires its credentials), managed.
void createRedfishNode(TestApi& api, kiln::test::RedfishTestServer& bmc) {
  bmc.requireCredentials("admin", kRedfishPassword);
  api.createNode({{"name", "r1"},
                  {"driver", "redfish"},
                  {"driver_info",
                   {{"redfish_address", bmc.address()},
                    {"redfish_username", "admin"},
                    {"redfish_password", kRedfishPassword}}}});
  REQUIRE(api.put("/v1/nodes/r1/states/provision", {{"target", "manage"}}).status == 202);
  api.settle();
  INFO(api.get("/v1/nodes/r1").json()["last_error"]);
  REQUIRE(api.get("/v1/nodes/r1").json()["provision_state"] == "manageable");
}

std::optional<Json> resetRequest(const Json& events) {
  for (const auto& e : events) {
    if (e["operation"] == "POST" &&
        e.value("path", std::string()).ends_with("/Actions/ComputerSystem.Reset")) {
      return e;
    }
  }
  return std::nullopt;
}

struct IpmiSyncSetup {
  std::shared_ptr<kiln::test::ReplayCommandRunner> runner =
      std::make_shared<kiln::test::ReplayCommandRunner>();
  std::unique_ptr<TestApi> api;

  IpmiSyncSetup() {
    InterfaceDeps deps;
    deps.commands = runner;
    api = std::make_unique<TestApi>(
        "[conductor]\nsync_power_state_interval = 60\nforce_power_state_during_sync = false\n",
        deps);
    auto r = api->post("/v1/nodes", {{"driver", "ipmi"},
                                     {"name", "bmc"},
                                     {"uuid", std::string(kiln::test::kIpmiNodeUuid)},
                                     {"driver_info", kiln::test::ipmiDriverInfo()}});
    REQUIRE(r.status == 201);
    expect("power_status_off");
    REQUIRE(api->put("/v1/nodes/bmc/states/provision", {{"target", "manage"}}).status == 202);
    api->settle();
    REQUIRE(api->get("/v1/nodes/bmc").json()["provision_state"] == "manageable");
  }

  void expect(const std::string& fixture) {
    kiln::test::ExpectedCommand e;
    e.argv = kiln::test::IpmiFixture::argv({"chassis", "power", "status"});
    e.output = kiln::test::recordedOutput("ipmitool/" + fixture + ".txt");
    runner->expect(std::move(e));
  }

  /// One power-state sync pass, a minute after the last one.
  void sync() {
    api->clock().advance(std::chrono::seconds(61));
    api->runPeriodic();
    api->settle();
  }
};

}  // namespace

TEST_CASE("a power-on through the API records its Redfish requests as bmc_request events",
          "[server][api][events][bmc_events][redfish]") {
  kiln::test::RedfishTestServer bmc;
  REQUIRE(bmc.start());
  TestApi api;
  createRedfishNode(api, bmc);
  const int64_t before = lastEventId(api, "r1");

  REQUIRE(api.put("/v1/nodes/r1/states/power", {{"target", "power on"}}).status == 202);
  api.settle();
  REQUIRE(api.get("/v1/nodes/r1").json()["power_state"] == "power on");

  const Json requests = journal(api, "r1", "?kind=bmc_request&since=" + std::to_string(before));
  REQUIRE_FALSE(requests.empty());
  for (const auto& e : requests) {
    CHECK(e["kind"] == "bmc_request");
    CHECK(e["driver"] == "redfish");
    CHECK(e["bmc"] == bmc.address().substr(bmc.address().find("//") + 2));
    CHECK(e["duration"].is_number());
    CHECK(e["duration"].get<double>() >= 0);
    CHECK(e["finished_at"].get<std::string>().size() == 29);
  }
  const auto reset = resetRequest(requests);
  REQUIRE(reset);
  CHECK((*reset)["result"] == "success");
  CHECK((*reset)["status"].get<int>() / 100 == 2);
  CHECK_FALSE(reset->contains("error"));
  // The requests come before the power state change they made.
  const Json all = journal(api, "r1", "?since=" + std::to_string(before));
  int64_t powerEvent = 0;
  for (const auto& e : all) {
    if (e["kind"] == "power_state" && e["to"] == "power on") powerEvent = e["id"];
  }
  REQUIRE(powerEvent != 0);
  CHECK((*reset)["id"].get<int64_t>() < powerEvent);
  // Never a secret: not the password (sent in the session's body), not the session token.
  CHECK(all.dump().find(kRedfishPassword) == std::string::npos);
  CHECK(all.dump().find("X-Auth-Token") == std::string::npos);
}

TEST_CASE("a failing BMC records a bmc_request event with result error and the masked message",
          "[server][api][events][bmc_events][redfish]") {
  kiln::test::RedfishTestServer bmc;
  REQUIRE(bmc.start());
  TestApi api;
  createRedfishNode(api, bmc);
  bmc.injectError({.method = "POST",
                   .path = "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset",
                   .status = 500,
                   .message = std::string("reset refused for admin:") + kRedfishPassword,
                   .count = -1});
  const int64_t before = lastEventId(api, "r1");

  REQUIRE(api.put("/v1/nodes/r1/states/power", {{"target", "power on"}}).status == 202);
  api.settle();
  // The error Kiln builds from the BMC's message masks the password too (last_error, the
  // error event, the log).
  const Json failed = api.get("/v1/nodes/r1").json()["last_error"];
  REQUIRE(failed.is_string());
  CHECK_THAT(failed.get<std::string>(), Catch::Contains("reset refused for admin:******"));
  CHECK(journal(api, "r1").dump().find(kRedfishPassword) == std::string::npos);

  const Json requests = journal(api, "r1", "?kind=bmc_request&since=" + std::to_string(before));
  const auto reset = resetRequest(requests);
  REQUIRE(reset);
  CHECK((*reset)["result"] == "error");
  CHECK((*reset)["status"] == 500);
  const std::string error = (*reset)["error"];
  CHECK_THAT(error, Catch::StartsWith("HTTP 500"));
  CHECK_THAT(error, Catch::Contains("reset refused for admin:******"));
  CHECK(requests.dump().find(kRedfishPassword) == std::string::npos);
}

TEST_CASE("the power-state sync records no bmc_request when the node is as recorded",
          "[server][conductor][events][bmc_events][ipmitool]") {
  IpmiSyncSetup s;
  // The verification's own request is recorded (a flow records all of its requests).
  const Json verify = journal(*s.api, "bmc", "?kind=bmc_request");
  REQUIRE(verify.size() == 1);
  CHECK(verify[0]["driver"] == "ipmitool");
  CHECK(verify[0]["operation"] == "chassis power status");
  CHECK(verify[0]["bmc"] == "10.20.30.40");
  CHECK(verify[0]["result"] == "success");
  CHECK(verify[0]["exit_status"] == 0);
  CHECK_FALSE(verify[0].contains("path"));
  const int64_t before = lastEventId(*s.api, "bmc");

  s.expect("power_status_off");
  s.sync();
  s.expect("power_status_off");
  s.sync();
  kiln::test::checkAllConsumed(*s.runner);
  CHECK(journal(*s.api, "bmc", "?since=" + std::to_string(before)).empty());

  SECTION("a sync that finds the power changed records its request") {
    s.expect("power_status_on");
    s.sync();
    REQUIRE(s.api->get("/v1/nodes/bmc").json()["power_state"] == "power on");
    const Json all = journal(*s.api, "bmc", "?since=" + std::to_string(before));
    REQUIRE(all.size() == 2);
    CHECK(all[0]["kind"] == "bmc_request");
    CHECK(all[0]["operation"] == "chassis power status");
    CHECK(all[0]["result"] == "success");
    CHECK(all[1]["kind"] == "power_state");
  }
  SECTION("a sync that fails records its request with the error") {
    s.expect("address_lookup_failed");
    s.sync();
    const Json requests =
        journal(*s.api, "bmc", "?kind=bmc_request&since=" + std::to_string(before));
    REQUIRE(requests.size() == 1);
    CHECK(requests[0]["result"] == "error");
    CHECK(requests[0]["exit_status"] == 1);
    CHECK_FALSE(requests[0]["error"].get<std::string>().empty());
    CHECK(requests.dump().find(kiln::test::kIpmiPassword) == std::string::npos);
  }
  kiln::test::checkAllConsumed(*s.runner);
}
