// The agent's catalogue is written through the shared step model, so the server's strict
// reading of it (kiln::StepCatalogue::fromJson) must accept every entry the agent offers.
#include <catch2/catch.hpp>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "agent/hardware/hardware_manager.h"
#include "shared/step/step.h"

using namespace kiln::agent;
using nlohmann::json;

TEST_CASE("the agent's step catalogue parses strictly as the shared model and round-trips",
          "[agent][steps]") {
  RootedSysfsReader sysfs("/nonexistent");
  const auto steps = genericHardwareSteps(sysfs);
  const json written = stepCatalogue(steps);
  auto parsed = kiln::StepCatalogue::fromJson(written);
  REQUIRE(parsed);
  CHECK(parsed->toJson() == written);
  size_t entries = 0;
  for (const auto* kind : {&parsed->clean, &parsed->deploy}) {
    for (const auto& [iface, list] : *kind) entries += list.size();
  }
  size_t offered = 0;
  for (const auto& s : steps) offered += (s.cleanPriority >= 0) + (s.deployPriority >= 0);
  CHECK(entries == offered);
  const auto& write = parsed->deploy.at("deploy");
  const auto it = std::find_if(write.begin(), write.end(),
                               [](const kiln::StepDescriptor& d) { return d.step == "write_image"; });
  REQUIRE(it != write.end());
  CHECK_FALSE(it->rebootRequested);
  REQUIRE(it->argsinfo.size() == 2);
  CHECK(it->argsinfo[1].name == "image_info");
  CHECK(it->argsinfo[1].required);
}
