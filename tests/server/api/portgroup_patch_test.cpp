#include <catch2/catch.hpp>

#include <string>

#include "server/model/node.h"
#include "server/storage/storage.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TestApi;

namespace {

Json op(const std::string& o, const std::string& path, Json value = nullptr) {
  Json j = {{"op", o}, {"path", path}};
  if (o != "remove") j["value"] = std::move(value);
  return j;
}

/// Sets a node's stored provision state (the API has no direct way to park it there).
void setProvisionState(TestApi& api, const std::string& uuid, const std::string& state) {
  using namespace kiln::server;
  auto tx = api.app().storage().begin(Storage::Mode::Write).value();
  auto rec = *tx->nodes().findBy(kNodeUuid, Value::text(uuid)).value();
  rec.setText(kNodeProvisionState, state);
  REQUIRE(tx->nodes().update(rec));
  REQUIRE(tx->commit());
}

}  // namespace

TEST_CASE("port group PATCH writes every field Ironic allows", "[server][api][ports][patch]") {
  TestApi api;
  const std::string node = api.createNode({{"name", "pg-a"}})["uuid"];
  const std::string other = api.createNode({{"name", "pg-b"}})["uuid"];
  auto created = api.post("/v1/portgroups", {{"node_uuid", node}, {"name", "bond0"}});
  REQUIRE(created.status == 201);
  const std::string uuid = created.json()["uuid"];

  auto r = api.patch(
      "/v1/portgroups/bond0",
      Json::array({op("replace", "/name", "bond1"), op("add", "/address", "52:54:00:AA:BB:CC"),
                   op("add", "/extra/rack", "r1"),
                   op("replace", "/standalone_ports_supported", "false"),
                   op("replace", "/mode", "802.3ad"), op("add", "/properties/miimon", "100"),
                   op("replace", "/node_uuid", other)}));
  REQUIRE(r.status == 200);
  auto pg = api.get("/v1/portgroups/" + uuid).json();
  CHECK(pg == r.json());
  CHECK(pg["name"] == "bond1");
  CHECK(pg["address"] == "52:54:00:aa:bb:cc");
  CHECK(pg["extra"] == Json{{"rack", "r1"}});
  CHECK(pg["standalone_ports_supported"] == false);
  CHECK(pg["mode"] == "802.3ad");
  CHECK(pg["properties"] == Json{{"miimon", "100"}});
  CHECK(pg["node_uuid"] == other);

  // Removing the nullable fields, or setting them to null: objects become {}, mode null.
  r = api.patch(
      "/v1/portgroups/" + uuid,
      Json::array({op("remove", "/name"), op("remove", "/address"), op("remove", "/extra"),
                   op("replace", "/properties", nullptr), op("replace", "/mode", nullptr),
                   op("replace", "/standalone_ports_supported", true)}));
  REQUIRE(r.status == 200);
  pg = r.json();
  CHECK(pg["name"].is_null());
  CHECK(pg["address"].is_null());
  CHECK(pg["extra"] == Json::object());
  CHECK(pg["properties"] == Json::object());
  CHECK(pg["mode"].is_null());
  CHECK(pg["standalone_ports_supported"] == true);
  // An empty name and mode pass as they are (Ironic checks only non-empty names).
  r = api.patch("/v1/portgroups/" + uuid,
                Json::array({op("add", "/name", ""), op("add", "/mode", "")}));
  CHECK(r.status == 200);
  CHECK(r.json()["name"] == "");
  CHECK(r.json()["mode"] == "");
}

TEST_CASE("port group mode and properties are patched from 1.26", "[server][api][ports][patch]") {
  TestApi api;
  const std::string node = api.createNode()["uuid"];
  REQUIRE(api.post("/v1/portgroups", {{"node_uuid", node}, {"name", "old-pg"}}).status == 201);
  api.version = "1.25";
  CHECK(api.patch("/v1/portgroups/old-pg", Json::array({op("replace", "/mode", "balance-rr")}))
            .status == 406);
  CHECK(api.patch("/v1/portgroups/old-pg", Json::array({op("add", "/properties/a", 1)})).status ==
        406);
  auto r = api.patch("/v1/portgroups/old-pg", Json::array({op("add", "/extra/a", 1)}));
  CHECK(r.status == 200);
  // As Ironic, mode, properties and the ports link are shown at every version...
  CHECK(r.json().contains("mode"));
  CHECK(r.json().contains("properties"));
  CHECK(r.json().contains("ports"));
  CHECK(api.get("/v1/portgroups/old-pg?fields=mode").status == 406);
  // ...and its 1.26 check looks at the first operation only (ironic-tempest-plugin's
  // test_update_portgroup_add at 1.23 relies on it).
  r = api.patch("/v1/portgroups/old-pg",
                Json::array({op("add", "/extra/b", 2), op("add", "/properties/key1", "v")}));
  CHECK(r.status == 200);
  CHECK(r.json()["properties"] == Json({{"key1", "v"}}));
  api.version = "1.26";
  CHECK(api.patch("/v1/portgroups/old-pg", Json::array({op("replace", "/mode", "balance-rr")}))
            .json()["mode"] == "balance-rr");
}

TEST_CASE("bad port group patches are 400 with Ironic's messages and change nothing",
          "[server][api][ports][patch]") {
  TestApi api;
  const std::string node = api.createNode()["uuid"];
  auto created = api.post(
      "/v1/portgroups", {{"node_uuid", node}, {"name", "keep"}, {"address", "52:54:00:00:04:00"}});
  REQUIRE(created.status == 201);
  const std::string uuid = created.json()["uuid"];
  const Json before = api.get("/v1/portgroups/keep").json();
  auto bad = [&](Json ops, int status = 400) {
    auto r = api.patch("/v1/portgroups/keep", ops);
    INFO(ops.dump() << " -> " << r.body);
    CHECK(r.status == status);
    return r.fault();
  };
  // The name message quotes the identifier of the request; every name the patch writes counts.
  CHECK(bad(Json::array({op("replace", "/name", "bad name")})) ==
        "Portgroup keep: Cannot change name to invalid name 'bad name'");
  CHECK(bad(Json::array({op("replace", "/name", "bad name"), op("replace", "/name", "good")})) ==
        "Portgroup keep: Cannot change name to invalid name 'bad name'");
  CHECK(bad(Json::array({op("remove", "/mode")})) ==
        "'mode' is a mandatory attribute and can not be removed");
  CHECK(bad(Json::array({op("remove", "/standalone_ports_supported")})) ==
        "Field `standalone_ports_supported' cannot be None");
  CHECK(bad(Json::array({op("replace", "/standalone_ports_supported", nullptr)})) ==
        "Field `standalone_ports_supported' cannot be None");
  bad(Json::array({op("replace", "/standalone_ports_supported", "maybe")}));
  CHECK(bad(Json::array({op("replace", "/address", "52:54:00:00:04")})) ==
        "Expected valid MAC address for address: 52:54:00:00:04");
  bad(Json::array({op("replace", "/extra", "text")}));
  bad(Json::array({op("replace", "/properties", Json::array())}));
  bad(Json::array({op("replace", "/mode", 3)}));
  CHECK(bad(Json::array({op("replace", "/node_uuid", "8221f906-208b-44a5-b575-f8e8a59c4a84")})) ==
        "Node 8221f906-208b-44a5-b575-f8e8a59c4a84 could not be found.");
  CHECK(bad(Json::array({op("replace", "/node_uuid", "not-a-node")})) ==
        "Expected a UUID or int but received not-a-node.");
  CHECK(bad(Json::array({op("remove", "/node_uuid")})) ==
        "Schema error for patch: 'node_uuid' is a required property");
  CHECK(bad(Json::array({op("replace", "/uuid", "8221f906-208b-44a5-b575-f8e8a59c4a84")})) ==
        "Cannot patch /uuid. Only the following can be updated: address, category, extra, mode, "
        "name, node_uuid, physical_network, properties, standalone_ports_supported");
  // Unique name and address: 409.
  REQUIRE(api.post("/v1/portgroups",
                   {{"node_uuid", node}, {"name", "taken"}, {"address", "52:54:00:00:04:01"}})
              .status == 201);
  CHECK(bad(Json::array({op("replace", "/name", "taken")}), 409) ==
        "A portgroup with name taken already exists.");
  CHECK(bad(Json::array({op("replace", "/address", "52:54:00:00:04:01")}), 409) ==
        "A portgroup with MAC address 52:54:00:00:04:01 already exists.");
  CHECK(api.get("/v1/portgroups/" + uuid).json() == before);
}

TEST_CASE("a port group changes node only when empty and the new node allows it",
          "[server][api][ports][patch]") {
  TestApi api;
  const std::string node = api.createNode()["uuid"];
  const std::string target = api.createNode({{"name", "target"}})["uuid"];
  const std::string uuid = api.post("/v1/portgroups", {{"node_uuid", node}}).json()["uuid"];
  auto move = [&] {
    return api.patch("/v1/portgroups/" + uuid, Json::array({op("replace", "/node_uuid", target)}));
  };
  // A port in the group: 400.
  auto port =
      api.post("/v1/ports",
               {{"address", "52:54:00:00:05:01"}, {"node_uuid", node}, {"portgroup_uuid", uuid}});
  REQUIRE(port.status == 201);
  auto r = move();
  CHECK(r.status == 400);
  CHECK(r.fault() == "Portgroup " + uuid + " can not be associated with node " + target +
                         " because there are ports associated with this portgroup.");
  REQUIRE(api.del("/v1/ports/" + port.json()["uuid"].get<std::string>()).status == 204);
  // The new node must be enrolled, manageable or inspecting, or in maintenance: else 409.
  setProvisionState(api, target, "available");
  r = move();
  CHECK(r.status == 409);
  CHECK(r.fault() == "Portgroup " + uuid + " can not be associated to node " + target +
                         " unless the node is in a enroll, inspecting, inspect wait, manageable "
                         "state or in maintenance mode.");
  CHECK(api.get("/v1/portgroups/" + uuid).json()["node_uuid"] == node);
  REQUIRE(api.putRaw("/v1/nodes/target/maintenance").status == 202);
  CHECK(move().status == 200);
  CHECK(api.get("/v1/portgroups/" + uuid).json()["node_uuid"] == target);
  REQUIRE(api.del("/v1/nodes/target/maintenance").status == 202);
  setProvisionState(api, node, "manageable");
  CHECK(api.patch("/v1/portgroups/" + uuid, Json::array({op("replace", "/node_uuid", node)}))
            .status == 200);
}

TEST_CASE("port group PATCH is refused while its node is inspecting (1.39+)",
          "[server][api][ports][patch]") {
  TestApi api;
  const std::string node = api.createNode()["uuid"];
  const std::string uuid = api.post("/v1/portgroups", {{"node_uuid", node}}).json()["uuid"];
  setProvisionState(api, node, "inspecting");
  auto r = api.patch("/v1/portgroups/" + uuid, Json::array({op("add", "/extra/a", 1)}));
  CHECK(r.status == 409);
  CHECK(r.fault() == "Cannot update portgroup \"" + uuid + "\" on node \"" + node +
                         "\" while it is in state \"inspecting\".");
  api.version = "1.38";
  CHECK(api.patch("/v1/portgroups/" + uuid, Json::array({op("add", "/extra/a", 1)})).status == 200);
}

TEST_CASE("standalone ports are not turned off under a network-booting member",
          "[server][api][ports][patch]") {
  TestApi api;
  const std::string node = api.createNode()["uuid"];
  const std::string uuid = api.post("/v1/portgroups", {{"node_uuid", node}}).json()["uuid"];
  auto port =
      api.post("/v1/ports",
               {{"address", "52:54:00:00:06:01"}, {"node_uuid", node}, {"portgroup_uuid", uuid}});
  REQUIRE(port.status == 201);
  REQUIRE(port.json()["pxe_enabled"] == true);
  const Json off = Json::array({op("replace", "/standalone_ports_supported", false)});
  auto r = api.patch("/v1/portgroups/" + uuid, off);
  CHECK(r.status == 409);
  CHECK(r.fault() == "standalone_ports_supported can not be set to False, because the port group " +
                         uuid + " contains port with 'pxe_enabled' is set to True");
  CHECK(api.get("/v1/portgroups/" + uuid).json()["standalone_ports_supported"] == true);
  const std::string portUuid = port.json()["uuid"];
  REQUIRE(api.patch("/v1/ports/" + portUuid, Json::array({op("replace", "/pxe_enabled", false)}))
              .status == 200);
  CHECK(api.patch("/v1/portgroups/" + uuid, off).status == 200);

  // The noop network interface does not check (Ironic's noop portgroup_changed does nothing).
  const std::string noop = api.createNode({{"network_interface", "noop"}})["uuid"];
  const std::string group = api.post("/v1/portgroups", {{"node_uuid", noop}}).json()["uuid"];
  REQUIRE(
      api.post("/v1/ports",
               {{"address", "52:54:00:00:06:02"}, {"node_uuid", noop}, {"portgroup_uuid", group}})
          .status == 201);
  CHECK(api.patch("/v1/portgroups/" + group, off).status == 200);
}
