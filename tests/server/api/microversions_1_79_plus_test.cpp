// Microversions 1.79 to 1.87, one TEST_CASE each: what the version adds, and what a client of
// the version before sees (the rules of section 0 of docs/ironic-api-1.79-1.115.md: node fields
// hidden and 406 in fields=, POST and PATCH; sub-resources 404; collections 404 for GET and 405
// otherwise; verbs and filters 406). 1.84 is tested elsewhere. The later versions are in
// microversions_1_88_plus_test.cpp and microversions_1_102_plus_test.cpp. These tests need the
// server to serve 1.115 (ver::kMax).
//
// Where a comment says "As Ironic", Kiln once differed: the CHECK pins Ironic's behaviour.
#include <catch2/catch.hpp>

#include <chrono>
#include <set>
#include <string>

#include "tests/support/microversion_helpers.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::Response;
using kiln::test::TestApi;
namespace ver = kiln::server::ver;
using namespace kiln::test::mv;

namespace {

/// The names of the nodes a list answers.
std::set<std::string> nodeNames(TestApi& api, const std::string& path) {
  Response r = api.get(path);
  INFO(path << ": " << r.body);
  REQUIRE(r.status == 200);
  const Json list = r.json();
  std::set<std::string> out;
  for (const auto& n : list.value("nodes", Json::array())) {
    out.insert(text(n.value("name", Json())));
  }
  return out;
}

size_t listSize(TestApi& api, const std::string& path, const std::string& collection) {
  Response r = api.get(path);
  INFO(path << ": " << r.body);
  REQUIRE(r.status == 200);
  return r.json()[collection].size();
}

}  // namespace

TEST_CASE("API 1.79: an allocation takes the node named like it first, at every version",
          "[server][api][microversions]") {
  TestApi api;
  for (int i = 0; i < 5; ++i) {
    availableNode(api, "host-" + std::to_string(i), {{"resource_class", "baremetal"}});
  }
  // 1.79 only announces what Ironic's scheduler does at every version that has allocations.
  for (int minor : {ver::k79AllocationNodeName, ver::k79AllocationNodeName - 1}) {
    api.version = v(minor);
    for (const std::string name : {"host-3", "host-0", "host-4"}) {
      INFO(api.version << " " << name);
      Response r = api.post("/v1/allocations", {{"resource_class", "baremetal"}, {"name", name}});
      REQUIRE(r.status == 201);
      api.settle();
      const std::string uuid = r.json()["uuid"];
      Json a = api.get("/v1/allocations/" + uuid).json();
      CHECK(a["state"] == "active");
      CHECK(a["node_uuid"] == node(api, name)["uuid"]);
      REQUIRE(api.del("/v1/allocations/" + uuid).status == 204);
    }
  }
}

TEST_CASE("API 1.80: the version is served and changes nothing else",
          "[server][api][microversions]") {
  TestApi api;
  const int k = ver::k80ProjectCreateDeleteNode;
  api.version = v(k);
  Response root = api.get("/v1");
  CHECK(root.status == 200);
  CHECK(root.header("X-OpenStack-Ironic-API-Version") == v(k));
  Response created = api.post("/v1/nodes", {{"driver", "fake-hardware"}, {"name", "n80"}});
  REQUIRE(created.status == 201);
  const Json at80 = node(api, "n80");
  api.version = v(k - 1);
  const Json at79 = node(api, "n80");
  CHECK(keysOf(at80) == keysOf(at79));
  api.version = v(k);
  CHECK(api.del("/v1/nodes/n80").status == 204);
  CHECK(api.get("/v1/nodes/n80").status == 404);
}

TEST_CASE("API 1.81: inspection stores the inventory, shown with Ironic's plugin data",
          "[server][api][microversions]") {
  TestApi api;
  const int k = ver::k81NodeInventory;
  api.version = v(k);
  Json n = api.createNode(
      {{"name", "i1"},
       {"properties",
        {{"cpus", 4}, {"memory_mb", 2048}, {"local_gb", 20}, {"cpu_arch", "x86_64"}}}});
  const std::string uuid = n["uuid"];
  const std::string pxeMac = "52:54:00:00:81:01";
  createPort(api, uuid, pxeMac);  // pxe_enabled by default
  createPort(api, uuid, "52:54:00:00:81:02", {{"pxe_enabled", false}});

  // Nothing is stored before an inspection.
  Response none = api.get("/v1/nodes/i1/inventory");
  CHECK(none.status == 404);
  CHECK(none.fault() == "Node inventory record for node " + uuid + " could not be found.");
  CHECK(api.get("/v1/nodes/missing/inventory").status == 404);

  REQUIRE(api.provision("i1", "manage").status == 202);
  REQUIRE(api.provision("i1", "inspect").status == 202);
  REQUIRE(node(api, "i1")["provision_state"] == "manageable");

  Response r = api.get("/v1/nodes/" + uuid + "/inventory");
  INFO(r.body);
  REQUIRE(r.status == 200);
  Json body = r.json();
  CHECK(keysOf(body) == std::set<std::string>{"inventory", "plugin_data"});
  Json& inventory = body["inventory"];
  CHECK(inventory["cpu"]["count"] == 4);
  CHECK(inventory["cpu"]["architecture"] == "x86_64");
  CHECK(inventory["memory"]["physical_mb"] == 2048);
  CHECK(inventory["interfaces"].size() == 2);
  // plugin_data.all_interfaces: one entry per NIC, pxe_enabled only for the PXE port's MAC.
  Json& all = body["plugin_data"]["all_interfaces"];
  REQUIRE(all.is_object());
  REQUIRE(all.size() == 2);
  int pxe = 0;
  for (auto it = all.begin(); it != all.end(); ++it) {
    INFO(it.key() << ": " << it.value().dump());
    const bool isPxe = it.value()["mac"] == pxeMac;
    CHECK(it.value()["pxe_enabled"] == isPxe);
    pxe += isPxe ? 1 : 0;
  }
  CHECK(pxe == 1);

  // 1.80 does not know the sub-resource.
  api.version = v(k - 1);
  CHECK(api.get("/v1/nodes/i1/inventory").status == 404);
}

TEST_CASE("API 1.82: node shards, the shard and sharded filters and /v1/shards",
          "[server][api][microversions]") {
  TestApi api;
  const int k = ver::k82NodeShard;
  api.version = v(k);
  Json a1 = api.createNode({{"name", "a1"}, {"shard", "a"}});
  CHECK(a1["shard"] == "a");
  Json b1 = api.createNode({{"name", "b1"}, {"shard", "b"}});
  api.createNode({{"name", "b2"}});
  Response patched = api.patch("/v1/nodes/b2", Json::array({op("add", "/shard", "b")}));
  REQUIRE(patched.status == 200);
  CHECK(patched.json()["shard"] == "b");
  for (const char* name : {"u1", "u2", "u3"})
    CHECK(api.createNode({{"name", name}})["shard"].is_null());
  createPort(api, a1["uuid"], "52:54:00:00:82:01");
  createPort(api, b1["uuid"], "52:54:00:00:82:02");

  CHECK(nodeNames(api, "/v1/nodes?shard=a") == std::set<std::string>{"a1"});
  CHECK(nodeNames(api, "/v1/nodes?shard=a,b") == std::set<std::string>{"a1", "b1", "b2"});
  CHECK(nodeNames(api, "/v1/nodes/detail?shard=b") == std::set<std::string>{"b1", "b2"});
  CHECK(nodeNames(api, "/v1/nodes?sharded=true") == std::set<std::string>{"a1", "b1", "b2"});
  CHECK(nodeNames(api, "/v1/nodes?sharded=false") == std::set<std::string>{"u1", "u2", "u3"});
  CHECK(listSize(api, "/v1/ports?shard=a", "ports") == 1);
  CHECK(listSize(api, "/v1/ports?shard=a,b", "ports") == 2);
  CHECK(listSize(api, "/v1/ports/detail?shard=c", "ports") == 0);

  // Every shard with its count, largest first; nodes without a shard count as "None".
  Response shards = api.get("/v1/shards");
  INFO(shards.body);
  REQUIRE(shards.status == 200);
  CHECK(shards.json() == Json::parse(R"({"shards": [{"name": "None", "count": 3},
                                                    {"name": "b", "count": 2},
                                                    {"name": "a", "count": 1}]})"));
  CHECK(api.post("/v1/shards", Json::object()).status == 405);
  CHECK(api.get("/v1/shards/a").status == 404);

  // What 1.81 sees.
  api.version = v(k - 1);
  CHECK_FALSE(node(api, "a1").contains("shard"));
  CHECK(api.get("/v1/nodes/a1?fields=shard").status == 406);
  CHECK(api.get("/v1/nodes?fields=name,shard").status == 406);
  CHECK(api.get("/v1/nodes?sort_key=shard").status == 406);
  CHECK(api.post("/v1/nodes", {{"driver", "fake-hardware"}, {"shard", "c"}}).status == 406);
  CHECK(api.patch("/v1/nodes/b2", Json::array({op("replace", "/shard", "c")})).status == 406);
  for (const char* path :
       {"/v1/nodes?shard=a", "/v1/nodes/detail?shard=a", "/v1/nodes?sharded=true",
        "/v1/nodes?sharded=false", "/v1/ports?shard=a"}) {
    INFO(path);
    Response r = api.get(path);
    CHECK(r.status == 406);
    CHECK(r.fault() ==
          "Request not acceptable. The minimal required API version should be " + v(k));
  }
  CHECK(api.get("/v1/shards").status == 404);
  CHECK(api.post("/v1/shards", Json::object()).status == 405);
  api.version = v(k);
  CHECK(node(api, "b2")["shard"] == "b");  // the refused PATCH changed nothing
}

TEST_CASE("API 1.83: child nodes name their parent, stay out of lists and are its children",
          "[server][api][microversions]") {
  TestApi api;
  const int k = ver::k83ParentChildNodes;
  api.version = v(k);
  const std::string parent = api.createNode({{"name", "parent"}})["uuid"];
  // Set by name or UUID, stored as the UUID.
  Json child = api.createNode({{"name", "child"}, {"parent_node", "parent"}});
  CHECK(child["parent_node"] == parent);
  api.createNode({{"name", "other"}});
  const std::string late = api.createNode({{"name", "late"}})["uuid"];
  Response patched = api.patch("/v1/nodes/late", Json::array({op("add", "/parent_node", parent)}));
  REQUIRE(patched.status == 200);
  CHECK(patched.json()["parent_node"] == parent);

  // A parent that does not exist, or the node itself: one message that discloses nothing.
  Response bad = api.post("/v1/nodes", {{"driver", "fake-hardware"}, {"parent_node", "nope"}});
  CHECK(bad.status == 400);
  CHECK(bad.fault() ==
        "Unable to apply the requested parent_node 'nope'. Requested value was invalid.");
  Response self = api.patch("/v1/nodes/other", Json::array({op("add", "/parent_node", "other")}));
  CHECK(self.status == 400);
  CHECK(node(api, "other")["parent_node"].is_null());

  // Lists leave children out unless asked.
  const std::set<std::string> roots{"parent", "other"};
  CHECK(nodeNames(api, "/v1/nodes") == roots);
  CHECK(nodeNames(api, "/v1/nodes/detail") == roots);
  CHECK(nodeNames(api, "/v1/nodes?include_children=true") ==
        std::set<std::string>{"parent", "child", "other", "late"});
  CHECK(nodeNames(api, "/v1/nodes?include_children=false") == roots);
  CHECK(nodeNames(api, "/v1/nodes/detail?parent_node=" + parent) ==
        std::set<std::string>{"child", "late"});

  Response kids = api.get("/v1/nodes/parent/children");
  INFO(kids.body);
  REQUIRE(kids.status == 200);
  const Json children = kids.json();
  std::set<std::string> uuids;
  for (const auto& u : children.value("children", Json::array())) uuids.insert(text(u));
  CHECK(uuids == std::set<std::string>{child["uuid"].get<std::string>(), late});
  CHECK(kids.json()["links"] ==
        Json::parse(R"({"href": "http://kiln.test:6385/v1/nodes?parent_node=)" + parent +
                    R"(", "rel": "children"})"));
  CHECK(api.get("/v1/nodes/other/children").json()["children"] == Json::array());
  CHECK(api.get("/v1/nodes/nope/children").status == 404);
  CHECK(api.get("/v1/nodes/parent/children/" + late + "/children").status == 404);

  // Older versions: children are left out all the same; the field, the filters and the
  // sub-resource do not exist.
  for (int minor : {k - 1, ver::k5NodeName}) {
    api.version = v(minor);
    INFO(api.version);
    CHECK(nodeNames(api, "/v1/nodes") == roots);
  }
  api.version = v(k - 1);
  CHECK(api.get("/v1/nodes?include_children=true").status == 406);
  CHECK(api.get("/v1/nodes?parent_node=" + parent).status == 406);
  CHECK_FALSE(node(api, "child").contains("parent_node"));
  CHECK(api.get("/v1/nodes/child?fields=parent_node").status == 406);
  CHECK(api.post("/v1/nodes", {{"driver", "fake-hardware"}, {"parent_node", "parent"}}).status ==
        406);
  CHECK(api.patch("/v1/nodes/other", Json::array({op("add", "/parent_node", parent)})).status ==
        406);
  CHECK(api.get("/v1/nodes/parent/children").status == 404);
}

TEST_CASE("API 1.85: a hold step parks manual cleaning in clean hold until unhold or abort",
          "[server][api][microversions]") {
  TestApi api;
  const int k = ver::k85UnholdVerb;
  api.version = v(k);
  manageableNode(api, "h1");
  const Json steps = Json::array({holdStep(), biosStep("HyperThreading", "Disabled")});
  REQUIRE(api.provision("h1", "clean", {{"clean_steps", steps}}).status == 202);
  Json n = node(api, "h1");
  CHECK(n["provision_state"] == "clean hold");
  CHECK(n["target_provision_state"] == "manageable");
  CHECK(n["clean_step"]["step"] == "hold");
  CHECK(biosValue(api, "h1", "HyperThreading").empty());  // the step after the hold waits

  // unhold is too new for 1.84; the node stays held.
  api.version = v(k - 1);
  Response old = api.provision("h1", "unhold");
  CHECK(old.status == 406);
  CHECK(node(api, "h1")["provision_state"] == "clean hold");

  // unhold carries on with the next step, to the end of the cleaning.
  api.version = v(k);
  REQUIRE(api.provision("h1", "unhold").status == 202);
  n = node(api, "h1");
  CHECK(n["provision_state"] == "manageable");
  CHECK(n["target_provision_state"].is_null());
  CHECK(n["last_error"].is_null());
  CHECK(n["clean_step"] == Json::object());
  CHECK(biosValue(api, "h1", "HyperThreading") == "Disabled");
  // Nothing is held any more.
  Response notHeld = api.provision("h1", "unhold");
  CHECK(notHeld.status == 400);
  CHECK(node(api, "h1")["provision_state"] == "manageable");

  // abort from clean hold fails the cleaning.
  REQUIRE(api.provision("h1", "clean", {{"clean_steps", Json::array({holdStep()})}}).status == 202);
  REQUIRE(node(api, "h1")["provision_state"] == "clean hold");
  REQUIRE(api.provision("h1", "abort").status == 202);
  n = node(api, "h1");
  CHECK(n["provision_state"] == "clean failed");
  CHECK_THAT(text(n["last_error"]), Catch::Contains("aborted"));
  CHECK(n["clean_step"] == Json::object());
}

TEST_CASE("API 1.86: nodes have a firmware interface and a firmware list",
          "[server][api][microversions]") {
  // firmware_api_test.cpp covers the list, its fields and the flows; this is the version gate.
  TestApi api;
  const int k = ver::k86FirmwareInterface;
  api.version = v(k);
  CHECK(api.createNode({{"name", "f1"}})["firmware_interface"] == "no-firmware");
  Response fw = api.get("/v1/nodes/f1/firmware");
  CHECK(fw.status == 200);
  CHECK(fw.json() == Json::parse(R"({"firmware": []})"));

  api.version = v(k - 1);
  CHECK_FALSE(node(api, "f1").contains("firmware_interface"));
  CHECK(api.get("/v1/nodes/f1?fields=firmware_interface").status == 406);
  CHECK(
      api.post("/v1/nodes", {{"driver", "fake-hardware"}, {"firmware_interface", "fake"}}).status ==
      406);
  CHECK(api.patch("/v1/nodes/f1", Json::array({op("replace", "/firmware_interface", "fake")}))
            .status == 406);
  CHECK(api.get("/v1/nodes/f1/firmware").status == 404);
}

TEST_CASE("API 1.87: the service verb runs service steps on an active node",
          "[server][api][microversions]") {
  TestApi api;
  const int k = ver::k87Service;
  api.version = v(k);
  api.createActiveNode({{"name", "s1"}});
  CHECK(node(api, "s1")["service_step"] == Json::object());

  // The request is checked before anything runs.
  Response missing = api.provision("s1", "service");
  CHECK(missing.status == 400);
  CHECK_THAT(missing.fault(), Catch::Contains("\"service_steps\" is required"));
  Response otherTarget =
      api.provision("s1", "rebuild", {{"service_steps", Json::array({biosStep("A", "1")})}});
  CHECK(otherTarget.status == 400);
  CHECK_THAT(otherTarget.fault(), Catch::Contains("\"service_steps\" is only valid"));
  CHECK(node(api, "s1")["provision_state"] == "active");

  // Out-of-band steps run (servicing) and the node returns to active.
  REQUIRE(api.provision("s1", "service",
                        {{"service_steps", Json::array({biosStep("SriovEnable", "Enabled")})}})
              .status == 202);
  Json n = node(api, "s1");
  CHECK(n["provision_state"] == "active");
  CHECK(n["target_provision_state"].is_null());
  CHECK(n["last_error"].is_null());
  CHECK(n["service_step"] == Json::object());
  CHECK(biosValue(api, "s1", "SriovEnable") == "Enabled");

  // deploy.wait: service wait until its time has passed, then the next step.
  REQUIRE(api.provision("s1", "service",
                        {{"service_steps", Json::array({waitStep(60), biosStep("Waited", "Yes")})}})
              .status == 202);
  n = node(api, "s1");
  CHECK(n["provision_state"] == "service wait");
  CHECK(n["target_provision_state"] == "active");
  CHECK(n["service_step"]["step"] == "wait");
  api.clock().advance(std::chrono::seconds(61));
  api.runPeriodic();
  CHECK(node(api, "s1")["provision_state"] == "active");
  CHECK(biosValue(api, "s1", "Waited") == "Yes");

  // deploy.hold: service hold; abort fails the servicing, a second abort returns to active.
  REQUIRE(api.provision("s1", "service", {{"service_steps", Json::array({holdStep()})}}).status ==
          202);
  n = node(api, "s1");
  CHECK(n["provision_state"] == "service hold");
  CHECK(n["service_step"]["step"] == "hold");
  REQUIRE(api.provision("s1", "abort").status == 202);
  n = node(api, "s1");
  CHECK(n["provision_state"] == "service failed");
  CHECK_THAT(text(n["last_error"]), Catch::Contains("aborted"));
  CHECK(n["service_step"] == Json::object());
  REQUIRE(api.provision("s1", "abort").status == 202);
  CHECK(node(api, "s1")["provision_state"] == "active");

  // A step that is no service step of the node (on fake hardware erase_devices_metadata is a
  // clean step only): the servicing fails and says which step.
  const Json erase = {{"interface", "deploy"}, {"step", "erase_devices_metadata"}};
  REQUIRE(api.provision("s1", "service", {{"service_steps", Json::array({erase})}}).status == 202);
  n = node(api, "s1");
  CHECK(n["provision_state"] == "service failed");
  CHECK_THAT(text(n["last_error"]), Catch::Contains("deploy.erase_devices_metadata"));
  REQUIRE(api.provision("s1", "abort").status == 202);
  CHECK(node(api, "s1")["provision_state"] == "active");

  // What 1.86 sees: no service_step, no service verb.
  api.version = v(k - 1);
  CHECK_FALSE(node(api, "s1").contains("service_step"));
  CHECK(api.get("/v1/nodes/s1?fields=service_step").status == 406);
  Response old =
      api.provision("s1", "service", {{"service_steps", Json::array({biosStep("Old", "1")})}});
  CHECK(old.status == 406);
  CHECK(node(api, "s1")["provision_state"] == "active");
  CHECK(biosValue(api, "s1", "Old").empty());
}
