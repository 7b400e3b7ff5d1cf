#include <catch2/catch.hpp>

#include <string>

#include "server/model/bios_setting.h"
#include "server/model/node.h"
#include "server/storage/queries/bios_settings.h"
#include "tests/support/redfish_test_server.h"
#include "tests/support/test_api.h"

using kiln::server::Storage;
using kiln::test::Json;
using kiln::test::Response;
using kiln::test::TestApi;
namespace ks = kiln::server;

namespace {

Response verb(TestApi& api, const std::string& ident, const std::string& target,
              Json extra = Json::object()) {
  extra["target"] = target;
  auto r = api.put("/v1/nodes/" + ident + "/states/provision", extra);
  api.settle();
  return r;
}

Json node(TestApi& api, const std::string& ident) { return api.get("/v1/nodes/" + ident).json(); }

/// A manageable fake-hardware node (bios interface "fake" unless `extra` says otherwise).
Json manageable(TestApi& api, const std::string& name, Json extra = Json::object()) {
  extra["name"] = name;
  Json n = api.createNode(extra);
  REQUIRE(verb(api, name, "manage").status == 202);
  REQUIRE(node(api, name)["provision_state"] == "manageable");
  return n;
}

/// Runs manual cleaning with the given bios step; the node ends manageable.
void cleanWith(TestApi& api, const std::string& ident, const std::string& step,
               Json args = Json::object()) {
  REQUIRE(verb(api, ident, "clean",
               {{"clean_steps", {{{"interface", "bios"}, {"step", step}, {"args", args}}}}})
              .status == 202);
  INFO(node(api, ident)["last_error"]);
  REQUIRE(node(api, ident)["provision_state"] == "manageable");
}

Json settings(std::initializer_list<std::pair<std::string, Json>> items) {
  Json out = Json::array();
  for (const auto& [name, value] : items) out.push_back({{"name", name}, {"value", value}});
  return out;
}

int64_t storedSettings(TestApi& api) {
  auto tx = api.app().storage().begin(Storage::Mode::Read).value();
  return tx->records(ks::Resource::BiosSetting).count({}).value();
}

}  // namespace

TEST_CASE("bios settings are not found below API 1.40", "[server][api][bios]") {
  TestApi api;
  manageable(api, "n1");
  cleanWith(api, "n1", "apply_configuration", {{"settings", settings({{"A", "1"}})}});
  api.version = "1.39";
  CHECK(api.get("/v1/nodes/n1/bios").status == 404);
  CHECK(api.get("/v1/nodes/n1/bios/A").status == 404);
  api.version = "1.40";
  CHECK(api.get("/v1/nodes/n1/bios").status == 200);
  CHECK(api.get("/v1/nodes/n1/bios/A").status == 200);
}

TEST_CASE("bios settings are cached after a bios clean step on fake hardware",
          "[server][api][bios]") {
  TestApi api;
  Json n = manageable(api, "n1");
  const std::string uuid = n["uuid"];
  CHECK(api.get("/v1/nodes/n1/bios").json() == Json::parse(R"({"bios": []})"));

  cleanWith(api, "n1", "apply_configuration",
            {{"settings",
              settings({{"ProcVirtualization", "Enabled"}, {"NumCores", 4}, {"Hyper", true}})}});
  const std::string applied = kiln::formatIsoTime(api.clock().now());
  Json list = api.get("/v1/nodes/n1/bios").json()["bios"];
  REQUIRE(list.size() == 3);
  // Sorted by name; values are strings as in Ironic's string field.
  CHECK(list[0]["name"] == "Hyper");
  CHECK(list[0]["value"] == "True");
  CHECK(list[1]["name"] == "NumCores");
  CHECK(list[1]["value"] == "4");
  Json proc = list[2];
  CHECK(proc.size() == 5);  // created_at, updated_at, name, value, links
  CHECK(proc["name"] == "ProcVirtualization");
  CHECK(proc["value"] == "Enabled");
  CHECK(proc["created_at"] == applied);
  CHECK(proc["updated_at"].is_null());
  // List links name the node as the request did.
  CHECK(proc["links"] == Json::parse(R"([
      {"href": "http://kiln.test:6385/v1/nodes/n1/bios/ProcVirtualization", "rel": "self"},
      {"href": "http://kiln.test:6385/nodes/n1/bios/ProcVirtualization", "rel": "bookmark"}])"));

  // A second run changes one setting and adds one; the others keep their rows.
  api.clock().advance(std::chrono::seconds(60));
  cleanWith(api, "n1", "apply_configuration",
            {{"settings", settings({{"ProcVirtualization", "Disabled"}, {"Boot", "Uefi"}})}});
  list = api.get("/v1/nodes/n1/bios").json()["bios"];
  REQUIRE(list.size() == 4);
  Json one = api.get("/v1/nodes/" + uuid + "/bios/ProcVirtualization").json();
  REQUIRE(one.contains("ProcVirtualization"));
  CHECK(one["ProcVirtualization"]["value"] == "Disabled");
  CHECK(one["ProcVirtualization"]["created_at"] == applied);
  CHECK(one["ProcVirtualization"]["updated_at"] == kiln::formatIsoTime(api.clock().now()));
  CHECK(one["ProcVirtualization"]["links"][0]["href"] ==
        "http://kiln.test:6385/v1/nodes/" + uuid + "/bios/ProcVirtualization");
  CHECK(api.get("/v1/nodes/n1/bios/NumCores").json()["NumCores"]["updated_at"].is_null());

  // factory_reset empties the fake machine's settings, and so the cache.
  cleanWith(api, "n1", "factory_reset");
  CHECK(api.get("/v1/nodes/n1/bios").json()["bios"].empty());
}

TEST_CASE("bios settings are cached after a bios deploy step", "[server][api][bios]") {
  TestApi api;
  manageable(api, "n1");
  REQUIRE(verb(api, "n1", "provide").status == 202);
  REQUIRE(verb(api, "n1", "active",
               {{"deploy_steps",
                 {{{"interface", "bios"},
                   {"step", "apply_configuration"},
                   {"args", {{"settings", settings({{"SriovEnable", "Enabled"}})}}},
                   {"priority", 95}}}}})
              .status == 202);
  REQUIRE(node(api, "n1")["provision_state"] == "active");
  Json list = api.get("/v1/nodes/n1/bios").json()["bios"];
  REQUIRE(list.size() == 1);
  CHECK(list[0]["name"] == "SriovEnable");
}

TEST_CASE("bios setting shows the registry fields from API 1.74", "[server][api][bios]") {
  TestApi api;
  manageable(api, "n1");
  cleanWith(api, "n1", "apply_configuration", {{"settings", settings({{"A", "x"}})}});
  Json full = api.get("/v1/nodes/n1/bios/A").json()["A"];
  CHECK(full.size() == 14);
  CHECK(full["allowable_values"] == Json::array());  // a list field: [] when unknown
  for (const char* f : {"attribute_type", "lower_bound", "max_length", "min_length", "read_only",
                        "reset_required", "unique", "upper_bound"}) {
    INFO(f);
    CHECK(full.contains(f));
    CHECK(full[f].is_null());
  }
  api.version = "1.73";
  Json plain = api.get("/v1/nodes/n1/bios/A").json()["A"];
  CHECK(plain.size() == 5);
  CHECK_FALSE(plain.contains("attribute_type"));
}

TEST_CASE("bios setting registry fields come from the store", "[server][api][bios]") {
  TestApi api;
  manageable(api, "n1");
  {
    auto tx = api.app().storage().begin(Storage::Mode::Write).value();
    auto n = tx->nodes().findBy(ks::kNodeName, ks::Value::text("n1")).value();
    ks::BiosSetting s;
    s.name = "Mode";
    s.value = "A";
    s.attributeType = "Enumeration";
    s.allowableValues = std::vector<std::string>{"A", "B"};
    s.lowerBound = 1;
    s.upperBound = 9;
    s.minLength = 0;
    s.maxLength = 16;
    s.readOnly = false;
    s.resetRequired = true;
    s.unique = false;
    REQUIRE(ks::syncBiosSettings(*tx, n->id(), {s}, "2024-01-01T00:00:00+00:00"));
    REQUIRE(tx->commit());
  }
  Json d = api.get("/v1/nodes/n1/bios?detail=true").json()["bios"][0];
  CHECK(d["attribute_type"] == "Enumeration");
  CHECK(d["allowable_values"] == Json::parse(R"(["A", "B"])"));
  CHECK(d["lower_bound"] == 1);
  CHECK(d["upper_bound"] == 9);
  CHECK(d["min_length"] == 0);
  CHECK(d["max_length"] == 16);
  CHECK(d["read_only"] == false);
  CHECK(d["reset_required"] == true);
  CHECK(d["unique"] == false);
  CHECK(d["created_at"] == "2024-01-01T00:00:00+00:00");
}

TEST_CASE("bios list takes detail and fields from API 1.74 only, never together",
          "[server][api][bios]") {
  TestApi api;
  manageable(api, "n1");
  cleanWith(api, "n1", "apply_configuration", {{"settings", settings({{"A", "x"}})}});

  Json detail = api.get("/v1/nodes/n1/bios?detail=true").json()["bios"][0];
  CHECK(detail.size() == 14);
  Json notDetail = api.get("/v1/nodes/n1/bios?detail=false").json()["bios"][0];
  CHECK(notDetail.size() == 5);

  Json value = api.get("/v1/nodes/n1/bios?fields=VALUE,value").json()["bios"][0];
  CHECK(value.size() == 4);  // created_at, updated_at, value, links
  CHECK(value["value"] == "x");
  CHECK_FALSE(value.contains("name"));

  auto both = api.get("/v1/nodes/n1/bios?detail=true&fields=name");
  CHECK(both.status == 400);
  CHECK(both.fault() == "Can not specify ?detail=True and fields in the same request.");
  auto unknown = api.get("/v1/nodes/n1/bios?fields=name,colour");
  CHECK(unknown.status == 400);
  CHECK(unknown.fault() == "Field(s) \"colour\" are not valid");
  CHECK(api.get("/v1/nodes/n1/bios?detail=perhaps").status == 400);

  api.version = "1.73";
  auto oldDetail = api.get("/v1/nodes/n1/bios?detail=true");
  CHECK(oldDetail.status == 400);
  CHECK(oldDetail.fault() == "Invalid query parameter ?detail=True received.");
  auto oldFields = api.get("/v1/nodes/n1/bios?fields=name,value");
  CHECK(oldFields.status == 400);
  CHECK(oldFields.fault() == "Invalid query parameter ?fields=['name', 'value'] received.");
  CHECK(api.get("/v1/nodes/n1/bios").status == 200);
}

TEST_CASE("bios setting lookup answers Ironic's 404 and 400", "[server][api][bios]") {
  TestApi api;
  Json n = manageable(api, "n1");
  auto missing = api.get("/v1/nodes/n1/bios/Nope");
  CHECK(missing.status == 404);
  CHECK(missing.fault() ==
        "Node " + n["uuid"].get<std::string>() + " doesn't have a BIOS setting 'Nope'");
  auto bad = api.get("/v1/nodes/n1/bios/a%20b");
  CHECK(bad.status == 400);
  CHECK(bad.fault() == "Expected name for setting_name: a b");
  CHECK(api.get("/v1/nodes/nope/bios").status == 404);
  CHECK(api.get("/v1/nodes/nope/bios/A").status == 404);
}

TEST_CASE("bios settings are not cached for a node with no-bios", "[server][api][bios]") {
  TestApi api;
  manageable(api, "n1", {{"bios_interface", "no-bios"}});
  REQUIRE(verb(api, "n1", "provide").status == 202);
  REQUIRE(node(api, "n1")["provision_state"] == "available");
  CHECK(api.get("/v1/nodes/n1/bios").json()["bios"].empty());
  CHECK(storedSettings(api) == 0);
}

TEST_CASE("bios settings are refreshed on verify and at the start of cleaning",
          "[server][api][bios]") {
  TestApi api;
  manageable(api, "n1");
  cleanWith(api, "n1", "apply_configuration", {{"settings", settings({{"A", "1"}})}});
  // The fake machine's settings change behind Kiln's back (driver_internal_info).
  {
    auto tx = api.app().storage().begin(Storage::Mode::Write).value();
    auto n = tx->nodes().findBy(ks::kNodeName, ks::Value::text("n1")).value();
    Json info = Json::parse(n->str(ks::kNodeDriverInternalInfo));
    info["fake_bios_settings"] = {{"B", "2"}};
    n->setText(ks::kNodeDriverInternalInfo, info.dump());
    REQUIRE(tx->nodes().update(*n));
    REQUIRE(tx->commit());
  }
  REQUIRE(verb(api, "n1", "provide").status == 202);  // automated cleaning
  Json list = api.get("/v1/nodes/n1/bios").json()["bios"];
  REQUIRE(list.size() == 1);
  CHECK(list[0]["name"] == "B");
}

TEST_CASE("bios settings go with their node", "[server][api][bios]") {
  TestApi api;
  manageable(api, "n1");
  cleanWith(api, "n1", "apply_configuration", {{"settings", settings({{"A", "1"}, {"B", "2"}})}});
  REQUIRE(storedSettings(api) == 2);
  REQUIRE(api.del("/v1/nodes/n1").status == 204);
  CHECK(storedSettings(api) == 0);
}

TEST_CASE("bios settings of a redfish node are read from its BMC on verify and after a bios step",
          "[server][api][bios][redfish]") {
  kiln::test::RedfishTestServer bmc;
  REQUIRE(bmc.start());
  bmc.updateSystem("1", [](kiln::test::RedfishSystemState& s) {
    s.bios = true;
    s.biosAttributes = {{"ProcVirtualization", "Enabled"}};
  });
  TestApi api;
  api.createNode({{"name", "r1"},
                  {"driver", "redfish"},
                  {"bios_interface", "redfish"},
                  {"driver_info", {{"redfish_address", bmc.address()}}}});
  REQUIRE(verb(api, "r1", "manage").status == 202);
  INFO(node(api, "r1")["last_error"]);
  REQUIRE(node(api, "r1")["provision_state"] == "manageable");
  Json list = api.get("/v1/nodes/r1/bios").json()["bios"];
  REQUIRE(list.size() == 1);
  CHECK(list[0]["name"] == "ProcVirtualization");
  CHECK(list[0]["value"] == "Enabled");

  cleanWith(api, "r1", "apply_configuration",
            {{"settings", settings({{"ProcVirtualization", "Disabled"}})}});
  CHECK(bmc.requests("PATCH", "/redfish/v1/Systems/1/Bios/Settings").size() == 1);
  CHECK(api.get("/v1/nodes/r1/bios/ProcVirtualization").json()["ProcVirtualization"]["value"] ==
        "Disabled");
}
