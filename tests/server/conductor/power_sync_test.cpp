#include <catch2/catch.hpp>

#include "server/model/node.h"
#include "tests/server/drivers/ipmitool/ipmitool_test_support.h"
#include "tests/support/replay_command_runner.h"
#include "tests/support/test_api.h"

using kiln::test::IpmiFixture;
using kiln::test::Json;
using kiln::test::ReplayCommandRunner;
using kiln::test::TestApi;
using namespace kiln::server;

namespace {

struct SyncSetup {
  std::shared_ptr<ReplayCommandRunner> runner = std::make_shared<ReplayCommandRunner>();
  std::unique_ptr<TestApi> api;

  explicit SyncSetup(const std::string& config) {
    InterfaceDeps deps;
    deps.commands = runner;
    api = std::make_unique<TestApi>("[conductor]\nsync_power_state_interval = 60\n" + config, deps);
    auto r = api->post("/v1/nodes", {{"driver", "ipmi"},
                                     {"name", "bmc"},
                                     {"uuid", std::string(kiln::test::kIpmiNodeUuid)},
                                     {"driver_info", kiln::test::ipmiDriverInfo()}});
    REQUIRE(r.status == 201);
  }

  /// Verifies the node (manage reads the power state once), so the sync looks at it.
  void manage(const std::string& fixture = "power_status_off") {
    expect({"chassis", "power", "status"}, fixture);
    REQUIRE(api->put("/v1/nodes/bmc/states/provision", {{"target", "manage"}}).status == 202);
    REQUIRE(node()["provision_state"] == "manageable");
  }

  void expect(std::initializer_list<std::string> command, const std::string& fixture) {
    kiln::test::ExpectedCommand e;
    e.argv = IpmiFixture::argv(command);
    e.output = kiln::test::recordedOutput("ipmitool/" + fixture + ".txt");
    runner->expect(std::move(e));
  }

  Json node() {
    api->settle();
    return api->get("/v1/nodes/bmc").json();
  }

  void setRecordedPower(const std::string& state) {
    auto tx = api->app().storage().begin(Storage::Mode::Write).value();
    auto rec = *tx->nodes().findBy(kNodeName, Value::text("bmc")).value();
    rec.setText(kNodePowerState, state);
    REQUIRE(tx->nodes().update(rec));
    REQUIRE(tx->commit());
  }
};

}  // namespace

TEST_CASE("the power sync leaves enrolled nodes alone", "[server][conductor][power][sync]") {
  SyncSetup s("");
  s.api->runPeriodic();
  CHECK(s.node()["power_state"].is_null());
  kiln::test::checkAllConsumed(*s.runner);
}

TEST_CASE("the power sync records the BMC's state and restores the recorded one", "[server][conductor][power][sync]") {
  SyncSetup s("");
  s.manage("power_status_on");
  {
    auto tx = s.api->app().storage().begin(Storage::Mode::Write).value();
    auto rec = *tx->nodes().findBy(kNodeName, Value::text("bmc")).value();
    rec.setNull(kNodePowerState);
    REQUIRE(tx->nodes().update(rec));
    REQUIRE(tx->commit());
  }
  s.expect({"chassis", "power", "status"}, "power_status_on");
  s.api->runPeriodic();
  CHECK(s.node()["power_state"] == "power on");

  SECTION("nothing runs before the interval has passed") {
    s.api->clock().advance(std::chrono::seconds(30));
    s.api->runPeriodic();
    kiln::test::checkAllConsumed(*s.runner);
  }
  SECTION("a state changed behind Kiln's back is put back (force_power_state_during_sync)") {
    s.setRecordedPower("power off");
    s.expect({"chassis", "power", "status"}, "power_status_on");
    s.expect({"chassis", "power", "off"}, "power_off");
    s.expect({"chassis", "power", "status"}, "power_status_off");
    s.api->clock().advance(std::chrono::seconds(61));
    s.api->runPeriodic();
    CHECK(s.node()["power_state"] == "power off");
    kiln::test::checkAllConsumed(*s.runner);
  }
}

TEST_CASE("without forcing, the power sync records what the BMC reports", "[server][conductor][power][sync]") {
  SyncSetup s("force_power_state_during_sync = false\n");
  s.manage();
  s.expect({"chassis", "power", "status"}, "power_status_off");
  s.api->runPeriodic();
  CHECK(s.node()["power_state"] == "power off");
  s.expect({"chassis", "power", "status"}, "power_status_on");
  s.api->clock().advance(std::chrono::seconds(61));
  s.api->runPeriodic();
  CHECK(s.node()["power_state"] == "power on");
  kiln::test::checkAllConsumed(*s.runner);
}

TEST_CASE("repeated power sync failures put the node in maintenance with a power failure fault",
          "[server][conductor][power][sync]") {
  SyncSetup s("power_state_sync_max_retries = 2\n");
  s.manage();
  s.expect({"chassis", "power", "status"}, "address_lookup_failed");
  s.api->runPeriodic();
  CHECK(s.node()["maintenance"] == false);
  s.expect({"chassis", "power", "status"}, "address_lookup_failed");
  s.api->clock().advance(std::chrono::seconds(61));
  s.api->runPeriodic();
  auto n = s.node();
  CHECK(n["maintenance"] == true);
  CHECK(n["fault"] == "power failure");
  CHECK_THAT(n["maintenance_reason"].get<std::string>(), Catch::Contains("max retries exceeded"));
  // A node in maintenance is left alone.
  s.api->clock().advance(std::chrono::seconds(61));
  s.api->runPeriodic();
  kiln::test::checkAllConsumed(*s.runner);
}

TEST_CASE("manage verifies an ipmi node by reading its power state", "[server][conductor][power]") {
  SyncSetup s("sync_power_state_interval = 0\n");
  s.manage("power_status_on");
  CHECK(s.node()["power_state"] == "power on");
  kiln::test::checkAllConsumed(*s.runner);
}
