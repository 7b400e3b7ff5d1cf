#include <catch2/catch.hpp>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "server/model/node.h"
#include "server/model/resources.h"
#include "tests/support/test_api.h"

using kiln::server::Record;
using kiln::server::Storage;
using kiln::server::Value;
using kiln::test::Json;
using kiln::test::Response;
using kiln::test::TestApi;
namespace ks = kiln::server;

namespace {

constexpr const char* kBase = "http://kiln.test:6385";

Json op(const std::string& o, const std::string& path, Json value = nullptr) {
  Json j = {{"op", o}, {"path", path}};
  if (!value.is_null() || o != "remove") j["value"] = value;
  return j;
}

/// A fake-hardware node named `name`, powered off unless `power` says otherwise.
Json makeNode(TestApi& api, const std::string& name, const std::string& power = "power off") {
  Json n = api.createNode({{"name", name}});
  auto r = api.put("/v1/nodes/" + name + "/states/power", {{"target", power}});
  INFO(r.body);
  REQUIRE(r.status == 202);
  api.settle();
  REQUIRE(api.get("/v1/nodes/" + name).json()["power_state"] == power);
  return n;
}

void setPower(TestApi& api, const std::string& name, const std::string& power) {
  REQUIRE(api.put("/v1/nodes/" + name + "/states/power", {{"target", power}}).status == 202);
  api.settle();
}

/// Edits a node row directly (to stage what the API cannot: a reservation, no power state).
void mutateNode(TestApi& api, const std::string& name, const std::function<void(Record&)>& change) {
  auto tx = api.app().storage().begin(Storage::Mode::Write).value();
  auto rec = tx->nodes().findBy(ks::kNodeName, Value::text(name)).value();
  REQUIRE(rec);
  change(*rec);
  REQUIRE(tx->nodes().update(*rec));
  REQUIRE(tx->commit());
}

Json connector(TestApi& api, const Json& node, const std::string& type, const std::string& id,
               Json extra = Json::object()) {
  Json body = {{"node_uuid", node["uuid"]}, {"type", type}, {"connector_id", id}};
  for (auto it = extra.begin(); it != extra.end(); ++it) body[it.key()] = it.value();
  auto r = api.post("/v1/volume/connectors", body);
  INFO(r.body);
  REQUIRE(r.status == 201);
  return r.json();
}

Json target(TestApi& api, const Json& node, int bootIndex, const std::string& volumeId,
            Json extra = Json::object()) {
  Json body = {{"node_uuid", node["uuid"]},
               {"volume_type", "iscsi"},
               {"boot_index", bootIndex},
               {"volume_id", volumeId}};
  for (auto it = extra.begin(); it != extra.end(); ++it) body[it.key()] = it.value();
  auto r = api.post("/v1/volume/targets", body);
  INFO(r.body);
  REQUIRE(r.status == 201);
  return r.json();
}

std::set<std::string> keysOf(const Json& object) {
  std::set<std::string> keys;
  for (auto it = object.begin(); it != object.end(); ++it) keys.insert(it.key());
  return keys;
}

std::vector<std::string> uuidsOf(const Json& list) {
  std::vector<std::string> out;
  for (const auto& item : list) out.push_back(item["uuid"]);
  return out;
}

Json links(const std::string& path) {
  return Json::array({{{"href", std::string(kBase) + "/v1/" + path}, {"rel", "self"}},
                      {{"href", std::string(kBase) + "/" + path}, {"rel", "bookmark"}}});
}

}  // namespace

TEST_CASE("volume endpoints are 404 below 1.32 and the volume links appear from 1.32",
          "[server][api][volume]") {
  TestApi api;
  Json n = makeNode(api, "n1");
  Json c = connector(api, n, "iqn", "iqn.2017-05.org.openstack:1");
  const std::string cu = c["uuid"];
  api.version = "1.31";
  const std::vector<std::string> paths = {"/v1/volume",
                                          "/v1/volume/connectors",
                                          "/v1/volume/targets",
                                          "/v1/volume/connectors/" + cu,
                                          "/v1/nodes/n1/volume",
                                          "/v1/nodes/n1/volume/connectors",
                                          "/v1/nodes/n1/volume/targets"};
  for (const auto& path : paths) {
    INFO(path);
    CHECK(api.get(path).status == 404);
  }
  CHECK(api.post("/v1/volume/connectors",
                 {{"node_uuid", n["uuid"]}, {"type", "ip"}, {"connector_id", "192.0.2.1"}})
            .status == 404);
  CHECK(
      api.patch("/v1/volume/connectors/" + cu, Json::array({op("add", "/extra/a", "b")})).status ==
      404);
  CHECK(api.del("/v1/volume/connectors/" + cu).status == 404);
  CHECK_FALSE(api.get("/v1/nodes/n1").json().contains("volume"));
  CHECK_FALSE(api.get("/v1").json().contains("volume"));
  CHECK(api.get("/v1/volume/connectors/" + cu).status == 404);

  api.version = "1.32";
  CHECK(api.get("/v1").json()["volume"] == links("volume/"));
  Json node = api.get("/v1/nodes/n1").json();
  const std::string nu = n["uuid"];
  CHECK(node["volume"] == links("nodes/" + nu + "/volume"));
  Json root = api.get("/v1/volume").json();
  CHECK(root == Json{{"links", links("volume/")},
                     {"connectors", links("volume/connectors")},
                     {"targets", links("volume/targets")}});
  // The node's link leads to the node's volume document, whose links lead to its lists.
  Json nodeRoot = api.get("/v1/nodes/" + nu + "/volume").json();
  CHECK(nodeRoot["connectors"] == links("nodes/" + nu + "/volume/connectors"));
  CHECK(nodeRoot["targets"] == links("nodes/" + nu + "/volume/targets"));
  CHECK(nodeRoot["links"] == links("nodes/" + nu + "/volume/"));
  auto listed = api.get("/v1/nodes/" + nu + "/volume/connectors");
  REQUIRE(listed.status == 200);
  CHECK(uuidsOf(listed.json()["connectors"]) == std::vector<std::string>{cu});
  CHECK(api.get("/v1/volume/connectors/" + cu).status == 200);
  // Methods the routes do not have.
  CHECK(api.call("PUT", "/v1/volume/connectors", "{}").status == 405);
  CHECK(api.call("POST", "/v1/volume", "{}").status == 405);
}

TEST_CASE("volume connector create, show, list, update and delete as Ironic",
          "[server][api][volume]") {
  TestApi api;
  Json n = makeNode(api, "n1");
  api.clock().advance(std::chrono::seconds(5));
  auto r = api.post("/v1/volume/connectors", {{"node_uuid", n["uuid"]},
                                              {"type", "iqn"},
                                              {"connector_id", "iqn.2017-05.org.openstack:1"},
                                              {"extra", {{"k", "v"}}}});
  REQUIRE(r.status == 201);
  Json c = r.json();
  const std::string uuid = c["uuid"];
  CHECK(r.header("Location") == std::string(kBase) + "/v1/volume/connectors/" + uuid);
  CHECK(keysOf(c) == std::set<std::string>{"uuid", "node_uuid", "type", "connector_id", "extra",
                                           "created_at", "updated_at", "links"});
  CHECK(c["node_uuid"] == n["uuid"]);
  CHECK(c["type"] == "iqn");
  CHECK(c["connector_id"] == "iqn.2017-05.org.openstack:1");
  CHECK(c["extra"] == Json{{"k", "v"}});
  CHECK(c["created_at"].is_string());
  CHECK(c["updated_at"].is_null());
  CHECK(c["links"] == links("volume/connectors/" + uuid));

  CHECK(api.get("/v1/volume/connectors/" + uuid).json() == c);
  CHECK(api.get("/v1/volume/connectors/" + uuid + "?fields=type,connector_id").json() ==
        Json{{"type", "iqn"},
             {"connector_id", "iqn.2017-05.org.openstack:1"},
             {"links", c["links"]}});
  CHECK(api.get("/v1/volume/connectors/" + uuid + "?fields=bogus").status == 400);

  // The short list shows Ironic's default fields; detail=true shows everything.
  Json list = api.get("/v1/volume/connectors").json();
  REQUIRE(list["connectors"].size() == 1);
  CHECK(keysOf(list["connectors"][0]) ==
        std::set<std::string>{"uuid", "node_uuid", "type", "connector_id", "links"});
  CHECK_FALSE(list.contains("next"));
  Json detail = api.get("/v1/volume/connectors?detail=true").json();
  CHECK(detail["connectors"][0] == c);
  CHECK(api.get("/v1/volume/connectors?fields=uuid").json()["connectors"][0] ==
        Json{{"uuid", uuid}, {"links", c["links"]}});
  auto both = api.get("/v1/volume/connectors?fields=uuid&detail=true");
  CHECK(both.status == 400);
  CHECK(both.fault() == "Can't fetch a subset of fields with 'detail' set");
  CHECK(api.get("/v1/volume/connectors?fields=uuid&detail=false").status == 200);
  CHECK(api.get("/v1/volume/connectors?detail=maybe").status == 400);

  // PATCH every patchable field (the node is powered off).
  Json other = makeNode(api, "n2");
  api.clock().advance(std::chrono::seconds(5));
  auto p = api.patch("/v1/volume/connectors/" + uuid,
                     Json::array({op("replace", "/type", "wwpn"),
                                  op("replace", "/connector_id", "51:4f:0c:50:00:00:00:01"),
                                  op("add", "/extra/new", 1), op("remove", "/extra/k"),
                                  op("replace", "/node_uuid", other["uuid"])}));
  INFO(p.body);
  REQUIRE(p.status == 200);
  Json patched = p.json();
  CHECK(patched["type"] == "wwpn");
  CHECK(patched["connector_id"] == "51:4f:0c:50:00:00:00:01");
  CHECK(patched["extra"] == Json{{"new", 1}});
  CHECK(patched["node_uuid"] == other["uuid"]);
  CHECK(patched["created_at"] == c["created_at"]);
  CHECK(patched["updated_at"].is_string());
  CHECK(api.get("/v1/volume/connectors/" + uuid).json() == patched);

  auto d = api.del("/v1/volume/connectors/" + uuid);
  CHECK(d.status == 204);
  CHECK(d.body.empty());
  auto gone = api.get("/v1/volume/connectors/" + uuid);
  CHECK(gone.status == 404);
  CHECK(gone.fault() == "Volume connector " + uuid + " could not be found.");
  CHECK(api.del("/v1/volume/connectors/" + uuid).status == 404);
  auto bad = api.get("/v1/volume/connectors/not-a-uuid");
  CHECK(bad.status == 400);
  CHECK(bad.fault() == "Expected UUID for connector_uuid: not-a-uuid");
  CHECK(api.get("/v1/volume/connectors/detail").fault() ==
        "Expected UUID for connector_uuid: detail");
}

TEST_CASE("volume target create, show, list, update and delete as Ironic",
          "[server][api][volume]") {
  TestApi api;
  Json n = makeNode(api, "n1");
  const std::string vol = "04452bed-5367-4202-8bf5-de4335ac56d2";
  auto r = api.post("/v1/volume/targets",
                    {{"node_uuid", n["uuid"]},
                     {"volume_type", "iscsi"},
                     {"boot_index", 0},
                     {"volume_id", vol},
                     {"properties", {{"target_iqn", "iqn.x"}, {"auth_password", "chap-secret"}}},
                     {"extra", {{"k", "v"}}}});
  INFO(r.body);
  REQUIRE(r.status == 201);
  Json t = r.json();
  const std::string uuid = t["uuid"];
  CHECK(r.header("Location") == std::string(kBase) + "/v1/volume/targets/" + uuid);
  CHECK(keysOf(t) == std::set<std::string>{"uuid", "node_uuid", "volume_type", "properties",
                                           "boot_index", "volume_id", "extra", "created_at",
                                           "updated_at", "links"});
  CHECK(t["volume_type"] == "iscsi");
  CHECK(t["boot_index"] == 0);
  CHECK(t["volume_id"] == vol);
  // Password-like properties are masked, as Ironic's mask_dict_password does.
  CHECK(t["properties"] == Json{{"target_iqn", "iqn.x"}, {"auth_password", "******"}});
  CHECK(t["links"] == links("volume/targets/" + uuid));
  CHECK(api.get("/v1/volume/targets/" + uuid).json() == t);

  Json list = api.get("/v1/volume/targets").json();
  REQUIRE(list["targets"].size() == 1);
  CHECK(keysOf(list["targets"][0]) == std::set<std::string>{"uuid", "node_uuid", "volume_type",
                                                            "boot_index", "volume_id", "links"});
  CHECK(api.get("/v1/volume/targets?detail=true").json()["targets"][0] == t);

  auto p = api.patch(
      "/v1/volume/targets/" + uuid,
      Json::array({op("replace", "/boot_index", 3), op("replace", "/volume_type", "fibre_channel"),
                   op("add", "/properties/lun", 1), op("replace", "/volume_id", "vol-2")}));
  INFO(p.body);
  REQUIRE(p.status == 200);
  CHECK(p.json()["boot_index"] == 3);
  CHECK(p.json()["volume_type"] == "fibre_channel");
  CHECK(p.json()["volume_id"] == "vol-2");
  CHECK(p.json()["properties"] ==
        Json{{"target_iqn", "iqn.x"}, {"auth_password", "******"}, {"lun", 1}});
  // The stored secret is kept as it was given.
  {
    auto tx = api.app().storage().begin(Storage::Mode::Read).value();
    auto rec = tx->volumeTargets().findBy(ks::kVtUuid, Value::text(uuid)).value();
    REQUIRE(rec);
    CHECK(Json::parse(rec->str(ks::kVtProperties))["auth_password"] == "chap-secret");
  }
  auto bad =
      api.patch("/v1/volume/targets/" + uuid, Json::array({op("replace", "/boot_index", "1")}));
  CHECK(bad.status == 400);
  CHECK(bad.fault() == "Schema error for patch: '1' is not of type 'integer'");
  CHECK(api.del("/v1/volume/targets/" + uuid).status == 204);
  auto gone = api.get("/v1/volume/targets/" + uuid);
  CHECK(gone.status == 404);
  CHECK(gone.fault() == "Volume target " + uuid + " could not be found.");
  CHECK(api.get("/v1/volume/targets/xyz").fault() == "Expected UUID for target_uuid: xyz");
}

TEST_CASE("volume create refuses bodies Ironic's schema refuses", "[server][api][volume]") {
  TestApi api;
  Json n = makeNode(api, "n1");
  const std::string nu = n["uuid"];
  auto fault = [&](const std::string& path, const Json& body) {
    auto r = api.post(path, body);
    CHECK(r.status == 400);
    return r.fault();
  };
  const std::string c = "/v1/volume/connectors", t = "/v1/volume/targets";
  CHECK(fault(c, Json::array()) == "Schema error for connector: [] is not of type 'object'");
  CHECK(fault(c, {{"node_uuid", nu}, {"type", "iqn"}}) ==
        "Schema error for connector: 'connector_id' is a required property");
  CHECK(fault(c, {{"node_uuid", nu}, {"connector_id", "x"}}) ==
        "Schema error for connector: 'type' is a required property");
  CHECK(
      fault(c, {{"node_uuid", nu}, {"type", "iqn"}, {"connector_id", "x"}, {"bogus", 1}}) ==
      "Schema error for connector: Additional properties are not allowed ('bogus' was unexpected)");
  CHECK(fault(c, {{"node_uuid", nu}, {"type", "iqn"}, {"connector_id", "x"}, {"a", 1}, {"b", 2}}) ==
        "Schema error for connector: Additional properties are not allowed ('a', 'b' were "
        "unexpected)");
  CHECK(fault(c, {{"node_uuid", nu}, {"type", 5}, {"connector_id", "x"}}) ==
        "Schema error for connector: 5 is not of type 'string'");
  CHECK(fault(c, {{"node_uuid", nu}, {"type", "iqn"}, {"connector_id", "x"}, {"extra", "s"}}) ==
        "Schema error for connector: 's' is not of type 'object', 'null'");
  CHECK(fault(c, {{"node_uuid", "nope"}, {"type", "iqn"}, {"connector_id", "x"}}) ==
        "Expected UUID for node_uuid: nope");
  CHECK(fault(c, {{"node_uuid", nu}, {"type", "iqn"}, {"connector_id", "x"}, {"uuid", "u"}}) ==
        "Expected UUID for uuid: u");
  const std::string missing = "9b3a6e4c-1a22-4c4a-9d8e-3b1b6b0f2b8e";
  CHECK(fault(c, {{"node_uuid", missing}, {"type", "iqn"}, {"connector_id", "x"}}) ==
        "Invalid input for field/attribute node_uuid. Value: '" + missing + "'. ");
  CHECK(fault(c, {{"node_uuid", nu}, {"type", std::string(33, 'a')}, {"connector_id", "x"}})
            .find("maximum character requirement of 32") != std::string::npos);
  CHECK(api.call("POST", c, "").status == 400);
  CHECK(api.call("POST", c, "{not json").status == 400);

  CHECK(fault(t, {{"node_uuid", nu}, {"volume_type", "iscsi"}, {"volume_id", "v"}}) ==
        "Schema error for target: 'boot_index' is a required property");
  CHECK(fault(t, {{"node_uuid", nu},
                  {"volume_type", "iscsi"},
                  {"volume_id", "v"},
                  {"boot_index", 1.5}}) == "Schema error for target: 1.5 is not of type 'integer'");
  CHECK(fault(t, {{"node_uuid", nu},
                  {"volume_type", "iscsi"},
                  {"volume_id", "v"},
                  {"boot_index", true}}) ==
        "Schema error for target: True is not of type 'integer'");
  CHECK(fault(t, {{"node_uuid", nu},
                  {"volume_type", "iscsi"},
                  {"volume_id", "v"},
                  {"boot_index", 0},
                  {"properties", Json::array()}}) ==
        "Schema error for target: [] is not of type 'object', 'null'");
  // Nothing was stored by any of these.
  CHECK(api.get("/v1/volume/connectors").json()["connectors"].empty());
  CHECK(api.get("/v1/volume/targets").json()["targets"].empty());

  // Accepted: a null uuid (one is generated), null extra and properties, a given uuid
  // (lowercased), any type text (Ironic does not check it against a list).
  auto ok = api.post(c, {{"node_uuid", nu},
                         {"type", "custom"},
                         {"connector_id", "x"},
                         {"uuid", nullptr},
                         {"extra", nullptr}});
  REQUIRE(ok.status == 201);
  CHECK(ok.json()["extra"] == Json::object());
  CHECK(ok.json()["uuid"].get<std::string>().size() == 36);
  auto given = api.post(t, {{"node_uuid", nu},
                            {"volume_type", "iscsi"},
                            {"volume_id", "v"},
                            {"boot_index", 0},
                            {"properties", nullptr},
                            {"uuid", "AAAAAAAA-1111-4111-8111-111111111111"}});
  REQUIRE(given.status == 201);
  CHECK(given.json()["uuid"] == "aaaaaaaa-1111-4111-8111-111111111111");
  CHECK(given.json()["properties"] == Json::object());
}

TEST_CASE("volume connectors are unique by type and connector ID, targets by node and boot index",
          "[server][api][volume]") {
  TestApi api;
  Json n1 = makeNode(api, "n1");
  Json n2 = makeNode(api, "n2");
  Json c = connector(api, n1, "iqn", "iqn.a");
  // Unique across nodes, as Ironic's (type, connector_id) constraint.
  auto dup = api.post("/v1/volume/connectors",
                      {{"node_uuid", n2["uuid"]}, {"type", "iqn"}, {"connector_id", "iqn.a"}});
  CHECK(dup.status == 409);
  CHECK(dup.fault() == "A volume connector with type iqn and connector ID iqn.a already exists.");
  // The same ID with another type is fine.
  Json ip = connector(api, n2, "ip", "iqn.a");
  auto dupUuid = api.post(
      "/v1/volume/connectors",
      {{"node_uuid", n2["uuid"]}, {"type", "mac"}, {"connector_id", "x"}, {"uuid", c["uuid"]}});
  CHECK(dupUuid.status == 409);
  CHECK(dupUuid.fault() ==
        "A volume connector with UUID " + c["uuid"].get<std::string>() + " already exists.");
  // A PATCH that makes a duplicate is refused and changes nothing.
  auto patched = api.patch("/v1/volume/connectors/" + ip["uuid"].get<std::string>(),
                           Json::array({op("replace", "/type", "iqn")}));
  CHECK(patched.status == 409);
  CHECK(patched.fault() ==
        "A volume connector with type iqn and connector ID iqn.a already exists.");
  CHECK(api.get("/v1/volume/connectors/" + ip["uuid"].get<std::string>()).json()["type"] == "ip");

  Json t = target(api, n1, 0, "v1");
  auto dupIndex = api.post("/v1/volume/targets", {{"node_uuid", n1["uuid"]},
                                                  {"volume_type", "iscsi"},
                                                  {"boot_index", 0},
                                                  {"volume_id", "v2"}});
  CHECK(dupIndex.status == 409);
  CHECK(dupIndex.fault() ==
        "A volume target with boot index '0' for the same node already exists.");
  // Another node may use the same boot index, and the same volume.
  Json t2 = target(api, n2, 0, "v1");
  Json t3 = target(api, n1, 1, "v3");
  auto moved = api.patch("/v1/volume/targets/" + t3["uuid"].get<std::string>(),
                         Json::array({op("replace", "/boot_index", 0)}));
  CHECK(moved.status == 409);
  CHECK(moved.fault() == "A volume target with boot index '0' for the same node already exists.");
  auto dupTargetUuid = api.post("/v1/volume/targets", {{"node_uuid", n2["uuid"]},
                                                       {"volume_type", "iscsi"},
                                                       {"boot_index", 7},
                                                       {"volume_id", "v"},
                                                       {"uuid", t["uuid"]}});
  CHECK(dupTargetUuid.status == 409);
  CHECK(dupTargetUuid.fault() ==
        "A volume target with UUID " + t["uuid"].get<std::string>() + " already exists.");
}

TEST_CASE("volume changes and deletions need the node unlocked and powered off; creation does not",
          "[server][api][volume]") {
  TestApi api;
  Json n = makeNode(api, "n1", "power on");
  const std::string nu = n["uuid"];
  // Ironic creates connectors and targets in the API without asking the conductor.
  Json c = connector(api, n, "iqn", "iqn.a");
  Json t = target(api, n, 0, "v1");
  const std::string cu = c["uuid"], tu = t["uuid"];

  auto upd = api.patch("/v1/volume/connectors/" + cu, Json::array({op("add", "/extra/a", 1)}));
  CHECK(upd.status == 400);
  CHECK(upd.fault() ==
        "The requested action \"volume connector update\" can not be performed on "
        "node \"" +
            nu + "\" while it is in state \"power on\".");
  auto del = api.del("/v1/volume/connectors/" + cu);
  CHECK(del.status == 400);
  CHECK(del.fault() ==
        "The requested action \"volume connector deletion\" can not be performed on "
        "node \"" +
            nu + "\" while it is in state \"power on\".");
  auto tupd = api.patch("/v1/volume/targets/" + tu, Json::array({op("add", "/extra/a", 1)}));
  CHECK(tupd.status == 400);
  CHECK(tupd.fault() ==
        "The requested action \"volume target update\" can not be performed on "
        "node \"" +
            nu + "\" while it is in state \"power on\".");
  auto tdel = api.del("/v1/volume/targets/" + tu);
  CHECK(tdel.status == 400);
  CHECK(tdel.fault() ==
        "The requested action \"volume target deletion\" can not be performed on "
        "node \"" +
            nu + "\" while it is in state \"power on\".");
  CHECK(api.get("/v1/volume/connectors/" + cu).json()["extra"] == Json::object());
  CHECK(api.get("/v1/volume/targets/" + tu).status == 200);

  // A node without a power state is not powered off either.
  mutateNode(api, "n1", [](Record& r) { r.setNull(ks::kNodePowerState); });
  auto none = api.del("/v1/volume/targets/" + tu);
  CHECK(none.status == 400);
  CHECK(none.fault().find("while it is in state \"None\".") != std::string::npos);

  // Powered off but locked: Ironic's NodeLocked, 409.
  setPower(api, "n1", "power off");
  mutateNode(api, "n1", [](Record& r) { r.setText(ks::kNodeReservation, "other-host"); });
  auto locked = api.del("/v1/volume/connectors/" + cu);
  CHECK(locked.status == 409);
  CHECK(locked.fault() == "Node " + nu +
                              " is locked by host other-host, please retry after the "
                              "current operation is completed.");
  CHECK(api.patch("/v1/volume/targets/" + tu, Json::array({op("add", "/extra/a", 1)})).status ==
        409);
  mutateNode(api, "n1", [](Record& r) { r.setNull(ks::kNodeReservation); });

  // Moving a connector checks the node it moves to (Ironic's conductor locks that one).
  Json on = makeNode(api, "n2", "power on");
  auto move = api.patch("/v1/volume/connectors/" + cu,
                        Json::array({op("replace", "/node_uuid", on["uuid"])}));
  CHECK(move.status == 400);
  CHECK(move.fault().find("node \"" + on["uuid"].get<std::string>() + "\"") != std::string::npos);
  CHECK(api.get("/v1/volume/connectors/" + cu).json()["node_uuid"] == nu);

  // Powered off and unlocked: both work.
  CHECK(api.patch("/v1/volume/connectors/" + cu, Json::array({op("add", "/extra/a", 1)})).status ==
        200);
  CHECK(api.del("/v1/volume/connectors/" + cu).status == 204);
  CHECK(api.del("/v1/volume/targets/" + tu).status == 204);
}

TEST_CASE("volume PATCH allows only Ironic's fields and checks the result",
          "[server][api][volume]") {
  TestApi api;
  Json n = makeNode(api, "n1");
  Json c = connector(api, n, "iqn", "iqn.a");
  Json t = target(api, n, 0, "v1");
  const std::string cp = "/v1/volume/connectors/" + c["uuid"].get<std::string>();
  const std::string tp = "/v1/volume/targets/" + t["uuid"].get<std::string>();
  auto fault = [&](const std::string& path, const Json& patch) {
    auto r = api.patch(path, patch);
    CHECK(r.status == 400);
    return r.fault();
  };
  CHECK(fault(cp, Json::array({op("replace", "/uuid", "x")})) ==
        "Cannot patch /uuid. Only the following can be updated: connector_id, extra, node_uuid, "
        "type");
  CHECK(fault(cp, Json::array({op("replace", "/created_at", "x")})) ==
        "Cannot patch /created_at. Only the following can be updated: connector_id, extra, "
        "node_uuid, type");
  CHECK(fault(tp, Json::array({op("replace", "/links", "x")})) ==
        "Cannot patch /links. Only the following can be updated: boot_index, extra, node_uuid, "
        "properties, volume_id, volume_type");
  CHECK(fault(cp, Json::array({op("replace", "/node_uuid", "n1")})) ==
        "Expected a UUID for node_uuid, but received n1.");
  CHECK(fault(cp, Json::array({op("replace", "/node_uuid", 5)})) ==
        "Expected a UUID for node_uuid, but received 5.");
  const std::string missing = "9b3a6e4c-1a22-4c4a-9d8e-3b1b6b0f2b8e";
  CHECK(fault(cp, Json::array({op("replace", "/node_uuid", missing)})) ==
        "Node " + missing + " could not be found.");
  CHECK(fault(cp, Json::array({op("remove", "/type")})) ==
        "Schema error for patch: 'type' is a required property");
  CHECK(fault(cp, Json::array({op("remove", "/node_uuid")})) ==
        "Schema error for patch: 'node_uuid' is a required property");
  CHECK(fault(cp, Json::array({op("replace", "/connector_id", 7)})) ==
        "Schema error for patch: 7 is not of type 'string'");
  CHECK(fault(tp, Json::array({op("remove", "/boot_index")})) ==
        "Schema error for patch: 'boot_index' is a required property");
  CHECK(fault(tp, Json::array({op("replace", "/properties", "x")})) ==
        "Schema error for patch: 'x' is not of type 'object', 'null'");
  CHECK(fault(cp, Json::array({op("remove", "/extra/nothing")})).find("can't remove") !=
        std::string::npos);
  CHECK(api.call("PATCH", cp, "{}").status == 400);
  // None of these changed anything.
  CHECK(api.get(cp).json() == c);
  CHECK(api.get(tp).json() == t);
  // Removing extra or properties leaves them empty.
  auto cleared = api.patch(tp, Json::array({op("remove", "/extra")}));
  REQUIRE(cleared.status == 200);
  CHECK(cleared.json()["extra"] == Json::object());
}

TEST_CASE("volume lists filter by node, page, sort and refuse bad parameters",
          "[server][api][volume]") {
  TestApi api;
  Json n1 = makeNode(api, "n1");
  Json n2 = makeNode(api, "n2");
  Json a = connector(api, n1, "wwpn", "c");
  Json b = connector(api, n2, "iqn", "a");
  Json c = connector(api, n1, "ip", "b");
  const std::string au = a["uuid"], bu = b["uuid"], cu = c["uuid"];

  CHECK(uuidsOf(api.get("/v1/volume/connectors").json()["connectors"]) ==
        std::vector<std::string>{au, bu, cu});
  // By node, as a UUID or a name, and under the node (both spellings).
  CHECK(uuidsOf(api.get("/v1/volume/connectors?node=n1").json()["connectors"]) ==
        std::vector<std::string>{au, cu});
  CHECK(uuidsOf(api.get("/v1/volume/connectors?node=" + n2["uuid"].get<std::string>())
                    .json()["connectors"]) == std::vector<std::string>{bu});
  CHECK(uuidsOf(api.get("/v1/nodes/n1/volume/connectors").json()["connectors"]) ==
        std::vector<std::string>{au, cu});
  CHECK(uuidsOf(api.get("/v1/nodes/" + n2["uuid"].get<std::string>() + "/volume/connectors")
                    .json()["connectors"]) == std::vector<std::string>{bu});
  // The path's node wins over ?node=.
  CHECK(uuidsOf(api.get("/v1/nodes/n2/volume/connectors?node=n1").json()["connectors"]) ==
        std::vector<std::string>{bu});
  CHECK(api.get("/v1/nodes/n1/volume/connectors?detail=true").json()["connectors"][0] == a);
  auto badNode = api.get("/v1/volume/connectors?node=bad%20name");
  CHECK(badNode.status == 400);
  CHECK(badNode.fault() == "Expected UUID or name for node: bad name");
  auto unknown = api.get("/v1/volume/connectors?node=ghost");
  CHECK(unknown.status == 404);
  CHECK(unknown.fault() == "Node ghost could not be found.");
  CHECK(api.get("/v1/nodes/ghost/volume/targets").status == 404);

  // Sorting.
  CHECK(uuidsOf(api.get("/v1/volume/connectors?sort_key=connector_id").json()["connectors"]) ==
        std::vector<std::string>{bu, cu, au});
  CHECK(
      uuidsOf(api.get("/v1/volume/connectors?sort_key=type&sort_dir=desc").json()["connectors"]) ==
      std::vector<std::string>{au, bu, cu});
  auto badKey = api.get("/v1/volume/connectors?sort_key=extra");
  CHECK(badKey.status == 400);
  CHECK(badKey.fault() == "The sort_key value extra is an invalid field for sorting");
  CHECK(api.get("/v1/volume/connectors?sort_key=node_uuid").fault() ==
        "The sort_key value \"node_uuid\" is an invalid field for sorting");
  CHECK(api.get("/v1/volume/targets?sort_key=properties").status == 400);
  CHECK(api.get("/v1/volume/connectors?sort_dir=up").status == 400);

  // Paging: limit, marker and the next link.
  Json page = api.get("/v1/volume/connectors?limit=2").json();
  CHECK(uuidsOf(page["connectors"]) == std::vector<std::string>{au, bu});
  CHECK(page["next"] == std::string(kBase) + "/v1/volume/connectors?limit=2&marker=" + bu);
  CHECK(uuidsOf(api.get("/v1/volume/connectors?limit=2&marker=" + bu).json()["connectors"]) ==
        std::vector<std::string>{cu});
  Json nodePage = api.get("/v1/nodes/n1/volume/connectors?limit=1").json();
  CHECK(nodePage["next"] ==
        std::string(kBase) + "/v1/nodes/n1/volume/connectors?limit=1&marker=" + au);
  CHECK(api.get("/v1/volume/connectors?limit=0").status == 400);
  CHECK(api.get("/v1/volume/connectors?limit=x").status == 400);
  CHECK(api.get("/v1/volume/connectors?marker=x").status == 400);
  auto noMarker = api.get("/v1/volume/connectors?marker=9b3a6e4c-1a22-4c4a-9d8e-3b1b6b0f2b8e");
  CHECK(noMarker.status == 404);
  CHECK(noMarker.fault() ==
        "Volume connector 9b3a6e4c-1a22-4c4a-9d8e-3b1b6b0f2b8e could not be found.");

  // Targets filter the same way.
  Json t1 = target(api, n1, 0, "v1");
  Json t2 = target(api, n2, 0, "v2");
  CHECK(uuidsOf(api.get("/v1/volume/targets?node=n2").json()["targets"]) ==
        std::vector<std::string>{t2["uuid"]});
  CHECK(uuidsOf(api.get("/v1/nodes/n1/volume/targets").json()["targets"]) ==
        std::vector<std::string>{t1["uuid"]});
}

TEST_CASE("volume resources under a node serve lists only, as Ironic (403 otherwise)",
          "[server][api][volume]") {
  TestApi api;
  Json n = makeNode(api, "n1");
  Json c = connector(api, n, "iqn", "iqn.a");
  Json t = target(api, n, 0, "v1");
  const std::string cp = "/v1/nodes/n1/volume/connectors/" + c["uuid"].get<std::string>();
  const std::string tp = "/v1/nodes/n1/volume/targets/" + t["uuid"].get<std::string>();
  for (const auto& r : {api.get(cp), api.get(tp),
                        api.patch(cp, Json::array({op("add", "/extra/a", 1)})), api.del(tp)}) {
    CHECK(r.status == 403);
    CHECK(r.fault() == "Operation not permitted.");
  }
  auto post = api.post("/v1/nodes/n1/volume/connectors",
                       {{"node_uuid", n["uuid"]}, {"type", "ip"}, {"connector_id", "192.0.2.9"}});
  CHECK(post.status == 403);
  // The resource is looked up first.
  CHECK(api.get("/v1/nodes/n1/volume/connectors/9b3a6e4c-1a22-4c4a-9d8e-3b1b6b0f2b8e").status ==
        404);
  // Nothing changed.
  CHECK(api.get("/v1/volume/connectors").json()["connectors"].size() == 1);
  CHECK(api.get("/v1/volume/targets/" + t["uuid"].get<std::string>()).status == 200);
}

TEST_CASE("deleting a node deletes its volume connectors and targets", "[server][api][volume]") {
  TestApi api;
  Json n1 = makeNode(api, "n1");
  Json n2 = makeNode(api, "n2");
  Json c1 = connector(api, n1, "iqn", "iqn.a");
  Json c2 = connector(api, n2, "iqn", "iqn.b");
  Json t1 = target(api, n1, 0, "v1");
  Json t2 = target(api, n2, 0, "v2");
  REQUIRE(api.del("/v1/nodes/n1").status == 204);
  CHECK(uuidsOf(api.get("/v1/volume/connectors").json()["connectors"]) ==
        std::vector<std::string>{c2["uuid"]});
  CHECK(uuidsOf(api.get("/v1/volume/targets").json()["targets"]) ==
        std::vector<std::string>{t2["uuid"]});
  CHECK(api.get("/v1/volume/connectors/" + c1["uuid"].get<std::string>()).status == 404);
  // The freed (type, connector_id) and a new node's boot index 0 can be used again.
  Json n3 = makeNode(api, "n3");
  connector(api, n3, "iqn", "iqn.a");
  target(api, n3, 0, "v1");
}

TEST_CASE("node storage_interface takes noop and, on fake-hardware, fake",
          "[server][api][volume]") {
  TestApi api;
  Json n = api.createNode({{"name", "n1"}});
  CHECK(n["storage_interface"].is_string());
  auto set = [&](const std::string& value) {
    return api.patch("/v1/nodes/n1", Json::array({op("replace", "/storage_interface", value)}));
  };
  auto fake = set("fake");
  INFO(fake.body);
  CHECK(fake.status == 200);
  CHECK(fake.json()["storage_interface"] == "fake");
  CHECK(set("noop").json()["storage_interface"] == "noop");
  CHECK(set("cinder").status == 400);
  Json ipmi = api.post("/v1/nodes", {{"driver", "ipmi"}, {"name", "n2"}}).json();
  CHECK(ipmi["storage_interface"] == "noop");
  CHECK(api.patch("/v1/nodes/n2", Json::array({op("replace", "/storage_interface", "fake")}))
            .status == 400);
}
