#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "server/inspection/rules_engine.h"
#include "server/model/inspection_rule.h"

using namespace kiln::server;
using J = nlohmann::json;

namespace {

const std::string kTestNode = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123";
const std::string kTestPort = "6d85703a-565d-469a-96ce-30b6de53079d";

/// The inventory of Ironic's engine tests, plus a vendor and a secret.
J testInventory() {
  return J::parse(R"({
    "cpu": {"count": 4, "architecture": "x86_64"},
    "memory": {"total": 8192, "physical_mb": 8192},
    "interfaces": [
      {"name": "eth0", "mac_address": "2a:03:9c:53:4e:46", "ipv4_address": "192.168.1.10"},
      {"name": "eth1", "mac_address": "a2:67:c1:b8:c1:bd"}
    ],
    "disks": [{"name": "/dev/sda", "size": 1000000}, {"name": "/dev/sdb", "size": 2000000}],
    "system_vendor": {"manufacturer": "Dell Inc.", "product_name": "PowerEdge R640"},
    "bmc_address": "192.168.1.100",
    "bmc_password": "secret",
    "empty_field": ""
  })");
}

NodeView testNode() {
  NodeView n;
  n.uuid = kTestNode;
  n.attributes = J::parse(R"({"driver": "fake-hardware", "name": "n1", "auto_discovered": true,
                              "resource_class": null, "tags": ["existing"]})");
  n.properties = J::parse(R"({"cpus": 2})");
  n.extra = J::parse(R"({"to_delete": "value"})");
  PortView port;
  port.uuid = kTestPort;
  port.address = "2A:03:9C:53:4E:46";
  port.fields = J::parse(R"({"extra": {}, "physical_network": null, "pxe_enabled": true})");
  n.ports.push_back(port);
  return n;
}

int ruleCount = 0;

/// A stored rule, as the API would keep it (but not validated: the engine must cope alone).
Record rule(J conditions, J actions, int64_t priority = 0, bool sensitive = false) {
  Record r = defaultRecord(inspectionRuleSchema());
  r.setText(kIrUuid, "00000000-0000-0000-0000-" + std::to_string(100000000000 + ++ruleCount));
  r.setText(kIrPhase, "main");
  r[kIrPriority] = Value::integer(priority);
  r.setBool(kIrSensitive, sensitive);
  r.setText(kIrConditions, conditions.dump());
  r.setText(kIrActions, actions.dump());
  return r;
}

J action(const char* op, J args) { return {{"op", op}, {"args", std::move(args)}}; }

/// Runs the rules on a fresh node; the node, plugin data and report are kept for checks.
struct Run {
  NodeView node = testNode();
  J pluginData = J::parse(R"({"plugin": "data", "password": "plugin_secret"})");
  RulesReport report;
  kiln::Result<void> result;

  explicit Run(std::vector<Record> rules, RulesOptions options = {}, J inv = testInventory()) {
    result = applyInspectionRules(rules, inv, pluginData, node, options, &report);
  }
  std::string error() const { return result ? "" : result.error().message; }
};

/// Whether a rule with this one condition runs its action.
bool holds(J condition) {
  Run run({rule(J::array({std::move(condition)}),
                J::array({action("set-attribute", {{"path", "extra/hit"}, {"value", true}})}))});
  INFO(run.error());
  REQUIRE(run.result);
  return run.node.extra.contains("hit");
}

J cond(const char* op, J args) { return {{"op", op}, {"args", std::move(args)}}; }

/// The value a set-attribute gets from a template.
J formatted(J value, RulesOptions options = {}, bool sensitive = false) {
  Run run({rule(J::array(), J::array({action("set-attribute",
                                             {{"path", "extra/out"}, {"value", std::move(value)}})}),
                0, sensitive)},
          options);
  INFO(run.error());
  REQUIRE(run.result);
  return run.node.extra["out"];
}

}  // namespace

TEST_CASE("rules engine comparison operators compare as Python does", "[server][inspection]") {
  CHECK(holds(cond("eq", {{"values", {5, 5}}})));
  CHECK_FALSE(holds(cond("eq", {{"values", {5, 10}}})));
  CHECK(holds(cond("eq", {{"values", {1, 1.0}}})));
  CHECK(holds(cond("eq", {{"values", {true, 1}}})));
  CHECK_FALSE(holds(cond("eq", {{"values", {"1", 1}}})));
  CHECK(holds(cond("eq", {{"values", {3, 3, 3}}})));
  CHECK(holds(cond("eq", {{"values", J::array()}})));
  CHECK(holds(cond("eq", {{"values", {J::parse(R"({"a": [1]})"), J::parse(R"({"a": [1.0]})")}}})));
  CHECK(holds(cond("eq", {{"values", {"{node.driver}", "fake-hardware"}}})));
  CHECK_FALSE(holds(cond("eq", {{"values", {"{node.driver}", "other"}}})));
  CHECK(holds(cond("eq", {{"values", {4, "4"}}, {"force_strings", true}})));
  CHECK(holds(cond("lt", {{"values", {5, 10}}})));
  CHECK_FALSE(holds(cond("lt", {{"values", {10, 5}}})));
  CHECK(holds(cond("lt", {{"values", {1, 2, 3}}})));
  CHECK_FALSE(holds(cond("lt", {{"values", {1, 3, 2}}})));
  CHECK(holds(cond("lt", {{"values", {"a", "b"}}})));
  CHECK(holds(cond("lt", {{"values", {J::array({1, 2}), J::array({1, 3})}}})));
  CHECK(holds(cond("gt", {{"values", {10, 5}}})));
  CHECK_FALSE(holds(cond("gt", {{"values", {5, 10}}})));
  CHECK(holds(cond("gt", {{"values", {2.5, 2}}})));
}

TEST_CASE("rules engine value operators hold and fail as Ironic's", "[server][inspection]") {
  // is-empty: str(value) in ("", "None", "[]", "{}"); a missing key is None for it alone.
  CHECK(holds(cond("is-empty", {{"value", ""}})));
  CHECK(holds(cond("is-empty", {{"value", nullptr}})));
  CHECK(holds(cond("is-empty", {{"value", J::array()}})));
  CHECK(holds(cond("is-empty", {{"value", J::object()}})));
  CHECK(holds(cond("is-empty", {{"value", "{inventory[empty_field]}"}})));
  CHECK(holds(cond("is-empty", {{"value", "{inventory[i.do.not.exist]}"}})));
  CHECK_FALSE(holds(cond("is-empty", {{"value", "{inventory[bmc_address]}"}})));
  CHECK_FALSE(holds(cond("is-empty", {{"value", "not empty"}})));
  CHECK_FALSE(holds(cond("is-empty", {{"value", "{inventory[disks][7]}"}})));  // IndexError

  CHECK(holds(cond("in-net", {{"address", "192.168.1.5"}, {"subnet", "192.168.1.0/24"}})));
  CHECK_FALSE(holds(cond("in-net", {{"address", "10.0.0.1"}, {"subnet", "192.168.1.0/24"}})));
  CHECK(holds(cond("in-net", {{"address", "{inventory[bmc_address]}"},
                              {"subnet", "192.168.0.0/255.255.0.0"}})));
  CHECK(holds(cond("in-net", {{"address", "192.168.1.100"}, {"subnet", "192.168.1.100"}})));
  CHECK(holds(cond("in-net", {{"address", "fe80::1"}, {"subnet", "fe80::/64"}})));
  CHECK_FALSE(holds(cond("in-net", {{"address", "192.168.1.5"}, {"subnet", "fe80::/64"}})));

  CHECK(holds(cond("matches", {{"value", "abc123"}, {"regex", "abc\\d+"}})));
  CHECK_FALSE(holds(cond("matches", {{"value", "xyz123"}, {"regex", "abc\\d+"}})));
  CHECK_FALSE(holds(cond("matches", {{"value", "abc123x"}, {"regex", "abc\\d+"}})));
  CHECK_FALSE(holds(cond("matches", {{"value", "xabc123"}, {"regex", "abc\\d+"}})));
  CHECK(holds(cond("matches", {{"value", "{inventory[system_vendor][manufacturer]}"},
                               {"regex", "(?i)dell.*"}})));
  CHECK(holds(cond("matches", {{"value", 4}, {"regex", "\\d"}})));
  CHECK(holds(cond("contains", {{"value", "test-abc123-end"}, {"regex", "abc\\d+"}})));
  CHECK_FALSE(holds(cond("contains", {{"value", "test-xyz-end"}, {"regex", "abc\\d+"}})));
  CHECK(holds(cond("contains", {{"value", "{inventory[system_vendor][manufacturer]}"},
                                {"regex", "(?i)DELL"}})));
  CHECK(holds(cond("contains", {{"value", "a\nb"}, {"regex", "(?s)a.b"}})));
  CHECK(holds(cond("contains", {{"value", "PowerEdge"}, {"regex", "(?P<family>Power)Edge"}})));

  CHECK(holds(cond("one-of", {{"value", "b"}, {"values", {"a", "b", "c"}}})));
  CHECK_FALSE(holds(cond("one-of", {{"value", "z"}, {"values", {"a", "b", "c"}}})));
  CHECK_FALSE(holds(cond("one-of", {{"value", nullptr}, {"values", {"a", "b"}}})));
  CHECK_FALSE(holds(cond("one-of", {{"value", "test"}, {"values", J::array()}})));
  CHECK_FALSE(holds(cond("one-of", {{"value", "test"}})));
  CHECK(holds(cond("one-of", {{"value", "{inventory[cpu][architecture]}"},
                              {"values", {"x86_64", "aarch64"}}})));
  CHECK(holds(cond("one-of", {{"value", "86"}, {"values", "x86_64"}})));  // str in str

  CHECK(holds(cond("is-none", {{"value", nullptr}})));
  CHECK_FALSE(holds(cond("is-none", {{"value", "something"}})));
  // Outside is-empty a missing key leaves the template as written, which is not None.
  CHECK_FALSE(holds(cond("is-none", {{"value", "{inventory[missing]}"}})));

  for (J yes : {J(true), J("yes"), J("TRUE"), J(1), J(0.1), J("{node.auto_discovered}")}) {
    INFO(yes.dump());
    CHECK(holds(cond("is-true", {{"value", yes}})));
    CHECK_FALSE(holds(cond("is-false", {{"value", yes}})));
  }
  for (J no : {J(false), J("no"), J("FALSE"), J(0)}) {
    INFO(no.dump());
    CHECK_FALSE(holds(cond("is-true", {{"value", no}})));
    CHECK(holds(cond("is-false", {{"value", no}})));
  }
  CHECK_FALSE(holds(cond("is-true", {{"value", nullptr}})));
  CHECK(holds(cond("is-false", {{"value", nullptr}})));
  CHECK_FALSE(holds(cond("is-true", {{"value", J::object()}})));
  CHECK_FALSE(holds(cond("is-false", {{"value", J::array()}})));
  // A formatted value is a string: "4" is neither "yes" nor "true" (as in Ironic).
  CHECK_FALSE(holds(cond("is-true", {{"value", "{inventory[cpu][count]}"}})));
}

TEST_CASE("rules engine negates a condition when its op starts with !", "[server][inspection]") {
  CHECK(holds(cond("!eq", {{"values", {1, 2}}})));
  CHECK_FALSE(holds(cond("!eq", {{"values", {1, 1}}})));
  CHECK_FALSE(holds(cond("!is-true", {{"value", "yes"}})));
  CHECK(holds(cond("!contains", {{"value", "abc"}, {"regex", "z"}})));
  CHECK(holds(cond("! is-empty", {{"value", "{inventory[bmc_address]}"}})));
  // Every condition must hold.
  Run both({rule(J::array({cond("is-true", {{"value", true}}), cond("!is-true", {{"value", true}})}),
                 J::array({action("set-attribute", {{"path", "extra/hit"}, {"value", 1}})}))});
  REQUIRE(both.result);
  CHECK_FALSE(both.node.extra.contains("hit"));
  CHECK(both.report.applied.empty());
}

TEST_CASE("rules engine combines loop items by multiple when a condition loops",
          "[server][inspection]") {
  // Ironic's test_operator_with_loop.
  J eq = J::parse(R"({"op": "eq", "args": {"values": [1, "{item}"]}, "loop": [1, 2, 3, 4]})");
  J contains = J::parse(
      R"({"op": "contains", "args": {"value": "{item}", "regex": "4"}, "loop": ["test4", "value5", "string6"]})");
  J oneOf = J::parse(R"({"op": "one-of", "args": {"value": "{inventory[cpu][architecture]}",
                         "values": ["{item}"]}, "loop": ["x86_64", "aarch64", "ppc64le"]})");
  const std::pair<const char*, bool> expected[] = {
      {"any", true}, {"all", false}, {"first", true}, {"last", false}};
  for (const auto& [multiple, result] : expected) {
    INFO(multiple);
    for (J c : {eq, contains, oneOf}) {
      c["multiple"] = multiple;
      INFO(c.dump());
      CHECK(holds(c) == result);
    }
  }
  // No multiple: any.
  CHECK(holds(eq));
  // "last" takes the last item's result.
  CHECK(holds(J::parse(R"({"op": "eq", "args": {"values": [4, "{item}"]}, "loop": [1, 4], "multiple": "last"})")));
  // "all" over items that all hold; negation applies per item.
  CHECK(holds(J::parse(R"({"op": "!eq", "args": {"values": [0, "{item}"]}, "loop": [1, 2], "multiple": "all"})")));
  // A dictionary loop is one item.
  CHECK(holds(J::parse(R"({"op": "eq", "args": {"values": ["{item[a]}", "x"]}, "loop": {"a": "x"}, "multiple": "all"})")));
  // In a loop comparisons are on strings: 1 and "1" are equal.
  CHECK(holds(J::parse(R"({"op": "eq", "args": {"values": [1, "{item}"]}, "loop": [1]})")));
}

TEST_CASE("rules engine formats templates over the inventory, the plugin data and the node",
          "[server][inspection]") {
  CHECK(formatted("{inventory[cpu][architecture]}") == "x86_64");
  CHECK(formatted("{inventory[interfaces][0][mac_address]}") == "2a:03:9c:53:4e:46");
  CHECK(formatted("{plugin_data[plugin]}") == "data");
  CHECK(formatted("{node.driver}") == "fake-hardware");
  CHECK(formatted("{node.uuid}") == kTestNode);
  CHECK(formatted("{node.properties[cpus]}") == "2");
  CHECK(formatted("{node.traits}") == "[]");
  CHECK(formatted("{node.auto_discovered}") == "True");
  CHECK(formatted("{node.resource_class}") == "None");
  CHECK(formatted("CPU: {inventory[cpu][count]}, RAM: {inventory[memory][physical_mb]}") ==
        "CPU: 4, RAM: 8192");
  CHECK(formatted("{inventory[cpu][architecture]!r}") == "'x86_64'");
  CHECK(formatted("{inventory[interfaces][1][name][3]}") == "1");
  // Kiln's JSON objects keep their keys sorted (Python keeps insertion order).
  CHECK(formatted("{inventory[cpu]}") == "{'architecture': 'x86_64', 'count': 4}");
  CHECK(formatted("{{literal}} {inventory[cpu][count]}") == "{literal} 4");
  // What cannot be formatted stays as written.
  for (const char* bad : {"{inventory[missing][key]}", "{inventory[cpu][count]:>5}",
                          "{unknown}", "{0}", "{inventory[disks][x]}", "{node.nope}",
                          "{inventory.cpu}", "{inventory[cpu]", "x}", "{item}"}) {
    INFO(bad);
    CHECK(formatted(bad) == bad);
  }
  // Dictionaries and lists are formatted inside; keys too; other values stay as they are.
  CHECK(formatted(J::parse(R"({"{node.name}": ["{inventory[bmc_address]}", 5, null],
                               "n": {"deep": "{inventory[cpu][count]}"}})")) ==
        J::parse(R"({"n1": ["192.168.1.100", 5, null], "n": {"deep": "4"}})"));
  CHECK(formatted(7) == 7);
}

TEST_CASE("rules engine masks inspection secrets unless told not to", "[server][inspection]") {
  CHECK(formatted("{inventory[bmc_password]}") == "***");
  CHECK(formatted("{plugin_data[password]}") == "***");
  CHECK(formatted("{inventory}").get<std::string>().find("'bmc_password': '***'") !=
        std::string::npos);
  CHECK(formatted("{inventory}").get<std::string>().find("secret") == std::string::npos);
  CHECK(formatted("{inventory[bmc_password]}", {MaskSecrets::Never}) == "secret");
  CHECK(formatted("{inventory[bmc_password]}", {MaskSecrets::Sensitive}, true) == "secret");
  CHECK(formatted("{inventory[bmc_password]}", {MaskSecrets::Sensitive}, false) == "***");
  CHECK(formatted("{inventory[bmc_password]}", {MaskSecrets::Always}, true) == "***");
}

TEST_CASE("rules engine formats every argument, twice, when an action loops",
          "[server][inspection]") {
  // Ironic's test_action_with_list_loop: the loop items carry templates of their own.
  J looped = J::parse(R"({"op": "set-attribute",
      "args": {"path": "{item[path]}", "value": "{item[value]}"},
      "loop": [{"path": "driver_info/ipmi_username", "value": "cidadmin"},
               {"path": "driver_info/ipmi_password", "value": "cidpassword"},
               {"path": "driver_info/ipmi_address", "value": "{inventory[bmc_address]}"}]})");
  Run run({rule(J::array(), J::array({looped}))});
  REQUIRE(run.result);
  CHECK(run.node.driverInfo == J::parse(R"({"ipmi_username": "cidadmin",
      "ipmi_password": "cidpassword", "ipmi_address": "192.168.1.100"})"));

  J dictLoop = J::parse(R"({"op": "set-attribute",
      "args": {"path": "{item[path]}", "value": "{item[value]}"},
      "loop": {"path": "driver_info/ipmi_address", "value": "{inventory[bmc_address]}"}})");
  Run single({rule(J::array(), J::array({dictLoop}))});
  REQUIRE(single.result);
  CHECK(single.node.driverInfo == J::parse(R"({"ipmi_address": "192.168.1.100"})"));

  // Outside a loop only FORMATTED_ARGS are templates: set-attribute's path is not.
  Run plain({rule(J::array(), J::array({action("set-attribute",
                                              {{"path", "extra/{node.name}"}, {"value", 1}})}))});
  REQUIRE(plain.result);
  CHECK(plain.node.extra.contains("{node.name}"));

  // A port per inventory interface, named by MAC.
  J ports = J::parse(R"({"op": "set-port-attribute",
      "args": {"port_id": "{item[mac_address]}", "path": "extra/name", "value": "{item[name]}"},
      "loop": [{"mac_address": "2a:03:9c:53:4e:46", "name": "eth0"}]})");
  Run byMac({rule(J::array(), J::array({ports}))});
  INFO(byMac.error());
  REQUIRE(byMac.result);
  CHECK(byMac.node.ports[0].fields["extra"]["name"] == "eth0");
}

TEST_CASE("rules engine attribute actions edit the node's fields", "[server][inspection]") {
  auto run1 = [](J act) { return Run({rule(J::array(), J::array({std::move(act)}))}); };

  Run set = run1(action("set-attribute", {{"path", "/driver"}, {"value", "idrac"}}));
  REQUIRE(set.result);
  CHECK(set.node.attributes["driver"] == "idrac");
  CHECK(set.node.changed);
  Run nested = run1(action("set-attribute",
                           {{"path", "driver_info.next.nested.deeper"}, {"value", {{"k", "v"}}}}));
  REQUIRE(nested.result);
  CHECK(nested.node.driverInfo == J::parse(R"({"next": {"nested": {"deeper": {"k": "v"}}}})"));
  Run props = run1(action("set-attribute", {{"path", "/properties/memory_mb"},
                                            {"value", "{inventory[memory][physical_mb]}"}}));
  REQUIRE(props.result);
  CHECK(props.node.properties == J::parse(R"({"cpus": 2, "memory_mb": "8192"})"));

  CHECK(run1(action("set-attribute", {{"path", "/nope"}, {"value", 1}})).error() ==
        "Inspection rule action execution failed. Reason: Failed to set attribute /nope with "
        "value 1: there is no field 'nope' that rules may change");
  CHECK(run1(action("set-attribute", {{"path", "driver.some_key"}, {"value", "x"}})).error() ==
        "Inspection rule action execution failed. Reason: Failed to set attribute "
        "driver.some_key with value x: 'driver' is not a dictionary");
  CHECK_FALSE(run1(action("set-attribute", {{"path", "/properties"}, {"value", "x"}})).result);
  CHECK_FALSE(run1(action("set-attribute", {{"path", "/uuid"}, {"value", "x"}})).result);

  Run extend = run1(action("extend-attribute", {{"path", "tags"}, {"value", "new_tag"}}));
  REQUIRE(extend.result);
  CHECK(extend.node.attributes["tags"] == J::parse(R"(["existing", "new_tag"])"));
  Run unique = run1(action("extend-attribute",
                           {{"path", "tags"}, {"value", "existing"}, {"unique", true}}));
  REQUIRE(unique.result);
  CHECK(unique.node.attributes["tags"] == J::parse(R"(["existing"])"));
  Run created = run1(action("extend-attribute", {{"path", "extra/list"}, {"value", 1}}));
  REQUIRE(created.result);
  CHECK(created.node.extra["list"] == J::parse("[1]"));
  CHECK(run1(action("extend-attribute", {{"path", "driver"}, {"value", "x"}})).error() ==
        "Inspection rule action execution failed. Reason: Cannot extend non-list attribute "
        "driver with value x");

  Run del = run1(action("del-attribute", {{"path", "extra/to_delete"}}));
  REQUIRE(del.result);
  CHECK(del.node.extra == J::object());
  CHECK(run1(action("del-attribute", {{"path", "extra/missing"}})).error() ==
        "Inspection rule action execution failed. Reason: Failed to delete attribute at "
        "extra/missing: 'missing'");
  CHECK_FALSE(run1(action("del-attribute", {{"path", "driver.nonexistent_key"}})).result);
  Run whole = run1(action("del-attribute", {{"path", "/properties"}}));
  REQUIRE(whole.result);
  CHECK(whole.node.properties == J::object());
  Run attr = run1(action("del-attribute", {{"path", "/name"}}));
  REQUIRE(attr.result);
  CHECK(attr.node.attributes["name"].is_null());
}

TEST_CASE("rules engine capability and trait actions edit properties and traits",
          "[server][inspection]") {
  Run caps({rule(J::array(), J::array({
                                 action("set-capability", {{"name", "boot_mode"}, {"value", "uefi"}}),
                                 action("set-capability", {{"name", "secure_boot"}, {"value", "true"}}),
                                 action("unset-capability", {{"name", "boot_mode"}}),
                             }))});
  REQUIRE(caps.result);
  CHECK(caps.node.properties["capabilities"] == "secure_boot:true");
  Run none({rule(J::array(), J::array({action("unset-capability", {{"name", "x"}})}))});
  REQUIRE(none.result);
  CHECK(none.node.properties["capabilities"] == "");
  Run notString({rule(J::array(), J::array({action("set-capability", {{"name", "n"}, {"value", 1}})}))});
  CHECK_THAT(notString.error(), Catch::StartsWith("Inspection rule action execution failed. "
                                                  "Reason: Failed to set capability n:"));

  Run traits({rule(J::array(), J::array({
                                   action("add-trait", {{"name", "CUSTOM_AWESOME"}}),
                                   action("add-trait", {{"name", "CUSTOM_AWESOME"}}),
                                   action("add-trait", {{"name", "HW_CPU_X86_VMX"}}),
                                   action("remove-trait", {{"name", "HW_CPU_X86_VMX"}}),
                                   action("remove-trait", {{"name", "CUSTOM_NEVER"}}),
                               }))});
  REQUIRE(traits.result);
  CHECK(traits.node.traits == std::vector<std::string>{"CUSTOM_AWESOME"});
  REQUIRE(traits.report.log.size() == 1);
  CHECK(traits.report.log[0].level == kiln::LogLevel::Warning);
  CHECK_THAT(traits.report.log[0].message, Catch::StartsWith("Failed to remove trait CUSTOM_NEVER"));
  Run badTrait({rule(J::array(), J::array({action("add-trait", {{"name", "lowercase"}})}))});
  CHECK_THAT(badTrait.error(), Catch::StartsWith("Inspection rule action execution failed. "
                                                 "Reason: Failed to add new trait lowercase:"));
}

TEST_CASE("rules engine plugin data actions edit the plugin data", "[server][inspection]") {
  Run run({rule(J::array(), J::array({
                                action("set-plugin-data", {{"path", "a.b"}, {"value", "{inventory[cpu][count]}"}}),
                                action("set-plugin-data", {{"path", "a.c"}, {"value", 1}}),
                                action("extend-plugin-data", {{"path", "list"}, {"value", "x"}}),
                                action("extend-plugin-data", {{"path", "list"}, {"value", "x"}, {"unique", true}}),
                                action("extend-plugin-data", {{"path", "list"}, {"value", "y"}}),
                                action("unset-plugin-data", {{"path", "a.c"}}),
                                action("set-plugin-data", {{"path", "gone.only"}, {"value", 1}}),
                                action("unset-plugin-data", {{"path", "gone.only"}}),
                                action("unset-plugin-data", {{"path", "plugin"}}),
                                action("unset-plugin-data", {{"path", "never.there"}}),
                            }))});
  INFO(run.error());
  REQUIRE(run.result);
  CHECK(run.pluginData == J::parse(R"({"a": {"b": "4"}, "list": ["x", "y"],
                                       "password": "plugin_secret"})"));
  REQUIRE(run.report.log.size() == 1);
  CHECK(run.report.log[0].message == "Path never.there not found");
  Run bad({rule(J::array(), J::array({action("extend-plugin-data", {{"path", "plugin"}, {"value", 1}})}))});
  CHECK_THAT(bad.error(), Catch::StartsWith("Inspection rule action execution failed. Reason: "
                                            "Failed to extend plugin data at plugin:"));
  // A null plugin data is an empty dictionary.
  NodeView n = testNode();
  J nullData;
  std::vector<Record> rules = {rule(J::array(), J::array({action("set-plugin-data", {{"path", "k"}, {"value", 1}})}))};
  REQUIRE(applyInspectionRules(rules, testInventory(), nullData, n));
  CHECK(nullData == J::parse(R"({"k": 1})"));
}

TEST_CASE("rules engine port actions edit the port named by UUID or MAC", "[server][inspection]") {
  Run run({rule(J::array(), J::array({
                                action("set-port-attribute", {{"port_id", kTestPort}, {"path", "physical_network"}, {"value", "physnet1"}}),
                                action("set-port-attribute", {{"port_id", "2a:03:9c:53:4e:46"}, {"path", "extra/switch"}, {"value", "sw1"}}),
                                action("extend-port-attribute", {{"port_id", kTestPort}, {"path", "extra/vlans"}, {"value", 10}}),
                                action("set-port-attribute", {{"port_id", kTestPort}, {"path", "extra/tmp"}, {"value", 1}}),
                                action("del-port-attribute", {{"port_id", kTestPort}, {"path", "extra/tmp"}}),
                            }))});
  INFO(run.error());
  REQUIRE(run.result);
  const PortView& port = run.node.ports[0];
  CHECK(port.changed);
  CHECK(port.fields["physical_network"] == "physnet1");
  CHECK(port.fields["extra"] == J::parse(R"({"switch": "sw1", "vlans": [10]})"));
  CHECK_FALSE(run.node.changed);

  Run missing({rule(J::array(), J::array({action("set-port-attribute",
                                                 {{"port_id", "52:54:00:00:00:01"}, {"path", "extra/x"}, {"value", 1}})}))});
  CHECK(missing.error() == "Port 52:54:00:00:00:01 could not be found.");
  Run unknownField({rule(J::array(), J::array({action("set-port-attribute",
                                                      {{"port_id", kTestPort}, {"path", "address"}, {"value", "x"}})}))});
  CHECK_THAT(unknownField.error(), Catch::Contains("Failed to set attribute address for port " + kTestPort));
  Run badDelete({rule(J::array(), J::array({action("del-port-attribute",
                                                   {{"port_id", kTestPort}, {"path", "extra/none"}})}))});
  CHECK(badDelete.error() == "Inspection rule action execution failed. Reason: Failed to delete "
                             "attribute extra/none for port " + kTestPort + ": 'none'");
}

TEST_CASE("rules engine log actions are reported and fail actions stop the pass",
          "[server][inspection]") {
  Run logged({rule(J::array(), J::array({
                                   action("log", {{"msg", "CPUs: {inventory[cpu][count]}"}}),
                                   action("log", {{"msg", "careful"}, {"level", "WARNING"}}),
                               }))});
  REQUIRE(logged.result);
  REQUIRE(logged.report.log.size() == 2);
  CHECK(logged.report.log[0].level == kiln::LogLevel::Info);
  CHECK(logged.report.log[0].message == "CPUs: 4");
  CHECK(logged.report.log[1].level == kiln::LogLevel::Warning);
  Run badLevel({rule(J::array(), J::array({action("log", {{"msg", "x"}, {"level", "loud"}})}))});
  CHECK_THAT(badLevel.error(),
             Catch::StartsWith("Inspection rule execution failed. Reason: Invalid log level: loud."));

  std::vector<Record> rules = {
      rule(J::array({cond("eq", {{"values", {"{inventory[cpu][architecture]}", "x86_64"}}})}),
           J::array({action("fail", {{"msg", "not enough memory"}}),
                     action("set-attribute", {{"path", "extra/after"}, {"value", 1}})}),
           100),
      rule(J::array(), J::array({action("set-attribute", {{"path", "extra/lower"}, {"value", 1}})}),
           10)};
  Run failed(rules);
  CHECK(failed.error() == "Failed to inspect hardware. Reason: not enough memory");
  CHECK_FALSE(failed.node.extra.contains("after"));
  CHECK_FALSE(failed.node.extra.contains("lower"));
  CHECK(failed.report.applied == std::vector<std::string>{rules[0].uuid()});

  // fail's message is no template outside a loop (Ironic's FailAction has no FORMATTED_ARGS),
  // but every argument is inside one.
  Run literal({rule(J::array(), J::array({action("fail", {{"msg", "{inventory[cpu][count]}"}})}))});
  CHECK(literal.error() == "Failed to inspect hardware. Reason: {inventory[cpu][count]}");
  Run looped({rule(J::array(), J::array({J::parse(
                                   R"({"op": "fail", "args": {"msg": "bad {item}"}, "loop": ["disk"]})")}))});
  CHECK(looped.error() == "Failed to inspect hardware. Reason: bad disk");

  Run apiCall({rule(J::array(), J::array({action("api-call", {{"url", "http://hook"}})}))});
  CHECK_THAT(apiCall.error(), Catch::Contains("Kiln's inspection rules make no outbound HTTP calls"));
}

TEST_CASE("rules engine runs rules highest priority first and later rules see earlier changes",
          "[server][inspection]") {
  auto tag = [](const char* name) {
    return J::array({action("extend-attribute", {{"path", "tags"}, {"value", name}})});
  };
  std::vector<Record> rules = {
      rule(J::array(), tag("ten"), 10),
      rule(J::array(), tag("hundred"), 100),
      rule(J::array({cond("eq", {{"values", {"{node.extra[stage]}", "one"}}})}), tag("after-stage"), 1),
      rule(J::array(), J::array({action("set-attribute", {{"path", "extra/stage"}, {"value", "one"}})}), 50),
      rule(J::array(), tag("ten-again"), 10),
      rule(J::array({cond("is-true", {{"value", false}})}), tag("never"), 1000),
  };
  Run run(rules);
  INFO(run.error());
  REQUIRE(run.result);
  CHECK(run.node.attributes["tags"] ==
        J::parse(R"(["existing", "hundred", "ten", "ten-again", "after-stage"])"));
  CHECK(run.report.applied == std::vector<std::string>{rules[1].uuid(), rules[3].uuid(),
                                                       rules[0].uuid(), rules[4].uuid(),
                                                       rules[2].uuid()});
}

TEST_CASE("rules engine fails a rule with Ironic's message when it cannot run",
          "[server][inspection]") {
  auto errorOf = [](J conditions, J actions = J::array({action("log", {{"msg", "x"}})})) {
    Run run({rule(std::move(conditions), std::move(actions))});
    REQUIRE_FALSE(run.result);
    CHECK(run.result.error().code == kiln::ErrorCode::InvalidArgument);
    return run.error();
  };
  const std::string prefix = "Failed to apply rule ";
  CHECK_THAT(errorOf(J::array({cond("lt", {{"values", {"a", 1}}})})),
             Catch::StartsWith(prefix) &&
                 Catch::EndsWith(" to node " + kTestNode +
                                 ": '<' not supported between instances of 'str' and 'int'"));
  CHECK_THAT(errorOf(J::array({cond("nope", {{"value", 1}})})),
             Catch::Contains("Unsupported operator: 'nope'. Supported operators are: eq, lt,"));
  CHECK(errorOf(J::array({cond("in-net", {{"address", "10.0.0.1"}, {"subnet", "nope"}})})) ==
        "Inspection rule execution failed. Reason: invalid value: invalid IPNetwork nope");
  CHECK_THAT(errorOf(J::array({cond("in-net", {{"address", "nope"}, {"subnet", "10.0.0.0/8"}})})),
             Catch::EndsWith("failed to detect a valid IP address from 'nope'"));
  CHECK_THAT(errorOf(J::array({cond("matches", {{"value", "x"}, {"regex", "[unclosed"}})})),
             Catch::StartsWith("Inspection rule execution failed. Reason: invalid regular expression"));
  CHECK_THAT(errorOf(J::array({cond("contains", {{"value", "x"}, {"regex", "(?<=a)b"}})})),
             Catch::Contains("look-behind is not supported"));
  CHECK_THAT(errorOf(J::array({cond("eq", {{"other", 1}})})),
             Catch::StartsWith("Inspection rule validation failed. Reason: eq: missing required "
                               "argument(s): values"));
  CHECK_THAT(errorOf(J::array({cond("eq", {{"values", "x"}})})),
             Catch::Contains("argument 'values' must be a list"));
  CHECK_THAT(errorOf(J::array({J("not an operation")})),
             Catch::StartsWith("Inspection rule validation failed."));
  CHECK_THAT(errorOf(J::array(), J::array({action("teleport", J::object())})),
             Catch::Contains("Unsupported action: 'teleport'."));
  CHECK_THAT(errorOf(J::array({cond("one-of", {{"value", 1}, {"values", "abc"}})})),
             Catch::EndsWith("'in <string>' requires string as left operand, not int"));

  Record broken = rule(J::array(), J::array());
  broken.setText(kIrActions, "not json");
  NodeView n = testNode();
  J data = J::object();
  std::vector<Record> rules = {broken};
  auto result = applyInspectionRules(rules, testInventory(), data, n);
  REQUIRE_FALSE(result);
  CHECK_THAT(result.error().message, Catch::StartsWith("Inspection rule validation failed."));
}

TEST_CASE("rules engine applies rules without conditions and stored rules from the API form",
          "[server][inspection]") {
  // A rule as the API validates and stores it (the api-ref's show sample).
  auto valid = validateInspectionRule(J::parse(R"({
    "priority": 50,
    "conditions": [{"op": "is-true", "args": {"value": "{node.auto_discovered}"}}],
    "actions": [
      {"op": "set-attribute", "args": {"path": "/properties/cpus", "value": "{inventory[cpu][count]}"}},
      {"op": "set-attribute", "args": ["/properties/cpu_arch", "{inventory[cpu][architecture]}"]}
    ]})"), "Schema error: ");
  REQUIRE(valid);
  std::vector<Record> rules = {inspectionRuleRecord(*valid)};
  rules[0].setText(kIrUuid, "1f3ee449-08cd-9e3f-e1e5-9cfda674081a");
  Run run(rules);
  INFO(run.error());
  REQUIRE(run.result);
  CHECK(run.node.properties == J::parse(R"({"cpus": "4", "cpu_arch": "x86_64"})"));
  CHECK(run.report.applied == std::vector<std::string>{"1f3ee449-08cd-9e3f-e1e5-9cfda674081a"});

  NodeView untouched = testNode();
  J data = J::object();
  REQUIRE(applyInspectionRules({}, testInventory(), data, untouched));
  CHECK_FALSE(untouched.changed);
}
