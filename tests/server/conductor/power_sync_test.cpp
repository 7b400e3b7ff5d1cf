#include <catch2/catch.hpp>

#include <filesystem>
#include <stdlib.h>

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

TEST_CASE("the power sync and restart recovery visit every node, page by page",
          "[server][conductor][power][sync]") {
  // The periodic tasks read nodes 200 at a time; 450 nodes take three pages.
  char tmpl[] = "/tmp/kiln-sync-pages-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string config = "[conductor]\nsync_power_state_interval = 60\n"
                             "[database]\nconnection = sqlite:///" + dir + "/kiln.sqlite\n";
  constexpr int kNodes = 450;
  {
    TestApi before(config);
    for (int i = 0; i < kNodes; ++i) before.createNode();
    auto tx = before.app().storage().begin(Storage::Mode::Write).value();
    ListQuery all;
    all.limit = 0;
    auto records = tx->nodes().list(all).value();
    REQUIRE(records.size() == kNodes);
    for (size_t i = 0; i < records.size(); ++i) {
      Record& rec = records[i];
      rec.setText(kNodeProvisionState, "manageable");
      // Every third node looks like a power action a killed server left half done.
      if (i % 3 == 0) rec.setText(kNodeTargetPowerState, "power on");
      REQUIRE(tx->nodes().update(rec));
    }
    REQUIRE(tx->commit());
  }

  TestApi api(config);  // the restarted server recovers, then syncs
  api.runPeriodic();
  api.settle();

  auto tx = api.app().storage().begin(Storage::Mode::Read).value();
  ListQuery all;
  all.limit = 0;
  const auto nodes = tx->nodes().list(all).value();
  REQUIRE(nodes.size() == kNodes);
  int recovered = 0;
  for (const auto& n : nodes) {
    CHECK(n[kNodeTargetPowerState].isNull());
    CHECK(n.str(kNodePowerState) == "power off");  // recorded by the sync
    if (!n[kNodeLastError].isNull()) ++recovered;
  }
  CHECK(recovered == (kNodes + 2) / 3);
  std::filesystem::remove_all(dir);
}
