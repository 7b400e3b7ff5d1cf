// Several kiln-servers on one database (issue 15), seen from one of them: the conductors table
// and GET /v1/conductors, the hash ring that spreads nodes over the live conductors of their
// group, periodic work only for the server's own nodes, flows handed to a node's owner through
// the database, and the takeover of what a dead conductor left reserved. The other conductors
// are rows this test writes, aged with the fake clock.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <set>

#include "server/conductor/hash_ring.h"
#include "server/model/conductor_registration.h"
#include "server/model/node.h"
#include "tests/support/basic_auth.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TestApi;
using namespace kiln::server;

namespace {

/// Writes (or refreshes) another conductor's row: its heartbeat is the fake clock's now.
void beat(TestApi& api, const std::string& host, const std::string& group = "",
          bool online = true) {
  auto tx = api.app().storage().begin(Storage::Mode::Write).value();
  RecordStore& store = tx->records(Resource::Conductor);
  auto row = store.findBy(kCondHostname, kiln::server::Value::text(host)).value();
  Record r = row ? *row : defaultRecord(conductorSchema());
  r.setText(kCondHostname, host);
  r.setText(kCondGroup, group);
  r.setText(kCondDrivers, R"(["fake-hardware"])");
  r.setBool(kCondOnline, online);
  const std::string now = kiln::formatIsoTime(api.clock().now());
  if (!row) r.setText(kCondCreatedAt, now);
  r.setText(kCondUpdatedAt, now);
  if (row) {
    REQUIRE(store.update(r));
  } else {
    REQUIRE(store.insert(r));
  }
  REQUIRE(tx->commit());
}

void mutate(TestApi& api, const std::string& ident, const std::function<void(Record&)>& change) {
  auto tx = api.app().storage().begin(Storage::Mode::Write).value();
  auto rec = tx->nodes().findBy(kNodeName, kiln::server::Value::text(ident)).value();
  REQUIRE(rec);
  change(*rec);
  REQUIRE(tx->nodes().update(*rec));
  REQUIRE(tx->commit());
}

Json node(TestApi& api, const std::string& ident) {
  api.settle();
  return api.get("/v1/nodes/" + ident).json();
}

Json conductors(TestApi& api, const std::string& query = "?detail=true") {
  auto r = api.get("/v1/conductors" + query);
  REQUIRE(r.status == 200);
  return r.json()["conductors"];
}

std::map<std::string, bool> aliveByHost(TestApi& api) {
  std::map<std::string, bool> out;
  for (const auto& c : conductors(api)) out[c["hostname"]] = c["alive"];
  return out;
}

/// Creates nodes "<prefix>-N" until one is owned by `owner` (by the API's conductor field).
std::string nodeOwnedBy(TestApi& api, const std::string& prefix, const std::string& owner,
                        Json extra = Json::object()) {
  for (int i = 0; i < 200; ++i) {
    Json body = extra;
    body["name"] = prefix + "-" + std::to_string(i);
    Json n = api.createNode(body);
    if (api.get("/v1/nodes/" + n["uuid"].get<std::string>()).json()["conductor"] == owner) {
      return body["name"];
    }
  }
  FAIL("no node owned by " << owner);
  return {};
}

}  // namespace

TEST_CASE("the hash ring spreads keys evenly and moves only a dead member's keys",
          "[server][conductor][multi]") {
  const HashRing three({{"kiln-a", ""}, {"kiln-b", ""}, {"kiln-c", ""}});
  const HashRing two({{"kiln-a", ""}, {"kiln-c", ""}});
  std::map<std::string, int> share;
  int moved = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::string key = "node-" + std::to_string(i);
    const std::string& owner = three.ownerOf("", key);
    ++share[owner];
    // The same ring built again (another process) answers the same.
    CHECK(HashRing({{"kiln-c", ""}, {"kiln-a", ""}, {"kiln-b", ""}}).ownerOf("", key) == owner);
    if (owner != "kiln-b") {
      CHECK(two.ownerOf("", key) == owner);  // a live member's keys stay where they were
    } else {
      ++moved;
      CHECK(two.ownerOf("", key) != "kiln-b");
    }
  }
  REQUIRE(share.size() == 3);
  for (const auto& [host, n] : share) {
    INFO(host);
    CHECK(n > 600);  // an even share is 1000
    CHECK(n < 1400);
  }
  CHECK(moved == share["kiln-b"]);
  CHECK(HashRing::hash("node-1") == HashRing::hash("node-1"));
  CHECK(HashRing::hash("node-1") != HashRing::hash("node-2"));
}

TEST_CASE("the hash ring keeps a conductor group's nodes on its own conductors",
          "[server][conductor][multi]") {
  const HashRing ring({{"kiln-a", ""}, {"kiln-b", "site-b"}, {"kiln-c", "site-b"}});
  std::set<std::string> siteB, defaultGroup, orphan;
  for (int i = 0; i < 200; ++i) {
    const std::string key = "n" + std::to_string(i);
    siteB.insert(ring.ownerOf("site-b", key));
    defaultGroup.insert(ring.ownerOf("", key));
    orphan.insert(ring.ownerOf("site-without-conductors", key));
  }
  CHECK(siteB == std::set<std::string>{"kiln-b", "kiln-c"});
  CHECK(defaultGroup == std::set<std::string>{"kiln-a"});
  CHECK(orphan == std::set<std::string>{"kiln-a", "kiln-b", "kiln-c"});  // every member
  CHECK(HashRing().ownerOf("", "x").empty());
}

TEST_CASE("conductors register and heartbeat; GET /v1/conductors says which are alive",
          "[server][conductor][multi][api]") {
  TestApi api("[conductor]\nconductor_group = Rack-1\nheartbeat_timeout = 60\n");
  auto list = conductors(api);
  REQUIRE(list.size() == 1);
  CHECK(list[0]["hostname"] == "test-conductor");
  CHECK(list[0]["conductor_group"] == "rack-1");
  CHECK(list[0]["alive"] == true);
  CHECK(list[0]["created_at"].is_string());
  CHECK(list[0]["drivers"].size() > 0);

  beat(api, "kiln-b", "rack-1");
  beat(api, "kiln-c", "rack-2");
  auto alive = aliveByHost(api);
  CHECK(alive == std::map<std::string, bool>{{"kiln-b", true}, {"kiln-c", true}, {"test-conductor", true}});
  // Pagination by host name.
  auto page = api.get("/v1/conductors?limit=2").json();
  REQUIRE(page["conductors"].size() == 2);
  CHECK(page["conductors"][1]["hostname"] == "kiln-c");
  CHECK_THAT(page["next"].get<std::string>(), Catch::Contains("marker=kiln-c"));
  CHECK(api.get("/v1/conductors?marker=kiln-c").json()["conductors"].size() == 1);
  CHECK(api.get("/v1/conductors?limit=0").status == 400);
  CHECK(api.get("/v1/conductors?limit=x").status == 400);
  // The list shows the short form; show the whole row.
  auto shortForm = conductors(api, "");
  CHECK_FALSE(shortForm[0].contains("drivers"));
  auto one = api.get("/v1/conductors/kiln-c");
  REQUIRE(one.status == 200);
  CHECK(one.json()["conductor_group"] == "rack-2");
  CHECK(api.get("/v1/conductors/kiln-z").status == 404);
  // The drivers list names the live conductors that enable a type.
  auto fake = api.get("/v1/drivers/fake-hardware").json();
  CHECK(fake["hosts"] == Json({"kiln-b", "kiln-c", "test-conductor"}));

  // kiln-c stops heartbeating: dead after heartbeat_timeout; kiln-b goes on; this server is
  // alive however old its own row looks (it is running).
  api.clock().advance(std::chrono::seconds(45));
  beat(api, "kiln-b", "rack-1");
  api.clock().advance(std::chrono::seconds(30));
  alive = aliveByHost(api);
  CHECK(alive == std::map<std::string, bool>{{"kiln-b", true}, {"kiln-c", false}, {"test-conductor", true}});
  CHECK(api.get("/v1/drivers/fake-hardware").json()["hosts"] == Json({"kiln-b", "test-conductor"}));
  // A conductor that stopped cleanly is offline at once.
  beat(api, "kiln-b", "rack-1", /*online=*/false);
  CHECK(aliveByHost(api)["kiln-b"] == false);
}

TEST_CASE("a bad [conductor] conductor_group or heartbeat setting stops the server",
          "[server][conductor][multi][config]") {
  auto parsed = [](const std::string& text) { return kiln::server::parseConfig(text, "test"); };
  CHECK_FALSE(parsed("[conductor]\nconductor_group = rack 1\n"));
  CHECK_FALSE(parsed("[conductor]\nheartbeat_interval = 10\nheartbeat_timeout = 10\n"));
  auto ok = parsed("[conductor]\nconductor_group = Site_B.1\nheartbeat_interval = 2\nheartbeat_timeout = 6\n");
  REQUIRE(ok);
  CHECK(ok->conductorGroup == "site_b.1");
  CHECK(ok->heartbeatTimeout == 6);
}

TEST_CASE("nodes spread over the live conductors; each runs the timers of its own nodes only",
          "[server][conductor][multi]") {
  TestApi api;
  beat(api, "kiln-b");
  api.runPeriodic();  // the ring now has both conductors
  std::map<std::string, int> owners;
  for (int i = 0; i < 40; ++i) {
    Json n = api.createNode({{"name", "n" + std::to_string(i)}});
    ++owners[api.get("/v1/nodes/n" + std::to_string(i)).json()["conductor"]];
  }
  CHECK(owners.size() == 2);
  CHECK(owners["test-conductor"] > 5);
  CHECK(owners["kiln-b"] > 5);
  // ?conductor= narrows the list to a conductor's nodes.
  auto mine = api.get("/v1/nodes?conductor=test-conductor&limit=1000").json()["nodes"];
  CHECK(static_cast<int>(mine.size()) == owners["test-conductor"]);
  CHECK(api.get("/v1/nodes?conductor=kiln-z").json()["nodes"].empty());

  // Every node waits on a finished wait step: only this server's own nodes resume.
  const std::string theirs = nodeOwnedBy(api, "theirs", "kiln-b");
  const std::string ours = nodeOwnedBy(api, "ours", "test-conductor");
  for (const auto& name : {theirs, ours}) {
    mutate(api, name, [](Record& r) {
      r.setText(kNodeProvisionState, "clean wait");
      r.setText(kNodeTargetProvisionState, "manageable");
      r.setText(kNodeDriverInternalInfo, R"({"clean_steps": [{"interface":"deploy","step":"wait","args":{"seconds":5},"priority":0}],
          "clean_step_index": 0, "clean_steps_requested": [], "wait_until": 1000})");
    });
  }
  api.runPeriodic();
  CHECK(node(api, ours)["provision_state"] == "manageable");
  CHECK(node(api, theirs)["provision_state"] == "clean wait");
  // kiln-b keeps beating: still its node. Once it stops, the node moves here and resumes.
  api.clock().advance(std::chrono::seconds(30));
  beat(api, "kiln-b");
  api.runPeriodic();
  CHECK(node(api, theirs)["provision_state"] == "clean wait");
  api.clock().advance(std::chrono::seconds(61));
  api.runPeriodic();
  CHECK(node(api, theirs)["conductor"] == "test-conductor");
  CHECK(node(api, theirs)["provision_state"] == "manageable");
}

TEST_CASE("a flow started on a node another conductor owns is handed to it through the database",
          "[server][conductor][multi]") {
  TestApi api;
  beat(api, "kiln-b");
  api.runPeriodic();
  const std::string name = nodeOwnedBy(api, "handoff", "kiln-b");
  // This server accepts the request and commits the transition; the owner runs the flow.
  REQUIRE(api.put("/v1/nodes/" + name + "/states/provision", Json{{"target", "manage"}}).status == 202);
  auto n = node(api, name);
  CHECK(n["provision_state"] == "verifying");
  CHECK(n["reservation"].is_null());  // waiting for its conductor
  api.runPeriodic();                   // not this server's to pick up
  CHECK(node(api, name)["provision_state"] == "verifying");
  // The owner dies: the node is this server's now, which picks the flow up.
  api.clock().advance(std::chrono::seconds(61));
  api.runPeriodic();
  n = node(api, name);
  CHECK(n["provision_state"] == "manageable");
  CHECK(n["reservation"].is_null());
  CHECK(n["last_error"].is_null());
}

TEST_CASE("a handed-off flow keeps the user who asked for it for the node's history",
          "[server][conductor][multi][history]") {
  kiln::test::TempDir dir("kiln-handoff-user");
  std::ofstream(dir.file("htpasswd")) << kiln::test::kTestHtpasswd;
  TestApi api("[DEFAULT]\nauth_strategy = http_basic\nhttp_basic_auth_user_file = " +
              dir.file("htpasswd") + "\n");
  api.extraHeaders = {{"authorization", kiln::test::basicAuthorization("admin", "s3cret")}};
  beat(api, "kiln-b");
  api.runPeriodic();
  const std::string name = nodeOwnedBy(api, "handoff-user", "kiln-b");
  mutate(api, name, [](Record& n) {
    n.setText(kNodeProvisionState, "available");
    n.setText(kNodePowerState, "power off");
  });
  // A deployment whose user step fails, accepted here and handed to kiln-b.
  REQUIRE(api.put("/v1/nodes/" + name + "/states/provision",
                  Json{{"target", "active"},
                       {"deploy_steps",
                        {{{"interface", "bios"},
                          {"step", "apply_configuration"},
                          {"args", {{"settings", "bad"}}},
                          {"priority", 95}}}}})
              .status == 202);
  Json n = node(api, name);
  CHECK(n["provision_state"] == "deploying");
  CHECK(n["reservation"].is_null());
  CHECK(n["driver_internal_info"]["handed_off_user"] == "admin");
  // kiln-b dies before running it; this server picks the flow up and records its failure under
  // the user who asked for it, not as nobody's.
  api.clock().advance(std::chrono::seconds(61));
  api.runPeriodic();
  n = node(api, name);
  CHECK(n["provision_state"] == "deploy failed");
  CHECK_FALSE(n["driver_internal_info"].contains("handed_off_user"));
  const Json history = api.get("/v1/nodes/" + name + "/history?detail=true").json()["history"];
  REQUIRE(history.size() == 1);
  INFO(history.dump());
  CHECK(history[0]["user"] == "admin");
  CHECK(history[0]["event_type"] == "deploying");
}

TEST_CASE("a power action for a node another conductor owns is run by that conductor",
          "[server][conductor][multi][power]") {
  TestApi api("[conductor]\nnode_locked_retry_interval = 0\n");
  beat(api, "kiln-b");
  api.runPeriodic();
  const std::string name = nodeOwnedBy(api, "power-handoff", "kiln-b");
  mutate(api, name, [](Record& n) { n.setText(kNodePowerState, "power off"); });
  // Accepted here; the BMC is the owner's to talk to (its conductor group reaches it): the node
  // is reserved in kiln-b's name with a note of what to do.
  REQUIRE(api.put("/v1/nodes/" + name + "/states/power", Json{{"target", "power on"}, {"timeout", 30}})
              .status == 202);
  Json n = node(api, name);
  CHECK(n["power_state"] == "power off");
  CHECK(n["target_power_state"] == "power on");
  CHECK(n["reservation"] == "kiln-b");
  CHECK(n["driver_internal_info"]["handed_off_power"] ==
        Json{{"target", "power on"}, {"timeout", 30}, {"user", ""}});
  // Locked for everyone meanwhile, as while a conductor carries a power action out.
  CHECK(api.patch("/v1/nodes/" + name, Json::array({{{"op", "add"}, {"path", "/extra/a"}, {"value", 1}}}))
            .status == 409);
  api.runPeriodic();  // not this server's to run
  CHECK(node(api, name)["power_state"] == "power off");
  // kiln-b dies before claiming it: the action never started, so the new owner runs it rather
  // than failing it as an interrupted one.
  api.clock().advance(std::chrono::seconds(61));
  api.runPeriodic();
  n = node(api, name);
  CHECK(n["power_state"] == "power on");
  CHECK(n["target_power_state"].is_null());
  CHECK(n["reservation"].is_null());
  CHECK(n["last_error"].is_null());
  CHECK_FALSE(n["driver_internal_info"].contains("handed_off_power"));
}

TEST_CASE("a conductor runs the power actions other servers handed to it, once each",
          "[server][conductor][multi][power]") {
  TestApi api;
  api.createNode({{"name", "handed"}});
  api.createNode({{"name", "own"}});
  const std::string self = node(api, "handed")["conductor"];
  // Another server handed "handed" over (its note); "own" is an action of this server's own
  // that a worker is still carrying out (no note): the pass must leave it alone.
  mutate(api, "handed", [&](Record& n) {
    n.setText(kNodePowerState, "power off");
    n.setText(kNodeTargetPowerState, "power on");
    n.setText(kNodeReservation, self);
    n.setText(kNodeDriverInternalInfo,
              R"({"handed_off_power": {"target": "power on", "timeout": 30, "user": "admin"}})");
  });
  mutate(api, "own", [&](Record& n) {
    n.setText(kNodePowerState, "power off");
    n.setText(kNodeTargetPowerState, "power on");
    n.setText(kNodeReservation, self);
  });
  api.runPeriodic();
  Json n = node(api, "handed");
  CHECK(n["power_state"] == "power on");
  CHECK(n["reservation"].is_null());
  CHECK(n["target_power_state"].is_null());
  CHECK(n["driver_internal_info"] == Json::object());
  n = node(api, "own");
  CHECK(n["power_state"] == "power off");
  CHECK(n["reservation"] == self);
  CHECK(n["target_power_state"] == "power on");
}

TEST_CASE("the live owners take over what a dead conductor left reserved",
          "[server][conductor][multi]") {
  TestApi api;
  for (const char* n : {"deploying", "parked", "powering", "unregistered"}) api.createNode({{"name", n}});
  mutate(api, "deploying", [](Record& r) {
    r.setText(kNodeProvisionState, "deploying");
    r.setText(kNodeTargetProvisionState, "active");
    r.setText(kNodeDeployStep, R"({"interface":"deploy","step":"write_image","priority":80})");
    r.setText(kNodeReservation, "kiln-dead");
  });
  mutate(api, "parked", [](Record& r) {
    r.setText(kNodeProvisionState, "clean wait");
    r.setText(kNodeTargetProvisionState, "manageable");
    r.setText(kNodeReservation, "kiln-dead");
  });
  mutate(api, "powering", [](Record& r) {
    r.setText(kNodeTargetPowerState, "power on");
    r.setText(kNodeReservation, "kiln-dead");
  });
  // A reservation by a host that never registered is not a conductor's: left alone, as Ironic.
  mutate(api, "unregistered", [](Record& r) { r.setText(kNodeReservation, "someone-else"); });
  beat(api, "kiln-dead");
  api.runPeriodic();
  CHECK(node(api, "deploying")["reservation"] == "kiln-dead");  // alive: its work goes on

  api.clock().advance(std::chrono::seconds(61));
  api.runPeriodic();
  auto d = node(api, "deploying");
  CHECK(d["provision_state"] == "deploy failed");
  CHECK(d["reservation"].is_null());
  CHECK(d["target_provision_state"].is_null());
  CHECK_THAT(d["last_error"].get<std::string>(),
             Catch::Contains("conductor kiln-dead stopped heartbeating while the node was deploying") &&
                 Catch::Contains("deploy.write_image") && Catch::Contains("Deploy again or undeploy"));
  auto history = api.get("/v1/nodes/deploying/history?detail=true").json()["history"];
  REQUIRE(history.size() == 1);
  CHECK(history[0]["event_type"] == "transition");
  auto p = node(api, "parked");
  CHECK(p["provision_state"] == "clean wait");
  CHECK(p["reservation"].is_null());
  auto w = node(api, "powering");
  CHECK(w["reservation"].is_null());
  CHECK(w["target_power_state"].is_null());
  CHECK_THAT(w["last_error"].get<std::string>(), Catch::Contains("during a power action"));
  CHECK(node(api, "unregistered")["reservation"] == "someone-else");
  // The failed deployment can be retried.
  REQUIRE(api.put("/v1/nodes/deploying/states/provision", Json{{"target", "active"}}).status == 202);
  CHECK(node(api, "deploying")["provision_state"] == "active");
}
