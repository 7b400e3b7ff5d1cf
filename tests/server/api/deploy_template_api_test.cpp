#include <catch2/catch.hpp>

#include <set>

#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TestApi;

namespace {
Json raidStep(int priority = 95) {
  return Json::parse(R"({"interface": "raid", "step": "apply_configuration",
      "args": {"raid_config": {"logical_disks": [{"size_gb": "MAX", "raid_level": "1", "is_root_volume": true}]}},
      "priority": )" + std::to_string(priority) + "}");
}
}  // namespace

TEST_CASE("deploy templates are created, shown, listed, patched and deleted", "[server][api][templates]") {
  TestApi api;
  auto r = api.post("/v1/deploy_templates", {{"name", "CUSTOM_RAID1"}, {"steps", {raidStep()}}, {"extra", {{"k", "v"}}}});
  REQUIRE(r.status == 201);
  auto t = r.json();
  const std::string uuid = t["uuid"];
  CHECK(r.header("Location") == "http://kiln.test:6385/v1/deploy_templates/" + uuid);
  CHECK(t["steps"][0]["priority"] == 95);
  CHECK(t["extra"]["k"] == "v");
  CHECK(api.get("/v1/deploy_templates/CUSTOM_RAID1").json()["uuid"] == uuid);
  CHECK(api.get("/v1/deploy_templates/" + uuid).json()["name"] == "CUSTOM_RAID1");
  auto list = api.get("/v1/deploy_templates").json()["deploy_templates"];
  REQUIRE(list.size() == 1);
  CHECK(list[0].size() == 3);  // uuid, name, links
  CHECK(api.get("/v1/deploy_templates?detail=True").json()["deploy_templates"][0].contains("steps"));
  CHECK(api.get("/v1/deploy_templates/CUSTOM_RAID1?fields=steps").json().contains("steps"));

  auto patched = api.patch("/v1/deploy_templates/" + uuid,
                           Json::parse(R"([{"op": "replace", "path": "/name", "value": "CUSTOM_MIRROR"},
                                           {"op": "replace", "path": "/steps/0/priority", "value": "80"}])"));
  INFO(patched.body);
  REQUIRE(patched.status == 200);
  CHECK(patched.json()["name"] == "CUSTOM_MIRROR");
  CHECK(patched.json()["steps"][0]["priority"] == 80);
  CHECK(api.del("/v1/deploy_templates/CUSTOM_MIRROR").status == 204);
  CHECK(api.get("/v1/deploy_templates/" + uuid).status == 404);
}

TEST_CASE("the spec's /v1/deploy-templates spelling works too", "[server][api][templates]") {
  TestApi api;
  REQUIRE(api.post("/v1/deploy-templates", {{"name", "CUSTOM_X"}, {"steps", {raidStep()}}}).status == 201);
  auto list = api.get("/v1/deploy-templates").json();
  CHECK(list["deploy-templates"].size() == 1);
  CHECK(api.get("/v1/deploy-templates/CUSTOM_X").status == 200);
  CHECK(api.del("/v1/deploy-templates/CUSTOM_X").status == 204);
}

TEST_CASE("template names must be valid, unique traits", "[server][api][templates]") {
  TestApi api;
  REQUIRE(api.post("/v1/deploy_templates", {{"name", "CUSTOM_ONE"}, {"steps", {raidStep()}}}).status == 201);
  auto dup = api.post("/v1/deploy_templates", {{"name", "CUSTOM_ONE"}, {"steps", {raidStep()}}});
  CHECK(dup.status == 409);
  CHECK(dup.fault() == "A deploy template with name CUSTOM_ONE already exists.");
  for (const char* name : {"foo", "not/a/name", "custom_lower", "CUSTOM_"}) {
    INFO(name);
    auto r = api.post("/v1/deploy_templates", {{"name", name}, {"steps", {raidStep()}}});
    CHECK(r.status == 400);
    CHECK_THAT(r.fault(), Catch::Contains("does not match"));
  }
  CHECK(api.post("/v1/deploy_templates", {{"name", "HW_CPU_X86_VMX"}, {"steps", {raidStep()}}}).status == 201);
  auto rename = api.patch("/v1/deploy_templates/HW_CPU_X86_VMX",
                          Json::parse(R"([{"op": "replace", "path": "/name", "value": "CUSTOM_ONE"}])"));
  CHECK(rename.status == 409);
  auto badUuid = api.post("/v1/deploy_templates", {{"name", "CUSTOM_U"}, {"uuid", "!@#$^*&%^"}, {"steps", {raidStep()}}});
  CHECK(badUuid.status == 400);
  CHECK_THAT(badUuid.fault(), Catch::Contains("Expected UUID for uuid"));
}

TEST_CASE("template steps are validated", "[server][api][templates]") {
  TestApi api;
  auto post = [&](Json steps) {
    return api.post("/v1/deploy_templates", {{"name", "CUSTOM_S"}, {"steps", std::move(steps)}});
  };
  CHECK_THAT(post(Json::array()).fault(), Catch::Contains("[] is too short"));
  CHECK(post("x").status == 400);
  Json noPriority = raidStep();
  noPriority.erase("priority");
  CHECK_THAT(post({noPriority}).fault(), Catch::Contains("'priority' is a required property"));
  Json extraKey = raidStep();
  extraKey["order"] = 1;
  CHECK(post({extraKey}).status == 400);
  Json badIface = raidStep();
  badIface["interface"] = "network";
  CHECK(post({badIface}).status == 400);
  Json negative = raidStep(-1);
  CHECK(post({negative}).status == 400);
  Json stringPriority = raidStep();
  stringPriority["priority"] = "12";
  auto ok = post({stringPriority});
  REQUIRE(ok.status == 201);
  CHECK(ok.json()["steps"][0]["priority"] == 12);
  CHECK(api.del("/v1/deploy_templates/CUSTOM_S").status == 204);
  Json badArgs = raidStep();
  badArgs["args"] = Json::array();
  CHECK(post({badArgs}).status == 400);
}

TEST_CASE("the same step twice is allowed with different arguments, not as an exact duplicate",
          "[server][api][templates]") {
  TestApi api;
  Json a = Json::parse(R"({"interface": "deploy", "step": "erase_devices_metadata", "args": {"device": "/dev/sda"}, "priority": 90})");
  Json b = a;
  b["args"]["device"] = "/dev/sdb";
  CHECK(api.post("/v1/deploy_templates", {{"name", "CUSTOM_TWO_DISKS"}, {"steps", {a, b}}}).status == 201);
  auto dup = api.post("/v1/deploy_templates", {{"name", "CUSTOM_DUP"}, {"steps", {a, a}}});
  CHECK(dup.status == 400);
  CHECK_THAT(dup.fault(), Catch::Contains("Duplicate deploy steps"));
  CHECK(api.get("/v1/deploy_templates/CUSTOM_DUP").status == 404);
}

TEST_CASE("template step arguments that look like passwords are masked", "[server][api][templates]") {
  TestApi api;
  Json step = Json::parse(R"({"interface": "bios", "step": "apply_configuration",
      "args": {"settings": [], "admin_password": "s3cret"}, "priority": 10})");
  auto r = api.post("/v1/deploy_templates", {{"name", "CUSTOM_BIOS"}, {"steps", {step}}});
  REQUIRE(r.status == 201);
  CHECK(r.json()["steps"][0]["args"]["admin_password"] == "******");
}

TEST_CASE("template RAID steps with invalid physical_disks hints are a 400 that changes nothing",
          "[server][api][templates]") {
  TestApi api;
  Json bad = raidStep();
  bad["args"]["raid_config"]["logical_disks"][0]["raid_level"] = "1";
  bad["args"]["raid_config"]["logical_disks"][0]["physical_disks"] =
      Json::parse(R"([{"nme": "/dev/vda"}, {"name": "/dev/vdb"}])");
  auto created = api.post("/v1/deploy_templates", {{"name", "CUSTOM_BAD"}, {"steps", {bad}}});
  CHECK(created.status == 400);
  CHECK(created.fault() ==
        "RAID config validation error: physical_disks entry {\"nme\":\"/dev/vda\"} has invalid "
        "device hints: The hints \"nme\" are invalid. Valid hints are: \"by_path, model, name, "
        "rotational, serial, size, vendor, wwn\"");
  CHECK(api.get("/v1/deploy_templates/CUSTOM_BAD").status == 404);

  Json good = raidStep();
  good["args"]["raid_config"]["logical_disks"][0]["physical_disks"] =
      Json::parse(R"([{"name": "/dev/vda"}, {"size": ">= 100", "rotational": false}])");
  REQUIRE(api.post("/v1/deploy_templates", {{"name", "CUSTOM_GOOD"}, {"steps", {good}}}).status ==
          201);
  auto patched = api.patch("/v1/deploy_templates/CUSTOM_GOOD",
                           Json::parse(R"([{"op": "replace",
      "path": "/steps/0/args/raid_config/logical_disks/0/physical_disks/1/size",
      "value": "huge"}])"));
  CHECK(patched.status == 400);
  CHECK_THAT(patched.fault(), Catch::Contains("Device hint \"size\" is not an integer value"));
  CHECK(api.get("/v1/deploy_templates/CUSTOM_GOOD").json()["steps"][0] == good);

  Json notRaid = raidStep();
  notRaid["args"]["raid_config"] = "not a config";
  CHECK_THAT(api.post("/v1/deploy_templates", {{"name", "CUSTOM_X"}, {"steps", {notRaid}}}).fault(),
             Catch::StartsWith("RAID config validation error"));
}

TEST_CASE("manual clean_steps and deploy_steps with invalid RAID hints are a 400 that changes "
          "nothing",
          "[server][api][templates]") {
  TestApi api;
  api.createNode({{"name", "n1"}});
  REQUIRE(api.provision("n1", "manage").status == 202);
  Json bad = raidStep();
  bad.erase("priority");
  bad["args"]["raid_config"]["logical_disks"][0]["physical_disks"] =
      Json::parse(R"([{"size": "huge"}, {"name": "/dev/vdb"}])");
  auto r = api.provision("n1", "clean", {{"clean_steps", {bad}}});
  CHECK(r.status == 400);
  CHECK_THAT(r.fault(), Catch::Contains("Device hint \"size\" is not an integer value"));
  CHECK(api.get("/v1/nodes/n1").json()["provision_state"] == "manageable");

  REQUIRE(api.provision("n1", "provide").status == 202);
  bad["priority"] = 10;
  auto d = api.provision("n1", "active", {{"deploy_steps", {bad}}});
  CHECK(d.status == 400);
  CHECK_THAT(d.fault(), Catch::Contains("Device hint \"size\" is not an integer value"));
  CHECK(api.get("/v1/nodes/n1").json()["provision_state"] == "available");
}
