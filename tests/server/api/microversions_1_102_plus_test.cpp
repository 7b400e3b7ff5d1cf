// Microversions 1.102 to 1.115, one TEST_CASE each (1.105 is with 1.90 in
// microversions_1_88_plus_test.cpp): what the version adds, and what a client of the version
// before sees. 1.109 and 1.114 are tested elsewhere. See microversions_1_79_plus_test.cpp for
// the conventions; these tests need the server to serve 1.115 (ver::kMax).
//
// Where a comment says "As Ironic", Kiln once differed: the CHECK pins Ironic's behaviour.
#include <catch2/catch.hpp>

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

size_t listSize(TestApi& api, const std::string& path, const std::string& collection) {
  Response r = api.get(path);
  INFO(path << ": " << r.body);
  REQUIRE(r.status == 200);
  return r.json()[collection].size();
}

/// A manual cleaning whose bios.apply_configuration step fails (settings is not a list): one
/// node history entry.
void failCleaning(TestApi& api, const std::string& ident) {
  const Json bad = {{"interface", "bios"},
                    {"step", "apply_configuration"},
                    {"args", {{"settings", "not-a-list"}}}};
  REQUIRE(api.provision(ident, "clean", {{"clean_steps", Json::array({bad})}}).status == 202);
  REQUIRE(node(api, ident)["provision_state"] == "clean failed");
}

/// The only entry of a node's detailed history.
Json onlyDetailedEvent(TestApi& api, const std::string& ident) {
  Response r = api.get("/v1/nodes/" + ident + "/history?detail=true");
  INFO(r.body);
  REQUIRE(r.status == 200);
  Json list = r.json()["history"];
  REQUIRE(list.size() == 1);
  return list[0];
}

}  // namespace

TEST_CASE("API 1.102: port groups have a physical network", "[server][api][microversions]") {
  TestApi api;
  const int k = ver::k102PortgroupPhysicalNetwork;
  api.version = v(k);
  const std::string n = api.createNode()["uuid"];
  Json pg = createPortgroup(api, n, "pg1", {{"physical_network", "physnet-a"}});
  CHECK(pg["physical_network"] == "physnet-a");
  CHECK(createPortgroup(api, n, "pg2")["physical_network"].is_null());
  Response patched = api.patch("/v1/portgroups/pg1",
                               Json::array({op("replace", "/physical_network", "physnet-b")}));
  REQUIRE(patched.status == 200);
  CHECK(patched.json()["physical_network"] == "physnet-b");
  CHECK(api.get("/v1/portgroups/pg1?fields=physical_network").json()["physical_network"] ==
        "physnet-b");
  Response tooLong =
      api.post("/v1/portgroups",
               {{"node_uuid", n}, {"name", "pg3"}, {"physical_network", std::string(65, 'p')}});
  CHECK(tooLong.status == 400);

  // What 1.101 sees.
  api.version = v(k - 1);
  CHECK_FALSE(api.get("/v1/portgroups/pg1").json().contains("physical_network"));
  CHECK_FALSE(
      api.get("/v1/portgroups/detail").json()["portgroups"][0].contains("physical_network"));
  Response fields = api.get("/v1/portgroups/pg1?fields=physical_network");
  // As Ironic: Ironic's check_allowed_portgroup_fields has rules for mode, properties and
  // dynamic_portgroup only, and its query schema lists physical_network at every version: below
  // 1.102 ?fields=physical_network is 200 and the field is left out; Kiln answers 406.
  CHECK(fields.status == 200);
  CHECK_FALSE(fields.json().contains("physical_network"));
  // As Ironic: Ironic's portgroup POST (PORTGROUP_SCHEMA, create_request_body) takes
  // physical_network at every version and only hides it below 1.102 (201); Kiln answers 406.
  CHECK(
      api.post("/v1/portgroups", {{"node_uuid", n}, {"name", "pg-old"}, {"physical_network", "p"}})
          .status == 201);
}

TEST_CASE("API 1.103: port groups have a category", "[server][api][microversions]") {
  TestApi api;
  const int k = ver::k103PortgroupCategory;
  api.version = v(k);
  const std::string n = api.createNode()["uuid"];
  Json pg = createPortgroup(api, n, "pg1", {{"category", "bond"}});
  CHECK(pg["category"] == "bond");
  CHECK(createPortgroup(api, n, "pg2")["category"].is_null());
  Response patched =
      api.patch("/v1/portgroups/pg1", Json::array({op("replace", "/category", "lag")}));
  REQUIRE(patched.status == 200);
  CHECK(patched.json()["category"] == "lag");
  Response tooLong = api.post(
      "/v1/portgroups", {{"node_uuid", n}, {"name", "pg3"}, {"category", std::string(81, 'c')}});
  CHECK(tooLong.status == 400);

  // What 1.102 sees.
  api.version = v(k - 1);
  CHECK_FALSE(api.get("/v1/portgroups/pg1").json().contains("category"));
  CHECK(api.get("/v1/portgroups/pg1").json().contains("physical_network"));  // 1.102's field
  Response fields = api.get("/v1/portgroups?fields=category");
  // As Ironic: as for physical_network, Ironic has no version rule for category in
  // ?fields= (200, the field left out) nor in POST (201); Kiln answers 406 to both.
  CHECK(fields.status == 200);
  // As Ironic: (POST, see above)
  CHECK(api.post("/v1/portgroups", {{"node_uuid", n}, {"name", "pg-old"}, {"category", "bond"}})
            .status == 201);
}

TEST_CASE("API 1.104: nodes have an instance_name, filled from instance_info.display_name",
          "[server][api][microversions]") {
  TestApi api;
  const int k = ver::k104NodeInstanceName;

  // Below 1.104 the field is hidden and refused, but a change of instance_info still names the
  // instance after its display_name (Ironic's node PATCH does so at every version).
  api.version = v(k - 1);
  api.createNode({{"name", "n1"}});
  CHECK_FALSE(node(api, "n1").contains("instance_name"));
  CHECK(api.get("/v1/nodes/n1?fields=instance_name").status == 406);
  CHECK(api.get("/v1/nodes?instance_name=vm-1").status == 406);
  CHECK(api.post("/v1/nodes", {{"driver", "fake-hardware"}, {"instance_name", "vm-0"}}).status ==
        406);
  CHECK(api.patch("/v1/nodes/n1", Json::array({op("add", "/instance_name", "vm-0")})).status ==
        406);
  Response synced =
      api.patch("/v1/nodes/n1", Json::array({op("add", "/instance_info/display_name", "vm-1")}));
  REQUIRE(synced.status == 200);
  CHECK_FALSE(synced.json().contains("instance_name"));

  api.version = v(k);
  CHECK(node(api, "n1")["instance_name"] == "vm-1");
  // Only while it is unset.
  REQUIRE(
      api.patch("/v1/nodes/n1", Json::array({op("replace", "/instance_info/display_name", "vm-2")}))
          .status == 200);
  CHECK(node(api, "n1")["instance_name"] == "vm-1");
  Json n2 = api.createNode({{"name", "n2"}, {"instance_name", "explicit"}});
  CHECK(n2["instance_name"] == "explicit");
  CHECK(api.createNode({{"name", "n3"}})["instance_name"].is_null());
  Response set = api.patch("/v1/nodes/n3", Json::array({op("add", "/instance_name", "vm-3")}));
  REQUIRE(set.status == 200);
  CHECK(set.json()["instance_name"] == "vm-3");
  CHECK(api.post("/v1/nodes", {{"driver", "fake-hardware"}, {"instance_name", ""}}).status == 400);
  CHECK(
      api.post("/v1/nodes", {{"driver", "fake-hardware"}, {"instance_name", std::string(256, 'i')}})
          .status == 400);

  Response filtered = api.get("/v1/nodes?instance_name=vm-1");
  REQUIRE(filtered.status == 200);
  REQUIRE(filtered.json()["nodes"].size() == 1);
  CHECK(filtered.json()["nodes"][0]["name"] == "n1");
  CHECK(listSize(api, "/v1/nodes/detail?instance_name=explicit", "nodes") == 1);
  CHECK(listSize(api, "/v1/nodes?instance_name=nobody", "nodes") == 0);
}

TEST_CASE("API 1.106: port groups filter by their node's shard", "[server][api][microversions]") {
  TestApi api;
  const int k = ver::k106PortgroupShard;
  api.version = v(k);
  const std::string a = api.createNode({{"shard", "a"}})["uuid"];
  const std::string b = api.createNode({{"shard", "b"}})["uuid"];
  const std::string none = api.createNode()["uuid"];
  createPortgroup(api, a, "pg-a");
  createPortgroup(api, b, "pg-b");
  createPortgroup(api, none, "pg-none");
  CHECK(listSize(api, "/v1/portgroups?shard=a", "portgroups") == 1);
  CHECK(listSize(api, "/v1/portgroups?shard=a,b", "portgroups") == 2);
  CHECK(listSize(api, "/v1/portgroups/detail?shard=b", "portgroups") == 1);
  CHECK(listSize(api, "/v1/portgroups?shard=c", "portgroups") == 0);

  // What 1.105 sees.
  api.version = v(k - 1);
  for (const char* path : {"/v1/portgroups?shard=a", "/v1/portgroups/detail?shard=a"}) {
    INFO(path);
    Response r = api.get(path);
    CHECK(r.status == 406);
    CHECK(r.fault() ==
          "Request not acceptable. The minimal required API version should be " + v(k));
  }
  CHECK(listSize(api, "/v1/portgroups", "portgroups") == 3);
  CHECK(listSize(api, "/v1/ports?shard=a", "ports") == 0);  // ports have it since 1.82
}

TEST_CASE("API 1.107: answers carry x-openstack-request-id as well as openstack-request-id",
          "[server][api][microversions]") {
  TestApi api;
  const int k = ver::k107XOpenstackRequestId;
  std::set<std::string> ids;
  // Ironic's request id middleware sends both headers whatever the version.
  for (int minor : {k, k - 1}) {
    api.version = v(minor);
    for (const Response& r : {api.get("/v1/nodes"), api.get("/v1/nodes/missing"),
                              api.post("/v1/nodes", Json::object())}) {
      INFO(api.version << " " << r.status);
      const std::string id = r.header("x-openstack-request-id");
      CHECK_THAT(id, Catch::StartsWith("req-"));
      CHECK(r.header("openstack-request-id") == id);
      ids.insert(id);
    }
  }
  CHECK(ids.size() == 6);  // one per request
}

TEST_CASE("API 1.108: servicing may be asked to skip the ramdisk", "[server][api][microversions]") {
  TestApi api;
  const int k = ver::k108ServiceDisableRamdisk;
  api.version = v(k);
  api.createActiveNode({{"name", "d1"}});
  REQUIRE(api.provision("d1", "service",
                        {{"service_steps", Json::array({biosStep("NoRamdisk", "Yes")})},
                         {"disable_ramdisk", true}})
              .status == 202);
  Json n = node(api, "d1");
  CHECK(n["provision_state"] == "active");
  CHECK(n["last_error"].is_null());
  CHECK(biosValue(api, "d1", "NoRamdisk") == "Yes");
  // Only with cleaning or servicing.
  Response rebuild = api.provision("d1", "rebuild", {{"disable_ramdisk", true}});
  CHECK(rebuild.status == 400);
  CHECK(node(api, "d1")["provision_state"] == "active");

  // What 1.107 sees: disable_ramdisk with service is too new; servicing itself is not.
  api.version = v(k - 1);
  Response old = api.provision(
      "d1", "service",
      {{"service_steps", Json::array({biosStep("Old", "1")})}, {"disable_ramdisk", true}});
  CHECK(old.status == 406);
  CHECK(biosValue(api, "d1", "Old").empty());
  REQUIRE(api.provision("d1", "service", {{"service_steps", Json::array({biosStep("Old", "2")})}})
              .status == 202);
  CHECK(node(api, "d1")["provision_state"] == "active");
  CHECK(biosValue(api, "d1", "Old") == "2");
}

TEST_CASE("API 1.110: abort ends a deployment waiting in wait call-back",
          "[server][api][microversions]") {
  TestApi api;
  const int k = ver::k110DeploywaitAbort;
  api.version = v(k);
  availableNode(api, "w1");
  // A deploy.wait step parks the deployment in wait call-back for an hour.
  Json wait = waitStep(3600);
  wait["priority"] = 90;
  REQUIRE(api.provision("w1", "active", {{"deploy_steps", Json::array({wait})}}).status == 202);
  Json n = node(api, "w1");
  REQUIRE(n["provision_state"] == "wait call-back");
  CHECK(n["target_provision_state"] == "active");
  CHECK(n["deploy_step"]["step"] == "wait");

  // 1.109 may not abort it.
  api.version = v(k - 1);
  Response old = api.provision("w1", "abort");
  CHECK(old.status == 406);
  CHECK(node(api, "w1")["provision_state"] == "wait call-back");

  api.version = v(k);
  REQUIRE(api.provision("w1", "abort").status == 202);
  n = node(api, "w1");
  CHECK(n["provision_state"] == "deploy failed");
  CHECK_THAT(text(n["last_error"]), Catch::Contains("aborted"));

  // Aborting deploy hold needs no version (Ironic gates only wait call-back): 1.109 may.
  Json hold = holdStep();
  hold["args"] = Json::object();
  hold["priority"] = 90;
  REQUIRE(api.provision("w1", "active", {{"deploy_steps", Json::array({hold})}}).status == 202);
  REQUIRE(node(api, "w1")["provision_state"] == "deploy hold");
  api.version = v(k - 1);
  REQUIRE(api.provision("w1", "abort").status == 202);
  n = node(api, "w1");
  CHECK(n["provision_state"] == "deploy failed");
  CHECK_THAT(text(n["last_error"]), Catch::Contains("aborted"));
}

TEST_CASE("API 1.111: ports may stay out of dynamic port groups; port groups say if dynamic",
          "[server][api][microversions]") {
  TestApi api;
  const int k = ver::k111DynamicPortgroup;
  api.version = v(k);
  const std::string n = api.createNode()["uuid"];
  Json p1 = createPort(api, n, "52:54:00:01:11:01");
  CHECK(p1["available_for_dynamic_portgroup"] == true);  // the default
  Json p2 = createPort(api, n, "52:54:00:01:11:02", {{"available_for_dynamic_portgroup", false}});
  CHECK(p2["available_for_dynamic_portgroup"] == false);
  const std::string p2Path = "/v1/ports/" + p2["uuid"].get<std::string>();
  Response patched =
      api.patch(p2Path, Json::array({op("replace", "/available_for_dynamic_portgroup", true)}));
  REQUIRE(patched.status == 200);
  CHECK(patched.json()["available_for_dynamic_portgroup"] == true);

  Json pg = createPortgroup(api, n, "pg-dyn");
  CHECK(pg["dynamic_portgroup"] == false);
  CHECK(api.get("/v1/portgroups/pg-dyn?fields=dynamic_portgroup").json()["dynamic_portgroup"] ==
        false);
  // Read-only.
  CHECK(
      api.post("/v1/portgroups", {{"node_uuid", n}, {"name", "pg-x"}, {"dynamic_portgroup", true}})
          .status == 400);
  CHECK(api.patch("/v1/portgroups/pg-dyn", Json::array({op("replace", "/dynamic_portgroup", true)}))
            .status == 400);
  CHECK(api.get("/v1/portgroups/pg-dyn").json()["dynamic_portgroup"] == false);

  // What 1.110 sees.
  api.version = v(k - 1);
  const std::string p1Path = "/v1/ports/" + p1["uuid"].get<std::string>();
  CHECK_FALSE(api.get(p1Path).json().contains("available_for_dynamic_portgroup"));
  CHECK(api.get(p1Path + "?fields=available_for_dynamic_portgroup").status == 406);
  CHECK(api.post("/v1/ports", {{"address", "52:54:00:01:11:03"},
                               {"node_uuid", n},
                               {"available_for_dynamic_portgroup", false}})
            .status == 406);
  CHECK_FALSE(api.get("/v1/portgroups/pg-dyn").json().contains("dynamic_portgroup"));
  CHECK(api.get("/v1/portgroups/pg-dyn?fields=dynamic_portgroup").status == 406);
  CHECK(api.get("/v1/portgroups?fields=dynamic_portgroup").status == 406);
  // A port created by an older client is available.
  const std::string p3 = createPort(api, n, "52:54:00:01:11:04")["uuid"];
  api.version = v(k);
  CHECK(api.get("/v1/ports/" + p3).json()["available_for_dynamic_portgroup"] == true);
}

TEST_CASE("API 1.112: a runbook is approved for a node by a shared trait",
          "[server][api][microversions]") {
  // runbook_api_test.cpp covers the traits sub-resource and the naming rules.
  TestApi api;
  const int k = ver::k112RunbookTraits;
  api.version = v(k);
  Json step = biosStep("ByTrait", "Yes");
  step["order"] = 1;
  for (const char* name : {"bios-runbook", "bare-runbook"}) {
    Response r = api.post("/v1/runbooks", {{"name", name}, {"steps", Json::array({step})}});
    INFO(r.body);
    REQUIRE(r.status == 201);
  }
  REQUIRE(api.put("/v1/runbooks/bios-runbook/traits", {{"traits", {"CUSTOM_RB_ANY"}}}).status ==
          204);
  manageableNode(api, "t1");
  REQUIRE(api.put("/v1/nodes/t1/traits", {{"traits", {"CUSTOM_RB_ANY"}}}).status == 204);

  REQUIRE(api.provision("t1", "clean", {{"runbook", "bios-runbook"}}).status == 202);
  CHECK(node(api, "t1")["provision_state"] == "manageable");
  CHECK(biosValue(api, "t1", "ByTrait") == "Yes");
  Response bare = api.provision("t1", "clean", {{"runbook", "bare-runbook"}});
  CHECK(bare.status == 400);
  CHECK_THAT(bare.fault(), Catch::Contains("has no traits configured"));

  // What 1.111 sees: the runbook's name must be one of the node's traits; no traits sub-resource.
  api.version = v(k - 1);
  Response old = api.provision("t1", "clean", {{"runbook", "bios-runbook"}});
  CHECK(old.status == 400);
  CHECK_THAT(old.fault(),
             Catch::Contains("This runbook has not been approved for use on this node"));
  CHECK(api.get("/v1/runbooks/bios-runbook/traits").status == 404);
  CHECK(node(api, "t1")["provision_state"] == "manageable");
}

TEST_CASE("API 1.113: detailed node history has the project", "[server][api][microversions]") {
  TestApi api;
  const int k = ver::k113NodeHistoryProject;
  api.version = v(k);
  manageableNode(api, "h1");
  failCleaning(api, "h1");
  Json e = onlyDetailedEvent(api, "h1");
  CHECK(keysOf(e) == std::set<std::string>{"uuid", "created_at", "severity", "event_type", "event",
                                           "conductor", "user", "project", "links"});
  CHECK(e["project"].is_null());  // Kiln has no projects
  const std::string path = "/v1/nodes/h1/history/" + e["uuid"].get<std::string>();
  CHECK(api.get(path).json() == e);
  CHECK_FALSE(api.get("/v1/nodes/h1/history").json()["history"][0].contains("project"));

  api.version = v(k - 1);
  CHECK_FALSE(onlyDetailedEvent(api, "h1").contains("project"));
  CHECK_FALSE(api.get(path).json().contains("project"));
}

TEST_CASE("API 1.115: detailed node history has the node's states and a duration",
          "[server][api][microversions]") {
  TestApi api;
  const int k = ver::k115NodeHistoryFields;
  api.version = v(k);
  manageableNode(api, "h1");
  failCleaning(api, "h1");
  Json e = onlyDetailedEvent(api, "h1");
  CHECK(keysOf(e) == std::set<std::string>{"uuid", "created_at", "severity", "event_type", "event",
                                           "conductor", "user", "project", "state",
                                           "target_provision_state", "duration_seconds", "links"});
  CHECK(e["duration_seconds"].is_number_integer());
  CHECK(e["duration_seconds"] == 0);  // the fake clock did not move during the cleaning
  // As Ironic: Ironic's cleaning_error_handler records the history entry before the "fail"
  // transition, so a failed manual cleaning is journalled with state "cleaning" and
  // target_provision_state "manageable"; Kiln journals after it ("clean failed", null).
  CHECK(e["state"] == "cleaning");
  // As Ironic: (target_provision_state, see above)
  CHECK(e["target_provision_state"] == "manageable");
  const std::string path = "/v1/nodes/h1/history/" + e["uuid"].get<std::string>();
  CHECK(api.get(path).json() == e);
  // The short list stays as it was.
  CHECK(keysOf(api.get("/v1/nodes/h1/history").json()["history"][0]) ==
        std::set<std::string>{"uuid", "created_at", "severity", "event", "links"});

  api.version = v(k - 1);
  for (const Json& old : {onlyDetailedEvent(api, "h1"), api.get(path).json()}) {
    CHECK(keysOf(old) == std::set<std::string>{"uuid", "created_at", "severity", "event_type",
                                               "event", "conductor", "user", "project", "links"});
  }
}
