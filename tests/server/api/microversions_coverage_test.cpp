// What the per-version tests (microversions_1_79_plus_test.cpp, microversions_1_88_plus_test.cpp,
// microversions_1_102_plus_test.cpp, microversions_lead_test.cpp and the resource tests) leave
// out of 1.79 to 1.115: the /v1 links of 1.82, 1.84 and 1.96; continue_inspection's node_uuid
// (1.84) and its ironic-inspector form at 1.1; the version before 1.89's and 1.93's virtual
// media routes; .json without a version header (1.91); disable_power_off in PATCH and fields=
// (1.95); the new node, port and port group fields as sort_key the version before; a null new
// field in an older node POST. These tests need the server to serve 1.115 (ver::kMax).
// Where Kiln answered differently from Ironic when these were written, the comment above the
// TEST_CASE names the Ironic source it follows.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/microversion_helpers.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::Response;
using kiln::test::TestApi;
namespace ver = kiln::server::ver;
using namespace kiln::test::mv;

namespace {

constexpr const char* kBase = "http://kiln.test:6385";

/// The inventory an agent sends for a node with one NIC of MAC `mac`.
Json inventoryWith(const std::string& mac) {
  return {{"interfaces", Json::array({{{"name", "eth0"}, {"mac_address", mac}}})},
          {"cpu", {{"count", 2}, {"architecture", "x86_64"}, {"frequency", "2000"}}},
          {"memory", {{"physical_mb", 4096}}}};
}

/// Manages (once) and inspects the agent-inspected node `name`: REQUIREs "inspect wait".
void startInspection(TestApi& api, const std::string& name) {
  const std::string saved = api.version;
  api.version = v(ver::k84ContinueInspection);
  if (node(api, name)["provision_state"] == "enroll") {
    REQUIRE(api.provision(name, "manage").status == 202);
  }
  REQUIRE(api.provision(name, "inspect").status == 202);
  const Json n = node(api, name);
  INFO(n["last_error"]);
  REQUIRE(n["provision_state"] == "inspect wait");
  api.version = saved;
}

/// The provision state of `name`, read at 1.84 after the conductor settled.
std::string stateOf(TestApi& api, const std::string& name) {
  api.settle();
  const std::string saved = api.version;
  api.version = v(ver::k84ContinueInspection);
  const std::string s = text(node(api, name)["provision_state"]);
  api.version = saved;
  return s;
}

int status(TestApi& api, const std::string& path) { return api.get(path).status; }

/// A node field, port field or port group field and the microversion that adds it.
struct VersionedField {
  const char* name;
  int since;
};

}  // namespace

TEST_CASE("API 1.82, 1.84 and 1.96: the v1 document links shards, continue_inspection and "
          "inspection_rules from their versions only",
          "[server][api][microversions]") {
  // Ironic's VERSIONED_CONTROLLERS (ironic/api/controllers/v1/__init__.py); runbooks (1.92) are
  // in runbook_api_test.cpp.
  TestApi api;
  const std::vector<std::pair<std::string, int>> links = {
      {"shards", ver::k82NodeShard},
      {"continue_inspection", ver::k84ContinueInspection},
      {"inspection_rules", ver::k96InspectionRules}};
  for (const auto& [name, since] : links) {
    INFO(name);
    api.version = v(since);
    Response at = api.get("/v1");
    REQUIRE(at.status == 200);
    CHECK(at.json()[name] ==
          Json::array({{{"href", std::string(kBase) + "/v1/" + name + "/"}, {"rel", "self"}},
                       {{"href", std::string(kBase) + "/" + name + "/"}, {"rel", "bookmark"}}}));
    api.version = v(since - 1);
    Response before = api.get("/v1");
    REQUIRE(before.status == 200);
    CHECK_FALSE(before.json().contains(name));
  }
  // continue_inspection answers at 1.1 (see below), but the link is never shown there.
  api.version = v(ver::k1InitialVersion);
  CHECK_FALSE(api.get("/v1").json().contains("continue_inspection"));
}

TEST_CASE("API 1.84: continue_inspection finds the node by node_uuid when no port matches",
          "[server][api][microversions][inspection]") {
  TestApi api;
  const int k = ver::k84ContinueInspection;
  api.version = v(k);
  const std::string uuid =
      api.createNode({{"name", "byuuid"}, {"inspect_interface", "agent"}})["uuid"];
  startInspection(api, "byuuid");
  // No port has this MAC: without node_uuid the lookup finds nothing.
  const Json inventory = inventoryWith("52:54:00:84:00:09");
  CHECK(api.post("/v1/continue_inspection", {{"inventory", inventory}}).status == 404);
  CHECK(api.post("/v1/continue_inspection?node_uuid=not-a-uuid", {{"inventory", inventory}})
            .status == 400);
  CHECK(api.post("/v1/continue_inspection?node_uuid=0b0c5b2e-84a4-4b7e-9d1b-6c1a2b3c4d5e",
                 {{"inventory", inventory}})
            .status == 404);
  CHECK(stateOf(api, "byuuid") == "inspect wait");

  Response r = api.post("/v1/continue_inspection?node_uuid=" + uuid, {{"inventory", inventory}});
  INFO(r.body);
  REQUIRE(r.status == 202);
  CHECK(r.json()["node"]["uuid"] == uuid);
  CHECK(stateOf(api, "byuuid") == "manageable");
  Response stored = api.get("/v1/nodes/byuuid/inventory");
  REQUIRE(stored.status == 200);
  CHECK(stored.json()["inventory"]["memory"]["physical_mb"] == 4096);
}

TEST_CASE("API 1.84: below it continue_inspection answers only at 1.1, as ironic-inspector did",
          "[server][api][microversions][inspection]") {
  // Ironic's allow_continue_inspection_endpoint (utils.py) lets 1.1 in "as a drop-in
  // replacement for the Inspector's API", without node_uuid, answering {"uuid": ...} only
  // (ContinueInspectionController.post in ramdisk.py). No version header means 1.1.
  TestApi api;
  api.version = v(ver::k84ContinueInspection);
  const std::string uuid =
      api.createNode({{"name", "legacy"}, {"inspect_interface", "agent"}})["uuid"];
  const std::string mac = "52:54:00:84:01:01";
  createPort(api, uuid, mac);
  const Json inventory = inventoryWith(mac);

  for (const std::string& version : {v(ver::k1InitialVersion), std::string()}) {
    INFO("version header: '" << version << "'");
    startInspection(api, "legacy");
    api.version = version;
    CHECK(api.post("/v1/continue_inspection?node_uuid=" + uuid, {{"inventory", inventory}})
              .status == 404);
    CHECK(stateOf(api, "legacy") == "inspect wait");
    Response r = api.post("/v1/continue_inspection", {{"inventory", inventory}});
    INFO(r.body);
    REQUIRE(r.status == 202);
    CHECK(r.json() == Json{{"uuid", uuid}});
    CHECK(stateOf(api, "legacy") == "manageable");
  }
  // 1.2 is no inspector client: 404, and the node keeps waiting.
  startInspection(api, "legacy");
  api.version = v(ver::k2AvailableState);
  CHECK(api.post("/v1/continue_inspection", {{"inventory", inventory}}).status == 404);
  CHECK(stateOf(api, "legacy") == "inspect wait");
}

TEST_CASE("API 1.89 and 1.93: the virtual media routes are 404 the version before theirs",
          "[server][api][microversions][vmedia]") {
  // microversions_lead_test.cpp checks POST at 1.88 and GET at 1.89; Ironic's node _lookup and
  // NodeVmediaController.get cut off at exactly 1.89 and 1.93. The version's own answer (400:
  // a bad device type, or fake hardware without virtual media) proves the route is reached.
  TestApi api;
  api.version = v(ver::k89AttachDetachVmedia);
  api.createNode({{"name", "plain"}});

  api.version = v(ver::k89AttachDetachVmedia - 1);
  CHECK(api.del("/v1/nodes/plain/vmedia?device_types=tape").status == 404);
  api.version = v(ver::k89AttachDetachVmedia);
  CHECK(api.del("/v1/nodes/plain/vmedia?device_types=tape").status == 400);

  api.version = v(ver::k93GetVmedia - 1);
  CHECK(api.get("/v1/nodes/plain/vmedia").status == 404);
  CHECK(api.get("/v1/nodes/missing/vmedia").status == 404);
  api.version = v(ver::k93GetVmedia);
  CHECK(api.get("/v1/nodes/plain/vmedia").status == 400);
}

TEST_CASE("API 1.91: without a version header a trailing .json is never stripped",
          "[server][api][microversions]") {
  // Ironic's JsonExtensionMiddleware strips ".json" only when X-OpenStack-Ironic-API-Version
  // names a minor below 1.91; no header (served at 1.1, where nodes are found by UUID only)
  // strips nothing.
  TestApi api;
  api.version = v(ver::k91DotJson);
  const std::string uuid = api.createNode()["uuid"];
  api.version = "";
  Response plain = api.get("/v1/nodes/" + uuid);
  REQUIRE(plain.status == 200);
  CHECK(plain.header("X-OpenStack-Ironic-API-Version") == v(ver::k1InitialVersion));
  CHECK(status(api, "/v1/nodes/" + uuid + ".json") == 404);
  CHECK(status(api, "/v1/nodes.json") == 404);
  // The same paths with a version header below 1.91 are stripped, and from 1.91 they are not.
  api.version = v(ver::k91DotJson - 1);
  CHECK(status(api, "/v1/nodes/" + uuid + ".json") == 200);
  CHECK(status(api, "/v1/nodes.json") == 200);
  api.version = v(ver::k91DotJson);
  CHECK(status(api, "/v1/nodes.json") == 404);
}

// Ironic's JsonExtensionMiddleware (ironic/api/middleware/json_ext.py, __call__) reads only the
// X-OpenStack-Ironic-API-Version header (base.Version.string); a request that names 1.90 in
// OpenStack-API-Version alone is served at 1.90 but its path keeps ".json". Kiln's
// ApiService::dispatch strips it for either header.
TEST_CASE("API 1.91: OpenStack-API-Version below 1.91 does not strip .json, as Ironic",
          "[server][api][microversions]") {
  TestApi api;
  api.version = v(ver::k91DotJson);
  const std::string suffixed = api.createNode({{"name", "test.json"}})["uuid"];
  api.createNode({{"name", "test"}});
  api.version = "";
  Response r = api.call("GET", "/v1/nodes/test.json", "",
                        {{"OpenStack-API-Version", "baremetal " + v(ver::k91DotJson - 1)}});
  REQUIRE(r.status == 200);
  CHECK(r.header("X-OpenStack-Ironic-API-Version") == v(ver::k91DotJson - 1));
  CHECK(r.json()["uuid"] == suffixed);
}

TEST_CASE("API 1.95: disable_power_off is patched from 1.95; 1.94 may not patch, pick or post it",
          "[server][api][microversions]") {
  // microversions_lead_test.cpp covers POST true at 1.95 and what 1.94 sees of the node.
  TestApi api;
  const int k = ver::k95DisablePowerOff;
  api.version = v(k);
  CHECK(api.createNode({{"name", "dpo"}})["disable_power_off"] == false);
  Response set = api.patch("/v1/nodes/dpo", Json::array({op("replace", "/disable_power_off", true)}));
  INFO(set.body);
  REQUIRE(set.status == 200);
  CHECK(set.json()["disable_power_off"] == true);
  Response picked = api.get("/v1/nodes/dpo?fields=disable_power_off");
  REQUIRE(picked.status == 200);
  CHECK(picked.json()["disable_power_off"] == true);

  api.version = v(k - 1);
  CHECK(api.patch("/v1/nodes/dpo", Json::array({op("replace", "/disable_power_off", false)}))
            .status == 406);
  CHECK(api.get("/v1/nodes/dpo?fields=disable_power_off").status == 406);
  CHECK(api.get("/v1/nodes?fields=name,disable_power_off").status == 406);
  // false is a value too (Ironic's reject_fields_in_newer_versions refuses anything but null).
  CHECK(api.post("/v1/nodes", {{"driver", "fake-hardware"}, {"disable_power_off", false}})
            .status == 406);
  api.version = v(k);
  CHECK(node(api, "dpo")["disable_power_off"] == true);  // the refused PATCH changed nothing
}

TEST_CASE("API 1.83 to 1.109: new node fields sort from their version, are 406 as sort_key and "
          "missing from detail lists the version before",
          "[server][api][microversions]") {
  // Ironic's NodesController.get_all and detail run check_allowed_fields([sort_key]) against
  // VERSIONED_FIELDS; shard (1.82) is covered in microversions_1_79_plus_test.cpp.
  TestApi api;
  api.version = v(ver::kMax);
  api.createNode({{"name", "sorted"}});
  const std::vector<VersionedField> fields = {{"parent_node", ver::k83ParentChildNodes},
                                              {"firmware_interface", ver::k86FirmwareInterface},
                                              {"disable_power_off", ver::k95DisablePowerOff},
                                              {"instance_name", ver::k104NodeInstanceName},
                                              {"health", ver::k109NodeHealth}};
  for (const auto& f : fields) {
    const std::string name = f.name;
    INFO(name);
    api.version = v(f.since);
    CHECK(status(api, "/v1/nodes?sort_key=" + name) == 200);
    CHECK(status(api, "/v1/nodes/detail?sort_key=" + name + "&sort_dir=desc") == 200);
    Response detail = api.get("/v1/nodes/detail");
    REQUIRE(detail.status == 200);
    REQUIRE(detail.json()["nodes"].size() == 1);
    CHECK(detail.json()["nodes"][0].contains(name));

    api.version = v(f.since - 1);
    CHECK(status(api, "/v1/nodes?sort_key=" + name) == 406);
    CHECK(status(api, "/v1/nodes/detail?sort_key=" + name) == 406);
    detail = api.get("/v1/nodes/detail");
    REQUIRE(detail.status == 200);
    REQUIRE(detail.json()["nodes"].size() == 1);
    CHECK_FALSE(detail.json()["nodes"][0].contains(name));
  }
}

TEST_CASE("API 1.87: service_step is no sort key", "[server][api][microversions]") {
  // Ironic's invalid_sort_key_list (NodesController) has service_step.
  TestApi api;
  api.version = v(ver::k87Service);
  api.createNode();
  Response r = api.get("/v1/nodes?sort_key=service_step");
  CHECK(r.status == 400);
  CHECK(r.fault() == "The sort_key value service_step is an invalid field for sorting");
  CHECK(api.get("/v1/nodes/detail").json()["nodes"][0].contains("service_step"));
  api.version = v(ver::k87Service - 1);
  CHECK_FALSE(api.get("/v1/nodes/detail").json()["nodes"][0].contains("service_step"));
}

// Ironic's NodesController.get_all (node.py) calls api_utils.check_allowed_fields([sort_key])
// before _get_nodes_collection looks at invalid_sort_key_list, so below 1.87 sort_key=
// service_step is 406 (VERSIONED_FIELDS has service_step at 1.87). Kiln's parseListRequest
// (server/api/common.cpp) checks the invalid sort keys first and answers 400.
TEST_CASE("API 1.87: below it sort_key=service_step is 406, as Ironic",
          "[server][api][microversions]") {
  TestApi api;
  api.version = v(ver::k87Service - 1);
  api.createNode();
  CHECK(status(api, "/v1/nodes?sort_key=service_step") == 406);
  CHECK(status(api, "/v1/nodes/detail?sort_key=service_step") == 406);
}

TEST_CASE("API 1.82 to 1.104: a node POST below a field's version may send it as null",
          "[server][api][microversions]") {
  // Ironic's reject_fields_in_newer_versions (node.py) refuses only values other than null.
  TestApi api;
  const std::vector<VersionedField> fields = {{"shard", ver::k82NodeShard},
                                              {"parent_node", ver::k83ParentChildNodes},
                                              {"firmware_interface", ver::k86FirmwareInterface},
                                              {"instance_name", ver::k104NodeInstanceName}};
  for (const auto& f : fields) {
    const std::string field = f.name;
    const std::string name = "null-" + field;
    INFO(field);
    api.version = v(f.since - 1);
    Response r = api.post("/v1/nodes", {{"driver", "fake-hardware"}, {"name", name}, {field, nullptr}});
    INFO(r.body);
    CHECK(r.status == 201);
    CHECK_FALSE(r.json().contains(field));
    api.version = v(f.since);
    Response shown = api.get("/v1/nodes/" + name);
    REQUIRE(shown.status == 200);
    if (field == "firmware_interface") {
      CHECK(shown.json()[field] == "no-firmware");  // the default of fake-hardware
    } else {
      CHECK(shown.json()[field].is_null());
    }
  }
}

// Ironic's reject_fields_in_newer_versions (node.py) compares each newer field with None
// (conductor_group with ""), after the node schema allowed "" for shard: {"shard": ""} below
// 1.82 is 406. Kiln's recordFromBody (server/api/common.cpp) skips "" like null and creates the
// node.
TEST_CASE("API 1.82: below it a node POST with an empty shard is 406, as Ironic",
          "[server][api][microversions]") {
  TestApi api;
  api.version = v(ver::k82NodeShard - 1);
  CHECK(api.post("/v1/nodes", {{"driver", "fake-hardware"}, {"name", "empty-shard"}, {"shard", ""}})
            .status == 406);
  CHECK(api.get("/v1/nodes/empty-shard").status == 404);
}

// Ironic's reject_patch_in_newer_versions (node.py) looks only at the values of a PATCH
// (api_utils.get_patch_values skips "remove"), and patch_update_changed_fields (utils.py) then
// sets the removed field to None: an older client may remove a newer field it cannot see.
// Kiln's patchRecord (server/api/common.cpp) answers 406 to any operation on it.
TEST_CASE("API 1.82: below it a node PATCH may remove the shard, as Ironic",
          "[server][api][microversions]") {
  TestApi api;
  api.version = v(ver::k82NodeShard);
  api.createNode({{"name", "sharded"}, {"shard", "a"}});
  api.version = v(ver::k82NodeShard - 1);
  Response r = api.patch("/v1/nodes/sharded", Json::array({op("remove", "/shard")}));
  CHECK(r.status == 200);
  api.version = v(ver::k82NodeShard);
  CHECK(node(api, "sharded")["shard"].is_null());
}

TEST_CASE("API 1.88 to 1.111: new port and port group fields sort from their version and are "
          "406 as sort_key the version before",
          "[server][api][microversions]") {
  // Ironic's PortsController.get_all/detail run _check_allowed_port_fields([sort_key]), and
  // PortgroupsController check_allowed_portgroup_fields([sort_key]) (dynamic_portgroup).
  TestApi api;
  api.version = v(ver::kMax);
  const std::string n = api.createNode()["uuid"];
  createPort(api, n, "52:54:00:01:88:01");
  createPortgroup(api, n, "pg-sort");
  const std::vector<std::pair<std::string, VersionedField>> fields = {
      {"ports", {"name", ver::k88PortName}},
      {"ports", {"description", ver::k97PortDescription}},
      {"ports", {"vendor", ver::k100PortVendor}},
      {"ports", {"category", ver::k101PortCategory}},
      {"ports", {"available_for_dynamic_portgroup", ver::k111DynamicPortgroup}},
      {"portgroups", {"dynamic_portgroup", ver::k111DynamicPortgroup}}};
  for (const auto& [collection, f] : fields) {
    const std::string query = "?sort_key=" + std::string(f.name);
    INFO(collection << query);
    api.version = v(f.since);
    CHECK(status(api, "/v1/" + collection + query) == 200);
    CHECK(status(api, "/v1/" + collection + "/detail" + query) == 200);
    api.version = v(f.since - 1);
    CHECK(status(api, "/v1/" + collection + query) == 406);
    CHECK(status(api, "/v1/" + collection + "/detail" + query) == 406);
  }
}

// Ironic's PortgroupsController.get_all and detail (portgroup.py) check sort_key only with
// check_allowed_portgroup_fields (utils.py: mode, properties, dynamic_portgroup) and the
// invalid_sort_key_list; physical_network and category are columns of the portgroups table
// (models.py), so sorting by them is 200 below 1.102 and 1.103, as ?fields= is
// (microversions_1_102_plus_test.cpp). Kiln's parseListRequest answers 406.
TEST_CASE("API 1.102 and 1.103: port groups sort by physical_network and category before "
          "those versions, as Ironic",
          "[server][api][microversions]") {
  TestApi api;
  api.version = v(ver::kMax);
  createPortgroup(api, api.createNode()["uuid"], "pg-old-sort");
  const std::vector<VersionedField> fields = {
      {"physical_network", ver::k102PortgroupPhysicalNetwork},
      {"category", ver::k103PortgroupCategory}};
  for (const auto& f : fields) {
    INFO(f.name);
    api.version = v(f.since - 1);
    CHECK(status(api, "/v1/portgroups?sort_key=" + std::string(f.name)) == 200);
    CHECK(status(api, "/v1/portgroups/detail?sort_key=" + std::string(f.name)) == 200);
  }
}
