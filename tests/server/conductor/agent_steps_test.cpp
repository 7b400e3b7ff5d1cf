// The conductor plans with the agent's cached catalogue read through the shared step model
// (kiln::readSteps): a malformed entry is left out and logged, never defaulted.
#include <catch2/catch.hpp>

#include <algorithm>

#include "server/conductor/step_planner.h"
#include "tests/support/log_capture.h"

using namespace kiln::server;
using nlohmann::json;

namespace {

const AvailableStep* find(const std::vector<AvailableStep>& steps, const std::string& iface,
                          const std::string& step) {
  auto it = std::find_if(steps.begin(), steps.end(), [&](const AvailableStep& a) {
    return a.interface == iface && a.step == step;
  });
  return it == steps.end() ? nullptr : &*it;
}

}  // namespace

TEST_CASE("availableSteps leaves out and logs the agent's malformed steps, keeping the rest",
          "[server][conductor][steps]") {
  // A statically declared in-band step: replaced by whatever the agent reports.
  GenericInterface deploy(InterfaceType::Deploy, "direct", false,
                          {{"deploy", "erase_devices", 10, -1, true, true, {}, {}}});
  NodeDriver driver;
  driver.byType[static_cast<size_t>(InterfaceType::Deploy)] = &deploy;
  const json reported = json::parse(R"({
      "deploy": [
        {"interface": "deploy", "step": "erase_devices_metadata", "priority": 99, "abortable": true,
         "reboot_requested": false, "argsinfo": {}},
        {"interface": "deploy", "step": "erase_devices", "priority": "10", "abortable": true},
        {"interface": "raid", "step": "delete_configuration", "priority": 0}],
      "raid": [{"interface": "raid", "step": "create_configuration", "priority": 0,
                "argsinfo": {"create_root_volume": {"required": false}}}],
      "bios": "not a list"})");
  kiln::test::LogCapture logs(kiln::LogLevel::Warning);
  kiln::Logger log("test");
  const auto clean = availableSteps(driver, StepKind::Clean, {}, &reported, &log);

  const AvailableStep* metadata = find(clean, "deploy", "erase_devices_metadata");
  REQUIRE(metadata);
  CHECK(metadata->priority == 99);
  CHECK(metadata->abortable);
  CHECK(metadata->requiresRamdisk);
  // Before the shared model these were guessed at: priority "10" threw (json::value), the raid
  // entry under "deploy" was taken as a raid step, the argument without a description got "".
  CHECK_FALSE(find(clean, "deploy", "erase_devices"));
  CHECK_FALSE(find(clean, "raid", "delete_configuration"));
  CHECK_FALSE(find(clean, "raid", "create_configuration"));
  CHECK(find(clean, "power", "reboot"));  // flow steps are still there

  const std::string text = logs.text();
  CHECK_THAT(text, Catch::Contains("left out a step of the agent's catalogue"));
  CHECK_THAT(text, Catch::Contains("'priority' must be an integer, not '10'"));
  CHECK_THAT(text, Catch::Contains("listed under interface 'deploy' but its interface is 'raid'"));
  CHECK_THAT(text, Catch::Contains("has no 'description'"));
  CHECK_THAT(text, Catch::Contains("The steps of interface 'bios' must be a list"));

  // Without a logger the same steps are left out, silently for the caller that asked so.
  const auto quiet = availableSteps(driver, StepKind::Clean, {}, &reported);
  CHECK(quiet.size() == clean.size());
}
