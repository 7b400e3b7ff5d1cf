#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>
#include <set>

#include "server/model/allocation.h"
#include "server/model/node.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_api.h"

using kiln::server::Record;
using kiln::server::Storage;
using kiln::server::Value;
using kiln::test::Json;
using kiln::test::Response;
using kiln::test::TestApi;
namespace ks = kiln::server;

namespace {

Response provision(TestApi& api, const std::string& ident, const std::string& target) {
  auto r = api.put("/v1/nodes/" + ident + "/states/provision", {{"target", target}});
  api.settle();
  return r;
}

Json node(TestApi& api, const std::string& ident) { return api.get("/v1/nodes/" + ident).json(); }

/// An available fake-hardware node of resource class `rc` with `traits`.
Json makeAvailable(TestApi& api, const std::string& name, const std::string& rc = "baremetal",
                   const std::vector<std::string>& traits = {}, Json extra = Json::object()) {
  extra["name"] = name;
  extra["resource_class"] = rc;
  Json n = api.createNode(extra);
  if (!traits.empty()) REQUIRE(api.put("/v1/nodes/" + name + "/traits", {{"traits", traits}}).status == 204);
  REQUIRE(provision(api, name, "manage").status == 202);
  REQUIRE(provision(api, name, "provide").status == 202);
  REQUIRE(node(api, name)["provision_state"] == "available");
  return n;
}

/// Creates an allocation, lets the scheduler run, and returns the allocation as it is then.
Json allocate(TestApi& api, Json body) {
  auto r = api.post("/v1/allocations", body);
  INFO(r.body);
  REQUIRE(r.status == 201);
  api.settle();
  return api.get("/v1/allocations/" + r.json()["uuid"].get<std::string>()).json();
}

Json op(const std::string& o, const std::string& path, Json value = nullptr) {
  Json j = {{"op", o}, {"path", path}};
  if (!value.is_null()) j["value"] = value;
  return j;
}

/// Edits a node row directly (to stage what the API cannot: a reservation).
void mutateNode(TestApi& api, const std::string& name, const std::function<void(Record&)>& change) {
  auto tx = api.app().storage().begin(Storage::Mode::Write).value();
  auto rec = tx->nodes().findBy(ks::kNodeName, Value::text(name)).value();
  REQUIRE(rec);
  change(*rec);
  REQUIRE(tx->nodes().update(*rec));
  REQUIRE(tx->commit());
}

}  // namespace

TEST_CASE("allocation create answers allocating, then the scheduler binds a matching node",
          "[server][api][allocations]") {
  TestApi api;
  Json n = makeAvailable(api, "n1", "bm-large", {"CUSTOM_GOLD"});
  auto r = api.post("/v1/allocations", {{"resource_class", "bm-large"}, {"name", "alloc-1"},
                                        {"traits", {"CUSTOM_GOLD"}}, {"extra", {{"k", "v"}}}});
  REQUIRE(r.status == 201);
  Json a = r.json();
  const std::string uuid = a["uuid"];
  CHECK(r.header("Location") == "http://kiln.test:6385/v1/allocations/" + uuid);
  CHECK(a["state"] == "allocating");
  CHECK(a["node_uuid"].is_null());
  CHECK(a["name"] == "alloc-1");
  CHECK(a["traits"] == Json::array({"CUSTOM_GOLD"}));
  CHECK(a["candidate_nodes"] == Json::array());
  CHECK(a["extra"] == Json{{"k", "v"}});
  CHECK(a["owner"].is_null());
  CHECK(a["last_error"].is_null());
  CHECK(a["links"][0]["href"] == "http://kiln.test:6385/v1/allocations/" + uuid);

  api.settle();
  a = api.get("/v1/allocations/" + uuid).json();
  CHECK(a["state"] == "active");
  CHECK(a["node_uuid"] == n["uuid"]);
  CHECK(a["updated_at"].is_string());
  Json bound = node(api, "n1");
  CHECK(bound["instance_uuid"] == uuid);
  CHECK(bound["allocation_uuid"] == uuid);
  CHECK(bound["instance_info"]["traits"] == Json::array({"CUSTOM_GOLD"}));
  // By name, and as the node's allocation.
  CHECK(api.get("/v1/allocations/alloc-1").json()["uuid"] == uuid);
  CHECK(api.get("/v1/nodes/n1/allocation").json()["uuid"] == uuid);
  CHECK(api.get("/v1/nodes/n1/allocation?fields=uuid,state").json() ==
        Json{{"uuid", uuid}, {"state", "active"},
             {"links", api.get("/v1/allocations/" + uuid).json()["links"]}});
}

TEST_CASE("allocations pick only nodes that have every requested trait", "[server][api][allocations]") {
  TestApi api;
  makeAvailable(api, "one-trait", "bm", {"CUSTOM_A"});
  Json both = makeAvailable(api, "both-traits", "bm", {"CUSTOM_A", "CUSTOM_B"});
  makeAvailable(api, "other-class", "gpu", {"CUSTOM_A", "CUSTOM_B"});
  for (int i = 0; i < 5; ++i) {
    Json a = allocate(api, {{"resource_class", "bm"}, {"traits", {"CUSTOM_B", "CUSTOM_A"}}});
    REQUIRE(a["state"] == "active");
    CHECK(a["node_uuid"] == both["uuid"]);
    REQUIRE(api.del("/v1/allocations/" + a["uuid"].get<std::string>()).status == 204);
    // Deleting frees the node again.
    CHECK(node(api, "both-traits")["instance_uuid"].is_null());
    CHECK(node(api, "both-traits")["allocation_uuid"].is_null());
  }
  Json missing = allocate(api, {{"resource_class", "bm"}, {"traits", {"CUSTOM_C"}}});
  CHECK(missing["state"] == "error");
  CHECK(missing["node_uuid"].is_null());
  CHECK(missing["last_error"] == "Failed to process allocation " + missing["uuid"].get<std::string>() +
                                     ": no suitable nodes have the requested traits CUSTOM_C.");
}

TEST_CASE("allocations spread over every suitable node at random", "[server][api][allocations]") {
  TestApi api;
  for (int i = 0; i < 4; ++i) makeAvailable(api, "r" + std::to_string(i));
  std::set<std::string> picked;
  for (int i = 0; i < 60 && picked.size() < 4; ++i) {
    Json a = allocate(api, {{"resource_class", "baremetal"}});
    REQUIRE(a["state"] == "active");
    picked.insert(a["node_uuid"].get<std::string>());
    REQUIRE(api.del("/v1/allocations/" + a["uuid"].get<std::string>()).status == 204);
  }
  // 60 draws from 4 nodes miss one with probability below 4 * (3/4)^60 (about 1e-7).
  CHECK(picked.size() == 4);
}

TEST_CASE("allocation candidates are converted to UUIDs in order and restrict the choice",
          "[server][api][allocations]") {
  TestApi api;
  Json a1 = makeAvailable(api, "c1");
  Json a2 = makeAvailable(api, "c2");
  makeAvailable(api, "c3");
  auto r = api.post("/v1/allocations", {{"resource_class", "baremetal"},
                                        {"candidate_nodes", {"c2", a1["uuid"]}}});
  REQUIRE(r.status == 201);
  CHECK(r.json()["candidate_nodes"] == Json::array({a2["uuid"], a1["uuid"]}));
  api.settle();
  Json a = api.get("/v1/allocations/" + r.json()["uuid"].get<std::string>()).json();
  CHECK((a["node_uuid"] == a1["uuid"] || a["node_uuid"] == a2["uuid"]));

  // An unknown candidate is a 400 naming it; nothing is stored.
  auto bad = api.post("/v1/allocations", {{"resource_class", "baremetal"},
                                          {"candidate_nodes", {"c3", "banana?", "nope"}}});
  CHECK(bad.status == 400);
  CHECK(bad.fault() == "Nodes cannot be found: banana?, nope");
  CHECK(api.get("/v1/allocations").json()["allocations"].size() == 1);

  // Candidates that are all taken: Ironic's message for requested nodes.
  Json none = allocate(api, {{"resource_class", "baremetal"}, {"candidate_nodes", {a["node_uuid"]}}});
  CHECK(none["state"] == "error");
  CHECK_THAT(none["last_error"].get<std::string>(),
             Catch::EndsWith(": none of the requested nodes are available and match the resource "
                             "class baremetal."));
}

TEST_CASE("an allocation named like a node gets that node first", "[server][api][allocations]") {
  TestApi api;
  for (int i = 0; i < 6; ++i) makeAvailable(api, "host-" + std::to_string(i));
  for (int i : {4, 1, 5}) {
    const std::string name = "host-" + std::to_string(i);
    Json a = allocate(api, {{"resource_class", "baremetal"}, {"name", name}});
    CHECK(a["node_uuid"] == node(api, name)["uuid"]);
  }
}

TEST_CASE("an allocation fails when no node can serve it, and says why", "[server][api][allocations]") {
  TestApi api;
  Json none = allocate(api, {{"resource_class", "nothing-here"}});
  CHECK(none["state"] == "error");
  CHECK(none["last_error"] == "Failed to process allocation " + none["uuid"].get<std::string>() +
                                  ": no available nodes match the resource class nothing-here.");
  // A node that is not available, in maintenance, or already used is not a candidate.
  api.createNode({{"name", "enrolled"}, {"resource_class", "rc"}});
  makeAvailable(api, "maint", "rc");
  REQUIRE(api.put("/v1/nodes/maint/maintenance", Json::object()).status == 202);
  CHECK(allocate(api, {{"resource_class", "rc"}})["state"] == "error");
}

TEST_CASE("an allocation retries while every suitable node is locked, then fails",
          "[server][api][allocations]") {
  TestApi api("[conductor]\nnode_locked_retry_attempts = 3\nnode_locked_retry_interval = 7\n");
  makeAvailable(api, "busy");
  mutateNode(api, "busy", [](Record& n) { n.setText(ks::kNodeReservation, "elsewhere"); });
  const auto before = api.clock().monotonic();
  Json a = allocate(api, {{"resource_class", "baremetal"}});
  CHECK(a["state"] == "error");
  CHECK_THAT(a["last_error"].get<std::string>(),
             Catch::EndsWith(": could not reserve any of 1 suitable nodes."));
  // Three passes, two waits of node_locked_retry_interval between them.
  CHECK(api.clock().monotonic() - before == std::chrono::seconds(14));
  CHECK(node(api, "busy")["instance_uuid"].is_null());
}

TEST_CASE("concurrent allocations never share a node", "[server][api][allocations]") {
  TestApi api;
  for (int i = 0; i < 5; ++i) makeAvailable(api, "p" + std::to_string(i));
  std::vector<std::string> uuids;
  for (int i = 0; i < 9; ++i) {  // queued together: the workers run them concurrently
    auto r = api.post("/v1/allocations", {{"resource_class", "baremetal"}});
    REQUIRE(r.status == 201);
    uuids.push_back(r.json()["uuid"]);
  }
  api.settle();
  std::set<std::string> nodes;
  int active = 0, failed = 0;
  for (const auto& u : uuids) {
    Json a = api.get("/v1/allocations/" + u).json();
    if (a["state"] == "active") {
      ++active;
      nodes.insert(a["node_uuid"].get<std::string>());
      CHECK(api.get("/v1/nodes/" + a["node_uuid"].get<std::string>()).json()["instance_uuid"] == u);
    } else {
      ++failed;
      CHECK(a["state"] == "error");
    }
  }
  CHECK(active == 5);
  CHECK(failed == 4);
  CHECK(nodes.size() == 5);
}

TEST_CASE("allocation owners restrict the choice to the owner's nodes (1.60)",
          "[server][api][allocations]") {
  TestApi api;
  makeAvailable(api, "theirs", "baremetal", {}, {{"owner", "other"}});
  Json mine = makeAvailable(api, "leased", "baremetal", {}, {{"lessee", "proj"}});
  api.version = "1.60";
  Json a = allocate(api, {{"resource_class", "baremetal"}, {"owner", "proj"}});
  CHECK(a["owner"] == "proj");
  CHECK(a["node_uuid"] == mine["uuid"]);
  CHECK(api.get("/v1/allocations?owner=proj").json()["allocations"].size() == 1);
  CHECK(api.get("/v1/allocations?owner=nobody").json()["allocations"].empty());
  // The node's owner cannot change under an owned allocation.
  CHECK(api.patch("/v1/nodes/leased", Json::array({op("add", "/owner", "x")})).status == 409);
  api.version = "1.59";
  CHECK(api.post("/v1/allocations", {{"resource_class", "baremetal"}, {"owner", "proj"}}).status == 406);
  CHECK(api.get("/v1/allocations?owner=proj").status == 406);
  CHECK(api.get("/v1/allocations?fields=owner").status == 406);
  CHECK_FALSE(api.get("/v1/allocations/" + a["uuid"].get<std::string>()).json().contains("owner"));
}

TEST_CASE("allocation create rejects bad input with Ironic's messages and stores nothing",
          "[server][api][allocations]") {
  TestApi api;
  struct Case { std::string body; int status; std::string fault; };
  for (const auto& c : std::vector<Case>{
           {"[]", 400, "is not of type 'object'"},
           {R"({"resource_class": "x", "bogus": 1})", 400, "Additional properties are not allowed ('bogus'"},
           {R"({"resource_class": "x", "name": "not/a/name"})", 400, "Cannot create allocation with invalid name 'not/a/name'"},
           {R"({"resource_class": ")" + std::string(81, 'x') + R"("})", 400, "is too long"},
           {R"({"resource_class": "x", "traits": ["foo"]})", 400, "'foo' does not match"},
           {R"({"resource_class": "x", "traits": "CUSTOM_A"})", 400, "is not of type 'array', 'null'"},
           {R"({"resource_class": "x", "uuid": "!@#$^*&%^"})", 400, "Expected UUID for uuid: !@#$^*&%^"},
           {R"({"resource_class": "x", "extra": []})", 400, "is not of type 'object', 'null'"},
           {R"({"resource_class": 5})", 400, "5 is not of type 'string', 'null'"},
           {R"({"name": "no-class"})", 400, "The resource_class field is mandatory when not backfilling"},
           {R"({"resource_class": ""})", 400, "The resource_class field is mandatory when not backfilling"},
           {R"({"resource_class": "x", "node": "nosuchnode"})", 400, "Node nosuchnode could not be found."},
       }) {
    INFO(c.body.substr(0, 80));
    auto r = api.call("POST", "/v1/allocations", c.body);
    CHECK(r.status == c.status);
    CHECK_THAT(r.fault(), Catch::Contains(c.fault));
  }
  api.version = "1.57";
  auto early = api.post("/v1/allocations", {{"resource_class", "x"}, {"node", "n"}});
  CHECK(early.status == 400);
  CHECK(early.fault() == "Cannot set node when creating an allocation in this API version");
  api.version = "1.78";
  CHECK(api.get("/v1/allocations").json()["allocations"].empty());

  // Duplicates are 409.
  REQUIRE(api.post("/v1/allocations", {{"resource_class", "x"}, {"name", "dup"},
                                       {"uuid", "6a6c3ab2-4d3e-4c2d-9b39-2a7a6d3ef001"}}).status == 201);
  auto name = api.post("/v1/allocations", {{"resource_class", "x"}, {"name", "dup"}});
  CHECK(name.status == 409);
  CHECK(name.fault() == "An allocation with name dup already exists.");
  auto uuid = api.post("/v1/allocations", {{"resource_class", "x"},
                                           {"uuid", "6A6C3AB2-4D3E-4C2D-9B39-2A7A6D3EF001"}});
  CHECK(uuid.status == 409);
  CHECK(uuid.fault() == "An allocation with UUID 6a6c3ab2-4d3e-4c2d-9b39-2a7a6d3ef001 already exists.");
}

TEST_CASE("a backfill records an existing deployment as an allocation (1.58)",
          "[server][api][allocations]") {
  TestApi api;
  makeAvailable(api, "deployed", "bm", {"CUSTOM_X"});
  REQUIRE(api.patch("/v1/nodes/deployed",
                    Json::array({op("add", "/instance_uuid", "0e5cd5a4-4d27-4e8a-a7cc-6aef9c1a42f1")}))
              .status == 200);
  REQUIRE(provision(api, "deployed", "active").status == 202);
  REQUIRE(node(api, "deployed")["provision_state"] == "active");
  makeAvailable(api, "idle", "bm");

  // Mismatches are listed; nothing is stored.
  auto bad = api.post("/v1/allocations", {{"node", "deployed"}, {"resource_class", "other"},
                                          {"traits", {"CUSTOM_Y"}}});
  CHECK(bad.status == 400);
  CHECK_THAT(bad.fault(), Catch::Contains("Cannot backfill an allocation for node"));
  CHECK_THAT(bad.fault(), Catch::Contains("Resource class bm does not match the requested resource class other"));
  CHECK_THAT(bad.fault(), Catch::Contains("does not match the requested traits [CUSTOM_Y]"));
  auto notActive = api.post("/v1/allocations", {{"node", "idle"}});
  CHECK(notActive.status == 400);
  CHECK_THAT(notActive.fault(), Catch::Contains("Node must be in the \"active\" state"));
  CHECK(api.get("/v1/allocations").json()["allocations"].empty());

  // A match is bound at once, and takes the instance's UUID and the node's resource class.
  auto r = api.post("/v1/allocations", {{"node", "deployed"}, {"traits", {"CUSTOM_X"}}});
  REQUIRE(r.status == 201);
  Json a = r.json();
  CHECK(a["state"] == "active");
  CHECK(a["uuid"] == "0e5cd5a4-4d27-4e8a-a7cc-6aef9c1a42f1");
  CHECK(a["resource_class"] == "bm");
  CHECK(a["node_uuid"] == node(api, "deployed")["uuid"]);
  CHECK(node(api, "deployed")["allocation_uuid"] == a["uuid"]);
  // A second allocation for the same node: the node holds another instance.
  auto again = api.post("/v1/allocations", {{"node", "deployed"},
                                            {"uuid", "0e5cd5a4-4d27-4e8a-a7cc-6aef9c1a4200"}});
  CHECK(again.status == 409);
  // The allocation of an active node cannot be removed, unless in maintenance.
  CHECK(api.del("/v1/allocations/" + a["uuid"].get<std::string>()).status == 409);
  CHECK(api.del("/v1/nodes/deployed/allocation").status == 409);
  REQUIRE(api.put("/v1/nodes/deployed/maintenance", Json::object()).status == 202);
  CHECK(api.del("/v1/nodes/deployed/allocation").status == 204);
  CHECK(node(api, "deployed")["instance_uuid"].is_null());
  CHECK(api.get("/v1/nodes/deployed/allocation").status == 404);
}

TEST_CASE("undeploying a node ends its allocation and frees it for the next",
          "[server][api][allocations]") {
  TestApi api;
  makeAvailable(api, "m1", "bm", {"CUSTOM_RAID"});
  // metalsmith's pattern: allocate, deploy the node the allocation got, undeploy.
  Json a = allocate(api, {{"resource_class", "bm"}, {"traits", {"CUSTOM_RAID"}}});
  REQUIRE(a["state"] == "active");
  REQUIRE(provision(api, "m1", "active").status == 202);
  CHECK(node(api, "m1")["provision_state"] == "active");
  CHECK(node(api, "m1")["instance_uuid"] == a["uuid"]);
  REQUIRE(provision(api, "m1", "deleted").status == 202);
  Json n = node(api, "m1");
  CHECK(n["provision_state"] == "available");
  CHECK(n["instance_uuid"].is_null());
  CHECK(n["allocation_uuid"].is_null());
  CHECK(api.get("/v1/allocations/" + a["uuid"].get<std::string>()).status == 404);
  CHECK(allocate(api, {{"resource_class", "bm"}})["node_uuid"] == n["uuid"]);
}

TEST_CASE("node changes keep the node's allocation in step", "[server][api][allocations]") {
  TestApi api;
  makeAvailable(api, "k1");
  Json a = allocate(api, {{"resource_class", "baremetal"}});
  const std::string uuid = a["uuid"];
  // Removing the instance of an available node deletes its allocation.
  REQUIRE(api.patch("/v1/nodes/k1", Json::array({op("remove", "/instance_uuid")})).status == 200);
  CHECK(node(api, "k1")["allocation_uuid"].is_null());
  CHECK(api.get("/v1/allocations/" + uuid).status == 404);

  // A deployed node keeps it unless in maintenance.
  a = allocate(api, {{"resource_class", "baremetal"}});
  REQUIRE(provision(api, "k1", "active").status == 202);
  auto refused = api.patch("/v1/nodes/k1", Json::array({op("remove", "/instance_uuid")}));
  CHECK(refused.status == 409);
  CHECK_THAT(refused.fault(), Catch::Contains("with an allocation can not have instance_uuid removed"));
  CHECK(api.get("/v1/allocations/" + a["uuid"].get<std::string>()).status == 200);

  // Deleting a node deletes its allocation.
  REQUIRE(api.put("/v1/nodes/k1/maintenance", Json::object()).status == 202);
  REQUIRE(api.del("/v1/nodes/k1").status == 204);
  CHECK(api.get("/v1/allocations/" + a["uuid"].get<std::string>()).status == 404);
}

TEST_CASE("allocation PATCH changes only name and extra, from 1.57", "[server][api][allocations]") {
  TestApi api;
  Json a = allocate(api, {{"resource_class", "x"}, {"name", "p1"}});
  const std::string path = "/v1/allocations/" + a["uuid"].get<std::string>();
  auto r = api.patch(path, Json::array({op("replace", "/name", "p2"), op("add", "/extra/k", "v")}));
  REQUIRE(r.status == 200);
  CHECK(r.json()["name"] == "p2");
  CHECK(r.json()["extra"] == Json{{"k", "v"}});
  CHECK(api.patch(path, Json::array({op("remove", "/extra/k")})).json()["extra"] == Json::object());
  CHECK(api.patch(path, Json::array({op("replace", "/resource_class", "y")})).status == 400);
  auto badName = api.patch(path, Json::array({op("replace", "/name", "a b")}));
  CHECK(badName.status == 400);
  CHECK(badName.fault() == "Cannot update allocation with invalid name 'a b'");
  api.version = "1.56";
  CHECK(api.patch(path, Json::array({op("replace", "/name", "p3")})).status == 405);
  CHECK(api.get(path).json()["name"] == "p2");
}

TEST_CASE("allocations are hidden below 1.52 and their lists filter and paginate",
          "[server][api][allocations]") {
  TestApi api;
  makeAvailable(api, "f1");
  Json a = allocate(api, {{"resource_class", "baremetal"}});
  Json b = allocate(api, {{"resource_class", "nomatch"}});
  CHECK(api.get("/v1/allocations?state=active").json()["allocations"].size() == 1);
  CHECK(api.get("/v1/allocations?state=error").json()["allocations"][0]["uuid"] == b["uuid"]);
  CHECK(api.get("/v1/allocations?resource_class=nomatch").json()["allocations"].size() == 1);
  CHECK(api.get("/v1/allocations?node=f1").json()["allocations"][0]["uuid"] == a["uuid"]);
  CHECK(api.get("/v1/allocations?node=ghost").status == 400);
  CHECK(api.get("/v1/allocations?sort_key=traits").status == 400);
  auto page = api.get("/v1/allocations?limit=1");
  CHECK(page.json()["allocations"].size() == 1);
  CHECK_THAT(page.json()["next"].get<std::string>(), Catch::Contains("marker="));
  CHECK(api.get("/v1").json().contains("allocations"));
  CHECK(api.get("/v1/allocations/not%20valid").status == 400);
  CHECK(api.get("/v1/allocations/unknown-name").status == 404);
  CHECK(api.get("/v1/nodes/f1/allocation/x").status == 404);

  api.version = "1.51";
  CHECK(api.get("/v1/allocations").status == 404);
  CHECK(api.post("/v1/allocations", {{"resource_class", "baremetal"}}).status == 405);
  CHECK(api.del("/v1/allocations/" + a["uuid"].get<std::string>()).status == 405);
  CHECK(api.get("/v1/nodes/f1/allocation").status == 404);
  CHECK_FALSE(node(api, "f1").contains("allocation_uuid"));
  CHECK_FALSE(api.get("/v1").json().contains("allocations"));
}

TEST_CASE("allocations left allocating by a stopped server are scheduled at start",
          "[server][api][allocations]") {
  kiln::test::TempDir dir;
  const std::string db = "[database]\nconnection = sqlite:///" + dir.file("kiln.sqlite") + "\n";
  std::string uuid;
  {
    TestApi api(db);
    makeAvailable(api, "r1");
    // Stage what a server killed between the POST and the scheduling pass leaves behind.
    auto tx = api.app().storage().begin(Storage::Mode::Write).value();
    Record a = ks::defaultRecord(ks::schemaOf(ks::Resource::Allocation));
    uuid = "1f0e2d3c-4b5a-4697-8877-665544332211";
    a.setText(ks::kAllocUuid, uuid);
    a.setText(ks::kAllocState, "allocating");
    a.setText(ks::kAllocResourceClass, "baremetal");
    REQUIRE(tx->allocations().insert(a));
    REQUIRE(tx->commit());
  }
  TestApi restarted(db);
  restarted.settle();
  Json a = restarted.get("/v1/allocations/" + uuid).json();
  CHECK(a["state"] == "active");
  CHECK(a["node_uuid"] == node(restarted, "r1")["uuid"]);
}
