// What the conductor does when a worker cannot finish an action: a corrupt stored row or an
// exception in a job fails that node's action (its failure state, last_error, no reservation);
// other nodes, the worker threads and the process go on.
#include <catch2/catch.hpp>

#include <functional>

#include "server/model/deploy_template.h"
#include "server/model/node.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TestApi;
using namespace kiln::server;

namespace {

Json node(TestApi& api, const std::string& ident) {
  api.settle();
  return api.get("/v1/nodes/" + ident).json();
}

int verb(TestApi& api, const std::string& ident, const std::string& target, Json extra = Json::object()) {
  extra["target"] = target;
  const int status = api.put("/v1/nodes/" + ident + "/states/provision", extra).status;
  api.settle();
  return status;
}

/// Writes a node row through the storage, bypassing the API (which would refuse the value).
void writeRow(TestApi& api, const std::string& name, const std::function<void(Record&)>& change) {
  auto tx = api.app().storage().begin(Storage::Mode::Write).value();
  auto rec = tx->nodes().findBy(kNodeName, Value::text(name)).value();
  REQUIRE(rec);
  change(*rec);
  REQUIRE(tx->nodes().update(*rec));
  REQUIRE(tx->commit());
}

/// The failure columns of a node's row, read through the storage: the API splices stored JSON
/// columns into its answers unchecked, so a node whose driver_info is corrupt is inspected here.
Json failureColumns(TestApi& api, const std::string& name) {
  api.settle();
  auto tx = api.app().storage().begin(Storage::Mode::Read).value();
  auto rec = tx->nodes().findBy(kNodeName, Value::text(name)).value();
  REQUIRE(rec);
  auto text = [&](size_t field) { return (*rec)[field].isNull() ? Json() : Json((*rec).str(field)); };
  return {{"provision_state", text(kNodeProvisionState)},
          {"target_provision_state", text(kNodeTargetProvisionState)},
          {"reservation", text(kNodeReservation)},
          {"last_error", text(kNodeLastError)}};
}

void makeAvailable(TestApi& api, const std::string& name) {
  api.createNode({{"name", name}});
  REQUIRE(verb(api, name, "manage") == 202);
  REQUIRE(verb(api, name, "provide") == 202);
  REQUIRE(node(api, name)["provision_state"] == "available");
}

void checkFailed(const Json& n, const std::string& state, const std::string& lastError) {
  CHECK(n["provision_state"] == state);
  CHECK(n["target_provision_state"].is_null());
  CHECK(n["reservation"].is_null());
  CHECK_THAT(n["last_error"].get<std::string>(), Catch::Contains(lastError));
}

}  // namespace

TEST_CASE("a node whose stored driver_info is not JSON fails its deployment; other nodes deploy",
          "[server][conductor][failures]") {
  TestApi api;
  makeAvailable(api, "corrupt");
  makeAvailable(api, "healthy");
  const std::string uuid = node(api, "corrupt")["uuid"];
  writeRow(api, "corrupt", [](Record& r) { r.setText(kNodeDriverInfo, "{\"ipmi_address\": "); });

  REQUIRE(verb(api, "corrupt", "active") == 202);
  REQUIRE(verb(api, "healthy", "active") == 202);
  checkFailed(failureColumns(api, "corrupt"), "deploy failed",
              "Internal error: The driver_info of node " + uuid + " stored in the database is not a JSON object (");
  CHECK(node(api, "healthy")["provision_state"] == "active");

  // The failed node can be handled again once its row is repaired.
  writeRow(api, "corrupt", [](Record& r) { r.setText(kNodeDriverInfo, "{}"); });
  REQUIRE(verb(api, "corrupt", "deleted") == 202);
  CHECK(node(api, "corrupt")["provision_state"] == "available");
}

TEST_CASE("a node whose stored driver_info is not JSON fails its cleaning; other nodes clean",
          "[server][conductor][failures]") {
  TestApi api;
  const Json steps = Json::parse(R"([{"interface": "power", "step": "power_on"}])");
  for (const char* name : {"corrupt", "healthy"}) {
    api.createNode({{"name", name}});
    REQUIRE(verb(api, name, "manage") == 202);
  }
  writeRow(api, "corrupt", [](Record& r) { r.setText(kNodeDriverInfo, "[1, 2]"); });  // JSON, not an object
  REQUIRE(verb(api, "corrupt", "clean", {{"clean_steps", steps}}) == 202);
  REQUIRE(verb(api, "healthy", "clean", {{"clean_steps", steps}}) == 202);
  checkFailed(failureColumns(api, "corrupt"), "clean failed", "The driver_info of node");
  auto healthy = node(api, "healthy");
  CHECK(healthy["provision_state"] == "manageable");
  CHECK(healthy["power_state"] == "power on");
}

TEST_CASE("an exception in a conductor job fails that node's cleaning, not kiln-server",
          "[server][conductor][failures]") {
  TestApi api;
  for (const char* name : {"throws", "healthy"}) {
    api.createNode({{"name", name}});
    REQUIRE(verb(api, name, "manage") == 202);
  }
  // Valid JSON with a value of the wrong type: the cleaning flow reads clean_replan as a Boolean
  // and nlohmann::json throws type_error on the worker thread.
  writeRow(api, "throws", [](Record& r) { r.setText(kNodeDriverInternalInfo, R"({"clean_replan": "yes"})"); });
  REQUIRE(verb(api, "throws", "provide") == 202);
  REQUIRE(verb(api, "healthy", "provide") == 202);
  checkFailed(node(api, "throws"), "clean failed",
              "Internal error: the conductor's worker failed unexpectedly: [json.exception.type_error.302]");
  CHECK(node(api, "healthy")["provision_state"] == "available");

  // The workers still run flows: the failed node is managed again, the other deploys.
  writeRow(api, "throws", [](Record& r) { r.setText(kNodeDriverInternalInfo, "{}"); });
  CHECK(verb(api, "throws", "manage") == 202);
  CHECK(node(api, "throws")["provision_state"] == "manageable");
  CHECK(verb(api, "healthy", "active") == 202);
  CHECK(node(api, "healthy")["provision_state"] == "active");
}

TEST_CASE("a deploy template whose stored steps are corrupt fails validate and the deployment",
          "[server][conductor][failures][templates]") {
  TestApi api;
  REQUIRE(api.post("/v1/deploy_templates", Json::parse(R"({"name": "CUSTOM_X", "steps": [
      {"interface": "bios", "step": "apply_configuration", "priority": 90,
       "args": {"settings": [{"name": "VMX", "value": "on"}]}}]})")).status == 201);
  {
    auto tx = api.app().storage().begin(Storage::Mode::Write).value();
    auto t = tx->deployTemplates().findBy(kDtName, Value::text("CUSTOM_X")).value();
    REQUIRE(t);
    t->setText(kDtSteps, "[{\"interface\": \"bios\"");
    REQUIRE(tx->deployTemplates().update(*t));
    REQUIRE(tx->commit());
  }
  makeAvailable(api, "d");
  makeAvailable(api, "other");
  REQUIRE(api.putRaw("/v1/nodes/d/traits/CUSTOM_X").status == 204);
  REQUIRE(api.patch("/v1/nodes/d", Json::parse(R"([{"op": "add", "path": "/instance_info/traits",
      "value": ["CUSTOM_X"]}])")).status == 200);
  const std::string why = "The steps of deploy template CUSTOM_X stored in the database are not a JSON array (";
  auto v = api.get("/v1/nodes/d/validate");
  REQUIRE(v.status == 200);
  CHECK(v.json()["deploy"]["result"] == false);
  CHECK_THAT(v.json()["deploy"]["reason"].get<std::string>(), Catch::Contains(why));

  REQUIRE(verb(api, "d", "active") == 202);
  REQUIRE(verb(api, "other", "active") == 202);
  checkFailed(node(api, "d"), "deploy failed", "Failed to plan the deployment of node");
  CHECK_THAT(node(api, "d")["last_error"].get<std::string>(), Catch::Contains(why));
  CHECK(node(api, "other")["provision_state"] == "active");
}

TEST_CASE("an exception in a one-shot conductor job fails that action and releases the node",
          "[server][conductor][failures][node_lock]") {
  TestApi api;
  for (const char* name : {"throws", "healthy"}) api.createNode({{"name", name}});
  // A number where the fake management interface reads a string: nlohmann::json throws
  // type_error on the worker thread, in the middle of the boot mode change (its lock held).
  writeRow(api, "throws", [](Record& r) { r.setText(kNodeDriverInternalInfo, R"({"fake_boot_mode": 5})"); });
  REQUIRE(api.put("/v1/nodes/throws/states/boot_mode", {{"target", "bios"}}).status == 202);
  REQUIRE(api.put("/v1/nodes/healthy/states/boot_mode", {{"target", "bios"}}).status == 202);
  Json n = node(api, "throws");
  CHECK(n["reservation"].is_null());
  CHECK(n["provision_state"] == "enroll");  // not a provisioning action: the state stays
  CHECK(n["boot_mode"].is_null());
  CHECK_THAT(n["last_error"].get<std::string>(),
             Catch::StartsWith("Internal error: the conductor's worker failed unexpectedly: "
                               "[json.exception.type_error.302]"));
  auto events = api.get("/v1/nodes/throws/history?detail=true").json()["history"];
  REQUIRE(events.size() == 1);
  CHECK(events[0]["event"] == n["last_error"]);
  CHECK(node(api, "healthy")["boot_mode"] == "bios");

  // The node is free again and the workers still run: a power action on it goes through.
  REQUIRE(api.put("/v1/nodes/throws/states/power", {{"target", "power on"}}).status == 202);
  n = node(api, "throws");
  CHECK(n["power_state"] == "power on");
  CHECK(n["last_error"].is_null());
  CHECK(n["reservation"].is_null());
}
