// Deploy template selection is the step planner's (a pure function of the templates and the
// instance traits); the conductor only loads the templates and calls it.
#include <catch2/catch.hpp>

#include "server/conductor/step_planner.h"
#include "server/model/resources.h"

using namespace kiln::server;
using nlohmann::json;

namespace {

Record deployTemplate(const std::string& name, const std::string& storedSteps) {
  Record t = defaultRecord(schemaOf(Resource::DeployTemplate));
  t.setText(kDtName, name);
  t.setText(kDtSteps, storedSteps);
  return t;
}

std::string step(const std::string& iface, const std::string& name, int priority) {
  return json{{"interface", iface}, {"step", name}, {"args", json::object()}, {"priority", priority}}.dump();
}

std::vector<std::string> summary(const std::vector<TemplateStep>& steps) {
  std::vector<std::string> out;
  for (const auto& s : steps) {
    out.push_back(s.templateName + ":" + s.step["interface"].get<std::string>() + "." +
                  s.step["step"].get<std::string>());
  }
  return out;
}

}  // namespace

TEST_CASE("instanceTraits takes the string traits of instance_info and ignores the rest",
          "[server][conductor][steps][templates]") {
  CHECK(instanceTraits(json::parse(R"({"traits": ["CUSTOM_A", 5, null, "CUSTOM_B"]})")) ==
        std::vector<std::string>{"CUSTOM_A", "CUSTOM_B"});
  CHECK(instanceTraits(json::parse(R"({"traits": "CUSTOM_A"})")).empty());
  CHECK(instanceTraits(json::object()).empty());
  CHECK(instanceTraits(json::array()).empty());
}

TEST_CASE("selectTemplateSteps takes the named templates in the traits' order, steps in stored order",
          "[server][conductor][steps][templates]") {
  // Loaded in another order than the traits name them (as the storage lists them).
  const std::vector<Record> templates = {
      deployTemplate("CUSTOM_RAID", "[" + step("raid", "delete_configuration", 90) + "," +
                                        step("raid", "apply_configuration", 80) + "]"),
      deployTemplate("CUSTOM_BIOS", "[" + step("bios", "apply_configuration", 85) + "]"),
      deployTemplate("CUSTOM_UNNAMED", "[" + step("deploy", "erase_devices", 10) + "]"),
  };
  auto selected = selectTemplateSteps(templates, {"CUSTOM_BIOS", "CUSTOM_NONE", "CUSTOM_RAID"});
  REQUIRE(selected);
  CHECK(summary(*selected) == std::vector<std::string>{"CUSTOM_BIOS:bios.apply_configuration",
                                                       "CUSTOM_RAID:raid.delete_configuration",
                                                       "CUSTOM_RAID:raid.apply_configuration"});
  CHECK((*selected)[0].step["priority"] == 85);

  SECTION("no traits select nothing") {
    auto none = selectTemplateSteps(templates, {});
    REQUIRE(none);
    CHECK(none->empty());
  }
  SECTION("a trait named twice adds its template twice (deployPlan then reports the duplicates)") {
    auto twice = selectTemplateSteps(templates, {"CUSTOM_BIOS", "CUSTOM_BIOS"});
    REQUIRE(twice);
    CHECK(twice->size() == 2);
  }
}

TEST_CASE("selectTemplateSteps fails with the first selected template whose stored steps are corrupt",
          "[server][conductor][steps][templates]") {
  const std::vector<Record> templates = {
      deployTemplate("CUSTOM_GOOD", "[" + step("bios", "apply_configuration", 85) + "]"),
      deployTemplate("CUSTOM_OBJECT", R"({"not": "a list"})"),
      deployTemplate("CUSTOM_BROKEN", "[{"),
  };
  auto r = selectTemplateSteps(templates, {"CUSTOM_GOOD", "CUSTOM_BROKEN", "CUSTOM_OBJECT"});
  REQUIRE_FALSE(r);
  CHECK(r.error().code == kiln::ErrorCode::Internal);
  CHECK_THAT(r.error().message,
             Catch::StartsWith("The steps of deploy template CUSTOM_BROKEN stored in the database "
                               "are not a JSON array (Invalid JSON in the stored value"));
  auto object = selectTemplateSteps(templates, {"CUSTOM_OBJECT"});
  REQUIRE_FALSE(object);
  CHECK(object.error().message ==
        "The steps of deploy template CUSTOM_OBJECT stored in the database are not a JSON array");
  // A corrupt template no trait names does not matter.
  CHECK(selectTemplateSteps(templates, {"CUSTOM_GOOD"}));
}

TEST_CASE("orderSteps orders the steps a node offers like planned steps",
          "[server][conductor][steps]") {
  std::vector<AvailableStep> steps = {{"raid", "a", 10, false, false, {}},
                                      {"deploy", "b", 10, false, false, {}},
                                      {"bios", "c", 50, false, false, {}},
                                      {"deploy", "d", 10, false, false, {}}};
  orderSteps(steps);
  std::vector<std::string> order;
  for (const auto& s : steps) order.push_back(s.interface + "." + s.step);
  CHECK(order == std::vector<std::string>{"bios.c", "deploy.b", "deploy.d", "raid.a"});
}
