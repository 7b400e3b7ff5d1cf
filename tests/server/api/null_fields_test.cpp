#include <catch2/catch.hpp>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "shared/core/uuid.h"
#include "tests/support/microversion_helpers.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::Response;
using kiln::test::TestApi;
using kiln::test::mv::op;
using kiln::test::mv::v;
namespace ver = kiln::server::ver;

// JSON null in request bodies (docs/compatibility.md, "null in request bodies").
//
// The tables below list, per resource, every field whose schema in Ironic's API takes null
// (a type of ['string', 'null'] and the like), read from the snapshot of openstack/ironic:
//   nodes           ironic/api/controllers/v1/node.py node_schema(), node_patch_schema()
//                   (adds protected, protected_reason), PATCH_ALLOWED_FIELDS
//   ports           ironic/api/controllers/v1/port.py PORT_SCHEMA (= PORT_PATCH_SCHEMA)
//   port groups     ironic/api/controllers/v1/portgroup.py PORTGROUP_SCHEMA
//   chassis         ironic/api/schemas/v1/chassis.py create_request_body, chassis.py
//                   CHASSIS_SCHEMA
//   deploy templates ironic/api/schemas/v1/deploy_template.py create_request_body,
//                   deploy_template.py TEMPLATE_SCHEMA, PATCH_ALLOWED_FIELDS
//   allocations     ironic/api/schemas/v1/allocation.py create_request_body(_v58),
//                   allocation.py ALLOCATION_SCHEMA, PATCH_ALLOWED_FIELDS (name, extra)
//   volume connectors, targets  ironic/api/schemas/v1/volume_{connector,target}.py,
//                   volume_{connector,target}.py CONNECTOR_SCHEMA / TARGET_SCHEMA
//   runbooks        ironic/api/controllers/v1/runbook.py RUNBOOK_SCHEMA(_V112)
//   inspection rules ironic/api/schemas/v1/inspection_rule.py create_request_body
// and the answer Ironic gives to a null there, read from the controllers' post() and patch(),
// ironic/api/controllers/v1/utils.py (patch_update_changed_fields sets the object field to the
// patched value), the object fields of ironic/objects/*.py (oslo.versionedobjects: None on a
// non-nullable field takes the field's default, or raises ValueError, a 500, when it has none)
// and the database layer (ironic/db/sqlalchemy/api.py create_*: a missing uuid is generated,
// SQLAlchemy leaves None columns out of an INSERT so their defaults apply). Where Ironic
// answers 500 (a ValueError or an AttributeError on None), Kiln answers 400 naming the field.
// Fields not patchable in Ironic (uuid, boot_mode, secure_boot, console_enabled of a node) are
// refused by both before their value is looked at, so the PATCH tables leave them out.

namespace {

/// What a null does to one field: the status, then the value read back (a 201/200), or the
/// fault (anything else; empty: any fault, for the schemas' own type errors). "<uuid>" stands for a
/// generated UUID and "<name>" for any non-empty string (an interface's default).
struct NullCase {
  std::string field;
  int status;
  Json shown = nullptr;
  std::string fault = {};
};

constexpr int kMaxVersion = ver::kMax;

/// The Ironic fault of a null refused where Ironic's object layer raises (a 500 there).
std::string noneFault(const std::string& field) { return "Field `" + field + "' cannot be None"; }

bool shownAs(const Json& actual, const Json& expected) {
  if (expected == "<uuid>") {
    return actual.is_string() && kiln::isUuidLike(actual.get<std::string>());
  }
  if (expected == "<name>") return actual.is_string() && !actual.get<std::string>().empty();
  return actual == expected;
}

void checkFault(const Response& r, const NullCase& c) {
  if (c.fault.empty()) {
    CHECK_FALSE(r.fault().empty());
  } else {
    CHECK(r.fault() == c.fault);
  }
}

/// The number of resources a collection lists (every page: the default limit is large).
size_t countOf(TestApi& api, const std::string& collection, const std::string& key) {
  Response r = api.get(collection);
  REQUIRE(r.status == 200);
  return r.json()[key].size();
}

/// POSTs `base(field)` plus {field: null} for each case. A created resource must show the
/// expected value, in the answer and read back with GET; a refused body must create nothing.
void checkPosts(TestApi& api, const std::string& collection, const std::string& listKey,
                const std::function<Json(const std::string&)>& base,
                const std::vector<NullCase>& cases) {
  for (const auto& c : cases) {
    INFO("POST " << collection << " with " << c.field << ": null");
    Json body = base(c.field);
    body[c.field] = nullptr;
    const size_t before = countOf(api, collection, listKey);
    Response r = api.post(collection, body);
    INFO(r.body);
    CHECK(r.status == c.status);
    if (r.status == 201) {
      Response shown = api.get(collection + "/" + r.json()["uuid"].get<std::string>());
      REQUIRE(shown.status == 200);
      CHECK(shownAs(r.json()[c.field], c.shown));
      CHECK(shownAs(shown.json()[c.field], c.shown));
    } else {
      checkFault(r, c);
      CHECK(countOf(api, collection, listKey) == before);
    }
  }
}

/// PATCHes `path` with {"op": "replace", ...} and then {"op": "add", ...} of null for each
/// case. A success must show the expected value; a refusal must leave the resource as it was.
void checkPatches(TestApi& api, const std::string& path, const std::vector<NullCase>& cases) {
  for (const auto& c : cases) {
    for (const char* o : {"replace", "add"}) {
      INFO("PATCH " << path << ": " << o << " /" << c.field << " null");
      const Json before = api.get(path).json();
      Response r = api.patch(path, Json::array({op(o, "/" + c.field, nullptr)}));
      INFO(r.body);
      CHECK(r.status == c.status);
      if (r.status == 200) {
        CHECK(shownAs(r.json()[c.field], c.shown));
        CHECK(api.get(path).json() == r.json());
      } else {
        checkFault(r, c);
        CHECK(api.get(path).json() == before);
      }
    }
  }
}

std::vector<NullCase> interfaceCases(int status) {
  std::vector<NullCase> out;
  for (const char* i : {"bios", "boot", "console", "deploy", "firmware", "inspect", "management",
                        "network", "power", "raid", "rescue", "storage", "vendor"}) {
    out.push_back({std::string(i) + "_interface", status, "<name>"});  // the driver's default
  }
  return out;
}

}  // namespace

TEST_CASE("node POST takes null where Ironic's node schema does, as Ironic answers",
          "[server][api][nodes][null]") {
  TestApi api;
  api.version = v(kMaxVersion);
  std::vector<NullCase> cases = {
      {"uuid", 201, "<uuid>"},            // post(): generated when falsy
      {"name", 201, nullptr},             // post(): checked only when not None
      {"automated_clean", 201, nullptr},  // objects: nullable
      {"boot_mode", 201, nullptr},        // objects: nullable (not creatable otherwise)
      {"secure_boot", 201, nullptr},      // objects: nullable (not creatable otherwise)
      {"chassis_uuid", 201, nullptr},     // _replace_chassis_uuid_with_id: no chassis
      {"conductor_group", 201, ""},       // post(): default_conductor_group when falsy
      {"console_enabled", 400, nullptr, noneFault("console_enabled")},  // BooleanField()
      {"description", 201, nullptr},
      {"disable_power_off", 201, false},     // nullable; the column's default False
      {"driver_info", 201, Json::object()},  // a JSON column stores None as {}
      {"extra", 201, Json::object()},
      {"instance_info", 201, Json::object()},
      {"instance_name", 201, nullptr},
      {"instance_uuid", 201, nullptr},
      {"lessee", 201, nullptr},
      {"maintenance", 400, nullptr, noneFault("maintenance")},  // BooleanField(): a 500
      {"network_data", 201, Json::object()},                    // anyOf null
      {"owner", 201, nullptr},
      {"parent_node", 201, nullptr},  // post(): looked up only when truthy
      // post(): node.get('properties', {}).get('capabilities'): an AttributeError, a 500.
      {"properties", 400, nullptr, noneFault("properties")},
      {"resource_class", 201, nullptr},  // default_resource_class (unset) when falsy
      {"retired", 201, false},           // nullable; the column's default False
      {"retired_reason", 201, nullptr},
      {"shard", 201, nullptr},
  };
  for (auto& c : interfaceCases(201)) cases.push_back(c);
  checkPosts(
      api, "/v1/nodes", "nodes",
      [](const std::string& field) {
        Json body = {{"driver", "fake-hardware"}};
        if (field != "name") body["name"] = "null-" + field;
        return body;
      },
      cases);
}

TEST_CASE("node PATCH of null follows Ironic's node controller field by field",
          "[server][api][nodes][null][patch]") {
  TestApi api;
  api.version = v(kMaxVersion);
  const std::string chassis = api.post("/v1/chassis", Json::object()).json()["uuid"];
  const std::string uuid =
      api.createNode({{"name", "nulls"},
                      {"automated_clean", true},
                      {"chassis_uuid", chassis},
                      {"conductor_group", "group"},
                      {"description", "d"},
                      {"disable_power_off", true},
                      {"driver_info", {{"a", 1}}},
                      {"extra", {{"a", 1}}},
                      {"instance_info", {{"a", 1}}},
                      {"instance_name", "instance"},
                      {"instance_uuid", "5c1f3d6e-9a7b-4c2d-8e0f-1a2b3c4d5e6f"},
                      {"lessee", "lessee"},
                      {"owner", "owner"},
                      {"properties", {{"cpus", 1}}},
                      {"resource_class", "rc"},
                      {"retired", true},
                      {"retired_reason", "old"},
                      {"shard", "s"}})["uuid"];
  std::vector<NullCase> cases = {
      {"automated_clean", 200, nullptr},
      {"chassis_uuid", 200, nullptr},
      // _update_changed_fields: node['conductor_group'].lower(), an AttributeError (500).
      {"conductor_group", 400, nullptr, noneFault("conductor_group")},
      // _validate_patch: len(description[0]), a TypeError (500).
      {"description", 400, nullptr, noneFault("description")},
      // Ironic stores None (nullable; a 500-free null); Kiln keeps false, the same meaning.
      {"disable_power_off", 200, false},
      {"driver_info", 200, Json::object()},
      {"extra", 200, Json::object()},
      // update: instance_info.get('display_name') fails (500) only without an instance_name.
      {"instance_info", 200, Json::object()},
      {"instance_name", 200, nullptr},
      {"instance_uuid", 200, nullptr},
      {"lessee", 200, nullptr},
      {"maintenance", 400, nullptr, noneFault("maintenance")},  // BooleanField(): a 500
      // _check_names_acceptable: None is not a valid name (400).
      {"name", 400, nullptr, "Node " + uuid + ": Cannot change name to invalid name 'None'"},
      // _validate_patch: validate_network_data(None) (400).
      {"network_data", 400, nullptr, "Invalid network_data: None is not of type 'object' "},
      {"owner", 200, nullptr},
      // authorize_node_link_patch: no node None (400).
      {"parent_node", 400, nullptr,
       "Unable to apply the requested parent_node 'None'. Requested value was invalid."},
      {"properties", 200, Json::object()},
      {"protected", 200, false},  // _update_changed_fields: None becomes False
      {"protected_reason", 200, nullptr},
      {"resource_class", 200, nullptr},
      {"retired_reason", 200, nullptr},
      {"retired", 200, false},  // as disable_power_off
      {"shard", 200, nullptr},
  };
  for (auto& c : interfaceCases(200)) cases.push_back(c);
  checkPatches(api, "/v1/nodes/" + uuid, cases);

  // Removing a field is not the same as nulling it: conductor_group and maintenance return to
  // their defaults, as before (docs/compatibility.md).
  Response removed =
      api.patch("/v1/nodes/" + uuid,
                Json::array({op("remove", "/conductor_group"), op("remove", "/maintenance")}));
  INFO(removed.body);
  CHECK(removed.status == 200);
  CHECK(removed.json()["conductor_group"] == "");
  CHECK(removed.json()["maintenance"] == false);
}

TEST_CASE("node PATCH of chassis_uuid to null needs 1.25 when the node has a chassis",
          "[server][api][nodes][null][patch]") {
  // Ironic's _update_changed_fields: a chassis removed or nulled below 1.25 is 406.
  TestApi api;
  const std::string chassis = api.post("/v1/chassis", Json::object()).json()["uuid"];
  api.createNode({{"name", "in-chassis"}, {"chassis_uuid", chassis}});
  api.version = v(ver::k25UnsetChassisUuid - 1);
  for (const Json& patch : {Json::array({op("replace", "/chassis_uuid", nullptr)}),
                            Json::array({op("remove", "/chassis_uuid")})}) {
    INFO(patch.dump());
    CHECK(api.patch("/v1/nodes/in-chassis", patch).status == 406);
    CHECK(api.get("/v1/nodes/in-chassis").json()["chassis_uuid"] == chassis);
  }
  api.createNode({{"name", "no-chassis"}});
  CHECK(api.patch("/v1/nodes/no-chassis", Json::array({op("replace", "/chassis_uuid", nullptr)}))
            .status == 200);
  api.version = v(ver::k25UnsetChassisUuid);
  Response r =
      api.patch("/v1/nodes/in-chassis", Json::array({op("replace", "/chassis_uuid", nullptr)}));
  CHECK(r.status == 200);
  CHECK(r.json()["chassis_uuid"].is_null());
}

TEST_CASE("port POST and PATCH take null where Ironic's port schema does",
          "[server][api][ports][null]") {
  TestApi api;
  api.version = v(kMaxVersion);
  const std::string node = api.createNode({{"name", "port-node"}})["uuid"];
  int mac = 0;
  auto base = [&](const std::string&) {
    char address[18];
    std::snprintf(address, sizeof address, "52:54:00:00:10:%02x", ++mac);
    return Json{{"address", address}, {"node_uuid", node}};
  };
  checkPosts(api, "/v1/ports", "ports", base,
             {
                 {"uuid", 201, "<uuid>"},
                 {"category", 201, nullptr},
                 {"description", 201, nullptr},
                 {"extra", 201, Json::object()},
                 {"is_smartnic", 201, false},  // nullable, default False; the column's too
                 {"local_link_connection", 201, Json::object()},
                 {"name", 201, nullptr},
                 {"physical_network", 201, nullptr},
                 {"portgroup_uuid", 201, nullptr},
                 {"pxe_enabled", 400, nullptr, noneFault("pxe_enabled")},  // BooleanField()
                 {"vendor", 201, nullptr},
                 // Not null in Ironic's schema (boolean only): its 400.
                 {"available_for_dynamic_portgroup", 400, nullptr,
                  noneFault("available_for_dynamic_portgroup")},
             });
  Json port = base("");
  port["extra"] = {{"a", 1}};
  port["is_smartnic"] = true;
  port["local_link_connection"] = {{"port_id", "p1"}, {"hostname", "h1"}};
  port["name"] = "p";
  port["description"] = "d";
  port["vendor"] = "v";
  port["category"] = "c";
  port["physical_network"] = "physnet";
  Response created = api.post("/v1/ports", port);
  REQUIRE(created.status == 201);
  checkPatches(api, "/v1/ports/" + created.json()["uuid"].get<std::string>(),
               {
                   {"category", 200, nullptr},
                   {"description", 200, nullptr},
                   {"extra", 200, Json::object()},
                   // Ironic stores None (nullable); Kiln keeps false, the same meaning.
                   {"is_smartnic", 200, false},
                   {"local_link_connection", 200, Json::object()},
                   {"name", 200, nullptr},
                   {"physical_network", 200, nullptr},
                   {"portgroup_uuid", 200, nullptr},
                   {"pxe_enabled", 400, nullptr, noneFault("pxe_enabled")},
                   {"vendor", 200, nullptr},
                   // Not null in Ironic's schema (boolean only): its 400.
                   {"available_for_dynamic_portgroup", 400, nullptr,
                    noneFault("available_for_dynamic_portgroup")},
               });
}

TEST_CASE("port group POST and PATCH take null where Ironic's port group schema does",
          "[server][api][ports][null]") {
  TestApi api;
  api.version = v(kMaxVersion);
  const std::string node = api.createNode({{"name", "pg-node"}})["uuid"];
  checkPosts(api, "/v1/portgroups", "portgroups",
             [&](const std::string& field) {
               Json body = {{"node_uuid", node}};
               if (field != "name") body["name"] = "pg-" + field;
               return body;
             },
             {
                 {"uuid", 201, "<uuid>"},
                 {"address", 201, nullptr},
                 {"category", 201, nullptr},
                 {"extra", 201, Json::object()},
                 {"mode", 201, "active-backup"},  // create_portgroup: default_portgroup_mode
                 {"name", 201, nullptr},
                 {"physical_network", 201, nullptr},
                 {"properties", 201, Json::object()},
                 {"standalone_ports_supported", 400, nullptr,
                  noneFault("standalone_ports_supported")},  // BooleanField(): a 500
             });
  Response created = api.post("/v1/portgroups", {{"node_uuid", node},
                                                 {"name", "bond"},
                                                 {"address", "52:54:00:00:20:01"},
                                                 {"category", "c"},
                                                 {"extra", {{"a", 1}}},
                                                 {"mode", "802.3ad"},
                                                 {"physical_network", "physnet"},
                                                 {"properties", {{"a", 1}}}});
  REQUIRE(created.status == 201);
  checkPatches(
      api, "/v1/portgroups/" + created.json()["uuid"].get<std::string>(),
      {
          {"address", 200, nullptr},
          {"category", 200, nullptr},
          {"extra", 200, Json::object()},
          {"mode", 200, nullptr},  // only removing it is refused
          {"name", 200, nullptr},
          {"physical_network", 200, nullptr},
          {"properties", 200, Json::object()},
          {"standalone_ports_supported", 400, nullptr, noneFault("standalone_ports_supported")},
      });
}

TEST_CASE("chassis and deploy template POST and PATCH take null where Ironic's schemas do",
          "[server][api][null]") {
  TestApi api;
  api.version = v(kMaxVersion);
  checkPosts(api, "/v1/chassis", "chassis", [](const std::string&) { return Json::object(); },
             {
                 {"uuid", 201, "<uuid>"},
                 {"description", 201, nullptr},
                 {"extra", 201, Json::object()},
             });
  Response chassis = api.post("/v1/chassis", {{"description", "d"}, {"extra", {{"a", 1}}}});
  REQUIRE(chassis.status == 201);
  checkPatches(api, "/v1/chassis/" + chassis.json()["uuid"].get<std::string>(),
               {
                   {"description", 200, nullptr},
                   {"extra", 200, Json::object()},
               });

  const Json steps = Json::array({{{"interface", "deploy"},
                                   {"step", "erase_devices"},
                                   {"args", Json::object()},
                                   {"priority", 10}}});
  int n = 0;
  auto base = [&](const std::string&) {
    return Json{{"name", "CUSTOM_NULL_" + std::to_string(++n)}, {"steps", steps}};
  };
  checkPosts(api, "/v1/deploy_templates", "deploy_templates", base,
             {
                 {"uuid", 201, "<uuid>"},
                 {"extra", 201, Json::object()},
             });
  // Ironic's schema takes a description (null or a string) that its object has no field for:
  // it is dropped.
  Json body = base("");
  body["description"] = nullptr;
  Response described = api.post("/v1/deploy_templates", body);
  INFO(described.body);
  CHECK(described.status == 201);
  CHECK_FALSE(described.json().contains("description"));

  body = base("");
  body["extra"] = {{"a", 1}};
  Response created = api.post("/v1/deploy_templates", body);
  REQUIRE(created.status == 201);
  checkPatches(api, "/v1/deploy_templates/" + created.json()["uuid"].get<std::string>(),
               {{"extra", 200, Json::object()}});
}

TEST_CASE("allocation POST and PATCH take null where Ironic's allocation schema does",
          "[server][api][allocations][null]") {
  TestApi api;
  api.version = v(kMaxVersion);
  int n = 0;
  auto base = [&](const std::string& field) {
    Json body = {{"resource_class", "null-rc"}};
    if (field != "name") body["name"] = "alloc-" + std::to_string(++n);
    return body;
  };
  checkPosts(api, "/v1/allocations", "allocations", base,
             {
                 {"uuid", 201, "<uuid>"},
                 {"candidate_nodes", 201, Json::array()},
                 {"extra", 201, Json::object()},
                 {"name", 201, nullptr},
                 {"node", 201, nullptr},  // 1.58: no backfill (the key is not shown)
                 {"owner", 201, nullptr},
                 {"resource_class", 400, nullptr,
                  "The resource_class field is mandatory when not backfilling"},
                 {"traits", 201, Json::array()},
             });
  api.settle();
  Response created =
      api.post("/v1/allocations",
               {{"resource_class", "null-rc"}, {"name", "patched"}, {"extra", {{"a", 1}}}});
  REQUIRE(created.status == 201);
  api.settle();
  checkPatches(api, "/v1/allocations/" + created.json()["uuid"].get<std::string>(),
               {
                   {"name", 200, nullptr},
                   {"extra", 200, Json::object()},
               });
}

TEST_CASE("volume connector and target POST and PATCH take null where Ironic's schemas do",
          "[server][api][volume][null]") {
  TestApi api;
  api.version = v(kMaxVersion);
  const std::string node = api.createNode({{"name", "volume-node"}})["uuid"];
  REQUIRE(api.put("/v1/nodes/volume-node/states/power", {{"target", "power off"}}).status == 202);
  api.settle();
  int n = 0;
  checkPosts(api, "/v1/volume/connectors", "connectors",
             [&](const std::string&) {
               return Json{{"node_uuid", node},
                           {"type", "iqn"},
                           {"connector_id", "iqn.null-" + std::to_string(++n)}};
             },
             {
                 {"uuid", 201, "<uuid>"},
                 {"extra", 201, Json::object()},
             });
  auto target = [&](const std::string&) {
    return Json{{"node_uuid", node},
                {"volume_type", "iscsi"},
                {"volume_id", "vol-" + std::to_string(++n)},
                {"boot_index", n}};
  };
  checkPosts(api, "/v1/volume/targets", "targets", target,
             {
                 {"uuid", 201, "<uuid>"},
                 {"extra", 201, Json::object()},
                 {"properties", 201, Json::object()},
             });
  Response connector = api.post("/v1/volume/connectors", {{"node_uuid", node},
                                                          {"type", "iqn"},
                                                          {"connector_id", "iqn.patched"},
                                                          {"extra", {{"a", 1}}}});
  REQUIRE(connector.status == 201);
  checkPatches(api, "/v1/volume/connectors/" + connector.json()["uuid"].get<std::string>(),
               {{"extra", 200, Json::object()}});
  Json body = target("");
  body["extra"] = {{"a", 1}};
  body["properties"] = {{"a", 1}};
  Response created = api.post("/v1/volume/targets", body);
  REQUIRE(created.status == 201);
  checkPatches(api, "/v1/volume/targets/" + created.json()["uuid"].get<std::string>(),
               {
                   {"extra", 200, Json::object()},
                   {"properties", 200, Json::object()},
               });
}

TEST_CASE("runbook and inspection rule POST and PATCH take null where Ironic's schemas do",
          "[server][api][runbooks][null]") {
  TestApi api;
  api.version = v(kMaxVersion);
  const Json steps = Json::array({{{"interface", "deploy"},
                                   {"step", "erase_devices"},
                                   {"args", Json::object()},
                                   {"order", 1}}});
  int n = 0;
  auto runbook = [&](const std::string&) {
    return Json{{"name", "runbook-" + std::to_string(++n)}, {"steps", steps}};
  };
  checkPosts(api, "/v1/runbooks", "runbooks", runbook,
             {
                 {"uuid", 201, "<uuid>"},
                 {"description", 201, nullptr},
                 {"disable_ramdisk", 201, false},  // BooleanField(default=False)
                 {"extra", 201, Json::object()},
                 {"owner", 201, nullptr},
                 {"public", 201, false},  // BooleanField(default=False)
             });
  Json body = runbook("");
  body["description"] = "d";
  body["disable_ramdisk"] = true;
  body["extra"] = {{"a", 1}};
  body["owner"] = "owner";
  Response created = api.post("/v1/runbooks", body);
  REQUIRE(created.status == 201);
  checkPatches(api, "/v1/runbooks/" + created.json()["uuid"].get<std::string>(),
               {
                   {"description", 200, nullptr},
                   {"disable_ramdisk", 200, false},
                   {"extra", 200, Json::object()},
                   {"owner", 200, nullptr},
                   {"public", 200, false},  // patch(): any /public value clears the owner
               });

  const Json actions = Json::parse(R"([{"op": "log", "args": {"msg": "hello"}}])");
  // validate_rule(): rule.get('phase', 'main') is None, not a phase.
  const std::string badPhase = "Invalid phase: None. Valid phases are: main";
  checkPosts(api, "/v1/inspection_rules", "inspection_rules",
             [&](const std::string&) {
               return Json{{"actions", actions}};
             },
             {
                 {"uuid", 201, "<uuid>"},
                 {"description", 201, nullptr},
                 {"phase", 400, nullptr, badPhase},
                 {"sensitive", 201, false},  // BooleanField(default=False)
             });
  Response rule = api.post("/v1/inspection_rules", {{"actions", actions}, {"description", "d"}});
  REQUIRE(rule.status == 201);
  checkPatches(api, "/v1/inspection_rules/" + rule.json()["uuid"].get<std::string>(),
               {
                   {"description", 200, nullptr},
                   {"phase", 400, nullptr, badPhase},
                   {"sensitive", 200, false},
               });
}

TEST_CASE("the port body of Ansible's openstack.cloud.baremetal_port is created",
          "[server][api][ports][null]") {
  // openstack.cloud 1.10.0 (Debian's ansible 7.7.0) baremetal_port add_port() passes every key
  // of _PROP_TO_ATTR_MAP, None when not set; openstacksdk 0.101.0 sends them at 1.34. Captured
  // verbatim (is_pxe_enabled: true, nothing else set).
  TestApi api;
  api.version = "1.34";
  const std::string node = api.createNode({{"name", "ansible"}})["uuid"];
  const std::string body =
      R"({"pxe_enabled": true, "node_uuid": ")" + node +
      R"(", "extra": null, "physical_network": null, "address": "52:54:00:12:34:56", )"
      R"("uuid": null, "local_link_connection": null})";
  Response r = api.call("POST", "/v1/ports", body);
  INFO(r.body);
  REQUIRE(r.status == 201);
  const Json port = r.json();
  CHECK(kiln::isUuidLike(port["uuid"].get<std::string>()));
  CHECK(port["address"] == "52:54:00:12:34:56");
  CHECK(port["node_uuid"] == node);
  CHECK(port["pxe_enabled"] == true);
  CHECK(port["extra"] == Json::object());
  CHECK(port["local_link_connection"] == Json::object());
  CHECK(port["physical_network"].is_null());
  CHECK(api.get("/v1/ports/" + port["uuid"].get<std::string>()).json() == port);

  // Without is_pxe_enabled the module sends "pxe_enabled": null, on which Ironic's Port object
  // raises (a 500): a 400 naming the field here, and no port.
  const std::string unset =
      R"({"pxe_enabled": null, "node_uuid": ")" + node +
      R"(", "extra": null, "physical_network": null, "address": "52:54:00:12:34:57", )"
      R"("uuid": null, "local_link_connection": null})";
  Response refused = api.call("POST", "/v1/ports", unset);
  CHECK(refused.status == 400);
  CHECK(refused.fault() == noneFault("pxe_enabled"));
  CHECK(api.get("/v1/ports?address=52:54:00:12:34:57").json()["ports"].empty());
}

TEST_CASE("the node body of Ansible's openstack.cloud.baremetal_node is created",
          "[server][api][nodes][null]") {
  // baremetal_node (openstack.cloud 1.10.0) calls openstacksdk's register_machine(), which
  // POSTs its kwargs at 1.6: driver, properties, driver_info and name (None when not set; uuid
  // only when given), then {"address", "node_uuid"} per NIC.
  TestApi api;
  api.version = "1.6";
  Response r = api.call("POST", "/v1/nodes",
                        R"({"driver": "fake-hardware", "properties": {"cpu_arch": "x86_64"}, )"
                        R"("driver_info": {"ipmi_address": "192.0.2.1"}, "name": null})");
  INFO(r.body);
  REQUIRE(r.status == 201);
  const std::string uuid = r.json()["uuid"];
  CHECK(r.json()["name"].is_null());
  Response port = api.post("/v1/ports", {{"address", "52:54:00:12:34:58"}, {"node_uuid", uuid}});
  CHECK(port.status == 201);
}

TEST_CASE("fields Ironic's schemas take no null for refuse it in a POST and a PATCH",
          "[server][api][null]") {
  // The other side of the tables above: the fields whose type in the same schemas has no
  // 'null' (node driver; port address, node_uuid; port group node_uuid; deploy template and
  // runbook name, steps; volume connector connector_id, node_uuid, type; volume target
  // boot_index, node_uuid, volume_id, volume_type; inspection rule actions, conditions,
  // priority). Ironic answers its schema's 400; so does Kiln, and nothing is written.
  TestApi api;
  api.version = v(kMaxVersion);
  const std::string node = api.createNode({{"name", "strict-node"}})["uuid"];
  REQUIRE(api.put("/v1/nodes/strict-node/states/power", {{"target", "power off"}}).status == 202);
  api.settle();
  auto refused = [](std::initializer_list<const char*> fields) {
    std::vector<NullCase> out;
    for (const char* f : fields) out.push_back({f, 400});
    return out;
  };

  checkPosts(
      api, "/v1/nodes", "nodes",
      [](const std::string&) {
        return Json{{"driver", "fake-hardware"}};
      },
      refused({"driver"}));
  checkPatches(api, "/v1/nodes/" + node, refused({"driver"}));

  checkPosts(
      api, "/v1/ports", "ports",
      [&](const std::string&) {
        return Json{{"address", "52:54:00:00:30:01"}, {"node_uuid", node}};
      },
      refused({"address", "node_uuid"}));
  Response port = api.post("/v1/ports", {{"address", "52:54:00:00:30:02"}, {"node_uuid", node}});
  REQUIRE(port.status == 201);
  checkPatches(api, "/v1/ports/" + port.json()["uuid"].get<std::string>(),
               refused({"address", "node_uuid"}));

  checkPosts(
      api, "/v1/portgroups", "portgroups",
      [&](const std::string&) {
        return Json{{"node_uuid", node}};
      },
      refused({"node_uuid"}));
  Response pg = api.post("/v1/portgroups", {{"node_uuid", node}, {"name", "strict-pg"}});
  REQUIRE(pg.status == 201);
  checkPatches(api, "/v1/portgroups/strict-pg", refused({"node_uuid"}));

  const Json deploySteps = Json::array({{{"interface", "deploy"},
                                         {"step", "erase_devices"},
                                         {"args", Json::object()},
                                         {"priority", 10}}});
  checkPosts(
      api, "/v1/deploy_templates", "deploy_templates",
      [&](const std::string&) {
        return Json{{"name", "CUSTOM_STRICT"}, {"steps", deploySteps}};
      },
      refused({"name", "steps"}));
  REQUIRE(api.post("/v1/deploy_templates", {{"name", "CUSTOM_STRICT"}, {"steps", deploySteps}})
              .status == 201);
  checkPatches(api, "/v1/deploy_templates/CUSTOM_STRICT", refused({"name", "steps"}));

  checkPosts(
      api, "/v1/volume/connectors", "connectors",
      [&](const std::string&) {
        return Json{{"node_uuid", node}, {"type", "iqn"}, {"connector_id", "iqn.strict"}};
      },
      refused({"connector_id", "node_uuid", "type"}));
  Response connector = api.post("/v1/volume/connectors",
                                {{"node_uuid", node}, {"type", "iqn"}, {"connector_id", "iqn.s"}});
  REQUIRE(connector.status == 201);
  checkPatches(api, "/v1/volume/connectors/" + connector.json()["uuid"].get<std::string>(),
               refused({"connector_id", "node_uuid", "type"}));
  const Json target = {
      {"node_uuid", node}, {"volume_type", "iscsi"}, {"volume_id", "strict"}, {"boot_index", 0}};
  checkPosts(
      api, "/v1/volume/targets", "targets", [&](const std::string&) { return target; },
      refused({"boot_index", "node_uuid", "volume_id", "volume_type"}));
  Response created = api.post("/v1/volume/targets", target);
  REQUIRE(created.status == 201);
  checkPatches(api, "/v1/volume/targets/" + created.json()["uuid"].get<std::string>(),
               refused({"boot_index", "node_uuid", "volume_id", "volume_type"}));

  const Json runbookSteps = Json::array({{{"interface", "deploy"},
                                          {"step", "erase_devices"},
                                          {"args", Json::object()},
                                          {"order", 1}}});
  checkPosts(
      api, "/v1/runbooks", "runbooks",
      [&](const std::string&) {
        return Json{{"name", "strict"}, {"steps", runbookSteps}};
      },
      refused({"name", "steps"}));
  REQUIRE(api.post("/v1/runbooks", {{"name", "strict"}, {"steps", runbookSteps}}).status == 201);
  checkPatches(api, "/v1/runbooks/strict", refused({"name", "steps"}));

  const Json actions = Json::parse(R"([{"op": "log", "args": {"msg": "hello"}}])");
  checkPosts(
      api, "/v1/inspection_rules", "inspection_rules",
      [&](const std::string&) {
        return Json{{"actions", actions}};
      },
      refused({"actions", "conditions", "priority"}));
  Response rule = api.post("/v1/inspection_rules", {{"actions", actions}});
  REQUIRE(rule.status == 201);
  checkPatches(api, "/v1/inspection_rules/" + rule.json()["uuid"].get<std::string>(),
               refused({"actions", "conditions", "priority"}));
}
