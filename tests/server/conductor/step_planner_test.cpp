#include <catch2/catch.hpp>

#include "server/conductor/step_planner.h"
#include "server/config/option_values.h"

using namespace kiln::server;
using nlohmann::json;

namespace {

std::vector<AvailableStep> driverDeploySteps() {
  return {
      {"deploy", "deploy", 100, false, false, {}},
      {"deploy", "write_image", 80, false, false, {}},
      {"deploy", "prepare_instance_boot", 60, false, false, {}},
      {"deploy", "boot_instance", 20, false, false, {}},
      {"raid", "apply_configuration", 0, false, false,
       {{"raid_config", "config", true}, {"delete_existing", "delete", false}}},
      {"bios", "apply_configuration", 0, false, false, {{"settings", "settings", true}}},
      {"deploy", "erase_devices_metadata", 0, true, true, {}},
  };
}

std::vector<std::string> keys(const std::vector<PlannedStep>& plan) {
  std::vector<std::string> out;
  for (const auto& p : plan) out.push_back(p.key() + ":" + std::to_string(p.priority));
  return out;
}

json step(const std::string& iface, const std::string& name, int prio, json args = json::object()) {
  return json{{"interface", iface}, {"step", name}, {"args", args}, {"priority", prio}};
}

TemplateStep tstep(json s, const std::string& name = "CUSTOM_T") { return {std::move(s), name}; }

}  // namespace

TEST_CASE("orderSteps sorts by priority then interface priority", "[server][conductor][steps]") {
  std::vector<PlannedStep> steps = {{"raid", "a", {}, 10}, {"deploy", "b", {}, 10}, {"power", "c", {}, 10},
                                    {"bios", "d", {}, 50}, {"vendor", "e", {}, 5}};
  orderSteps(steps);
  CHECK(keys(steps) == std::vector<std::string>{"bios.d:50", "power.c:10", "deploy.b:10", "raid.a:10", "vendor.e:5"});
}

TEST_CASE("automated cleaning runs every clean step with priority above zero, ordered",
          "[server][conductor][steps]") {
  std::vector<AvailableStep> available = {{"deploy", "erase_devices", 10, true, true, {}},
                                          {"deploy", "erase_devices_metadata", 99, true, true, {}},
                                          {"raid", "create_configuration", 0, true, false, {}},
                                          {"management", "reset_idrac", 10, false, false, {}}};
  CHECK(keys(automatedCleanPlan(available)) ==
        std::vector<std::string>{"deploy.erase_devices_metadata:99", "management.reset_idrac:10",
                                 "deploy.erase_devices:10"});
}

TEST_CASE("manual cleaning keeps the requested order and checks steps and arguments",
          "[server][conductor][steps]") {
  std::vector<AvailableStep> available = {
      {"raid", "create_configuration", 0, true, false, {{"create_root_volume", "x", false}}},
      {"deploy", "erase_devices", 10, true, true, {}},
      {"bios", "apply_configuration", 0, false, false, {{"settings", "s", true}}}};
  auto plan = manualCleanPlan(json::parse(R"([{"interface": "deploy", "step": "erase_devices"},
      {"interface": "raid", "step": "create_configuration", "args": {"create_root_volume": false}}])"),
                              available);
  REQUIRE(plan);
  CHECK(keys(*plan) == std::vector<std::string>{"deploy.erase_devices:10", "raid.create_configuration:0"});
  CHECK((*plan)[1].args["create_root_volume"] == false);
  CHECK((*plan)[0].requiresRamdisk);

  SECTION("a missing required argument is named") {
    auto r = manualCleanPlan(json::parse(R"([{"interface": "bios", "step": "apply_configuration"}])"), available);
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("missing these required arguments: settings"));
  }
  SECTION("an unknown argument is named") {
    auto r = manualCleanPlan(json::parse(R"([{"interface": "raid", "step": "create_configuration", "args": {"colour": 1}}])"), available);
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("invalid arguments: colour"));
  }
  SECTION("an unknown step is named") {
    auto r = manualCleanPlan(json::parse(R"([{"interface": "deploy", "step": "nope"}])"), available);
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("does not support this clean step"));
  }
}

TEST_CASE("deployPlan without templates runs the driver's enabled steps", "[server][conductor][steps]") {
  auto plan = deployPlan(driverDeploySteps(), {}, json());
  REQUIRE(plan);
  CHECK(keys(*plan) == std::vector<std::string>{"deploy.deploy:100", "deploy.write_image:80",
                                                "deploy.prepare_instance_boot:60", "deploy.boot_instance:20"});
}

TEST_CASE("template steps extend the plan and keep their priority", "[server][conductor][steps]") {
  auto plan = deployPlan(driverDeploySteps(),
                         {tstep(step("raid", "apply_configuration", 95,
                                     {{"raid_config", {{"logical_disks", json::array()}}}})),
                          tstep(step("bios", "apply_configuration", 90, {{"settings", json::array()}}), "CUSTOM_B")},
                         json());
  REQUIRE(plan);
  CHECK(keys(*plan) == std::vector<std::string>{"deploy.deploy:100", "raid.apply_configuration:95",
                                                "bios.apply_configuration:90", "deploy.write_image:80",
                                                "deploy.prepare_instance_boot:60", "deploy.boot_instance:20"});
}

TEST_CASE("a template step with priority 0 disables a default step", "[server][conductor][steps]") {
  auto plan = deployPlan(driverDeploySteps(), {tstep(step("deploy", "write_image", 0))}, json());
  REQUIRE(plan);
  CHECK(keys(*plan) == std::vector<std::string>{"deploy.deploy:100", "deploy.prepare_instance_boot:60",
                                                "deploy.boot_instance:20"});
}

TEST_CASE("a template step overrides a default step's priority", "[server][conductor][steps]") {
  auto plan = deployPlan(driverDeploySteps(), {tstep(step("deploy", "boot_instance", 70))}, json());
  REQUIRE(plan);
  CHECK(keys(*plan) == std::vector<std::string>{"deploy.deploy:100", "deploy.write_image:80",
                                                "deploy.boot_instance:70", "deploy.prepare_instance_boot:60"});
}

TEST_CASE("the core deploy step can be disabled but not re-prioritised", "[server][conductor][steps]") {
  auto disabled = deployPlan(driverDeploySteps(), {tstep(step("deploy", "deploy", 0))}, json());
  REQUIRE(disabled);
  CHECK(keys(*disabled).front() == "deploy.write_image:80");
  auto moved = deployPlan(driverDeploySteps(), {tstep(step("deploy", "deploy", 50))}, json());
  REQUIRE_FALSE(moved);
  CHECK_THAT(moved.error().message, Catch::Contains("can only be disabled"));
}

TEST_CASE("user steps override template steps with the same interface and step",
          "[server][conductor][steps]") {
  const json raidArgs = {{"raid_config", {{"logical_disks", json::array()}}}};
  auto plan = deployPlan(driverDeploySteps(), {tstep(step("raid", "apply_configuration", 95, raidArgs))},
                         json::array({step("raid", "apply_configuration", 85, raidArgs)}));
  REQUIRE(plan);
  CHECK(keys(*plan) == std::vector<std::string>{"deploy.deploy:100", "raid.apply_configuration:85",
                                                "deploy.write_image:80", "deploy.prepare_instance_boot:60",
                                                "deploy.boot_instance:20"});
}

TEST_CASE("the same step may run twice with different arguments but not as an exact duplicate",
          "[server][conductor][steps]") {
  const json a = step("raid", "apply_configuration", 95, {{"raid_config", {{"logical_disks", json::array()}}}});
  json b = a;
  b["args"]["delete_existing"] = false;
  b["priority"] = 94;
  auto twice = deployPlan(driverDeploySteps(), {tstep(a, "CUSTOM_A"), tstep(b, "CUSTOM_B")}, json());
  REQUIRE(twice);
  CHECK(keys(*twice)[1] == "raid.apply_configuration:95");
  CHECK(keys(*twice)[2] == "raid.apply_configuration:94");
  auto dup = deployPlan(driverDeploySteps(), {tstep(a, "CUSTOM_A"), tstep(a, "CUSTOM_B")}, json());
  REQUIRE_FALSE(dup);
  CHECK_THAT(dup.error().message, Catch::Contains("Duplicate deploy step raid.apply_configuration"));
}

TEST_CASE("template steps are checked against the node's steps and arguments", "[server][conductor][steps]") {
  SECTION("unknown step") {
    auto r = deployPlan(driverDeploySteps(), {tstep(step("bios", "flash_firmware", 10))}, json());
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("not supported by the node's interfaces"));
  }
  SECTION("missing required argument when enabled") {
    auto r = deployPlan(driverDeploySteps(), {tstep(step("bios", "apply_configuration", 10))}, json());
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("missing these required arguments: settings"));
  }
  SECTION("a disabled step needs no arguments") {
    CHECK(deployPlan(driverDeploySteps(), {tstep(step("bios", "apply_configuration", 0))}, json()));
  }
  SECTION("unexpected argument") {
    auto r = deployPlan(driverDeploySteps(), {tstep(step("deploy", "write_image", 80, {{"x", 1}}))}, json());
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("invalid arguments: x"));
  }
}

TEST_CASE("availableSteps applies configured priority overrides and adds flow steps",
          "[server][conductor][steps]") {
  GenericInterface raid(InterfaceType::Raid, "r", false,
                        {{"raid", "create_configuration", 0, -1, true, false, {}, {}},
                         {"raid", "apply_configuration", -1, 0, false, false, {}, {}}});
  GenericInterface deploy(InterfaceType::Bios, "d", false,
                          {{"deploy", "erase_devices", 10, -1, true, true, {}, {}}});
  NodeDriver driver;
  driver.byType[static_cast<size_t>(InterfaceType::Raid)] = &raid;
  driver.byType[static_cast<size_t>(InterfaceType::Bios)] = &deploy;
  PriorityOverrides o;
  o.clean["deploy.erase_devices"] = 0;
  o.clean["raid.create_configuration"] = 30;
  auto clean = availableSteps(driver, StepKind::Clean, o);
  auto find = [&](const std::string& k) {
    for (const auto& a : clean) {
      if (a.interface + "." + a.step == k) return a.priority;
    }
    return -99;
  };
  CHECK(find("deploy.erase_devices") == 0);
  CHECK(find("raid.create_configuration") == 30);
  CHECK(find("raid.apply_configuration") == -99);  // a deploy step only
  CHECK(find("power.power_on") == 0);
  CHECK(find("deploy.wait") == 0);
  auto fromAgent = json::parse(R"({"deploy": [{"interface": "deploy", "step": "erase_devices", "priority": 15,
      "abortable": true, "argsinfo": {"secure": {"description": "x", "required": false}}}]})");
  auto withAgent = availableSteps(driver, StepKind::Clean, {}, &fromAgent);
  const auto it = std::find_if(withAgent.begin(), withAgent.end(),
                               [](const AvailableStep& a) { return a.step == "erase_devices"; });
  REQUIRE(it != withAgent.end());
  CHECK(it->priority == 15);
  CHECK(it->argsinfo.size() == 1);
}

TEST_CASE("priority overrides parse from configuration text", "[server][conductor][steps]") {
  auto ok = parsePriorityOverrides("deploy.erase_devices:0, raid.create_configuration:10");
  REQUIRE(ok);
  CHECK(ok->at("deploy.erase_devices") == 0);
  CHECK(ok->at("raid.create_configuration") == 10);
  CHECK_FALSE(parsePriorityOverrides("erase_devices:0"));
  CHECK_FALSE(parsePriorityOverrides("deploy.erase_devices:x"));
  CHECK_FALSE(parsePriorityOverrides("deploy.erase_devices"));
}
