// The power-state sync talks to BMCs with no database transaction open: a BMC that takes its
// time (up to power_state_change_timeout when the sync forces the recorded state back) holds
// up that node's sync only, never the API's writes or the flows. Restoring the power state
// runs under the node's lock.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

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

/// A slow BMC: commands go to a ReplayCommandRunner, but the first one whose argv ends with
/// the armed tail waits until the test opens the gate. The wait has a generous limit only so
/// that a regression (the sync holding a transaction the API needs) fails the test instead of
/// hanging it; the test itself synchronises on the condition variable, never on time.
class SlowBmc final : public kiln::CommandRunner {
 public:
  explicit SlowBmc(std::shared_ptr<ReplayCommandRunner> replay) : replay_(std::move(replay)) {}

  kiln::Result<kiln::CommandOutput> run(const kiln::Command& command) override {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (!armed_.empty() && endsWith(command.argv, armed_)) {
        armed_.clear();
        blocked_ = true;
        changed_.notify_all();
        timedOut_ = !changed_.wait_for(lock, std::chrono::seconds(30), [this] { return open_; });
        blocked_ = false;
      }
    }
    return replay_->run(command);
  }

  /// The next command ending with `tail` blocks.
  void arm(std::vector<std::string> tail) {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = std::move(tail);
  }
  /// Waits until a command is blocked; false if none came.
  bool waitUntilBlocked() {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(30), [this] { return blocked_; });
  }
  /// Whether the armed command is still waiting (it has not given up on its limit).
  bool stillBlocked() {
    std::lock_guard<std::mutex> lock(mutex_);
    return blocked_;
  }
  bool timedOut() {
    std::lock_guard<std::mutex> lock(mutex_);
    return timedOut_;
  }
  void open() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_ = true;
    }
    changed_.notify_all();
  }

 private:
  static bool endsWith(const std::vector<std::string>& argv, const std::vector<std::string>& tail) {
    return argv.size() >= tail.size() &&
           std::equal(tail.begin(), tail.end(), argv.end() - static_cast<long>(tail.size()));
  }

  std::shared_ptr<ReplayCommandRunner> replay_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> armed_;
  bool blocked_ = false;
  bool open_ = false;
  bool timedOut_ = false;
};

void expect(ReplayCommandRunner& runner, std::initializer_list<std::string> command,
            const std::string& fixture) {
  kiln::test::ExpectedCommand e;
  e.argv = IpmiFixture::argv(command);
  e.output = kiln::test::recordedOutput("ipmitool/" + fixture + ".txt");
  runner.expect(std::move(e));
}

/// A TestApi whose ipmitool commands go through a SlowBmc, with the ipmi node "bmc" enrolled.
struct SlowBmcApi {
  std::shared_ptr<ReplayCommandRunner> replay = std::make_shared<ReplayCommandRunner>();
  std::shared_ptr<SlowBmc> bmc = std::make_shared<SlowBmc>(replay);
  TestApi api;

  explicit SlowBmcApi(const std::string& config) : api(config, depsFor(bmc)) {
    REQUIRE(api.post("/v1/nodes", {{"driver", "ipmi"},
                                   {"name", "bmc"},
                                   {"uuid", std::string(kiln::test::kIpmiNodeUuid)},
                                   {"driver_info", kiln::test::ipmiDriverInfo()}})
                .status == 201);
  }

 private:
  static InterfaceDeps depsFor(std::shared_ptr<SlowBmc> commands) {
    InterfaceDeps deps;
    deps.commands = std::move(commands);
    return deps;
  }
};

}  // namespace

TEST_CASE("the power sync does not hold up API writes while it waits for a slow BMC",
          "[server][conductor][power][sync][node_lock]") {
  SlowBmcApi fixture("[conductor]\nsync_power_state_interval = 60\n");
  auto& [replay, bmc, api] = fixture;
  // Manage verifies the node: its recorded power state is "power off".
  expect(*replay, {"chassis", "power", "status"}, "power_status_off");
  REQUIRE(api.put("/v1/nodes/bmc/states/provision", {{"target", "manage"}}).status == 202);
  api.settle();
  REQUIRE(api.get("/v1/nodes/bmc").json()["power_state"] == "power off");

  bool restoring = false;
  SECTION("while it reads the power state") {
    expect(*replay, {"chassis", "power", "status"}, "power_status_off");
    bmc->arm({"chassis", "power", "status"});
  }
  SECTION("while it forces the recorded power state back (under the node's lock)") {
    restoring = true;
    expect(*replay, {"chassis", "power", "status"}, "power_status_on");
    expect(*replay, {"chassis", "power", "off"}, "power_off");
    expect(*replay, {"chassis", "power", "status"}, "power_status_off");
    bmc->arm({"chassis", "power", "off"});
  }

  std::atomic<bool> syncDone{false};
  std::thread sync([&] {
    api.app().conductor().runPeriodicTasks();
    syncDone = true;
  });
  const bool blocked = bmc->waitUntilBlocked();
  if (!blocked) {
    bmc->open();
    sync.join();
  }
  REQUIRE(blocked);

  // An API write meanwhile completes at once while the sync only reads the power state; while
  // it restores it, the node is locked and the write waits for the lock, then gets 409, as
  // Ironic's update_node. Either way no database transaction waits for the BMC.
  auto patched = api.patch("/v1/nodes/bmc", Json::parse(R"([{"op": "add", "path": "/extra/note",
      "value": "written while the BMC was slow"}])"));
  CHECK(patched.status == (restoring ? 409 : 200));
  CHECK(bmc->stillBlocked());
  CHECK_FALSE(syncDone);
  if (restoring) {
    // The restore holds the node's lock: a power request is refused as locked meanwhile.
    const Json n = api.get("/v1/nodes/bmc").json();
    CHECK(n["reservation"] == "test-conductor");
    auto power = api.put("/v1/nodes/bmc/states/power", {{"target", "power on"}});
    CHECK(power.status == 409);
    CHECK_THAT(power.fault(), Catch::Contains("is locked by host test-conductor"));
  }

  bmc->open();
  sync.join();
  api.settle();
  CHECK_FALSE(bmc->timedOut());
  const Json n = api.get("/v1/nodes/bmc").json();
  CHECK(n["power_state"] == "power off");
  CHECK(n["reservation"].is_null());
  CHECK(n["target_power_state"].is_null());
  CHECK(n["maintenance"] == false);
  // The sync's save kept the API's change.
  if (!restoring) CHECK(n["extra"]["note"] == "written while the BMC was slow");
  if (restoring) CHECK(n["extra"].empty());
  kiln::test::checkAllConsumed(*replay);
}

TEST_CASE("a flow whose node was taken over meanwhile drops its results instead of writing over "
          "the new owner's",
          "[server][conductor][node_lock][multi]") {
  // A conductor cut off from the database's heartbeats carries on with a slow BMC while another
  // takes its node over; when the BMC answers, the first must not write over the takeover.
  SlowBmcApi fixture("");
  auto& [replay, bmc, api] = fixture;
  expect(*replay, {"chassis", "power", "status"}, "power_status_off");
  bmc->arm({"chassis", "power", "status"});
  REQUIRE(api.put("/v1/nodes/bmc/states/provision", {{"target", "manage"}}).status == 202);
  const bool blocked = bmc->waitUntilBlocked();
  if (!blocked) bmc->open();
  REQUIRE(blocked);

  // The takeover: another conductor now holds the node (it resumed the verification).
  {
    auto tx = api.app().storage().begin(Storage::Mode::Write).value();
    auto rec = tx->nodes().findBy(kNodeName, Value::text("bmc")).value();
    REQUIRE(rec);
    REQUIRE(rec->str(kNodeReservation) == "test-conductor");
    rec->setText(kNodeReservation, "kiln-c");
    REQUIRE(tx->nodes().update(*rec));
    REQUIRE(tx->commit());
  }
  bmc->open();
  api.settle();
  CHECK_FALSE(bmc->timedOut());
  const Json n = api.get("/v1/nodes/bmc").json();
  CHECK(n["provision_state"] == "verifying");  // not "manageable": that result was dropped
  CHECK(n["reservation"] == "kiln-c");
  CHECK(n["last_error"].is_null());
  CHECK(n["power_state"].is_null());
  CHECK(api.get("/v1/nodes/bmc/history").json()["history"].empty());
  kiln::test::checkAllConsumed(*replay);
}
