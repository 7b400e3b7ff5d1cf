// The catalogue half of the shared step model (shared/step/step.h): what the agent writes is
// what the server reads, and a malformed entry is an error that says what is wrong, never a
// silent default.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "shared/step/step.h"
#include "tests/support/protocol_golden.h"

using kiln::ArgInfo;
using kiln::StepCatalogue;
using kiln::StepDescriptor;
using nlohmann::json;

namespace {

StepDescriptor applyRaid() {
  StepDescriptor d;
  d.interface = "raid";
  d.step = "apply_configuration";
  d.priority = 0;
  d.abortable = false;
  d.rebootRequested = true;
  d.argsinfo = {{"raid_config", "The RAID configuration to apply.", true},
                {"delete_existing", "Delete existing software RAID first.", false}};
  return d;
}

/// The message StepDescriptor::fromJson refuses `j` with ("" when it accepts it).
std::string refusal(const json& j) {
  auto r = StepDescriptor::fromJson(j);
  return r ? std::string() : r.error().message;
}

json minimal() { return json{{"interface", "deploy"}, {"step", "erase_devices"}, {"priority", 10}}; }

}  // namespace

TEST_CASE("StepDescriptor writes the agent's wire form and reads it back unchanged",
          "[shared][step]") {
  const StepDescriptor d = applyRaid();
  const json wire = d.toJson();
  CHECK(wire == json::parse(R"({"interface": "raid", "step": "apply_configuration",
      "priority": 0, "abortable": false, "reboot_requested": true,
      "argsinfo": {"raid_config": {"description": "The RAID configuration to apply.", "required": true},
                   "delete_existing": {"description": "Delete existing software RAID first.", "required": false}}})"));
  auto back = StepDescriptor::fromJson(wire);
  REQUIRE(back);
  CHECK(back->interface == "raid");
  CHECK(back->step == "apply_configuration");
  CHECK(back->priority == 0);
  CHECK_FALSE(back->abortable);
  CHECK(back->rebootRequested);
  CHECK_FALSE(back->requiresRamdisk.has_value());
  CHECK(back->toJson() == wire);
  REQUIRE(back->argsinfo.size() == 2);
  // argsinfo is an object on the wire: arguments come back in key order.
  CHECK(back->argsinfo[0].name == "delete_existing");
  CHECK_FALSE(back->argsinfo[0].required);
  CHECK(back->argsinfo[1].name == "raid_config");
  CHECK(back->argsinfo[1].required);

  StepDescriptor cached = d;
  cached.requiresRamdisk = true;
  CHECK(cached.toJson()["requires_ramdisk"] == true);
  auto cachedBack = StepDescriptor::fromJson(cached.toJson());
  REQUIRE(cachedBack);
  CHECK(cachedBack->requiresRamdisk == std::optional<bool>(true));
}

TEST_CASE("StepDescriptor defaults only what the IPA wire format leaves optional",
          "[shared][step]") {
  auto d = StepDescriptor::fromJson(minimal());
  REQUIRE(d);
  CHECK(d->priority == 10);
  CHECK_FALSE(d->abortable);
  CHECK_FALSE(d->rebootRequested);
  CHECK(d->argsinfo.empty());
  CHECK_FALSE(d->requiresRamdisk.has_value());

  json nullArgs = minimal();
  nullArgs["argsinfo"] = nullptr;  // Ironic's argsinfo may be None
  CHECK(refusal(nullArgs).empty());
  json optionalRequired = minimal();
  optionalRequired["argsinfo"] = {{"secure", {{"description", "x"}}}};
  auto withArg = StepDescriptor::fromJson(optionalRequired);
  REQUIRE(withArg);
  REQUIRE(withArg->argsinfo.size() == 1);
  CHECK_FALSE(withArg->argsinfo[0].required);
  json newer = minimal();
  newer["added_by_a_newer_agent"] = 1;
  CHECK(refusal(newer).empty());
}

TEST_CASE("StepDescriptor refuses every malformed entry with a message naming the problem",
          "[shared][step]") {
  using Catch::Contains;
  CHECK_THAT(refusal(json::array()), Contains("a step must be a JSON object"));
  CHECK_THAT(refusal(json("erase_devices")), Contains("a step must be a JSON object"));

  auto without = [](const char* key) {
    json j = minimal();
    j.erase(key);
    return j;
  };
  auto with = [](const char* key, json value) {
    json j = minimal();
    j[key] = std::move(value);
    return j;
  };
  CHECK_THAT(refusal(without("interface")), Contains("missing 'interface'"));
  CHECK_THAT(refusal(with("interface", 3)), Contains("'interface' must be a non-empty string, not 3"));
  CHECK_THAT(refusal(with("interface", "")), Contains("'interface' must be a non-empty string"));
  CHECK_THAT(refusal(without("step")), Contains("missing 'step'"));
  CHECK_THAT(refusal(with("step", nullptr)), Contains("'step' must be a non-empty string, not None"));
  CHECK_THAT(refusal(with("step", "")), Contains("'step' must be a non-empty string"));
  CHECK_THAT(refusal(without("priority")), Contains("missing 'priority'"));
  CHECK_THAT(refusal(with("priority", "10")), Contains("'priority' must be an integer, not '10'"));
  CHECK_THAT(refusal(with("priority", 1.5)), Contains("'priority' must be an integer"));
  CHECK_THAT(refusal(with("priority", nullptr)), Contains("'priority' must be an integer"));
  CHECK_THAT(refusal(with("priority", 4294967296LL)), Contains("'priority' must be an integer"));
  CHECK_THAT(refusal(with("abortable", "yes")), Contains("'abortable' must be a boolean, not 'yes'"));
  CHECK_THAT(refusal(with("abortable", nullptr)), Contains("'abortable' must be a boolean"));
  CHECK_THAT(refusal(with("reboot_requested", 0)), Contains("'reboot_requested' must be a boolean"));
  CHECK_THAT(refusal(with("requires_ramdisk", "true")), Contains("'requires_ramdisk' must be a boolean"));
  CHECK_THAT(refusal(with("argsinfo", json::array())),
             Contains("'argsinfo' must be an object keyed by argument name, not []"));
  CHECK_THAT(refusal(with("argsinfo", {{"x", "the x"}})),
             Contains("argument 'x' of 'argsinfo' must be an object, not 'the x'"));
  CHECK_THAT(refusal(with("argsinfo", {{"x", {{"required", true}}}})),
             Contains("argument 'x' of 'argsinfo' has no 'description'"));
  CHECK_THAT(refusal(with("argsinfo", {{"x", {{"description", 5}}}})),
             Contains("argument 'x' of 'argsinfo': 'description' must be a string, not 5"));
  CHECK_THAT(refusal(with("argsinfo", {{"x", {{"description", "d"}, {"required", "no"}}}})),
             Contains("argument 'x' of 'argsinfo': 'required' must be a boolean, not 'no'"));
  CHECK_THAT(refusal(with("argsinfo", {{"x", {{"description", "d"}, {"default", 1}}}})),
             Contains("argument 'x' of 'argsinfo' has the unknown key 'default'"));
  // The message quotes the entry (masked) so an operator can find it.
  CHECK_THAT(refusal(with("priority", "10")), Catch::StartsWith("Malformed step {"));
}

TEST_CASE("readSteps keeps the good entries and names each one it leaves out", "[shared][step]") {
  const json reported = json::parse(R"({
      "deploy": [{"interface": "deploy", "step": "erase_devices", "priority": 10},
                 {"interface": "deploy", "step": "erase_devices_metadata", "priority": "99"},
                 {"interface": "raid", "step": "delete_configuration", "priority": 0}],
      "raid": {"not": "a list"},
      "bios": []})");
  const kiln::ReadSteps read = kiln::readSteps(reported);
  REQUIRE(read.steps.count("deploy") == 1);
  REQUIRE(read.steps.at("deploy").size() == 1);
  CHECK(read.steps.at("deploy")[0].step == "erase_devices");
  CHECK(read.steps.count("raid") == 0);
  CHECK(read.steps.at("bios").empty());
  REQUIRE(read.rejected.size() == 3);
  CHECK_THAT(read.rejected[0], Catch::Contains("'priority' must be an integer, not '99'"));
  CHECK_THAT(read.rejected[1], Catch::Contains("listed under interface 'deploy'"));
  CHECK(read.rejected[2] == "The steps of interface 'raid' must be a list, not {'not': 'a list'}");

  const kiln::ReadSteps notObject = kiln::readSteps(json::array());
  CHECK(notObject.steps.empty());
  REQUIRE(notObject.rejected.size() == 1);
  CHECK_THAT(notObject.rejected[0], Catch::Contains("must be a JSON object keyed by interface"));

  auto strict = kiln::parseSteps(reported);
  REQUIRE_FALSE(strict);
  CHECK(strict.error().message == read.rejected[0]);
  auto good = kiln::parseSteps(json::parse(R"({"deploy": [{"interface": "deploy",
      "step": "erase_devices", "priority": 10}]})"));
  REQUIRE(good);
  CHECK(kiln::stepsToJson(*good) ==
        json::parse(R"({"deploy": [{"interface": "deploy", "step": "erase_devices", "priority": 10,
            "abortable": false, "reboot_requested": false, "argsinfo": {}}]})"));
}

TEST_CASE("StepCatalogue round-trips the golden heartbeat's catalogue exactly", "[shared][step]") {
  const json golden = kiln::test::goldenMessage("heartbeat_request")["steps"];
  auto catalogue = StepCatalogue::fromJson(golden);
  REQUIRE(catalogue);
  REQUIRE(catalogue->clean.at("deploy").size() == 2);
  CHECK(catalogue->clean.at("deploy")[0].priority == 99);
  CHECK(catalogue->deploy.at("deploy")[0].argsinfo[0].name == "image_info");
  CHECK(catalogue->hardwareManagerVersion == json{{"generic", "1"}});
  CHECK(catalogue->toJson() == golden);
}

TEST_CASE("StepCatalogue always writes both kinds and refuses a malformed catalogue",
          "[shared][step]") {
  StepCatalogue empty;
  CHECK(empty.toJson() == json::parse(R"({"clean": {}, "deploy": {}, "hardware_manager_version": {}})"));

  StepCatalogue c;
  c.deploy["raid"].push_back(applyRaid());
  c.hardwareManagerVersion = {{"generic", "1"}};
  auto back = StepCatalogue::fromJson(c.toJson());
  REQUIRE(back);
  CHECK(back->clean.empty());
  CHECK(back->toJson() == c.toJson());

  CHECK_FALSE(StepCatalogue::fromJson(json::array()));
  auto badVersion = StepCatalogue::fromJson(json{{"hardware_manager_version", "1"}});
  REQUIRE_FALSE(badVersion);
  CHECK_THAT(badVersion.error().message, Catch::Contains("hardware_manager_version must be an object"));
  auto badStep = StepCatalogue::fromJson(
      json::parse(R"({"clean": {"deploy": [{"interface": "deploy", "step": "erase_devices"}]}})"));
  REQUIRE_FALSE(badStep);
  CHECK_THAT(badStep.error().message, Catch::Contains("missing 'priority'"));
}
