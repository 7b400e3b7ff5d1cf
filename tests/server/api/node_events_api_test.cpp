// GET /v1/nodes/{node}/events: what the conductor journals (states, steps, flows, errors) and
// the JSON listing with its filters and errors (issue 27; docs/observability.md "Events").
#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "server/conductor/node_events_recorder.h"
#include "server/conductor/task_store.h"
#include "server/model/node.h"
#include "server/storage/queries/node_events.h"
#include "tests/support/basic_auth.h"
#include "tests/support/metrics_sample.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TestApi;
using namespace kiln::server;

namespace {

kiln::test::Response provision(TestApi& api, const std::string& ident, Json body) {
  return api.put("/v1/nodes/" + ident + "/states/provision", body);
}

Json journal(TestApi& api, const std::string& ident, const std::string& query = "") {
  auto r = api.get("/v1/nodes/" + ident + "/events" + query);
  REQUIRE(r.status == 200);
  return r.json()["events"];
}

std::vector<Json> ofKind(const Json& list, const std::string& kind) {
  std::vector<Json> out;
  for (const auto& e : list) {
    if (e["kind"] == kind) out.push_back(e);
  }
  return out;
}

}  // namespace

TEST_CASE("node events journal a cleaning's state moves, steps and flow with their durations",
          "[server][api][events]") {
  TestApi api;
  const Json n = api.createNode({{"name", "ev"}});
  REQUIRE(provision(api, "ev", {{"target", "manage"}}).status == 202);
  api.settle();
  REQUIRE(provision(api, "ev", {{"target", "clean"}, {"clean_steps", Json::parse(R"([
      {"interface": "deploy", "step": "wait", "args": {"seconds": 90}},
      {"interface": "power", "step": "power_on"}])")}})
              .status == 202);
  api.settle();
  // The wait step runs across units of work: its start time is kept with the flow.
  api.clock().advance(std::chrono::seconds(91));
  api.runPeriodic();
  REQUIRE(api.get("/v1/nodes/ev").json()["provision_state"] == "manageable");

  const Json all = journal(api, "ev");
  for (size_t i = 1; i < all.size(); ++i) CHECK(all[i]["id"] > all[i - 1]["id"]);
  for (const auto& e : all) {
    CHECK(e["node_uuid"] == n["uuid"]);
    CHECK(e["time"].get<std::string>().size() == 29);  // 2026-01-01T00:00:00.000+00:00
  }
  std::vector<std::pair<std::string, std::string>> moves;
  for (const auto& e : ofKind(all, "provision_state")) moves.emplace_back(e["from"], e["to"]);
  CHECK(moves == std::vector<std::pair<std::string, std::string>>{{"enroll", "verifying"},
                                                                  {"verifying", "manageable"},
                                                                  {"manageable", "cleaning"},
                                                                  {"cleaning", "clean wait"},
                                                                  {"clean wait", "cleaning"},
                                                                  {"cleaning", "manageable"}});
  const auto started = ofKind(all, "step_started");
  const auto finished = ofKind(all, "step_finished");
  REQUIRE(started.size() == 2);
  REQUIRE(finished.size() == 2);
  CHECK(started[0]["flow"] == "clean");
  CHECK(started[0]["interface"] == "deploy");
  CHECK(started[0]["step"] == "wait");
  CHECK(finished[0]["step"] == "wait");
  CHECK(finished[0]["result"] == "success");
  CHECK(finished[0]["duration"] == 91.0);
  CHECK(finished[0]["started_at"] == started[0]["started_at"]);
  CHECK(finished[1]["step"] == "power_on");
  CHECK(finished[1]["duration"] == 0.0);
  // A step's end comes before the next one's start.
  CHECK(finished[0]["id"] < started[1]["id"]);
  const auto flowsStarted = ofKind(all, "flow_started");
  const auto flowsFinished = ofKind(all, "flow_finished");
  REQUIRE(flowsFinished.size() == 2);  // verify, then clean
  CHECK(flowsStarted.size() == 2);
  CHECK(flowsFinished[1]["flow"] == "clean");
  CHECK(flowsFinished[1]["result"] == "success");
  CHECK(flowsFinished[1]["provision_state"] == "manageable");
  CHECK(flowsFinished[1]["duration"] == 91.0);
  CHECK_FALSE(ofKind(all, "power_state").empty());
  // The bookkeeping is gone once the flow ended.
  const Json info = api.get("/v1/nodes/ev").json()["driver_internal_info"];
  CHECK_FALSE(info.contains("event_step"));
  CHECK_FALSE(info.contains("event_flow"));
}

TEST_CASE("node events record a failed step, the failed flow and its masked error",
          "[server][api][events]") {
  TestApi api;
  api.createNode({{"name", "bad"}});
  REQUIRE(provision(api, "bad", {{"target", "manage"}}).status == 202);
  api.settle();
  REQUIRE(provision(api, "bad", {{"target", "clean"}, {"clean_steps", Json::parse(R"([
      {"interface": "deploy", "step": "wait", "args": {"seconds": -1}}])")}})
              .status == 202);
  api.settle();
  REQUIRE(api.get("/v1/nodes/bad").json()["provision_state"] == "clean failed");
  const Json all = journal(api, "bad");
  const auto finished = ofKind(all, "step_finished");
  REQUIRE(finished.size() == 1);
  CHECK(finished[0]["result"] == "failure");
  const auto flows = ofKind(all, "flow_finished");
  REQUIRE(flows.size() == 2);
  CHECK(flows[1]["flow"] == "clean");
  CHECK(flows[1]["result"] == "failure");
  CHECK(flows[1]["provision_state"] == "clean failed");
  const auto errors = ofKind(all, "error");
  REQUIRE(errors.size() == 1);
  CHECK_THAT(errors[0]["message"].get<std::string>(), Catch::Contains("deploy.wait"));
}

TEST_CASE("node events mark an aborted step and flow as aborted", "[server][api][events]") {
  TestApi api;
  api.createNode({{"name", "ab"}});
  REQUIRE(provision(api, "ab", {{"target", "manage"}}).status == 202);
  api.settle();
  REQUIRE(provision(api, "ab", {{"target", "clean"}, {"clean_steps", Json::parse(R"([
      {"interface": "deploy", "step": "wait", "args": {"seconds": 600}}])")}})
              .status == 202);
  api.settle();
  api.clock().advance(std::chrono::seconds(5));
  REQUIRE(provision(api, "ab", {{"target", "abort"}}).status == 202);
  api.settle();
  const Json all = journal(api, "ab");
  const auto finished = ofKind(all, "step_finished");
  REQUIRE(finished.size() == 1);
  CHECK(finished[0]["result"] == "aborted");
  CHECK(finished[0]["duration"] == 5.0);
  const auto flows = ofKind(all, "flow_finished");
  REQUIRE_FALSE(flows.empty());
  CHECK(flows.back()["result"] == "aborted");
  const auto moves = ofKind(all, "provision_state");
  CHECK(moves.back()["event"] == "abort");
}

TEST_CASE("a conductor save that is rolled back leaves no node event", "[server][api][events]") {
  TestApi api;
  const Json n = api.createNode({{"name", "rb"}});
  auto& app = api.app();
  TaskStore tasks(app.storage(), api.clock(), app.config(), "host-a");
  const std::string uuid = n["uuid"];
  auto count = [&] {
    auto tx = app.storage().begin(Storage::Mode::Read).value();
    return listAllNodeEvents(*tx, 0, 1000).value().size();
  };
  const size_t before = count();
  {
    auto tx = app.storage().begin(Storage::Mode::Write).value();
    TaskContext task = tasks.load(*tx, uuid).value();
    REQUIRE(tasks.transition(task, "manage"));
    task.node.setText(kNodePowerState, "power on");
    REQUIRE(tasks.save(*tx, task));
    CHECK(listAllNodeEvents(*tx, 0, 1000).value().size() > before);
  }  // dropped: rolled back
  CHECK(count() == before);
  {
    auto tx = app.storage().begin(Storage::Mode::Write).value();
    TaskContext task = tasks.load(*tx, uuid).value();
    REQUIRE(tasks.transition(task, "manage"));
    REQUIRE(tasks.save(*tx, task));
    REQUIRE(tx->commit());
  }
  const Json all = journal(api, "rb");
  REQUIRE(all.size() == before + 2);  // the move, and the verify flow's start
  CHECK(all[before]["kind"] == "provision_state");
  CHECK(all[before]["event"] == "manage");
  CHECK(all[before]["conductor"] == "host-a");
}

TEST_CASE("GET node events filters by since, kind and limit and links the next page",
          "[server][api][events]") {
  TestApi api;
  const Json n = api.createNode({{"name", "pg"}});
  REQUIRE(provision(api, "pg", {{"target", "manage"}}).status == 202);
  api.settle();
  const Json all = journal(api, n["uuid"].get<std::string>());
  REQUIRE(all.size() >= 4);
  // By name, at any version (the route is outside microversions), and without a version.
  api.version = "";
  CHECK(journal(api, "pg") == all);
  api.version = "1.78";
  const int64_t second = all[1]["id"];
  const Json after = journal(api, "pg", "?since=" + std::to_string(second));
  REQUIRE(after.size() == all.size() - 2);
  CHECK(after[0] == all[2]);
  const Json moves = journal(api, "pg", "?kind=provision_state,flow_finished");
  for (const auto& e : moves) {
    CHECK((e["kind"] == "provision_state" || e["kind"] == "flow_finished"));
  }
  CHECK(moves.size() ==
        ofKind(all, "provision_state").size() + ofKind(all, "flow_finished").size());
  auto page = api.get("/v1/nodes/pg/events?limit=2&kind=provision_state,flow_finished");
  REQUIRE(page.status == 200);
  REQUIRE(page.json()["events"].size() == 2);
  const std::string next = page.json()["next"];
  CHECK_THAT(next, Catch::EndsWith("/v1/nodes/pg/events?since=" +
                                   std::to_string(page.json()["events"][1]["id"].get<int64_t>()) +
                                   "&kind=provision_state,flow_finished&limit=2"));
  auto rest = api.get(next.substr(next.find("/v1/")));
  REQUIRE(rest.status == 200);
  CHECK(rest.json()["events"][0] == moves[2]);
  // limit above max_limit is max_limit; the events are the same.
  CHECK(journal(api, "pg", "?limit=100000") == all);
}

TEST_CASE("GET node events answers bad input with 400 and unknown nodes with 404",
          "[server][api][events]") {
  TestApi api;
  api.createNode({{"name", "x"}});
  for (const char* query : {"?since=abc", "?since=-1", "?since=1.5",
                            "?since=", "?since=99999999999999999999", "?kind=", "?kind=Power",
                            "?kind=a,,b", "?kind=a%20b", "?limit=0", "?limit=x", "?limit=-3"}) {
    INFO(query);
    auto r = api.get(std::string("/v1/nodes/x/events") + query);
    CHECK(r.status == 400);
    CHECK_FALSE(r.fault().empty());
  }
  auto header = api.call("GET", "/v1/nodes/x/events", "", {{"Last-Event-ID", "12a"}});
  CHECK(header.status == 400);
  CHECK_THAT(header.fault(), Catch::Contains("Last-Event-ID"));
  CHECK(api.call("GET", "/v1/nodes/x/events", "",
                 {{"Last-Event-ID", "x"}, {"Accept", "text/event-stream"}})
            .status == 400);
  CHECK(api.get("/v1/nodes/nope/events").status == 404);
  CHECK(api.get("/v1/nodes/12345678-1234-1234-1234-123456789012/events").status == 404);
  CHECK(api.get("/v1/nodes/a%20b/events").status == 400);
  CHECK(api.post("/v1/nodes/x/events", Json::object()).status == 405);
}

TEST_CASE("node events are readable by observers and go when their node is deleted",
          "[server][api][events][auth]") {
  char tmpl[] = "/tmp/kiln-htpasswd-XXXXXX";
  const int fd = mkstemp(tmpl);
  REQUIRE(fd >= 0);
  close(fd);
  std::ofstream(tmpl) << kiln::test::kTestHtpasswd;
  TestApi api(std::string("[DEFAULT]\nauth_strategy = http_basic\nhttp_basic_auth_user_file = ") +
              tmpl + "\n[http_basic_roles]\nviewer = observer\n");
  api.extraHeaders = {{"authorization", kiln::test::basicAuthorization("admin", "s3cret")}};
  const Json n = api.createNode({{"name", "seen"}});
  REQUIRE(provision(api, "seen", {{"target", "manage"}}).status == 202);
  api.settle();
  api.extraHeaders = {};
  CHECK(api.get("/v1/nodes/seen/events").status == 401);
  api.extraHeaders = {{"authorization", kiln::test::basicAuthorization("viewer", "watch")}};
  CHECK_FALSE(journal(api, "seen").empty());
  api.extraHeaders = {{"authorization", kiln::test::basicAuthorization("admin", "s3cret")}};
  REQUIRE(api.del("/v1/nodes/seen").status == 204);
  auto tx = api.app().storage().begin(Storage::Mode::Read).value();
  CHECK(listAllNodeEvents(*tx, 0, 1000).value().empty());
  std::filesystem::remove(tmpl);
}

TEST_CASE("a heartbeat's write progress is journalled with its rate and time left",
          "[server][api][events]") {
  TestApi api;
  const Json n = api.createNode({{"name", "wp"}});
  auto& app = api.app();
  auto tx = app.storage().begin(Storage::Mode::Write).value();
  kiln::protocol::Progress progress;
  progress.commandId = "c1";
  progress.bytesDone = 1000;
  progress.bytesTotal = 5000;
  progress.bytesPerSecond = 400;
  const std::string host = "host-a";
  const events::Writer w{api.clock(), host};
  auto row = tx->nodes().findBy(kNodeUuid, Value::text(n["uuid"].get<std::string>())).value();
  REQUIRE(row);
  REQUIRE(events::recordWriteProgress(*tx, w, row->id(), row->uuid(), progress));
  progress.bytesDone = progress.bytesTotal = 0;
  REQUIRE(events::recordWriteProgress(*tx, w, row->id(), row->uuid(), progress));  // nothing
  REQUIRE(tx->commit());
  const auto list = ofKind(journal(api, "wp"), "write_progress");
  REQUIRE(list.size() == 1);
  CHECK(list[0]["bytes_done"] == 1000);
  CHECK(list[0]["bytes_total"] == 5000);
  CHECK(list[0]["bytes_per_second"] == 400.0);
  CHECK(list[0]["eta_seconds"] == 10.0);
  CHECK(list[0]["command_id"] == "c1");
}

TEST_CASE(
    "a finished step and flow are observed in the duration histograms with the events' "
    "durations",
    "[server][api][events][metrics]") {
  TestApi api;
  api.createNode({{"name", "hist"}});
  REQUIRE(provision(api, "hist", {{"target", "manage"}}).status == 202);
  api.settle();
  const std::string step =
      R"(kiln_step_duration_seconds_count{interface="deploy",step="wait",result="success"})";
  const std::string stepSum =
      R"(kiln_step_duration_seconds_sum{interface="deploy",step="wait",result="success"})";
  const std::string flow = R"(kiln_flow_duration_seconds_count{flow="clean",result="success"})";
  const double steps = kiln::test::processSample(step);
  const double stepSeconds = kiln::test::processSample(stepSum);
  const double flows = kiln::test::processSample(flow);
  REQUIRE(provision(api, "hist", {{"target", "clean"}, {"clean_steps", Json::parse(R"([
      {"interface": "deploy", "step": "wait", "args": {"seconds": 90}}])")}})
              .status == 202);
  api.settle();
  api.clock().advance(std::chrono::seconds(91));
  api.runPeriodic();
  REQUIRE(api.get("/v1/nodes/hist").json()["provision_state"] == "manageable");
  CHECK(kiln::test::processSample(step) == steps + 1);
  CHECK(kiln::test::processSample(stepSum) - stepSeconds >= 90);
  CHECK(kiln::test::processSample(flow) == flows + 1);
}
