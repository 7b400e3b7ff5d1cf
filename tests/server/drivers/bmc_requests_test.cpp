// The BMC request scopes (server/drivers/bmc_requests.h) and what the ipmitool and Redfish call
// sites note in them for the node's bmc_request events.
#include <catch2/catch.hpp>

#include "server/drivers/bmc_metrics.h"
#include "server/drivers/bmc_requests.h"
#include "server/drivers/ipmitool/ipmitool.h"
#include "server/drivers/redfish/redfish_client.h"
#include "tests/server/drivers/ipmitool/ipmitool_test_support.h"
#include "tests/server/drivers/redfish/redfish_fixture.h"
#include "tests/support/fake_clock.h"

using namespace kiln;
using namespace kiln::server;

namespace {

BmcRequestRecord named(const std::string& operation) {
  BmcRequestRecord r;
  r.driver = "redfish";
  r.operation = operation;
  r.result = std::string(kBmcSuccess);
  return r;
}

std::vector<std::string> operations(const std::vector<BmcRequestRecord>& records) {
  std::vector<std::string> out;
  for (const auto& r : records) out.push_back(r.operation);
  return out;
}

}  // namespace

TEST_CASE("BMC requests are noted only while a scope is open", "[server][drivers][bmc_events]") {
  test::FakeClock clock;
  CHECK_FALSE(bmcRequestScopeOpen());
  noteBmcRequest(named("GET"));  // no scope: dropped, nothing to take later
  {
    BmcRequestScope scope("node-a", clock);
    CHECK(bmcRequestScopeOpen());
    noteBmcRequest(named("POST"));
    const auto taken = takeBmcRequests("node-a");
    REQUIRE(taken.size() == 1);
    CHECK(taken[0].operation == "POST");
    CHECK(taken[0].finishedAt == clock.now());
    CHECK(takeBmcRequests("node-a").empty());
  }
  CHECK_FALSE(bmcRequestScopeOpen());
}

TEST_CASE("BMC request scopes nest: an inner scope's records go to an outer one of its node",
          "[server][drivers][bmc_events]") {
  test::FakeClock clock;
  BmcRequestScope outer("node-a", clock);
  noteBmcRequest(named("first"));
  {
    BmcRequestScope inner("node-a", clock);
    noteBmcRequest(named("second"));
    // Taken from every open scope of the node, outermost first.
    CHECK(operations(takeBmcRequests("node-a")) == std::vector<std::string>{"first", "second"});
    noteBmcRequest(named("third"));
  }
  {
    // third passed up to the outer scope when its scope closed.
    BmcRequestScope other("node-b", clock);
    noteBmcRequest(named("elsewhere"));  // the innermost scope is node-b's
    CHECK(operations(takeBmcRequests("node-a")) == std::vector<std::string>{"third"});
    noteBmcRequest(named("elsewhere too"));
  }
  // node-b's records did not pass to node-a's scope.
  CHECK(takeBmcRequests("node-a").empty());
  noteBmcRequest(named("fourth"));
  outer.discard();
  CHECK(takeBmcRequests("node-a").empty());
}

TEST_CASE("a BMC request scope keeps its newest records and counts those it dropped",
          "[server][drivers][bmc_events]") {
  test::FakeClock clock;
  BmcRequestScope scope("node-a", clock);
  for (size_t i = 0; i < kMaxBmcRequestsPerScope + 3; ++i) noteBmcRequest(named(std::to_string(i)));
  size_t dropped = 0;
  const auto taken = takeBmcRequests("node-a", &dropped);
  CHECK(dropped == 3);
  REQUIRE(taken.size() == kMaxBmcRequestsPerScope);
  CHECK(taken.front().operation == "3");
  CHECK(scope.dropped() == 0);
}

TEST_CASE("boundBmcError cuts long text on a UTF-8 character boundary",
          "[server][drivers][bmc_events]") {
  CHECK(boundBmcError("short") == "short");
  const std::string text = std::string(kMaxBmcErrorChars - 1, 'x') + "\xc3\xa9" + "tail";
  const std::string bounded = boundBmcError(text);
  CHECK(bounded == std::string(kMaxBmcErrorChars - 1, 'x') + "...");
}

TEST_CASE("an ipmitool run notes its BMC, operation, exit status and password-masked error",
          "[server][drivers][bmc_events][ipmitool]") {
  test::IpmiFixture f;
  kiln::test::ExpectedCommand e;
  e.argv = test::IpmiFixture::argv({"chassis", "power", "status"});
  // A BMC that echoes the password back must not get it into the record.
  e.output = {1, "", "Error: password " + std::string(test::kIpmiPassword) + " rejected\n"};
  f.runner->expect(e);
  BmcRequestScope scope(std::string(test::kIpmiNodeUuid), f.clock);
  Ipmitool ipmitool(f.runner);
  auto out = ipmitool.run(f.task, {"chassis", "power", "status"});
  REQUIRE_FALSE(out);
  CHECK_THAT(out.error().message, !Catch::Contains(std::string(test::kIpmiPassword)));
  const auto taken = takeBmcRequests(test::kIpmiNodeUuid);
  REQUIRE(taken.size() == 1);
  const BmcRequestRecord& failed = taken.front();
  CHECK(failed.driver == "ipmitool");
  CHECK(failed.operation == "chassis power status");
  CHECK(failed.bmc == "10.20.30.40");
  CHECK(failed.result == kBmcError);
  CHECK(failed.exitStatus == 1);
  CHECK(failed.error == "Error: password ****** rejected");
  CHECK(failed.path.empty());
  CHECK(failed.durationSeconds >= 0);
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("a Redfish request notes its BMC, path, HTTP status and masked error",
          "[server][drivers][bmc_events][redfish]") {
  test::RedfishFixture f;
  f.bmc.requireCredentials("admin", "redfish-Pa55");
  f.bmc.injectError({.method = "GET",
                     .path = "/redfish/v1/Systems/1",
                     .status = 503,
                     .message = "BMC busy, password redfish-Pa55"});
  auto task = f.task({{"redfish_username", "admin"},
                      {"redfish_password", "redfish-Pa55"},
                      {"redfish_auth_type", "basic"}});
  auto config = parseRedfishConfig(task.driverInfo, task.uuid());
  REQUIRE(config);
  RedfishClient client(f.http, *config);
  BmcRequestScope scope(test::kRedfishNode, f.clock);
  CHECK_FALSE(client.get("/redfish/v1/Systems/1"));
  const auto taken = takeBmcRequests(test::kRedfishNode);
  REQUIRE(!taken.empty());
  const BmcRequestRecord& r = taken.back();
  CHECK(r.driver == "redfish");
  CHECK(r.operation == "GET");
  CHECK(r.path == "/redfish/v1/Systems/1");
  CHECK(r.bmc == config->address.hostHeader());
  CHECK(r.result == kBmcError);
  CHECK(r.httpStatus == 503);
  CHECK_THAT(r.error, Catch::StartsWith("HTTP 503"));
  CHECK_THAT(r.error, Catch::Contains("******"));
  CHECK_THAT(r.error, !Catch::Contains("redfish-Pa55"));
}
