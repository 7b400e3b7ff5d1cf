// The request half of the shared step model: parseStepRequests under each rule set Kiln uses.
// The expected messages are the ones the three validators it replaced produced (manual
// clean/service steps, deploy templates and deploy_steps, runbooks); clients match on them.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "shared/step/step.h"

using kiln::StepRequest;
using kiln::StepRequestRules;
using nlohmann::json;

namespace {

const std::string kInterfaces =
    "['vendor', 'power', 'management', 'firmware', 'deploy', 'bios', 'raid']";

/// The message parseStepRequests refuses `steps` with ("" when it accepts them).
std::string refusal(const json& steps, const StepRequestRules& rules, std::string_view what) {
  auto r = kiln::parseStepRequests(steps, rules, what);
  return r ? std::string() : r.error().message;
}

}  // namespace

TEST_CASE("manual step rules give the clean_steps messages", "[shared][step]") {
  const StepRequestRules rules = kiln::manualStepRules();
  auto fault = [&](const json& steps) { return refusal(steps, rules, "clean_steps"); };
  const std::string p = "Invalid clean_steps: ";

  CHECK(fault("x") == p + "'x' is not of type 'array'");
  CHECK(fault(json::array()).empty());
  CHECK(fault({5}) == p + "5 is not of type 'object'");
  CHECK(fault(json::parse(R"([{"interface": "deploy", "step": "erase_devices", "priority": 1}])")) ==
        p + "Additional properties are not allowed ('priority' was unexpected); manual clean steps "
            "run in the order given");
  CHECK(fault(json::parse(R"([{"interface": "deploy", "step": "erase_devices", "order": 1}])")) ==
        p + "Additional properties are not allowed ('order' was unexpected)");
  // An unexpected key is reported before a missing one.
  CHECK(fault(json::parse(R"([{"step": "x", "colour": 1}])")) ==
        p + "Additional properties are not allowed ('colour' was unexpected)");
  CHECK(fault(json::parse(R"([{"step": "x"}])")) == p + "'interface' is a required property");
  CHECK(fault(json::parse(R"([{"interface": "deploy"}])")) == p + "'step' is a required property");
  CHECK(fault(json::parse(R"([{"interface": "network", "step": "x"}])")) ==
        p + "'network' is not one of " + kInterfaces);
  CHECK(fault(json::parse(R"([{"interface": 5, "step": "x"}])")) == p + "5 is not one of " + kInterfaces);
  CHECK(fault(json::parse(R"([{"interface": "deploy", "step": ""}])")) ==
        p + "'' is not a valid step name");
  CHECK(fault(json::parse(R"([{"interface": "deploy", "step": 5}])")) == p + "5 is not a valid step name");
  CHECK(fault(json::parse(R"([{"interface": "deploy", "step": "x", "args": []}])")) ==
        p + "[] is not of type 'object'");
  CHECK(fault(json::parse(R"([{"interface": "deploy", "step": "x", "args": null}])")) ==
        p + "None is not of type 'object'");

  auto ok = kiln::parseStepRequests(json::parse(R"([{"interface": "deploy", "step": "erase_devices"},
      {"interface": "raid", "step": "create_configuration", "args": {"delete_existing": false}},
      {"interface": "deploy", "step": "erase_devices"}])"),
                                    rules, "clean_steps");
  REQUIRE(ok);
  REQUIRE(ok->size() == 3);  // repeated steps are allowed: manual steps run as listed
  CHECK((*ok)[0].args == json::object());
  CHECK((*ok)[1].args == json{{"delete_existing", false}});
  CHECK_FALSE((*ok)[1].priority.has_value());
  CHECK_FALSE((*ok)[1].order.has_value());
  CHECK((*ok)[1].toJson() == json::parse(R"({"interface": "raid", "step": "create_configuration",
      "args": {"delete_existing": false}})"));

  // `what` names the list in the message.
  CHECK(refusal("x", rules, "service_steps") == "Invalid service_steps: 'x' is not of type 'array'");
}

TEST_CASE("parseStepRequests returns the checkArgs error as it is, after the args' type check",
          "[shared][step]") {
  StepRequestRules rules = kiln::manualStepRules();
  std::vector<std::string> seen;
  rules.checkArgs = [&](const json& iface, const json& args) -> kiln::Result<void> {
    seen.push_back(iface.get<std::string>());
    if (args.contains("raid_config")) return kiln::invalid("RAID config validation error: bad");
    return {};
  };
  CHECK(refusal(json::parse(R"([{"interface": "deploy", "step": "x"},
      {"interface": "raid", "step": "apply_configuration", "args": {"raid_config": 1}}])"),
                rules, "clean_steps") == "RAID config validation error: bad");
  CHECK(seen == std::vector<std::string>{"deploy", "raid"});
  seen.clear();
  CHECK(refusal(json::parse(R"([{"interface": "raid", "step": "x", "args": [1]}])"), rules,
                "clean_steps") == "Invalid clean_steps: [1] is not of type 'object'");
  CHECK(seen.empty());
}

TEST_CASE("deploy step rules give the deploy template messages", "[shared][step]") {
  const StepRequestRules rules = kiln::deployStepRules();
  auto fault = [&](const json& steps) { return refusal(steps, rules, "template"); };
  const std::string p = "Schema error for template: ";
  auto step = [](json priority, json args = json::object()) {
    return json{{"interface", "deploy"}, {"step", "erase_devices_metadata"}, {"args", std::move(args)},
                {"priority", std::move(priority)}};
  };

  CHECK(fault("x") == p + "'x' is not of type 'array'");
  CHECK(fault(json::array()) == p + "[] is too short");
  CHECK(fault({5}) == p + "5 is not of type 'object'");
  CHECK(fault(json::parse(R"([{"step": "x", "args": {}, "priority": 1}])")) ==
        p + "'interface' is a required property");
  CHECK(fault(json::parse(R"([{"interface": "deploy", "args": {}, "priority": 1}])")) ==
        p + "'step' is a required property");
  // A missing key is reported before an unexpected one.
  CHECK(fault(json::parse(R"([{"interface": "deploy", "step": "x", "colour": 1}])")) ==
        p + "'args' is a required property");
  CHECK(fault(json::parse(R"([{"interface": "deploy", "step": "x", "args": {}, "order": 1}])")) ==
        p + "'priority' is a required property");
  CHECK(fault(json::parse(R"([{"interface": "deploy", "step": "x", "args": {}, "priority": 1, "order": 1}])")) ==
        p + "Additional properties are not allowed ('order' was unexpected)");
  CHECK(fault(json::parse(R"([{"interface": 5, "step": "x", "args": {}, "priority": 1}])")) ==
        p + "5 is not one of " + kInterfaces);
  CHECK(fault(json::parse(R"([{"interface": "network", "step": "x", "args": {}, "priority": 1}])")) ==
        p + "'network' is not one of " + kInterfaces);
  CHECK(fault(json::parse(R"([{"interface": "deploy", "step": 5, "args": {}, "priority": 1}])")) ==
        p + "5 is not of type 'string'");
  CHECK(fault(json::parse(R"([{"interface": "deploy", "step": "", "args": {}, "priority": 1}])")) ==
        p + "'' is too short");
  CHECK(fault(json::array({step(1, json::array())})) == p + "[] is not of type 'object'");
  CHECK(fault(json::array({step(-1, json::array())})) == p + "[] is not of type 'object'");  // args first
  CHECK(fault(json::array({step(-1)})) == p + "-1 is less than the minimum of 0");
  CHECK(fault(json::array({step("1x")})) == p + "'1x' does not match '^[0-9]+$'");
  CHECK(fault(json::array({step("")})) == p + "'' does not match '^[0-9]+$'");
  CHECK(fault(json::array({step("1234567890")})) == p + "'1234567890' does not match '^[0-9]+$'");
  CHECK(fault(json::array({step(1.5)})) == p + "1.5 is not valid under any of the given schemas");
  CHECK(fault(json::array({step(nullptr)})) == p + "None is not valid under any of the given schemas");
  CHECK(fault(json::array({step(json(18446744073709551615ULL))})) ==
        p + "18446744073709551615 is less than the minimum of 0");

  auto ok = kiln::parseStepRequests({step("12"), step(0, {{"device", "/dev/sdb"}})}, rules, "template");
  REQUIRE(ok);
  CHECK((*ok)[0].priority == std::optional<int64_t>(12));
  CHECK((*ok)[0].toJson() == json::parse(R"({"interface": "deploy", "step": "erase_devices_metadata",
      "args": {}, "priority": 12})"));

  // The same step with other arguments is allowed; an exact duplicate is listed in request
  // order once every step passed the schema.
  const json a = step(90, {{"device", "/dev/sda"}});
  CHECK(fault({a, step(90, {{"device", "/dev/sdb"}})}).empty());
  CHECK(fault({a, step(80, {{"device", "/dev/sdb"}}), step(10, {{"device", "/dev/sda"}}), a}) ==
        "Deploy template invalid: Duplicate deploy steps. A deploy template cannot have the same "
        "deploy step twice with the same arguments. Duplicates: interface: deploy, step: "
        "erase_devices_metadata, args: {\"device\":\"/dev/sda\"}; interface: deploy, step: "
        "erase_devices_metadata, args: {\"device\":\"/dev/sda\"}.");
  CHECK(fault({a, a, step(-1)}) == p + "-1 is less than the minimum of 0");
  // Arguments that look like passwords are masked in the list.
  const json secret = step(10, {{"admin_password", "s3cret"}});
  CHECK_THAT(fault({secret, secret}), Catch::Contains("args: {\"admin_password\":\"******\"}") &&
                                          !Catch::Contains("s3cret"));
}

TEST_CASE("runbook step rules give the runbook messages", "[shared][step]") {
  const StepRequestRules rules = kiln::runbookStepRules();
  auto fault = [&](const json& steps) { return refusal(steps, rules, "runbook"); };
  const std::string p = "Schema error for runbook: ";
  auto step = [](json order, json args = nullptr) {
    json s{{"interface", "deploy"}, {"step", "erase_devices"}, {"order", std::move(order)}};
    if (!args.is_null()) s["args"] = std::move(args);
    return s;
  };
  auto anyOf = [&](const std::string& repr, const std::string& cause) {
    return p + repr + " is not valid under any of the given schemas. Possible root cause: " + cause;
  };

  CHECK(fault("x") == p + "'x' is not of type 'array'");
  CHECK(fault(json::array()) == p + "[] is too short");
  CHECK(fault({"x"}) == p + "'x' is not of type 'object'");
  CHECK(fault(json::parse(R"([{"interface": "deploy", "step": "x"}])")) ==
        p + "'order' is a required property");
  CHECK(fault(json::parse(R"([{"interface": "deploy", "step": "x", "order": 1, "priority": 1}])")) ==
        p + "Additional properties are not allowed ('priority' was unexpected)");
  CHECK(fault(json::parse(R"([{"interface": 5, "step": "x", "order": 1}])")) ==
        p + "5 is not of type 'string'");
  CHECK(fault(json::parse(R"([{"interface": "network", "step": "x", "order": 1}])")) ==
        p + "'network' is not one of " + kInterfaces);
  CHECK(fault(json::parse(R"([{"interface": "deploy", "step": [], "order": 1}])")) ==
        p + "[] is not of type 'string'");
  CHECK(fault(json::parse(R"([{"interface": "deploy", "step": "", "order": 1}])")) ==
        p + "'' is too short");
  CHECK(fault(json::array({step(-1)})) == anyOf("-1", "-1 is less than the minimum of 0"));
  CHECK(fault(json::array({step("soon")})) == anyOf("'soon'", "'soon' does not match '^[0-9]+$'"));
  CHECK(fault(json::array({step("")})) == anyOf("''", "'' is too short"));
  CHECK(fault(json::array({step(1.5)})) == anyOf("1.5", "1.5 is not of type 'integer'"));
  CHECK(fault(json::array({step(json(18446744073709551615ULL))})) ==
        p + "18446744073709551615 is not valid under any of the given schemas");
  CHECK(fault(json::array({step("1234567890123456789")})) ==
        anyOf("'1234567890123456789'", "'1234567890123456789' does not match '^[0-9]+$'"));
  CHECK(fault(json::array({step(-1, json::array())})) == anyOf("-1", "-1 is less than the minimum of 0"));  // order first
  CHECK(fault(json::array({step(1, json::array())})) == p + "[] is not of type 'object'");

  auto ok = kiln::parseStepRequests(json::array({step("123456789012345678")}), rules, "runbook");
  REQUIRE(ok);
  CHECK((*ok)[0].order == std::optional<int64_t>(123456789012345678LL));
  CHECK((*ok)[0].toJson() == json::parse(R"({"interface": "deploy", "step": "erase_devices",
      "args": {}, "order": 123456789012345678})"));

  // Ironic's duplicate_steps: the same interface and step twice whatever the arguments, each
  // pair once, sorted.
  const json bios = json{{"interface", "bios"}, {"step", "apply_configuration"}, {"order", 5}};
  CHECK(fault({step(1, {{"a", 1}}), bios, step(2, {{"a", 2}}), bios, step(3)}) ==
        "Deploy template invalid: Duplicate deploy steps. A template cannot have multiple deploy "
        "steps with the same interface and step. Duplicates: interface: bios, step: "
        "apply_configuration; interface: deploy, step: erase_devices.");
}
