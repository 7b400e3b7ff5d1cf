#include <catch2/catch.hpp>

#include <set>

#include "server/model/resources.h"
#include "server/storage/storage.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TestApi;

TEST_CASE("ports are created with normalised MACs and listed", "[server][api][ports]") {
  TestApi api;
  auto node = api.createNode({{"name", "pn"}});
  const std::string nodeUuid = node["uuid"];
  auto r = api.post("/v1/ports", {{"address", "52:54:00:AB:CD:EF"}, {"node_uuid", nodeUuid}});
  REQUIRE(r.status == 201);
  auto port = r.json();
  CHECK(port["address"] == "52:54:00:ab:cd:ef");
  CHECK(port["pxe_enabled"] == true);
  CHECK(port["is_smartnic"] == false);
  CHECK(port["local_link_connection"] == Json::object());
  CHECK(r.header("Location") == "http://kiln.test:6385/v1/ports/" + port["uuid"].get<std::string>());
  auto list = api.get("/v1/ports").json()["ports"];
  REQUIRE(list.size() == 1);
  CHECK(list[0].size() == 3);  // uuid, address, links
  CHECK(api.get("/v1/ports/detail").json()["ports"][0]["node_uuid"] == nodeUuid);
  CHECK(api.get("/v1/ports?address=52:54:00:AB:CD:EF").json()["ports"].size() == 1);
  CHECK(api.get("/v1/ports?address=52:54:00:00:00:00").json()["ports"].empty());
  CHECK(api.get("/v1/ports?address=zz").status == 400);
  CHECK(api.get("/v1/ports?node=pn").json()["ports"].size() == 1);
  CHECK(api.get("/v1/nodes/pn/ports").json()["ports"].size() == 1);
  CHECK(api.get("/v1/nodes/pn/ports/detail").json()["ports"][0].contains("pxe_enabled"));
  CHECK(api.get("/v1/ports/" + port["uuid"].get<std::string>()).json()["node_uuid"] == nodeUuid);
  CHECK(api.get("/v1/ports/not-a-uuid").status == 400);  // before 1.88 a port is a UUID
}

TEST_CASE("port MACs are validated and unique", "[server][api][ports]") {
  TestApi api;
  const std::string node = api.createNode()["uuid"];
  for (const char* mac : {"52:54:00:ab:cd", "52-54-00-ab-cd-ef", "zz:54:00:ab:cd:ef", "5254.00ab.cdef", ""}) {
    INFO(mac);
    auto r = api.post("/v1/ports", {{"address", mac}, {"node_uuid", node}});
    CHECK(r.status == 400);
    CHECK_THAT(r.fault(), Catch::Contains("Expected valid MAC address for address"));
  }
  REQUIRE(api.post("/v1/ports", {{"address", "52:54:00:00:00:01"}, {"node_uuid", node}}).status == 201);
  auto dup = api.post("/v1/ports", {{"address", "52:54:00:00:00:01"}, {"node_uuid", node}});
  CHECK(dup.status == 409);
  CHECK(dup.fault() == "A port with MAC address 52:54:00:00:00:01 already exists.");
  CHECK(api.post("/v1/ports", {{"address", "52:54:00:00:00:02"}}).status == 400);
  auto noNode = api.post("/v1/ports", {{"address", "52:54:00:00:00:02"}, {"node_uuid", "8221f906-208b-44a5-b575-f8e8a59c4a84"}});
  CHECK(noNode.status == 400);
  CHECK_THAT(noNode.fault(), Catch::Contains("could not be found"));
  CHECK(api.get("/v1/ports").json()["ports"].size() == 1);
}

TEST_CASE("ports are patched and deleted, and go with their node", "[server][api][ports]") {
  TestApi api;
  const std::string node = api.createNode({{"name", "pp"}})["uuid"];
  auto port = api.post("/v1/ports", {{"address", "52:54:00:00:00:10"}, {"node_uuid", node},
                                     {"local_link_connection", {{"switch_id", "AA:BB:CC:DD:EE:FF"}, {"port_id", "Eth1"}}}}).json();
  CHECK(port["local_link_connection"]["switch_id"] == "aa:bb:cc:dd:ee:ff");
  const std::string uuid = port["uuid"];
  auto r = api.patch("/v1/ports/" + uuid, Json::parse(R"([{"op":"add","path":"/extra/ext","value":"data"},
                                                         {"op":"replace","path":"/pxe_enabled","value":false}])"));
  REQUIRE(r.status == 200);
  CHECK(r.json()["extra"]["ext"] == "data");
  CHECK(r.json()["pxe_enabled"] == false);
  CHECK(api.patch("/v1/ports/" + uuid, Json::parse(R"([{"op":"replace","path":"/address","value":"bad"}])")).status == 400);
  CHECK(api.patch("/v1/ports/" + uuid, Json::parse(R"([{"op":"replace","path":"/uuid","value":"x"}])")).status == 400);
  CHECK(api.post("/v1/ports", {{"address", "52:54:00:00:00:11"}, {"node_uuid", node},
                               {"local_link_connection", {{"switch_id", "nope"}, {"port_id", "p"}}}}).status == 400);
  CHECK(api.post("/v1/ports", {{"address", "52:54:00:00:00:11"}, {"node_uuid", node},
                               {"local_link_connection", {{"colour", "red"}}}}).status == 400);
  REQUIRE(api.post("/v1/ports", {{"address", "52:54:00:00:00:12"}, {"node_uuid", node}}).status == 201);
  CHECK(api.del("/v1/ports/" + uuid).status == 204);
  CHECK(api.get("/v1/ports/" + uuid).status == 404);
  CHECK(api.del("/v1/nodes/pp").status == 204);
  CHECK(api.get("/v1/ports").json()["ports"].empty());
}

TEST_CASE("port groups hold ports of one node", "[server][api][ports]") {
  TestApi api;
  const std::string node = api.createNode({{"name", "pg-node"}})["uuid"];
  const std::string other = api.createNode({{"name", "other"}})["uuid"];
  auto r = api.post("/v1/portgroups", {{"node_uuid", node}, {"name", "bond0"}, {"address", "52:54:00:00:01:00"}});
  REQUIRE(r.status == 201);
  auto pg = r.json();
  CHECK(pg["mode"] == "active-backup");
  CHECK(pg["standalone_ports_supported"] == true);
  const std::string pgUuid = pg["uuid"];
  CHECK(api.get("/v1/portgroups/bond0").json()["uuid"] == pgUuid);
  CHECK(api.post("/v1/portgroups", {{"node_uuid", node}, {"name", "bond0"}}).status == 409);
  CHECK(api.post("/v1/portgroups", {{"node_uuid", node}, {"name", "bad name"}}).status == 400);
  auto port = api.post("/v1/ports", {{"address", "52:54:00:00:01:01"}, {"node_uuid", node}, {"portgroup_uuid", pgUuid}});
  REQUIRE(port.status == 201);
  CHECK(port.json()["portgroup_uuid"] == pgUuid);
  CHECK(api.post("/v1/ports", {{"address", "52:54:00:00:01:02"}, {"node_uuid", other}, {"portgroup_uuid", pgUuid}}).status == 400);
  CHECK(api.get("/v1/portgroups/bond0/ports").json()["ports"].size() == 1);
  CHECK(api.get("/v1/nodes/pg-node/portgroups").json()["portgroups"].size() == 1);
  auto busy = api.del("/v1/portgroups/bond0");
  CHECK(busy.status == 400);
  CHECK_THAT(busy.fault(), Catch::Contains("contains ports"));
  CHECK(api.del("/v1/ports/" + port.json()["uuid"].get<std::string>()).status == 204);
  CHECK(api.del("/v1/portgroups/bond0").status == 204);
  api.version = "1.22";
  CHECK(api.get("/v1/portgroups").status == 404);
}

TEST_CASE("ports join a port group only on the physical network of its other ports",
          "[server][api][ports]") {
  TestApi api;
  const std::string node = api.createNode({{"name", "physnet-node"}})["uuid"];
  const std::string pg =
      api.post("/v1/portgroups", {{"node_uuid", node}, {"name", "bond0"}}).json()["uuid"];
  auto port = [&](const std::string& mac, Json extra) {
    extra["address"] = mac;
    extra["node_uuid"] = node;
    return api.post("/v1/ports", extra);
  };
  auto op = [](const std::string& o, const std::string& path, Json value = nullptr) {
    Json j = {{"op", o}, {"path", path}};
    if (o != "remove") j["value"] = std::move(value);
    return j;
  };
  auto patchPort = [&](const std::string& uuid, Json ops) {
    return api.patch("/v1/ports/" + uuid, ops);
  };
  auto memberCount = [&] { return api.get("/v1/portgroups/bond0/ports").json()["ports"].size(); };
  const std::string mismatch =
      "cannot become a member of port group " + pg + " which has ports in physical network ";

  // An empty group takes any network; the next members must match it.
  const Json physnet1 = {{"portgroup_uuid", pg}, {"physical_network", "physnet1"}};
  auto p1 = port("52:54:00:00:02:01", physnet1);
  REQUIRE(p1.status == 201);
  auto p2 = port("52:54:00:00:02:02", physnet1);
  REQUIRE(p2.status == 201);
  auto other =
      port("52:54:00:00:02:03", {{"portgroup_uuid", pg}, {"physical_network", "physnet2"}});
  CHECK(other.status == 409);
  CHECK(other.fault() == "Port with physical network physnet2 " + mismatch + "physnet1.");
  auto none = port("52:54:00:00:02:03", {{"portgroup_uuid", pg}});
  CHECK(none.status == 409);
  CHECK(none.fault() == "Port with physical network None " + mismatch + "physnet1.");
  CHECK(memberCount() == 2);
  CHECK(api.get("/v1/ports").json()["ports"].size() == 2);

  // Joining by PATCH, or changing the network of a member, is checked the same way.
  auto outside = port("52:54:00:00:02:04", {{"physical_network", "physnet2"}});
  REQUIRE(outside.status == 201);
  const std::string outsideUuid = outside.json()["uuid"];
  auto join = patchPort(outsideUuid, {op("add", "/portgroup_uuid", pg)});
  CHECK(join.status == 409);
  CHECK(join.fault() == "Port with physical network physnet2 " + mismatch + "physnet1.");
  CHECK(api.get("/v1/ports/" + outsideUuid).json()["portgroup_uuid"].is_null());
  const std::string p2Uuid = p2.json()["uuid"];
  auto move = patchPort(p2Uuid, {op("replace", "/physical_network", "physnet2")});
  CHECK(move.status == 409);
  CHECK(api.get("/v1/ports/" + p2Uuid).json()["physical_network"] == "physnet1");
  auto unset = patchPort(p2Uuid, {op("remove", "/physical_network")});
  CHECK(unset.status == 409);
  CHECK(unset.fault() == "Port with physical network None " + mismatch + "physnet1.");
  // Changes that touch neither the group nor the network are not checked.
  CHECK(patchPort(p2Uuid, {op("add", "/extra/a", 1)}).status == 200);
  // Joining with the group's network, and leaving, are fine.
  CHECK(patchPort(outsideUuid, {op("replace", "/physical_network", "physnet1"),
                                op("add", "/portgroup_uuid", pg)})
            .status == 200);
  CHECK(patchPort(outsideUuid, {op("remove", "/portgroup_uuid")}).status == 200);
  // The last member may change its network: it is compared with the others only.
  CHECK(api.del("/v1/ports/" + p2Uuid).status == 204);
  CHECK(patchPort(p1.json()["uuid"], {op("replace", "/physical_network", "physnet3")}).status ==
        200);
  CHECK(port("52:54:00:00:02:05", {{"portgroup_uuid", pg}, {"physical_network", "physnet3"}})
            .status == 201);
  CHECK(memberCount() == 2);
}

TEST_CASE("a port group whose ports already disagree on the network takes no new port",
          "[server][api][ports]") {
  TestApi api;
  const std::string node = api.createNode()["uuid"];
  const std::string pg =
      api.post("/v1/portgroups", {{"node_uuid", node}, {"name", "bond1"}}).json()["uuid"];
  for (const char* mac : {"52:54:00:00:03:01", "52:54:00:00:03:02"}) {
    REQUIRE(api.post("/v1/ports", {{"address", mac},
                                   {"node_uuid", node},
                                   {"portgroup_uuid", pg},
                                   {"physical_network", "physnet1"}})
                .status == 201);
  }
  {  // Data written before the rule existed.
    using namespace kiln::server;
    auto tx = api.app().storage().begin(Storage::Mode::Write).value();
    auto rec = *tx->ports().findBy(kPortAddress, Value::text("52:54:00:00:03:02")).value();
    rec.setText(kPortPhysicalNetwork, "physnet2");
    REQUIRE(tx->ports().update(rec));
    REQUIRE(tx->commit());
  }
  auto r = api.post("/v1/ports", {{"address", "52:54:00:00:03:03"},
                                  {"node_uuid", node},
                                  {"portgroup_uuid", pg},
                                  {"physical_network", "physnet1"}});
  CHECK(r.status == 409);
  CHECK(r.fault() ==
        "Port group " + pg +
            " has member ports with inconsistent physical networks "
            "(physnet1, physnet2). All ports in a port group must have the same physical network.");
  CHECK(api.get("/v1/ports").json()["ports"].size() == 2);
  // A port outside the group is not concerned.
  CHECK(api.post("/v1/ports", {{"address", "52:54:00:00:03:03"},
                               {"node_uuid", node},
                               {"physical_network", "physnet1"}})
            .status == 201);
}

TEST_CASE("chassis group nodes", "[server][api][chassis]") {
  TestApi api;
  auto r = api.post("/v1/chassis", {{"description", "rack 1"}});
  REQUIRE(r.status == 201);
  const std::string ch = r.json()["uuid"];
  api.createNode({{"name", "in-chassis"}, {"chassis_uuid", ch}});
  api.createNode({{"name", "elsewhere"}});
  CHECK(api.get("/v1/chassis/" + ch + "/nodes").json()["nodes"].size() == 1);
  CHECK(api.get("/v1/nodes?chassis_uuid=" + ch).json()["nodes"].size() == 1);
  auto busy = api.del("/v1/chassis/" + ch);
  CHECK(busy.status == 400);
  CHECK_THAT(busy.fault(), Catch::Contains("contains nodes"));
  CHECK(api.patch("/v1/chassis/" + ch, Json::parse(R"([{"op":"replace","path":"/description","value":"rack 2"}])"))
            .json()["description"] == "rack 2");
  CHECK(api.get("/v1/chassis").json()["chassis"].size() == 1);
  CHECK(api.del("/v1/nodes/in-chassis").status == 204);
  CHECK(api.del("/v1/chassis/" + ch).status == 204);
  CHECK(api.get("/v1/chassis/" + ch).status == 404);
}
