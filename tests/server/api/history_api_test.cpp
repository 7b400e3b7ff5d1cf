#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "server/model/node.h"
#include "server/model/node_history.h"
#include "server/storage/queries/node_history.h"
#include "tests/support/basic_auth.h"
#include "tests/support/test_api.h"

using kiln::server::Storage;
using kiln::test::Json;
using kiln::test::Response;
using kiln::test::TestApi;
namespace ks = kiln::server;

namespace {

Response verb(TestApi& api, const std::string& ident, const std::string& target,
              Json extra = Json::object()) {
  extra["target"] = target;
  auto r = api.put("/v1/nodes/" + ident + "/states/provision", extra);
  api.settle();
  return r;
}

Json node(TestApi& api, const std::string& ident) { return api.get("/v1/nodes/" + ident).json(); }

/// A manual cleaning whose bios.apply_configuration step fails (settings is not a list).
void failCleaning(TestApi& api, const std::string& ident) {
  REQUIRE(verb(api, ident, "clean",
               {{"clean_steps",
                 {{{"interface", "bios"},
                   {"step", "apply_configuration"},
                   {"args", {{"settings", "not-a-list"}}}}}}})
              .status == 202);
  REQUIRE(node(api, ident)["provision_state"] == "clean failed");
}

/// A manageable fake-hardware node.
Json manageable(TestApi& api, const std::string& name) {
  Json n = api.createNode({{"name", name}});
  REQUIRE(verb(api, name, "manage").status == 202);
  REQUIRE(node(api, name)["provision_state"] == "manageable");
  return n;
}

/// Journals events straight into the store (the texts and counts the API cannot produce).
void journal(TestApi& api, const std::string& nodeName, const std::vector<std::string>& events) {
  auto tx = api.app().storage().begin(Storage::Mode::Write).value();
  auto n = tx->nodes().findBy(ks::kNodeName, ks::Value::text(nodeName)).value();
  REQUIRE(n);
  for (const auto& e : events) {
    REQUIRE(ks::recordNodeHistory(*tx, api.app().config(), api.clock(), n->id(), "host-a",
                                  {e, "cleaning", "ERROR", "alice"}));
  }
  REQUIRE(tx->commit());
}

int64_t storedHistoryRows(TestApi& api) {
  auto tx = api.app().storage().begin(Storage::Mode::Read).value();
  return tx->records(ks::Resource::NodeHistory).count({}).value();
}

}  // namespace

TEST_CASE("node history is not found below API 1.78", "[server][api][history]") {
  TestApi api;
  Json n = manageable(api, "n1");
  failCleaning(api, "n1");
  const std::string event = api.get("/v1/nodes/n1/history").json()["history"][0]["uuid"];
  api.version = "1.77";
  CHECK(api.get("/v1/nodes/n1/history").status == 404);
  CHECK(api.get("/v1/nodes/n1/history/" + event).status == 404);
  api.version = "1.78";
  CHECK(api.get("/v1/nodes/n1/history").status == 200);
  CHECK(api.get("/v1/nodes/n1/history/" + event).status == 200);
}

TEST_CASE("node history records a failed cleaning with its last_error", "[server][api][history]") {
  TestApi api;
  Json n = manageable(api, "n1");
  const std::string uuid = n["uuid"];
  CHECK(api.get("/v1/nodes/n1/history").json() == Json::parse(R"({"history": []})"));
  api.clock().advance(std::chrono::seconds(5));
  failCleaning(api, "n1");
  const std::string lastError = node(api, "n1")["last_error"];

  Json list = api.get("/v1/nodes/n1/history").json();
  REQUIRE(list["history"].size() == 1);
  Json e = list["history"][0];
  // The short view: uuid, created_at, severity, event and a self link.
  CHECK(e.size() == 5);
  CHECK(e["severity"] == "ERROR");
  CHECK(e["event"] == lastError);
  CHECK(e["created_at"] == kiln::formatIsoTime(api.clock().now()));
  const std::string event = e["uuid"];
  CHECK(e["links"] == Json::parse(R"([{"href": "http://kiln.test:6385/v1/nodes/)" + uuid +
                                  "/history/" + event + R"(", "rel": "self"}])"));

  Json detail = api.get("/v1/nodes/n1/history?detail=true").json()["history"][0];
  CHECK(detail.size() == 8);
  CHECK(detail["event_type"] == "cleaning");
  CHECK(detail["conductor"] == "test-conductor");
  CHECK(detail["user"].is_null());  // no authentication: no user
  CHECK(detail["event"] == lastError);

  Json one = api.get("/v1/nodes/" + uuid + "/history/" + event).json();
  CHECK(one == detail);
  // python-ironicclient's `node history list --long` asks for history/detail.
  CHECK(api.get("/v1/nodes/n1/history/detail").json() ==
        api.get("/v1/nodes/n1/history?detail=true").json());
  CHECK(api.get("/v1/nodes/n1/history/detail?detail=true").status == 400);
}

TEST_CASE(
    "node history records failures of deployments, power actions and inspections with Ironic's "
    "event types",
    "[server][api][history]") {
  TestApi api;
  manageable(api, "n1");
  REQUIRE(verb(api, "n1", "provide").status == 202);
  REQUIRE(node(api, "n1")["provision_state"] == "available");
  // A user deploy step that fails.
  REQUIRE(verb(api, "n1", "active",
               {{"deploy_steps",
                 {{{"interface", "bios"},
                   {"step", "apply_configuration"},
                   {"args", {{"settings", "bad"}}},
                   {"priority", 95}}}}})
              .status == 202);
  REQUIRE(node(api, "n1")["provision_state"] == "deploy failed");
  Json list = api.get("/v1/nodes/n1/history?detail=true").json()["history"];
  REQUIRE(list.size() == 1);
  CHECK(list[0]["event_type"] == "deploying");
  CHECK(list[0]["event"] == node(api, "n1")["last_error"]);

  // A start-up interruption is journalled as a transition; recorded entries keep their order.
  journal(api, "n1", {"second"});
  list = api.get("/v1/nodes/n1/history?detail=true").json()["history"];
  REQUIRE(list.size() == 2);
  CHECK(list[1]["event"] == "second");
  CHECK(list[1]["conductor"] == "host-a");
  CHECK(list[1]["user"] == "alice");
}

TEST_CASE("node history is not recorded when [conductor] node_history is false",
          "[server][api][history]") {
  TestApi api("[conductor]\nnode_history = false\n");
  manageable(api, "n1");
  failCleaning(api, "n1");
  CHECK_FALSE(node(api, "n1")["last_error"].is_null());
  CHECK(api.get("/v1/nodes/n1/history").json()["history"].empty());
}

TEST_CASE("node history keeps node_history_max_entries entries, pruning the oldest",
          "[server][api][history]") {
  TestApi api("[conductor]\nnode_history_max_entries = 3\n");
  manageable(api, "n1");
  manageable(api, "n2");
  journal(api, "n1", {"e1", "e2", "e3", "e4", "e5"});
  journal(api, "n2", {"other"});
  Json list = api.get("/v1/nodes/n1/history").json()["history"];
  REQUIRE(list.size() == 3);
  CHECK(list[0]["event"] == "e3");
  CHECK(list[1]["event"] == "e4");
  CHECK(list[2]["event"] == "e5");
  CHECK(api.get("/v1/nodes/n2/history").json()["history"].size() == 1);
}

TEST_CASE("node history keeps entries younger than node_history_minimum_days",
          "[server][api][history]") {
  TestApi api("[conductor]\nnode_history_max_entries = 1\nnode_history_minimum_days = 2\n");
  manageable(api, "n1");
  journal(api, "n1", {"old"});
  api.clock().advance(std::chrono::hours(24));
  journal(api, "n1", {"day1"});
  CHECK(api.get("/v1/nodes/n1/history").json()["history"].size() == 2);
  api.clock().advance(std::chrono::hours(30));  // "old" is now 54 hours old, "day1" 30
  journal(api, "n1", {"day2"});
  Json list = api.get("/v1/nodes/n1/history").json()["history"];
  REQUIRE(list.size() == 2);
  CHECK(list[0]["event"] == "day1");
  CHECK(list[1]["event"] == "day2");
}

TEST_CASE("node history shortens long events in the list, not in the detail",
          "[server][api][history]") {
  TestApi api;
  manageable(api, "n1");
  const std::string exact(255, 'x');
  std::string longer = std::string(250, 'y') + "\xc3\xa9" + std::string(10, 'z');  // 261 characters
  journal(api, "n1", {exact, longer});
  Json list = api.get("/v1/nodes/n1/history").json()["history"];
  CHECK(list[0]["event"] == exact);
  CHECK(list[1]["event"] == std::string(250, 'y') + "\xc3\xa9" + "...");
  Json detail = api.get("/v1/nodes/n1/history?detail=true").json()["history"];
  CHECK(detail[1]["event"] == longer);
  CHECK(api.get("/v1/nodes/n1/history/" + list[1]["uuid"].get<std::string>()).json()["event"] ==
        longer);
}

TEST_CASE("node history pages with limit and marker", "[server][api][history]") {
  TestApi api;
  manageable(api, "n1");
  journal(api, "n1", {"a", "b", "c"});
  Json page = api.get("/v1/nodes/n1/history?limit=2").json();
  REQUIRE(page["history"].size() == 2);
  const std::string marker = page["history"][1]["uuid"];
  CHECK(page["next"] == "http://kiln.test:6385/v1/nodes/n1/history?limit=2&marker=" + marker);
  Json rest = api.get("/v1/nodes/n1/history?limit=2&marker=" + marker).json();
  REQUIRE(rest["history"].size() == 1);
  CHECK(rest["history"][0]["event"] == "c");
  CHECK_FALSE(rest.contains("next"));

  auto missing = api.get("/v1/nodes/n1/history?marker=2b4b8f6e-9f4a-4c53-9a3e-1d2b3c4d5e6f");
  CHECK(missing.status == 404);
  CHECK(missing.fault() ==
        "Node history record 2b4b8f6e-9f4a-4c53-9a3e-1d2b3c4d5e6f could not be found.");
  CHECK(api.get("/v1/nodes/n1/history?limit=0").status == 400);
  CHECK(api.get("/v1/nodes/n1/history?detail=maybe").status == 400);
}

TEST_CASE(
    "node history entry lookup answers 404 for unknown or foreign entries and 400 for bad "
    "identifiers",
    "[server][api][history]") {
  TestApi api;
  manageable(api, "n1");
  manageable(api, "n2");
  journal(api, "n2", {"theirs"});
  const std::string theirs = api.get("/v1/nodes/n2/history").json()["history"][0]["uuid"];
  auto foreign = api.get("/v1/nodes/n1/history/" + theirs);
  CHECK(foreign.status == 404);
  CHECK(foreign.fault() == "Node history record " + theirs + " could not be found.");
  auto byName = api.get("/v1/nodes/n1/history/some-name");
  CHECK(byName.status == 404);
  CHECK(byName.fault() == "Node history record some-name could not be found.");
  auto bad = api.get("/v1/nodes/n1/history/bad%20name");
  CHECK(bad.status == 400);
  CHECK(bad.fault() == "Expected UUID or name for event: bad name");
  CHECK(api.get("/v1/nodes/nope/history").status == 404);
}

TEST_CASE("node history goes with its node", "[server][api][history]") {
  TestApi api;
  manageable(api, "n1");
  failCleaning(api, "n1");
  journal(api, "n1", {"x"});
  REQUIRE(storedHistoryRows(api) == 2);
  REQUIRE(verb(api, "n1", "manage").status == 202);
  REQUIRE(api.del("/v1/nodes/n1").status == 204);
  CHECK(storedHistoryRows(api) == 0);
}

using kiln::test::basicAuthorization;
using kiln::test::kTestHtpasswd;

TEST_CASE("node history names the user whose request failed", "[server][api][history]") {
  char tmpl[] = "/tmp/kiln-htpasswd-XXXXXX";
  const int fd = mkstemp(tmpl);
  REQUIRE(fd >= 0);
  close(fd);
  const std::filesystem::path file = tmpl;
  std::ofstream(file) << kTestHtpasswd;
  {
    TestApi api("[DEFAULT]\nauth_strategy = http_basic\nhttp_basic_auth_user_file = " +
                file.string() + "\n");
    api.extraHeaders = {{"authorization", basicAuthorization("admin", "s3cret")}};
    manageable(api, "n1");
    failCleaning(api, "n1");
    Json e = api.get("/v1/nodes/n1/history?detail=true").json()["history"][0];
    CHECK(e["user"] == "admin");
  }
  std::filesystem::remove(file);
}

TEST_CASE("node history journals a node failed by a restart as a transition",
          "[server][api][history]") {
  TestApi api;
  manageable(api, "n1");
  // Stage a node a stopped server left mid-cleaning, then restart the conductor.
  {
    auto tx = api.app().storage().begin(Storage::Mode::Write).value();
    auto n = tx->nodes().findBy(ks::kNodeName, ks::Value::text("n1")).value();
    REQUIRE(n);
    n->setText(ks::kNodeProvisionState, "cleaning");
    n->setText(ks::kNodeReservation, "test-conductor");
    REQUIRE(tx->nodes().update(*n));
    REQUIRE(tx->commit());
  }
  api.app().conductor().stop();
  REQUIRE(api.app().conductor().start(false));
  Json e = api.get("/v1/nodes/n1/history?detail=true").json()["history"];
  REQUIRE(e.size() == 1);
  CHECK(e[0]["event_type"] == "transition");
  CHECK(e[0]["event"] == node(api, "n1")["last_error"]);
}
