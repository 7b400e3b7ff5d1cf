// server/model/runbook.h: the runbook document validation and resolveRunbookForNode(), the
// approval rules the provision verb handler applies to {"target": "clean", "runbook": ...}.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "server/model/node.h"
#include "server/model/runbook.h"
#include "server/model/versions.h"
#include "server/storage/queries/runbooks.h"
#include "server/storage/storage.h"
#include "shared/json/json_util.h"
#include "tests/support/test_api.h"

namespace ks = kiln::server;
namespace ver = kiln::server::ver;
using kiln::Json;
using ks::Storage;

namespace {

/// Inserts a runbook straight into the store (as the API would after validation); its UUID.
std::string insertRunbook(Storage& storage, const std::string& name, const Json& steps,
                          const std::vector<std::string>& traits = {}, bool disableRamdisk = false,
                          const std::optional<std::string>& owner = std::nullopt) {
  auto tx = storage.begin(Storage::Mode::Write).value();
  ks::Record r = ks::defaultRecord(ks::runbookSchema());
  static int counter = 0;
  const std::string uuid = "00000000-0000-4000-8000-" + std::to_string(100000000000 + ++counter);
  r.setText(ks::kRbUuid, uuid);
  r.setText(ks::kRbName, name);
  r.setText(ks::kRbSteps, kiln::dumpJson(steps));
  r.setText(ks::kRbTraits, kiln::dumpJson(Json(traits)));
  r.setBool(ks::kRbDisableRamdisk, disableRamdisk);
  if (owner) r.setText(ks::kRbOwner, *owner);
  REQUIRE(tx->records(ks::Resource::Runbook).insert(r));
  REQUIRE(tx->commit());
  return uuid;
}

Json step(const std::string& iface, const std::string& name, int order,
          Json args = Json::object()) {
  return {{"interface", iface}, {"step", name}, {"args", std::move(args)}, {"order", order}};
}

const std::string kNode = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123";

}  // namespace

TEST_CASE("resolveRunbookForNode below 1.112 needs the runbook's name among the node's traits",
          "[server][model][runbooks]") {
  auto storage = ks::openStorage("sqlite://").value();
  const std::string uuid = insertRunbook(
      *storage, "CUSTOM_WIPE",
      Json::array(
          {step("deploy", "erase_devices", 2), step("bios", "apply_configuration", 0, {{"a", 1}}),
           step("raid", "delete_configuration", 2), step("management", "clear_job_queue", 1)}),
      {"CUSTOM_OTHER"}, true);
  auto tx = storage->begin(Storage::Mode::Read).value();

  auto refused =
      ks::resolveRunbookForNode(*tx, "CUSTOM_WIPE", kNode, {"CUSTOM_OTHER"}, ver::k92Runbooks);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == kiln::ErrorCode::InvalidArgument);
  CHECK(refused.error().message ==
        "This runbook has not been approved for use on this node " + kNode +
            ". Please ask an administrator to add it to your node traits.");

  auto plan = ks::resolveRunbookForNode(*tx, uuid, kNode, {"CUSTOM_A", "CUSTOM_WIPE"},
                                        ver::k112RunbookTraits - 1);
  REQUIRE(plan);
  CHECK(plan->uuid == uuid);
  CHECK(plan->name == "CUSTOM_WIPE");
  CHECK(plan->disableRamdisk);
  CHECK(plan->adminApproved);
  // Sorted by order (stable: the two order-2 steps keep their stored order), without `order`.
  CHECK(plan->steps == Json::parse(R"([
      {"interface": "bios", "step": "apply_configuration", "args": {"a": 1}},
      {"interface": "management", "step": "clear_job_queue", "args": {}},
      {"interface": "deploy", "step": "erase_devices", "args": {}},
      {"interface": "raid", "step": "delete_configuration", "args": {}}])"));
}

TEST_CASE("resolveRunbookForNode from 1.112 needs a runbook trait shared with the node",
          "[server][model][runbooks]") {
  auto storage = ks::openStorage("sqlite://").value();
  const std::string bare =
      insertRunbook(*storage, "no-traits", Json::array({step("deploy", "erase_devices", 0)}));
  insertRunbook(*storage, "CUSTOM_NAMED", Json::array({step("deploy", "erase_devices", 0)}),
                {"CUSTOM_B", "CUSTOM_A"}, false, "project-a");
  auto tx = storage->begin(Storage::Mode::Read).value();
  const int v = ver::k112RunbookTraits;

  auto none = ks::resolveRunbookForNode(*tx, "no-traits", kNode, {"CUSTOM_A"}, v);
  REQUIRE_FALSE(none);
  CHECK(none.error().code == kiln::ErrorCode::InvalidArgument);
  CHECK(none.error().message == "Runbook " + bare +
                                    " has no traits configured. Please ask an administrator to "
                                    "add traits to the runbook.");

  // The name alone no longer approves it.
  auto unshared = ks::resolveRunbookForNode(*tx, "CUSTOM_NAMED", kNode, {"CUSTOM_NAMED"}, v);
  REQUIRE_FALSE(unshared);
  CHECK(unshared.error().message ==
        "This runbook has not been approved for use on this node " + kNode +
            ". The node does not have any of the runbook's traits ['CUSTOM_A', 'CUSTOM_B']. "
            "Please ask an administrator to add a matching trait to your node.");

  auto plan = ks::resolveRunbookForNode(*tx, "CUSTOM_NAMED", kNode, {"CUSTOM_B"}, v);
  REQUIRE(plan);
  CHECK_FALSE(plan->disableRamdisk);
  CHECK_FALSE(plan->adminApproved);  // owned and not public
  CHECK(plan->steps ==
        Json::parse(R"([{"interface": "deploy", "step": "erase_devices", "args": {}}])"));

  // Below 1.112 the old rule applies whatever traits the runbook has.
  CHECK_FALSE(
      ks::resolveRunbookForNode(*tx, "CUSTOM_NAMED", kNode, {"CUSTOM_B"}, ver::k92Runbooks));
  CHECK(ks::resolveRunbookForNode(*tx, "CUSTOM_NAMED", kNode, {"CUSTOM_NAMED"}, ver::k92Runbooks));
}

TEST_CASE("resolveRunbookForNode refuses unknown runbooks, bad identifiers and old versions",
          "[server][model][runbooks]") {
  auto storage = ks::openStorage("sqlite://").value();
  insertRunbook(*storage, "CUSTOM_X", Json::array({step("deploy", "erase_devices", 0)}));
  auto tx = storage->begin(Storage::Mode::Read).value();

  auto tooOld =
      ks::resolveRunbookForNode(*tx, "CUSTOM_X", kNode, {"CUSTOM_X"}, ver::k92Runbooks - 1);
  REQUIRE_FALSE(tooOld);
  CHECK(tooOld.error().code == kiln::ErrorCode::NotAcceptable);
  auto unknown = ks::resolveRunbookForNode(*tx, "CUSTOM_Y", kNode, {"CUSTOM_Y"}, ver::k92Runbooks);
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().code == kiln::ErrorCode::NotFound);
  CHECK(unknown.error().message == "Runbook CUSTOM_Y could not be found.");
  auto bad = ks::resolveRunbookForNode(*tx, "not a name", kNode, {}, ver::k92Runbooks);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == kiln::ErrorCode::InvalidArgument);
  CHECK(bad.error().message == "Expected a logical name or UUID but received not a name.");
}

TEST_CASE("resolveRunbookForNode reads a node record's traits", "[server][model][runbooks]") {
  kiln::test::TestApi api;
  const Json node = api.createNode({{"name", "rb-node"}});
  REQUIRE(api.put("/v1/nodes/rb-node/traits", {{"traits", {"CUSTOM_WIPE"}}}).status == 204);
  insertRunbook(api.app().storage(), "CUSTOM_WIPE",
                Json::array({step("deploy", "erase_devices", 0)}));
  insertRunbook(api.app().storage(), "CUSTOM_OTHER",
                Json::array({step("deploy", "erase_devices", 0)}));
  auto tx = api.app().storage().begin(Storage::Mode::Read).value();
  auto record = tx->nodes().findBy(ks::kNodeName, ks::Value::text("rb-node")).value();
  REQUIRE(record);
  CHECK(ks::resolveRunbookForNode(*tx, "CUSTOM_WIPE", *record, ver::k92Runbooks));
  auto other = ks::resolveRunbookForNode(*tx, "CUSTOM_OTHER", *record, ver::k92Runbooks);
  REQUIRE_FALSE(other);
  CHECK_THAT(other.error().message, Catch::Contains(node["uuid"].get<std::string>()));
}

TEST_CASE("runbook documents are checked against Ironic's schema", "[server][model][runbooks]") {
  using ks::RunbookNameRule;
  const Json good = {{"name", "CUSTOM_OK"}, {"steps", {step("deploy", "erase_devices", 0)}}};
  auto ok = ks::validateRunbookDocument(good, RunbookNameRule::Trait, false, "runbook");
  REQUIRE(ok);
  CHECK((*ok)["steps"][0]["order"] == 0);

  Json logical = good;
  logical["name"] = "any.name~1";
  CHECK_FALSE(ks::validateRunbookDocument(logical, RunbookNameRule::Trait, false, "runbook"));
  CHECK(ks::validateRunbookDocument(logical, RunbookNameRule::Logical, false, "runbook"));

  Json described = good;
  described["description"] = "d";
  auto noDescription =
      ks::validateRunbookDocument(described, RunbookNameRule::Trait, false, "runbook");
  REQUIRE_FALSE(noDescription);
  CHECK(noDescription.error().message ==
        "Schema error for runbook: Additional properties are not allowed ('description' was "
        "unexpected)");
  CHECK(ks::validateRunbookDocument(described, RunbookNameRule::Logical, true, "patch"));

  auto steps = ks::validateRunbookSteps(
      Json::parse(R"([{"interface": "power", "step": "reboot", "order": "3"}])"), "patch");
  REQUIRE(steps);
  CHECK(*steps ==
        Json::parse(R"([{"interface": "power", "step": "reboot", "args": {}, "order": 3}])"));
  auto priority = ks::validateRunbookSteps(
      Json::parse(R"([{"interface": "power", "step": "reboot", "order": 1, "priority": 1}])"),
      "patch");
  REQUIRE_FALSE(priority);
  CHECK(
      priority.error().message ==
      "Schema error for patch: Additional properties are not allowed ('priority' was unexpected)");

  CHECK(ks::validateRunbookTrait(Json("CUSTOM_A"), "trait"));
  CHECK(ks::validateRunbookTrait(Json("HW_CPU_X86_VMX"), "trait"));
  CHECK_FALSE(ks::validateRunbookTrait(Json("CUSTOM_"), "trait"));
  CHECK(ks::validateRunbookTrait(Json(5), "body").error().message ==
        "Schema error for body: 5 is not of type 'string'");
}

TEST_CASE("the runbook schema is Resource::Runbook's and hides 1.112 fields below it",
          "[server][model][runbooks]") {
  const ks::Schema& s = ks::schemaOf(ks::Resource::Runbook);
  CHECK(&s == &ks::runbookSchema());
  CHECK(s.table == "runbooks");
  CHECK(s[0].name == "id");
  CHECK(s[1].name == "uuid");
  const ks::FieldMask old = ks::visibleFields(s, ver::k112RunbookTraits - 1);
  const ks::FieldMask now = ks::visibleFields(s, ver::k112RunbookTraits);
  for (size_t field : {ks::kRbTraits, ks::kRbDescription}) {
    CHECK_FALSE(old.test(field));
    CHECK(now.test(field));
  }
  CHECK(old.test(ks::kRbSteps));
  CHECK_FALSE(ks::visibleFields(s, ver::k92Runbooks - 1).test(ks::kRbSteps));
}
