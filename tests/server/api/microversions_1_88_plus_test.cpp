// Microversions 1.88 to 1.101, one TEST_CASE each (1.90 together with its removal in 1.105):
// what the version adds, and what a client of the version before sees. 1.89, 1.93, 1.95 and
// 1.96 are tested elsewhere. See microversions_1_79_plus_test.cpp for the conventions; these
// tests need the server to serve 1.115 (ver::kMax).
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

Response postPort(TestApi& api, Json body) { return api.post("/v1/ports", body); }

}  // namespace

TEST_CASE("API 1.88: ports have a unique name and are found by it",
          "[server][api][microversions]") {
  TestApi api;
  const int k = ver::k88PortName;
  api.version = v(k);
  const std::string n = api.createNode({{"name", "pn"}})["uuid"];
  Json p = createPort(api, n, "52:54:00:00:88:01", {{"name", "nic-1"}});
  const std::string uuid = p["uuid"];
  CHECK(p["name"] == "nic-1");
  CHECK(createPort(api, n, "52:54:00:00:88:02")["name"].is_null());

  Response byName = api.get("/v1/ports/nic-1");
  REQUIRE(byName.status == 200);
  CHECK(byName.json()["uuid"] == uuid);
  CHECK(api.get("/v1/ports/nic-2").status == 404);
  Response dup =
      postPort(api, {{"address", "52:54:00:00:88:03"}, {"node_uuid", n}, {"name", "nic-1"}});
  CHECK(dup.status == 409);
  CHECK(dup.fault() == "A port with name nic-1 already exists.");
  Response spaced =
      postPort(api, {{"address", "52:54:00:00:88:03"}, {"node_uuid", n}, {"name", "a b"}});
  // As Ironic: Ironic does not check a port name (PORT_SCHEMA: any string; no logical-name
  // rule in PortsController.post), so "a b" is created (201); Kiln answers 400 "Cannot create
  // port with invalid name".
  CHECK(spaced.status == 201);
  Response renamed = api.patch("/v1/ports/nic-1", Json::array({op("replace", "/name", "nic-9")}));
  REQUIRE(renamed.status == 200);
  CHECK(renamed.json()["name"] == "nic-9");
  CHECK(api.get("/v1/ports/nic-9?fields=name").json()["name"] == "nic-9");
  CHECK(listSize(api, "/v1/ports?fields=uuid,name", "ports") >= 2);

  // What 1.87 sees.
  api.version = v(k - 1);
  CHECK_FALSE(api.get("/v1/ports/" + uuid).json().contains("name"));
  CHECK(api.get("/v1/ports/" + uuid + "?fields=name").status == 406);
  CHECK(api.get("/v1/ports?fields=uuid,name").status == 406);
  CHECK(postPort(api, {{"address", "52:54:00:00:88:04"}, {"node_uuid", n}, {"name", "nic-4"}})
            .status == 406);
  // Deliberate difference (docs/compatibility.md): Ironic master finds a port by name or MAC
  // at every version, but the released ironic-tempest-plugin expects 400 for a non-UUID port
  // identity; Kiln keeps that below 1.88 and looks names and MACs up from 1.88.
  CHECK(api.get("/v1/ports/nic-9").status == 400);
  api.version = "1." + std::to_string(kiln::server::ver::k88PortName);
  CHECK(api.get("/v1/ports/nic-9").status == 200);
  CHECK(api.get("/v1/ports/52:54:00:00:88:01").status == 200);
}

TEST_CASE("API 1.90 and 1.105: OVN VTEP keys in local_link_connection, from 1.90 to 1.104 only",
          "[server][api][microversions]") {
  TestApi api;
  api.version = v(ver::k90OvnVtep);
  const std::string n = api.createNode()["uuid"];
  const Json vtep = {{"port_id", "Ethernet1/1"},
                     {"vtep-logical-switch", "ls-1"},
                     {"vtep-physical-switch", "ps-1"}};
  Json p = createPort(api, n, "52:54:00:00:90:01", {{"local_link_connection", vtep}});
  CHECK(p["local_link_connection"] == vtep);
  const std::string path = "/v1/ports/" + p["uuid"].get<std::string>();
  // Each vtep key needs the other.
  Response half = postPort(api, {{"address", "52:54:00:00:90:02"},
                                 {"node_uuid", n},
                                 {"local_link_connection",
                                  {{"port_id", "Ethernet1/2"}, {"vtep-logical-switch", "ls-1"}}}});
  CHECK(half.status == 400);
  // A port without vtep keys is shown as it is at every version.
  const Json plain = {{"port_id", "Ethernet1/3"}, {"switch_id", "0a:1b:2c:3d:4e:5f"}};
  const std::string plainPath =
      "/v1/ports/" +
      createPort(api, n, "52:54:00:00:90:03", {{"local_link_connection", plain}})["uuid"]
          .get<std::string>();

  api.version = v(ver::k105RemoveOvnVtep - 1);
  CHECK(api.get(path).json()["local_link_connection"] == vtep);

  int mac = 0x10;
  for (int minor : {ver::k90OvnVtep - 1, ver::k105RemoveOvnVtep}) {
    api.version = v(minor);
    INFO(api.version);
    const Json llc = api.get(path).json()["local_link_connection"];
    CHECK_FALSE(llc.contains("vtep-logical-switch"));
    CHECK_FALSE(llc.contains("vtep-physical-switch"));
    // As Ironic: Ironic's hide_fields_in_newer_versions (port.py) replaces the whole
    // local_link_connection with {} when it holds a vtep key outside 1.90-1.104; Kiln drops the
    // two vtep keys and keeps port_id.
    CHECK(llc == Json::object());
    CHECK(api.get(plainPath).json()["local_link_connection"] == plain);
    // As Ironic: Ironic's _check_allowed_port_fields refuses a new port whose
    // local_link_connection has vtep-logical-switch outside 1.90-1.104 (406 Not Acceptable);
    // Kiln creates it.
    const std::string address = "52:54:00:00:90:" + std::to_string(mac++);
    CHECK(postPort(api, {{"address", address}, {"node_uuid", n}, {"local_link_connection", vtep}})
              .status == 406);
  }
}

TEST_CASE("API 1.91: /v1/nodes/<name>.json is the node named so", "[server][api][microversions]") {
  TestApi api;
  const int k = ver::k91DotJson;
  api.version = v(k);
  const std::string suffixed = api.createNode({{"name", "test.json"}})["uuid"];
  const std::string plain = api.createNode({{"name", "test"}})["uuid"];
  Response r = api.get("/v1/nodes/test.json");
  REQUIRE(r.status == 200);
  CHECK(r.json()["uuid"] == suffixed);
  Response patched =
      api.patch("/v1/nodes/test.json", Json::array({op("add", "/extra/seen", "yes")}));
  REQUIRE(patched.status == 200);
  CHECK(patched.json()["uuid"] == suffixed);

  api.version = v(k - 1);
  r = api.get("/v1/nodes/test.json");
  REQUIRE(r.status == 200);
  // As Ironic: below 1.91 Ironic's JsonExtensionMiddleware strips a trailing ".json" from
  // the path of a request that names its version, so 1.90 gets the node "test"; Kiln never
  // strips it.
  CHECK(r.json()["uuid"] == plain);
}

TEST_CASE("API 1.92: a manual cleaning may run a runbook named like a node trait",
          "[server][api][microversions]") {
  // runbook_api_test.cpp covers the runbook CRUD; this is the provision hook.
  TestApi api;
  const int k = ver::k92Runbooks;
  api.version = v(k);
  Json step = biosStep("Runbook", "Ran");
  step["order"] = 1;
  Response rb =
      api.post("/v1/runbooks", {{"name", "CUSTOM_RB_BIOS"}, {"steps", Json::array({step})}});
  INFO(rb.body);
  REQUIRE(rb.status == 201);
  const std::string rbUuid = rb.json()["uuid"];
  manageableNode(api, "r1");
  manageableNode(api, "r2");  // without the trait
  REQUIRE(api.put("/v1/nodes/r1/traits", {{"traits", {"CUSTOM_RB_BIOS"}}}).status == 204);

  REQUIRE(api.provision("r1", "clean", {{"runbook", "CUSTOM_RB_BIOS"}}).status == 202);
  Json n = node(api, "r1");
  CHECK(n["provision_state"] == "manageable");
  CHECK(n["last_error"].is_null());
  CHECK(biosValue(api, "r1", "Runbook") == "Ran");
  CHECK(api.provision("r1", "clean", {{"runbook", rbUuid}}).status == 202);
  CHECK(node(api, "r1")["provision_state"] == "manageable");

  Response unapproved = api.provision("r2", "clean", {{"runbook", "CUSTOM_RB_BIOS"}});
  CHECK(unapproved.status == 400);
  CHECK_THAT(unapproved.fault(),
             Catch::Contains("This runbook has not been approved for use on this node"));
  Response both = api.provision(
      "r1", "clean",
      {{"runbook", "CUSTOM_RB_BIOS"}, {"clean_steps", Json::array({biosStep("A", "1")})}});
  CHECK(both.status == 400);
  CHECK(both.fault() == "Please provide either \"clean_steps\" or a runbook, but not both.");
  Response provide = api.provision("r1", "provide", {{"runbook", "CUSTOM_RB_BIOS"}});
  CHECK(provide.status == 400);
  CHECK(api.provision("r1", "clean", {{"runbook", "CUSTOM_NOPE"}}).status == 404);
  CHECK(node(api, "r1")["provision_state"] == "manageable");
  CHECK(node(api, "r2")["provision_state"] == "manageable");

  // 1.91 does not know the parameter.
  api.version = v(k - 1);
  CHECK(api.provision("r1", "clean", {{"runbook", "CUSTOM_RB_BIOS"}}).status == 406);
  CHECK(node(api, "r1")["provision_state"] == "manageable");
}

TEST_CASE("API 1.94: a new port may name its node in node_ident, by name or UUID",
          "[server][api][microversions]") {
  TestApi api;
  const int k = ver::k94PortNodename;
  api.version = v(k);
  const std::string uuid = api.createNode({{"name", "ni"}})["uuid"];
  Response byName = postPort(api, {{"address", "52:54:00:00:94:01"}, {"node_ident", "ni"}});
  INFO(byName.body);
  REQUIRE(byName.status == 201);
  CHECK(byName.json()["node_uuid"] == uuid);
  CHECK_FALSE(byName.json().contains("node_ident"));
  Response byUuid = postPort(api, {{"address", "52:54:00:00:94:02"}, {"node_ident", uuid}});
  REQUIRE(byUuid.status == 201);
  CHECK(byUuid.json()["node_uuid"] == uuid);

  // Exactly one of node_ident and node_uuid.
  CHECK(postPort(api, {{"address", "52:54:00:00:94:03"}, {"node_ident", "ni"}, {"node_uuid", uuid}})
            .status == 400);
  CHECK(postPort(api, {{"address", "52:54:00:00:94:03"}}).status == 400);
  Response unknown = postPort(api, {{"address", "52:54:00:00:94:03"}, {"node_ident", "nope"}});
  // As Ironic: Ironic's PortsController.post raises NodeNotFound with code 400 for a node
  // it cannot find (whether named in node_ident or node_uuid); Kiln answers 404 for node_ident.
  CHECK(unknown.status == 400);
  CHECK(listSize(api, "/v1/ports", "ports") == 2);

  // What 1.93 sees.
  api.version = v(k - 1);
  CHECK(postPort(api, {{"address", "52:54:00:00:94:04"}, {"node_ident", "ni"}}).status == 406);
  CHECK(postPort(api, {{"address", "52:54:00:00:94:04"}, {"node_uuid", uuid}}).status == 201);
}

TEST_CASE("API 1.97: ports have a description and a description_contains filter",
          "[server][api][microversions]") {
  TestApi api;
  const int k = ver::k97PortDescription;
  api.version = v(k);
  const std::string n = api.createNode()["uuid"];
  Json p1 = createPort(api, n, "52:54:00:00:97:01", {{"description", "uplink to switch A"}});
  const std::string uuid = p1["uuid"];
  CHECK(p1["description"] == "uplink to switch A");
  Json p2 = createPort(api, n, "52:54:00:00:97:02");
  CHECK(p2["description"].is_null());
  Response patched = api.patch("/v1/ports/" + p2["uuid"].get<std::string>(),
                               Json::array({op("add", "/description", "spare, switch B")}));
  REQUIRE(patched.status == 200);
  CHECK(patched.json()["description"] == "spare, switch B");
  CHECK(listSize(api, "/v1/ports?description_contains=uplink", "ports") == 1);
  CHECK(listSize(api, "/v1/ports/detail?description_contains=switch", "ports") == 2);
  CHECK(listSize(api, "/v1/ports?description_contains=router", "ports") == 0);
  Response tooLong = postPort(
      api,
      {{"address", "52:54:00:00:97:03"}, {"node_uuid", n}, {"description", std::string(256, 'd')}});
  CHECK(tooLong.status == 400);

  // What 1.96 sees.
  api.version = v(k - 1);
  CHECK_FALSE(api.get("/v1/ports/" + uuid).json().contains("description"));
  CHECK(api.get("/v1/ports/" + uuid + "?fields=description").status == 406);
  CHECK(postPort(api, {{"address", "52:54:00:00:97:04"}, {"node_uuid", n}, {"description", "d"}})
            .status == 406);
  // As Ironic: Ironic's PortsController.get_all passes description_contains to the database
  // at every version (no allow_* check for it), so 1.96 gets the one matching port; Kiln
  // answers 406 below 1.97.
  Response old = api.get("/v1/ports?description_contains=uplink");
  CHECK(old.status == 200);
  CHECK(old.json()["ports"].size() == 1);
}

TEST_CASE("API 1.98: a PATCH path may escape '/' and '~' in a key",
          "[server][api][microversions]") {
  TestApi api;
  const int k = ver::k98SupportSpecialCharInAttributes;
  // Ironic decodes the first path segment from 1.98 (before its allowed-fields check); the
  // segments below it are decoded by the JSON patch at every version.
  for (int minor : {k, k - 1}) {
    api.version = v(minor);
    INFO(api.version);
    const std::string name = "esc-" + std::to_string(minor);
    api.createNode({{"name", name}});
    Response r = api.patch("/v1/nodes/" + name, Json::array({op("add", "/extra/a~1b~0c", "v")}));
    REQUIRE(r.status == 200);
    CHECK(r.json()["extra"] == Json{{"a/b~c", "v"}});
  }
}

TEST_CASE("API 1.99: ports and port groups filter by their node's conductor group",
          "[server][api][microversions]") {
  TestApi api;
  const int k = ver::k99PortPortgroupConductorGroupFilter;
  api.version = v(k);
  const std::string g1 = api.createNode({{"name", "g1n"}, {"conductor_group", "rack-1"}})["uuid"];
  const std::string g0 = api.createNode({{"name", "g0n"}})["uuid"];
  createPort(api, g1, "52:54:00:00:99:01");
  createPort(api, g0, "52:54:00:00:99:02");
  createPortgroup(api, g1, "pg-g1");
  createPortgroup(api, g0, "pg-g0");

  CHECK(listSize(api, "/v1/ports?conductor_groups=rack-1", "ports") == 1);
  CHECK(listSize(api, "/v1/ports/detail?conductor_groups=rack-1,rack-2", "ports") == 1);
  CHECK(listSize(api, "/v1/ports?conductor_groups=rack-2", "ports") == 0);
  CHECK(listSize(api, "/v1/portgroups?conductor_groups=rack-1", "portgroups") == 1);
  CHECK(listSize(api, "/v1/portgroups/detail?conductor_groups=rack-2", "portgroups") == 0);
  // Not together with a node, port group or address filter.
  for (const std::string path :
       {"/v1/ports?conductor_groups=rack-1&node=g1n",
        "/v1/ports?conductor_groups=rack-1&portgroup=pg-g1",
        "/v1/ports?conductor_groups=rack-1&address=52:54:00:00:99:01",
        "/v1/portgroups?conductor_groups=rack-1&node=g1n",
        "/v1/portgroups?conductor_groups=rack-1&address=52:54:00:00:99:01"}) {
    INFO(path);
    CHECK(api.get(path).status == 400);
  }

  // Ironic does not gate the parameter by version: 1.98 filters the same.
  api.version = v(k - 1);
  CHECK(listSize(api, "/v1/ports?conductor_groups=rack-1", "ports") == 1);
  CHECK(listSize(api, "/v1/portgroups?conductor_groups=rack-1", "portgroups") == 1);
}

TEST_CASE("API 1.100: ports have a vendor", "[server][api][microversions]") {
  TestApi api;
  const int k = ver::k100PortVendor;
  api.version = v(k);
  const std::string n = api.createNode()["uuid"];
  Json p = createPort(api, n, "52:54:00:01:00:01", {{"vendor", "mellanox"}});
  const std::string uuid = p["uuid"];
  CHECK(p["vendor"] == "mellanox");
  CHECK(createPort(api, n, "52:54:00:01:00:02")["vendor"].is_null());
  Response patched =
      api.patch("/v1/ports/" + uuid, Json::array({op("replace", "/vendor", "intel")}));
  REQUIRE(patched.status == 200);
  CHECK(patched.json()["vendor"] == "intel");
  CHECK(api.get("/v1/ports/" + uuid + "?fields=vendor").json()["vendor"] == "intel");
  Response tooLong = postPort(
      api, {{"address", "52:54:00:01:00:03"}, {"node_uuid", n}, {"vendor", std::string(33, 'v')}});
  CHECK(tooLong.status == 400);

  // What 1.99 sees.
  api.version = v(k - 1);
  CHECK_FALSE(api.get("/v1/ports/" + uuid).json().contains("vendor"));
  CHECK_FALSE(api.get("/v1/ports/detail").json()["ports"][0].contains("vendor"));
  CHECK(api.get("/v1/ports/" + uuid + "?fields=vendor").status == 406);
  CHECK(api.get("/v1/ports?fields=vendor").status == 406);
  CHECK(postPort(api, {{"address", "52:54:00:01:00:04"}, {"node_uuid", n}, {"vendor", "intel"}})
            .status == 406);
}

TEST_CASE("API 1.101: ports have a category", "[server][api][microversions]") {
  TestApi api;
  const int k = ver::k101PortCategory;
  api.version = v(k);
  const std::string n = api.createNode()["uuid"];
  Json p = createPort(api, n, "52:54:00:01:01:01", {{"category", "storage"}});
  const std::string uuid = p["uuid"];
  CHECK(p["category"] == "storage");
  CHECK(createPort(api, n, "52:54:00:01:01:02")["category"].is_null());
  Response patched =
      api.patch("/v1/ports/" + uuid, Json::array({op("replace", "/category", "provisioning")}));
  REQUIRE(patched.status == 200);
  CHECK(patched.json()["category"] == "provisioning");
  Response tooLong = postPort(
      api,
      {{"address", "52:54:00:01:01:03"}, {"node_uuid", n}, {"category", std::string(81, 'c')}});
  CHECK(tooLong.status == 400);

  // What 1.100 sees.
  api.version = v(k - 1);
  CHECK_FALSE(api.get("/v1/ports/" + uuid).json().contains("category"));
  CHECK(api.get("/v1/ports/" + uuid + "?fields=category").status == 406);
  CHECK(api.get("/v1/ports?fields=category").status == 406);
  CHECK(postPort(api, {{"address", "52:54:00:01:01:04"}, {"node_uuid", n}, {"category", "storage"}})
            .status == 406);
}
