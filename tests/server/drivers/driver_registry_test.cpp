#include <catch2/catch.hpp>

#include "server/drivers/driver_registry.h"

using namespace kiln::server;

namespace {
Config configFrom(const std::string& text) {
  auto c = parseConfig(text, "t");
  REQUIRE(c);
  return *c;
}
constexpr size_t idx(InterfaceType t) { return static_cast<size_t>(t); }
}  // namespace

TEST_CASE("naming hardware types is enough to use them", "[server][drivers]") {
  auto reg = DriverRegistry::create(configFrom("[DEFAULT]\nenabled_hardware_types = ipmi, fake-hardware\n"));
  REQUIRE(reg);
  const auto* ipmi = reg->find("ipmi");
  const auto* fake = reg->find("fake-hardware");
  REQUIRE(ipmi);
  REQUIRE(fake);
  CHECK_FALSE(reg->find("redfish"));
  CHECK(*ipmi->defaults[idx(InterfaceType::Power)] == "ipmitool");
  CHECK(*ipmi->defaults[idx(InterfaceType::Boot)] == "ipxe");
  CHECK(*ipmi->defaults[idx(InterfaceType::Deploy)] == "direct");
  CHECK(*ipmi->defaults[idx(InterfaceType::Raid)] == "no-raid");
  CHECK(*fake->defaults[idx(InterfaceType::Power)] == "fake");
  CHECK(*fake->defaults[idx(InterfaceType::Deploy)] == "fake");
  // The derived enabled lists are the union of what the enabled types support.
  const auto& power = reg->enabledInterfaces(InterfaceType::Power);
  CHECK(power == std::vector<std::string>{"ipmitool", "fake"});
}

TEST_CASE("each hardware type lists its enabled implementations in priority order", "[server][drivers]") {
  auto reg = DriverRegistry::create(configFrom("[DEFAULT]\nenabled_hardware_types = fake-hardware\n"));
  REQUIRE(reg);
  const auto* fake = reg->find("fake-hardware");
  CHECK(fake->enabled[idx(InterfaceType::Deploy)] ==
        std::vector<std::string>{"fake", "direct", "ramdisk", "autodetect"});
  CHECK(fake->enabled[idx(InterfaceType::Raid)] == std::vector<std::string>{"fake", "no-raid", "agent"});
}

TEST_CASE("default_<iface>_interface overrides the priority order", "[server][drivers]") {
  auto reg = DriverRegistry::create(configFrom(
      "[DEFAULT]\nenabled_hardware_types = fake-hardware\ndefault_deploy_interface = direct\n"));
  REQUIRE(reg);
  const auto* fake = reg->find("fake-hardware");
  CHECK(*fake->defaults[idx(InterfaceType::Deploy)] == "direct");
}

TEST_CASE("a configured default the hardware type does not support fails at node creation",
          "[server][drivers]") {
  auto reg = DriverRegistry::create(configFrom(
      "[DEFAULT]\nenabled_hardware_types = ipmi, fake-hardware\ndefault_power_interface = fake\n"));
  REQUIRE(reg);
  auto d = reg->defaultInterface(*reg->find("ipmi"), InterfaceType::Power);
  REQUIRE_FALSE(d);
  CHECK_THAT(d.error().message, Catch::Contains("not supported by hardware type ipmi"));
  CHECK(*reg->defaultInterface(*reg->find("fake-hardware"), InterfaceType::Power) == "fake");
}

TEST_CASE("start-up refuses configurations the spec calls fatal, naming the option", "[server][drivers]") {
  struct Case { const char* text; const char* option; };
  for (auto [text, option] : {
           Case{"[DEFAULT]\nenabled_hardware_types = \n", "enabled_hardware_types"},
           Case{"[DEFAULT]\nenabled_hardware_types = ipmi, ilo\n", "enabled_hardware_types"},
           Case{"[DEFAULT]\nenabled_power_interfaces = ipmitool, snmp\n", "enabled_power_interfaces"},
           Case{"[DEFAULT]\nenabled_power_interfaces = \n", "enabled_power_interfaces"},
           Case{"[DEFAULT]\nenabled_power_interfaces = ipmitool\ndefault_power_interface = redfish\n",
                "default_power_interface"},
       }) {
    INFO(text);
    auto reg = DriverRegistry::create(configFrom(text));
    REQUIRE_FALSE(reg);
    CHECK_THAT(reg.error().message, Catch::Contains(option));
  }
}

TEST_CASE("checkInterface distinguishes disabled from unsupported implementations", "[server][drivers]") {
  auto reg = DriverRegistry::create(configFrom(
      "[DEFAULT]\nenabled_hardware_types = ipmi, fake-hardware\nenabled_power_interfaces = ipmitool, fake\n"));
  REQUIRE(reg);
  const auto& ipmi = *reg->find("ipmi");
  CHECK(reg->checkInterface(ipmi, InterfaceType::Power, "ipmitool"));
  auto disabled = reg->checkInterface(ipmi, InterfaceType::Power, "redfish");
  REQUIRE_FALSE(disabled);
  CHECK_THAT(disabled.error().message, Catch::Contains("Valid interfaces are ['ipmitool', 'fake']"));
  auto unsupported = reg->checkInterface(ipmi, InterfaceType::Power, "fake");
  REQUIRE_FALSE(unsupported);
  CHECK_THAT(unsupported.error().message,
             Catch::Contains("power interface implementation 'fake' is not supported by hardware type ipmi"));
}
