#include "server/drivers/redfish/redfish_bios.h"

#include "server/drivers/redfish/redfish_power.h"
#include "tests/server/drivers/redfish/redfish_fixture.h"

using namespace kiln;
using namespace kiln::server;
using kiln::test::RedfishFixture;
using kiln::test::RedfishSystemState;
using nlohmann::json;

namespace {

/// A BMC whose system 1 has a Bios with two attributes.
void giveBios(RedfishFixture& f) {
  f.bmc.updateSystem("1", [](RedfishSystemState& s) {
    s.bios = true;
    s.biosAttributes = {{"ProcVirtualization", "Enabled"}, {"BootMode", "Uefi"}};
    s.defaultBiosAttributes = {{"ProcVirtualization", "Disabled"}, {"BootMode", "Bios"}};
  });
}

const StepDefinition& step(const RedfishBios& bios, std::string_view name) {
  for (const auto& s : bios.steps()) {
    if (s.name == name) return s;
  }
  FAIL("no step " << name);
  return bios.steps()[0];
}

std::map<std::string, std::string> asMap(const std::vector<BiosSetting>& settings) {
  std::map<std::string, std::string> out;
  for (const auto& s : settings) out[s.name] = s.value.value_or("<null>");
  return out;
}

}  // namespace

TEST_CASE("RedfishBios reads the Bios attributes", "[server][drivers][redfish][bios]") {
  RedfishFixture f;
  giveBios(f);
  RedfishBios bios(f.http);
  auto task = f.task();
  auto settings = bios.cacheBiosSettings(task);
  REQUIRE(settings);
  CHECK(asMap(*settings) == std::map<std::string, std::string>{{"BootMode", "Uefi"},
                                                               {"ProcVirtualization", "Enabled"}});
  CHECK(f.bmc.requests("GET", "/redfish/v1/Systems/1/Bios").size() == 1);
}

TEST_CASE("RedfishBios reports a system without Bios as unsupported",
          "[server][drivers][redfish][bios]") {
  RedfishFixture f;
  RedfishBios bios(f.http);
  auto task = f.task();
  auto settings = bios.cacheBiosSettings(task);
  REQUIRE_FALSE(settings);
  CHECK(settings.error().code == ErrorCode::Unimplemented);
  CHECK(settings.error().message == std::string("Cannot fetch BIOS attributes for node ") +
                                        test::kRedfishNode + ", BIOS settings are not supported.");
}

TEST_CASE("RedfishBios applies settings through the settings object and a reboot",
          "[server][drivers][redfish][bios]") {
  RedfishFixture f;
  giveBios(f);
  RedfishBios bios(f.http);
  RedfishPower power(f.http);
  NodeDriver driver;
  driver.power = &power;
  auto task = f.task();
  task.driver = &driver;

  const json args = {{"settings",
                      {{{"name", "ProcVirtualization"}, {"value", "Disabled"}},
                       {{"name", "NumLock"}, {"value", "On"}}}}};
  REQUIRE(step(bios, "apply_configuration").handler(task, args));
  const auto patches = f.bmc.requests("PATCH", "/redfish/v1/Systems/1/Bios/Settings");
  REQUIRE(patches.size() == 1);
  CHECK(json::parse(patches[0].body) ==
        json{{"Attributes", {{"ProcVirtualization", "Disabled"}, {"NumLock", "On"}}}});
  CHECK(f.bmc.system().resets == std::vector<std::string>{"On"});  // it was off
  auto settings = bios.cacheBiosSettings(task);
  REQUIRE(settings);
  CHECK(asMap(*settings) == std::map<std::string, std::string>{{"BootMode", "Uefi"},
                                                               {"NumLock", "On"},
                                                               {"ProcVirtualization", "Disabled"}});

  REQUIRE(step(bios, "factory_reset").handler(task, json::object()));
  CHECK(f.bmc.requests("POST", "/redfish/v1/Systems/1/Bios/Actions/Bios.ResetBios").size() == 1);
  CHECK(f.bmc.system().resets == std::vector<std::string>{"On", "ForceRestart"});
  settings = bios.cacheBiosSettings(task);
  REQUIRE(settings);
  CHECK(asMap(*settings) == std::map<std::string, std::string>{{"BootMode", "Bios"},
                                                               {"ProcVirtualization", "Disabled"}});
}

TEST_CASE("RedfishBios refuses settings that are not a list of name and value",
          "[server][drivers][redfish][bios]") {
  RedfishFixture f;
  giveBios(f);
  RedfishBios bios(f.http);
  auto task = f.task();
  CHECK_FALSE(step(bios, "apply_configuration").handler(task, {{"settings", "x"}}));
  CHECK_FALSE(step(bios, "apply_configuration").handler(task, {{"settings", {{{"value", 1}}}}}));
  CHECK(f.bmc.requests("PATCH", "/redfish/v1/Systems/1/Bios/Settings").empty());
}
