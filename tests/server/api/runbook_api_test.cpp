// /v1/runbooks (1.92) and its traits sub-resource (1.112), against Ironic's RunbooksController
// and RunbookTraitsController. These need the server to serve 1.112 (ver::kMax).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "server/api/version.h"
#include "server/model/versions.h"
#include "tests/support/basic_auth.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::Response;
using kiln::test::TestApi;
namespace ver = kiln::server::ver;

using kiln::test::basicAuthorization;
using kiln::test::kTestHtpasswd;

namespace {

std::string version(int minor) { return kiln::server::versionString(minor); }

Json step(const std::string& iface, const std::string& name, Json order,
          Json args = Json::object()) {
  return {
      {"interface", iface}, {"step", name}, {"args", std::move(args)}, {"order", std::move(order)}};
}

Json eraseStep(int order = 1) { return step("deploy", "erase_devices", order); }

Json body(const std::string& name, Json steps = Json::array({eraseStep()})) {
  return {{"name", name}, {"steps", std::move(steps)}};
}

Json patchOp(const std::string& op, const std::string& path, Json value = nullptr) {
  Json p = {{"op", op}, {"path", path}};
  if (op != "remove") p["value"] = std::move(value);
  return p;
}

/// An API at `minor`.
struct RunbookApi {
  TestApi api;
  explicit RunbookApi(int minor) { api.version = version(minor); }
  Response create(const Json& b) { return api.post("/v1/runbooks", b); }
};

std::set<std::string> keysOf(const Json& object) {
  std::set<std::string> out;
  for (auto it = object.begin(); it != object.end(); ++it) out.insert(it.key());
  return out;
}

}  // namespace

TEST_CASE("runbooks are created, shown, listed, patched and deleted", "[server][api][runbooks]") {
  RunbookApi r(ver::k92Runbooks);
  auto& api = r.api;
  Json steps = {eraseStep(1),
                step("bios", "apply_configuration", 0, {{"settings", Json::array()}})};
  Json b = body("CUSTOM_CLEAN", steps);
  b["extra"] = {{"k", "v"}};
  auto created = r.create(b);
  INFO(created.body);
  REQUIRE(created.status == 201);
  const Json rb = created.json();
  const std::string uuid = rb["uuid"];
  CHECK(created.header("Location") == "http://kiln.test:6385/v1/runbooks/" + uuid);
  CHECK(keysOf(rb) == std::set<std::string>{"uuid", "name", "steps", "disable_ramdisk", "extra",
                                            "public", "owner", "created_at", "updated_at",
                                            "links"});
  CHECK(rb["steps"] == steps);  // the order they came in
  CHECK(rb["disable_ramdisk"] == false);
  CHECK(rb["public"] == false);
  CHECK(rb["owner"].is_null());
  CHECK(rb["updated_at"].is_null());
  CHECK(rb["links"][0]["href"] == "http://kiln.test:6385/v1/runbooks/" + uuid);

  CHECK(api.get("/v1/runbooks/CUSTOM_CLEAN").json()["uuid"] == uuid);
  CHECK(api.get("/v1/runbooks/" + uuid).json()["name"] == "CUSTOM_CLEAN");
  auto list = api.get("/v1/runbooks").json()["runbooks"];
  REQUIRE(list.size() == 1);
  CHECK(keysOf(list[0]) == std::set<std::string>{"uuid", "name", "links"});
  CHECK(api.get("/v1/runbooks?detail=True").json()["runbooks"][0]["steps"] == steps);
  CHECK(keysOf(api.get("/v1/runbooks/CUSTOM_CLEAN?fields=steps,owner").json()) ==
        std::set<std::string>{"steps", "owner", "links"});

  auto patched = api.patch("/v1/runbooks/" + uuid, {patchOp("replace", "/name", "CUSTOM_RENAMED"),
                                                    patchOp("replace", "/steps/0/order", "5"),
                                                    patchOp("replace", "/disable_ramdisk", true)});
  INFO(patched.body);
  REQUIRE(patched.status == 200);
  CHECK(patched.json()["name"] == "CUSTOM_RENAMED");
  CHECK(patched.json()["steps"][0]["order"] == 5);
  CHECK(patched.json()["disable_ramdisk"] == true);
  CHECK(patched.json()["updated_at"].is_string());

  CHECK(api.del("/v1/runbooks/CUSTOM_RENAMED").status == 204);
  auto gone = api.get("/v1/runbooks/" + uuid);
  CHECK(gone.status == 404);
  CHECK(gone.fault() == "Runbook " + uuid + " could not be found.");
  CHECK(api.get("/v1/runbooks/CUSTOM_NONE").fault() == "Runbook CUSTOM_NONE could not be found.");
  auto badIdent = api.get("/v1/runbooks/bad%20name");
  CHECK(badIdent.status == 400);
  CHECK(badIdent.fault() == "Expected UUID or name for runbook_ident: bad name");
}

TEST_CASE("runbooks are 404 for GET and 405 otherwise below 1.92", "[server][api][runbooks]") {
  RunbookApi r(ver::k92Runbooks);
  REQUIRE(r.create(body("CUSTOM_OLD")).status == 201);
  auto& api = r.api;
  CHECK(api.get("/v1").json().contains("runbooks"));

  api.version = version(ver::k92Runbooks - 1);
  CHECK_FALSE(api.get("/v1").json().contains("runbooks"));
  auto list = api.get("/v1/runbooks");
  CHECK(list.status == 404);
  CHECK(list.fault() == "The API version does not allow runbooks");
  CHECK(api.get("/v1/runbooks/CUSTOM_OLD").status == 404);
  CHECK(api.get("/v1/runbooks/CUSTOM_OLD/traits").status == 404);
  CHECK(r.create(body("CUSTOM_NEW")).status == 405);
  CHECK(api.patch("/v1/runbooks/CUSTOM_OLD", Json::array({patchOp("add", "/extra/a", 1)})).status == 405);
  CHECK(api.del("/v1/runbooks/CUSTOM_OLD").status == 405);
  CHECK(api.put("/v1/runbooks/CUSTOM_OLD/traits", {{"traits", Json::array()}}).status == 405);
  CHECK(api.putRaw("/v1/runbooks/CUSTOM_OLD/traits/CUSTOM_A").status == 405);
  CHECK(api.del("/v1/runbooks/CUSTOM_OLD/traits").status == 405);

  api.version = version(ver::k92Runbooks);
  CHECK(api.get("/v1/runbooks/CUSTOM_OLD").status == 200);
}

TEST_CASE("runbook traits and description are hidden below 1.112", "[server][api][runbooks]") {
  RunbookApi r(ver::k112RunbookTraits - 1);
  auto& api = r.api;
  REQUIRE(r.create(body("CUSTOM_RB")).status == 201);
  const Json shown = api.get("/v1/runbooks/CUSTOM_RB").json();
  CHECK_FALSE(shown.contains("traits"));
  CHECK_FALSE(shown.contains("description"));
  CHECK_FALSE(api.get("/v1/runbooks?detail=true").json()["runbooks"][0].contains("traits"));
  // Ironic checks fields= against the body it renders: 400, not the 406 of node fields.
  auto fields = api.get("/v1/runbooks/CUSTOM_RB?fields=traits");
  CHECK(fields.status == 400);
  CHECK(fields.fault() == "Field(s) \"traits\" are not valid");
  CHECK(api.get("/v1/runbooks?fields=name,description").status == 400);

  // The body schema below 1.112 has neither key.
  for (const char* key : {"description", "traits"}) {
    INFO(key);
    Json b = body("CUSTOM_X");
    b[key] = std::string(key) == "traits" ? Json::array({"CUSTOM_A"}) : Json("text");
    auto created = r.create(b);
    CHECK(created.status == 400);
    CHECK(created.fault() == std::string("Schema error for runbook: Additional properties are "
                                         "not allowed ('") +
                                 key + "' was unexpected)");
  }
  auto patchDescription =
      api.patch("/v1/runbooks/CUSTOM_RB", Json::array({patchOp("add", "/description", "d")}));
  CHECK(patchDescription.status == 400);
  CHECK(patchDescription.fault() ==
        "Cannot patch /description. Only the following can be updated: disable_ramdisk, extra, "
        "name, owner, public, steps");

  // The traits sub-resource is 404 from 1.92 to 1.111, before the runbook is looked up.
  for (const std::string& path :
       std::vector<std::string>{"/v1/runbooks/CUSTOM_RB/traits", "/v1/runbooks/NONE/traits"}) {
    auto get = api.get(path);
    CHECK(get.status == 404);
    CHECK(get.fault() == "The API version does not allow runbook traits");
    CHECK(api.put(path, {{"traits", Json::array()}}).status == 404);
    CHECK(api.del(path).status == 404);
    CHECK(api.putRaw(path + "/CUSTOM_A").status == 404);
    CHECK(api.del(path + "/CUSTOM_A").status == 404);
  }

  api.version = version(ver::k112RunbookTraits);
  const Json now = api.get("/v1/runbooks/CUSTOM_RB").json();
  CHECK(now["traits"] == Json::array());
  CHECK(now["description"].is_null());
  CHECK(keysOf(api.get("/v1/runbooks/CUSTOM_RB?fields=traits,description").json()) ==
        std::set<std::string>{"traits", "description", "links"});
}

TEST_CASE("runbook names are traits below 1.112 and logical names from it",
          "[server][api][runbooks]") {
  RunbookApi r(ver::k92Runbooks);
  auto& api = r.api;
  auto notTrait = r.create(body("my-runbook"));
  CHECK(notTrait.status == 400);
  CHECK(notTrait.fault() ==
        "Schema error for runbook: 'my-runbook' is not valid under any of the given schemas. "
        "Possible root cause: 'my-runbook' does not match '^CUSTOM_[A-Z0-9_]+$'");
  CHECK(r.create(body("custom_lower")).status == 400);
  CHECK(r.create(body(std::string(300, 'A'))).fault() ==
        "Schema error for runbook: '" + std::string(300, 'A') + "' is too long");
  CHECK(r.create(body("HW_CPU_X86_VMX")).status == 201);
  const auto first = r.create(body("CUSTOM_ONE"));
  REQUIRE(first.status == 201);
  auto dup = r.create(body("CUSTOM_ONE"));
  CHECK(dup.status == 409);
  CHECK(dup.fault() == "A runbook with name CUSTOM_ONE already exists.");
  Json sameUuid = body("CUSTOM_TWO");
  sameUuid["uuid"] = first.json()["uuid"];
  auto dupUuid = r.create(sameUuid);
  CHECK(dupUuid.status == 409);
  CHECK(dupUuid.fault() ==
        "A runbook with UUID " + first.json()["uuid"].get<std::string>() + " already exists.");
  Json badUuid = body("CUSTOM_THREE");
  badUuid["uuid"] = "not-a-uuid";
  CHECK(r.create(badUuid).fault() == "Expected UUID for uuid: not-a-uuid");
  // PATCH validates with 1.112's schema at every version, as Ironic does.
  auto renamed = api.patch("/v1/runbooks/CUSTOM_ONE", Json::array({patchOp("replace", "/name", "legacy-name")}));
  CHECK(renamed.status == 200);
  auto taken =
      api.patch("/v1/runbooks/legacy-name", Json::array({patchOp("replace", "/name", "HW_CPU_X86_VMX")}));
  CHECK(taken.status == 409);
  CHECK(taken.fault() == "A runbook with name HW_CPU_X86_VMX already exists.");

  api.version = version(ver::k112RunbookTraits);
  auto logical = r.create(body("my-runbook-2025"));
  CHECK(logical.status == 201);
  CHECK(logical.json()["name"] == "my-runbook-2025");
  CHECK(api.get("/v1/runbooks/my-runbook-2025").status == 200);
  auto spaced = r.create(body("My Runbook"));
  CHECK(spaced.status == 400);
  CHECK(spaced.fault() ==
        "Schema error for runbook: 'My Runbook' does not match '^[A-Za-z0-9\\\\-._~]+$'");
  CHECK(r.create(body(std::string(256, 'x'))).status == 400);
  CHECK(r.create(body("")).fault() == "Schema error for runbook: '' is too short");
  Json described = body("with-description");
  described["description"] = "Wipes the disks";
  auto d = r.create(described);
  CHECK(d.status == 201);
  CHECK(d.json()["description"] == "Wipes the disks");
  described["name"] = "too-long-description";
  described["description"] = std::string(256, 'd');
  CHECK(r.create(described).status == 400);
}

TEST_CASE("runbook steps are validated as Ironic's RUNBOOK_STEP_SCHEMA",
          "[server][api][runbooks]") {
  RunbookApi r(ver::k92Runbooks);
  auto& api = r.api;
  auto post = [&](Json steps) { return r.create(body("CUSTOM_S", std::move(steps))); };
  auto fault = [&](Json steps) { return post(std::move(steps)).fault(); };
  const std::string prefix = "Schema error for runbook: ";
  CHECK(fault(Json::array()) == prefix + "[] is too short");
  CHECK(fault("x") == prefix + "'x' is not of type 'array'");
  CHECK(fault({"x"}) == prefix + "'x' is not of type 'object'");
  Json noOrder = eraseStep();
  noOrder.erase("order");
  CHECK(fault({noOrder}) == prefix + "'order' is a required property");
  Json priority = eraseStep();
  priority["priority"] = 10;
  CHECK(fault({priority}) ==
        prefix + "Additional properties are not allowed ('priority' was unexpected)");
  CHECK(fault({step("network", "x", 1)}) ==
        prefix +
            "'network' is not one of ['vendor', 'power', 'management', 'firmware', 'deploy', "
            "'bios', 'raid']");
  CHECK(fault({step("deploy", "", 1)}) == prefix + "'' is too short");
  CHECK_THAT(fault({eraseStep(-1)}), Catch::Contains("-1 is less than the minimum of 0"));
  CHECK_THAT(fault({step("deploy", "erase_devices", "soon")}),
             Catch::Contains("'soon' does not match '^[0-9]+$'"));
  CHECK(post({step("deploy", "erase_devices", 1.5)}).status == 400);
  CHECK(fault({step("deploy", "erase_devices", 1, Json::array())}) ==
        prefix + "[] is not of type 'object'");
  Json bad = body("CUSTOM_S");
  bad["disable_ramdisk"] = "yes";
  CHECK(r.create(bad).fault() == prefix + "'yes' is not of type 'boolean', 'null'");
  bad = body("CUSTOM_S");
  bad["extra"] = Json::array();
  CHECK(r.create(bad).fault() == prefix + "[] is not of type 'object', 'null'");
  bad = body("CUSTOM_S");
  bad["owner"] = std::string(256, 'o');
  CHECK_THAT(r.create(bad).fault(), Catch::EndsWith("is too long"));
  bad = body("CUSTOM_S");
  bad["colour"] = "blue";
  CHECK(r.create(bad).fault() == prefix +
                                     "Additional properties are not allowed ('colour' was "
                                     "unexpected)");
  CHECK(r.create({{"name", "CUSTOM_S"}}).fault() == prefix + "'steps' is a required property");

  // Ironic's duplicate_steps: the same interface and step twice, whatever the arguments.
  auto dup = post({step("deploy", "erase_devices", 1, {{"a", 1}}),
                   step("deploy", "erase_devices", 2, {{"a", 2}})});
  CHECK(dup.status == 400);
  CHECK(dup.fault() ==
        "Deploy template invalid: Duplicate deploy steps. A template cannot have multiple deploy "
        "steps with the same interface and step. Duplicates: interface: deploy, step: "
        "erase_devices.");
  // A RAID step's configuration is checked as for deploy templates.
  CHECK_THAT(fault({step("raid", "apply_configuration", 1, {{"raid_config", "none"}})}),
             Catch::StartsWith("RAID config validation error"));
  CHECK(api.get("/v1/runbooks").json()["runbooks"].empty());

  // Normalised: order as an integer, args {} when absent; firmware steps are allowed.
  Json noArgs = step("firmware", "update", "7");
  noArgs.erase("args");
  auto ok = post({noArgs});
  INFO(ok.body);
  REQUIRE(ok.status == 201);
  CHECK(ok.json()["steps"] == Json::array({step("firmware", "update", 7)}));
  Json nulls = body("CUSTOM_NULLS");
  for (const char* key : {"uuid", "disable_ramdisk", "extra", "public", "owner"})
    nulls[key] = nullptr;
  auto withNulls = r.create(nulls);
  REQUIRE(withNulls.status == 201);
  CHECK(withNulls.json()["extra"] == Json::object());
  CHECK(withNulls.json()["public"] == false);
}

TEST_CASE("runbook step arguments that look like passwords are masked", "[server][api][runbooks]") {
  RunbookApi r(ver::k92Runbooks);
  auto created = r.create(body(
      "CUSTOM_BIOS", {step("bios", "apply_configuration", 1, {{"admin_password", "s3cret"}})}));
  REQUIRE(created.status == 201);
  CHECK(created.json()["steps"][0]["args"]["admin_password"] == "******");
  CHECK(r.api.get("/v1/runbooks/CUSTOM_BIOS").json()["steps"][0]["args"]["admin_password"] ==
        "******");
}

TEST_CASE("runbook PATCH keeps Ironic's allowed fields and owner/public rules",
          "[server][api][runbooks]") {
  RunbookApi r(ver::k112RunbookTraits);
  auto& api = r.api;
  Json owned = body("CUSTOM_OWNED");
  owned["owner"] = "project-a";
  REQUIRE(r.create(owned).status == 201);
  Json pub = body("CUSTOM_PUBLIC");
  pub["public"] = true;
  REQUIRE(r.create(pub).status == 201);
  auto patch = [&](const std::string& name, Json ops) {
    return api.patch("/v1/runbooks/" + name, std::move(ops));
  };

  auto uuid = patch("CUSTOM_OWNED", Json::array({patchOp("replace", "/uuid", "x")}));
  CHECK(uuid.status == 400);
  CHECK(uuid.fault() ==
        "Cannot patch /uuid. Only the following can be updated: disable_ramdisk, "
        "extra, name, owner, public, steps, description");
  CHECK(patch("CUSTOM_OWNED", Json::array({patchOp("replace", "/traits", {"CUSTOM_X"})})).status == 400);
  auto described = patch("CUSTOM_OWNED", Json::array({patchOp("add", "/description", "new desc")}));
  CHECK(described.status == 200);
  CHECK(described.json()["description"] == "new desc");

  auto ownerOnPublic = patch("CUSTOM_PUBLIC", Json::array({patchOp("add", "/owner", "project-b")}));
  CHECK(ownerOnPublic.status == 400);
  CHECK(ownerOnPublic.fault() ==
        "Couldn't apply patch '[{'op': 'add', 'path': '/owner', 'value': 'project-b'}]'. Reason: "
        "There cannot be an owner for a public runbook");
  CHECK(patch("CUSTOM_OWNED",
              {patchOp("replace", "/public", true), patchOp("replace", "/owner", "project-b")})
            .status == 400);
  // Making a runbook public clears its owner; an owner may come back with public=false.
  auto madePublic = patch("CUSTOM_OWNED", Json::array({patchOp("replace", "/public", true)}));
  REQUIRE(madePublic.status == 200);
  CHECK(madePublic.json()["public"] == true);
  CHECK(madePublic.json()["owner"].is_null());
  auto backToOwned = patch("CUSTOM_OWNED", {patchOp("replace", "/public", false),
                                            patchOp("replace", "/owner", "project-c")});
  REQUIRE(backToOwned.status == 200);
  CHECK(backToOwned.json()["owner"] == "project-c");
  CHECK(backToOwned.json()["public"] == false);

  // Keys the step schema does not know are dropped, as Ironic's patched_validate_with_schema.
  auto stray = patch("CUSTOM_OWNED", Json::array({patchOp("add", "/steps/0/colour", "blue")}));
  REQUIRE(stray.status == 200);
  CHECK_FALSE(stray.json()["steps"][0].contains("colour"));
  CHECK(patch("CUSTOM_OWNED", Json::array({patchOp("remove", "/name")})).fault() ==
        "Schema error for patch: 'name' is a required property");
  auto dup = patch("CUSTOM_OWNED", {patchOp("add", "/steps/-", eraseStep(4))});
  CHECK(dup.status == 400);
  CHECK_THAT(dup.fault(), Catch::Contains("Duplicate deploy steps"));
  CHECK(patch("CUSTOM_OWNED", Json::array({patchOp("replace", "/steps/0/interface", "network")})).status == 400);
  CHECK(api.get("/v1/runbooks/CUSTOM_OWNED").json()["steps"] == Json::array({eraseStep()}));
  CHECK(api.get("/v1/runbooks/CUSTOM_OWNED").json()["owner"] == "project-c");
}

TEST_CASE("runbook lists page, sort and refuse Ironic's invalid sort keys",
          "[server][api][runbooks]") {
  RunbookApi r(ver::k112RunbookTraits);
  auto& api = r.api;
  for (const char* name : {"rb-b", "rb-a", "rb-c"}) REQUIRE(r.create(body(name)).status == 201);
  for (const char* key : {"traits", "steps", "extra"}) {
    INFO(key);
    auto sorted = api.get(std::string("/v1/runbooks?sort_key=") + key);
    CHECK(sorted.status == 400);
    CHECK(sorted.fault() ==
          std::string("The sort_key value ") + key + " is an invalid field for sorting");
  }
  auto byName = api.get("/v1/runbooks?sort_key=name&sort_dir=desc").json()["runbooks"];
  REQUIRE(byName.size() == 3);
  CHECK(byName[0]["name"] == "rb-c");
  auto page = api.get("/v1/runbooks?limit=2").json();
  REQUIRE(page["runbooks"].size() == 2);
  CHECK_THAT(page["next"].get<std::string>(),
             Catch::Contains("marker=" + page["runbooks"][1]["uuid"].get<std::string>()));
  auto rest =
      api.get("/v1/runbooks?limit=2&marker=" + page["runbooks"][1]["uuid"].get<std::string>());
  CHECK(rest.json()["runbooks"].size() == 1);
  CHECK(api.get("/v1/runbooks?project=true").status == 200);
  CHECK(api.get("/v1/runbooks?project=maybe").status == 400);
  CHECK(api.get("/v1/runbooks?detail=true&fields=name").status == 400);
}

TEST_CASE("runbook traits are listed, replaced, added and removed from 1.112",
          "[server][api][runbooks]") {
  RunbookApi r(ver::k112RunbookTraits);
  auto& api = r.api;
  auto created = r.create(body("rb"));
  REQUIRE(created.status == 201);
  const std::string uuid = created.json()["uuid"];
  const std::string path = "/v1/runbooks/rb/traits";
  CHECK(api.get(path).json() == Json{{"traits", Json::array()}});

  auto put = api.put(path, {{"traits", {"CUSTOM_B", "CUSTOM_A", "CUSTOM_B"}}});
  CHECK(put.status == 204);
  CHECK(put.body.empty());
  CHECK(api.get(path).json()["traits"] == Json{"CUSTOM_A", "CUSTOM_B"});
  CHECK(api.get("/v1/runbooks/" + uuid + "/traits").json()["traits"].size() == 2);
  CHECK(api.get("/v1/runbooks/rb").json()["traits"] == Json{"CUSTOM_A", "CUSTOM_B"});

  auto add = api.putRaw(path + "/HW_CPU_X86_VMX");
  CHECK(add.status == 204);
  CHECK(add.header("Location") == "http://kiln.test:6385/v1/runbooks/rb/traits/HW_CPU_X86_VMX");
  CHECK(api.putRaw(path + "/HW_CPU_X86_VMX", "{}").status == 204);  // idempotent; {} is no body
  CHECK(api.get(path).json()["traits"] == Json{"CUSTOM_A", "CUSTOM_B", "HW_CPU_X86_VMX"});

  const std::string usage =
      "A single runbook trait may be added via PUT /v1/runbooks/<runbook identifier>/traits/"
      "<trait> with no body, or all runbook traits may be replaced via PUT /v1/runbooks/<runbook "
      "identifier>/traits with the list of traits specified in the request body.";
  CHECK(api.putRaw(path).fault() == usage);
  CHECK(api.put(path + "/CUSTOM_C", {{"traits", Json::array()}}).fault() == usage);
  auto badTrait = api.putRaw(path + "/not-a-trait");
  CHECK(badTrait.status == 400);
  CHECK_THAT(badTrait.fault(), Catch::StartsWith("Schema error for trait: 'not-a-trait'"));
  CHECK_THAT(api.put(path, {{"traits", {"lower"}}}).fault(),
             Catch::StartsWith("Schema error for body: 'lower'"));
  CHECK(api.put(path, {{"trait", Json::array()}}).fault() ==
        "Schema error for body: Additional properties are not allowed ('trait' was unexpected)");
  CHECK(api.put(path, Json::array()).fault() ==
        "Schema error for body: [] is not of type 'object'");
  CHECK(api.get(path).json()["traits"].size() == 3);

  CHECK(api.del(path + "/CUSTOM_MISSING").status == 204);  // a no-op, as in Ironic
  CHECK(api.del(path + "/CUSTOM_A").status == 204);
  CHECK(api.get(path).json()["traits"] == Json{"CUSTOM_B", "HW_CPU_X86_VMX"});
  CHECK(api.put(path, {{"traits", Json::array()}}).status == 204);
  CHECK(api.get(path).json()["traits"].empty());
  REQUIRE(api.putRaw(path + "/CUSTOM_A").status == 204);
  CHECK(api.del(path).status == 204);
  CHECK(api.get(path).json()["traits"].empty());
  // Trait changes leave the runbook's own row as Ironic leaves it.
  CHECK(api.get("/v1/runbooks/rb").json()["updated_at"].is_null());

  for (const std::string& missing :
       std::vector<std::string>{"/v1/runbooks/rb-none/traits",
                                "/v1/runbooks/2d6a7b7c-9f3c-4f57-a9d1-1c9f9e2b0b11/traits"}) {
    INFO(missing);
    CHECK(api.get(missing).status == 404);
    CHECK(api.put(missing, {{"traits", Json::array()}}).status == 404);
    CHECK(api.putRaw(missing + "/CUSTOM_A").status == 404);
    CHECK(api.del(missing).status == 404);
    CHECK(api.del(missing + "/CUSTOM_A").status == 404);
  }
  CHECK(api.get("/v1/runbooks/rb-none/traits").fault() == "Runbook rb-none could not be found.");

  // Traits never come through the runbook body.
  Json withTraits = body("rb-traits");
  withTraits["traits"] = {"CUSTOM_A"};
  auto rejected = r.create(withTraits);
  CHECK(rejected.status == 400);
  CHECK_THAT(rejected.fault(), Catch::Contains("'traits' was unexpected"));
}

TEST_CASE("observers read runbooks and get 403 on every runbook write", "[server][api][runbooks]") {
  char tmpl[] = "/tmp/kiln-htpasswd-XXXXXX";
  const int fd = mkstemp(tmpl);
  REQUIRE(fd >= 0);
  close(fd);
  const std::filesystem::path file = tmpl;
  std::ofstream(file) << kTestHtpasswd;
  {
    TestApi api("[DEFAULT]\nauth_strategy = http_basic\nhttp_basic_auth_user_file = " +
                file.string() + "\n[http_basic_roles]\nviewer = observer\n");
    api.version = version(ver::k112RunbookTraits);
    api.extraHeaders = {{"authorization", basicAuthorization("admin", "s3cret")}};
    REQUIRE(api.post("/v1/runbooks", body("rb")).status == 201);

    api.extraHeaders = {{"authorization", basicAuthorization("viewer", "watch")}};
    CHECK(api.get("/v1/runbooks").status == 200);
    CHECK(api.get("/v1/runbooks/rb").status == 200);
    CHECK(api.get("/v1/runbooks/rb/traits").status == 200);
    struct Write {
      std::string method, path, body, policy;
    };
    for (const auto& w : std::vector<Write>{
             {"POST", "/v1/runbooks", body("rb2").dump(), "baremetal:runbook:create"},
             {"PATCH", "/v1/runbooks/rb", R"([{"op":"add","path":"/extra/x","value":1}])",
              "baremetal:runbook:update"},
             {"DELETE", "/v1/runbooks/rb", "", "baremetal:runbook:delete"},
             {"PUT", "/v1/runbooks/rb/traits", R"({"traits": []})", "baremetal:runbook:update"},
             {"PUT", "/v1/runbooks/rb/traits/CUSTOM_X", "", "baremetal:runbook:update"},
             {"DELETE", "/v1/runbooks/rb/traits", "", "baremetal:runbook:update"},
             {"DELETE", "/v1/runbooks/rb/traits/CUSTOM_X", "", "baremetal:runbook:update"},
         }) {
      INFO(w.method << " " << w.path);
      auto r = api.call(w.method, w.path, w.body);
      CHECK(r.status == 403);
      CHECK(r.fault() == "Access was denied to the following resource: " + w.policy);
    }
    api.extraHeaders = {{"authorization", basicAuthorization("admin", "s3cret")}};
    CHECK(api.get("/v1/runbooks").json()["runbooks"].size() == 1);
    CHECK(api.get("/v1/runbooks/rb").json()["extra"] == Json::object());
  }
  std::filesystem::remove(file);
}
