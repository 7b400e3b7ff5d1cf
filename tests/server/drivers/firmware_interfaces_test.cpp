#include <catch2/catch.hpp>

#include "server/drivers/driver_registry.h"
#include "server/drivers/fake/fake_firmware.h"
#include "server/drivers/firmware_update.h"
#include "server/drivers/interface_registry.h"
#include "server/model/node.h"
#include "shared/exec/command_runner.h"
#include "shared/json/json_util.h"

using namespace kiln;
using namespace kiln::server;
using nlohmann::json;

namespace {

Config configFrom(const std::string& text) {
  auto c = parseConfig(text, "t");
  REQUIRE(c);
  return *c;
}

constexpr size_t kFw = static_cast<size_t>(InterfaceType::Firmware);

TaskContext fakeTask() {
  TaskContext t;
  t.node = defaultRecord(nodeSchema());
  t.node.setText(kNodeUuid, "5e1c1b1e-5b0c-4a4e-9b55-3b8f0c6e1a01");
  return t;
}

}  // namespace

TEST_CASE("firmware.update settings are checked with the messages of Ironic's schema",
          "[server][drivers][firmware]") {
  struct Case {
    const char* settings;
    const char* error;  ///< after "Invalid firmware update <repr>. Errors: "
  };
  for (const auto& c : std::vector<Case>{
           {R"("bmc")", "'bmc' is not of type 'array'"},
           {R"(null)", "None is not of type 'array'"},
           {R"([])", "[] is too short"},
           {R"([5])", "5 is not of type 'object'"},
           {R"([{"url": "http://x"}])", "'component' is a required property"},
           {R"([{"component": "bmc"}])", "'url' is a required property"},
           {R"([{"component": "cpld", "url": "http://x"}])",
            "'cpld' is not valid under any of the given schemas"},
           {R"([{"component": "BMC", "url": "http://x"}])",
            "'BMC' is not valid under any of the given schemas"},
           {R"([{"component": 1, "url": "http://x"}])", "1 is not of type 'string'"},
           {R"([{"component": "bmc", "url": ""}])", "'' is too short"},
           {R"([{"component": "bmc", "url": 7}])", "7 is not of type 'string'"},
           {R"([{"component": "bmc", "url": "http://x", "wait": 0}])",
            "0 is less than the minimum of 1"},
           {R"([{"component": "bmc", "url": "http://x", "wait": "5"}])",
            "'5' is not of type 'integer'"},
           {R"([{"component": "bmc", "url": "http://x", "wait": true}])",
            "True is not of type 'integer'"},
           {R"([{"component": "bmc", "url": "http://x", "checksum": "ab"}])",
            "Additional properties are not allowed ('checksum' was unexpected)"},
           {R"([{"component": "bmc", "url": "http://x", "a": 1, "b": 2}])",
            "Additional properties are not allowed ('a', 'b' were unexpected)"},
           // best_match: an error nearer the top wins; among equals a strong keyword beats anyOf.
           {R"([{"component": "cpld", "url": ""}, {"component": "bios"}])",
            "'url' is a required property"},
           {R"([{"component": "cpld", "url": ""}])", "'' is too short"},
       }) {
    const json settings = json::parse(c.settings);
    INFO(c.settings);
    auto r = parseFirmwareUpdateSettings(settings);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::InvalidArgument);
    CHECK(r.error().message ==
          "Invalid firmware update " + pyRepr(settings) + ". Errors: " + c.error);
  }
  CHECK(parseFirmwareUpdateSettings(json::parse(R"([{"component": "cpld", "url": "http://x"}])"))
            .error()
            .message ==
        "Invalid firmware update [{'component': 'cpld', 'url': 'http://x'}]. Errors: 'cpld' is "
        "not valid under any of the given schemas");
}

TEST_CASE("firmware.update settings are read in order with their kind and wait",
          "[server][drivers][firmware]") {
  auto r = parseFirmwareUpdateSettings(json::parse(R"([
      {"component": "bmc", "url": "https://fw/bmc.bin", "wait": 120},
      {"component": "bios", "url": "http://fw/bios.exe"},
      {"component": "nic:ABC12345", "url": "http://fw/nic.bin", "wait": 2.0}])"));
  REQUIRE(r);
  REQUIRE(r->size() == 3);
  CHECK((*r)[0].component == "bmc");
  CHECK((*r)[0].type == FirmwareComponentType::Bmc);
  CHECK((*r)[0].url == "https://fw/bmc.bin");
  CHECK((*r)[0].wait == std::optional<int64_t>(120));
  CHECK((*r)[1].type == FirmwareComponentType::Bios);
  CHECK_FALSE((*r)[1].wait);
  CHECK((*r)[2].type == FirmwareComponentType::Nic);
  CHECK((*r)[2].wait == std::optional<int64_t>(2));  // an integral float is an integer
  CHECK(firmwareSettingsArg(json::object()).is_null());
  CHECK(firmwareSettingsArg({{"settings", json::array()}}) == json::array());
}

TEST_CASE("the fake firmware reports bios and bmc and records what an update installs",
          "[server][drivers][firmware]") {
  auto fake = makeFakeFirmware();
  CHECK(fake->name() == "fake");
  CHECK(fake->type() == InterfaceType::Firmware);
  CHECK_FALSE(fake->isNoop());
  REQUIRE(fake->steps().size() == 1);
  const StepDefinition& step = fake->steps()[0];
  CHECK(step.interface == "firmware");
  CHECK(step.name == "update");
  CHECK(step.cleanPriority == 0);
  CHECK(step.deployPriority == 0);
  CHECK_FALSE(step.abortable);

  TaskContext task = fakeTask();
  auto before = fake->cacheFirmwareComponents(task);
  REQUIRE(before);
  REQUIRE(before->size() == 2);
  CHECK((*before)[0].component == "bios");
  CHECK((*before)[0].currentVersion == kFakeBiosVersion);
  CHECK_FALSE((*before)[0].model);
  CHECK((*before)[1].component == "bmc");
  CHECK((*before)[1].currentVersion == kFakeBmcVersion);
  CHECK((*before)[1].model == std::optional<std::string>(std::string(kFakeBmcModel)));

  REQUIRE(step.handler(task, {{"settings", json::parse(R"([
      {"component": "bmc", "url": "http://fw.test/images/bmc-5.1.bin?sig=1"},
      {"component": "nic:NIC1", "url": "https://fw.test/nic-22.5"}])")}}));
  auto after = fake->cacheFirmwareComponents(task);
  REQUIRE(after);
  REQUIRE(after->size() == 3);
  CHECK((*after)[0].currentVersion == kFakeBiosVersion);
  CHECK((*after)[1].currentVersion == "bmc-5.1.bin");
  CHECK((*after)[2].component == "nic:NIC1");
  CHECK((*after)[2].currentVersion == "nic-22.5");
  CHECK(task.internalInfo["fake_firmware"] ==
        json{{"bmc", "bmc-5.1.bin"}, {"nic:NIC1", "nic-22.5"}});

  // Bad settings change nothing.
  auto bad =
      step.handler(task, {{"settings", json::parse(R"([{"component": "cpld", "url": "x"}])")}});
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::StartsWith("Invalid firmware update "));
  CHECK(task.internalInfo["fake_firmware"].size() == 2);
}

TEST_CASE("the fake firmware names the version after the URL's file",
          "[server][drivers][firmware]") {
  CHECK(fakeFirmwareVersion("http://h/a/b/fw-1.2.bin") == "fw-1.2.bin");
  CHECK(fakeFirmwareVersion("https://h/fw.bin#frag") == "fw.bin");
  CHECK(fakeFirmwareVersion("http://h/") == "http://h/");
  CHECK(fakeFirmwareVersion("http://h") == "http://h");
  CHECK(fakeFirmwareVersion("v2") == "v2");
}

TEST_CASE("hardware types support the firmware interfaces as Ironic's",
          "[server][drivers][firmware]") {
  auto reg = DriverRegistry::create(configFrom(
      "[DEFAULT]\nenabled_hardware_types = ipmi, redfish, fake-hardware, manual-management\n"));
  REQUIRE(reg);
  CHECK(*reg->find("ipmi")->defaults[kFw] == "no-firmware");
  CHECK(*reg->find("manual-management")->defaults[kFw] == "no-firmware");
  CHECK(*reg->find("redfish")->defaults[kFw] == "redfish");
  CHECK(reg->find("redfish")->enabled[kFw] == std::vector<std::string>{"redfish", "no-firmware"});
  CHECK(*reg->find("fake-hardware")->defaults[kFw] == "no-firmware");
  CHECK(reg->find("fake-hardware")->enabled[kFw] ==
        std::vector<std::string>{"no-firmware", "fake"});
  CHECK(reg->checkInterface(*reg->find("redfish"), InterfaceType::Firmware, "redfish"));
  CHECK_FALSE(reg->checkInterface(*reg->find("ipmi"), InterfaceType::Firmware, "redfish"));
  CHECK(reg->enabledInterfaces(InterfaceType::Firmware) ==
        std::vector<std::string>{"no-firmware", "redfish", "fake"});
}

TEST_CASE("enabled_firmware_interfaces and default_firmware_interface are read",
          "[server][drivers][firmware]") {
  auto reg = DriverRegistry::create(
      configFrom("[DEFAULT]\nenabled_hardware_types = redfish, fake-hardware\n"
                 "enabled_firmware_interfaces = no-firmware, fake\n"));
  REQUIRE(reg);
  CHECK(*reg->find("redfish")->defaults[kFw] == "no-firmware");
  CHECK(reg->find("redfish")->enabled[kFw] == std::vector<std::string>{"no-firmware"});
  reg = DriverRegistry::create(configFrom(
      "[DEFAULT]\nenabled_hardware_types = fake-hardware\ndefault_firmware_interface = fake\n"));
  REQUIRE(reg);
  CHECK(*reg->find("fake-hardware")->defaults[kFw] == "fake");
  auto bad = DriverRegistry::create(configFrom(
      "[DEFAULT]\nenabled_hardware_types = redfish\nenabled_firmware_interfaces = bogus\n"));
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message ==
        "[DEFAULT] enabled_firmware_interfaces: unknown firmware interface 'bogus' (known: fake, "
        "no-firmware, redfish)");
}

TEST_CASE("every firmware implementation has its object in the interface registry",
          "[server][drivers][firmware]") {
  InterfaceRegistry registry;
  REQUIRE(registerBuiltinInterfaces(registry,
                                    {std::make_shared<ProcessCommandRunner>(), makeHttpClient()}));
  REQUIRE(registry.checkComplete());
  auto* none = registry.find(InterfaceType::Firmware, "no-firmware");
  REQUIRE(none);
  CHECK(none->isNoop());
  CHECK_FALSE(dynamic_cast<FirmwareInterface*>(none));  // nothing to cache
  CHECK(dynamic_cast<FirmwareInterface*>(registry.find(InterfaceType::Firmware, "fake")));
  CHECK(dynamic_cast<FirmwareInterface*>(registry.find(InterfaceType::Firmware, "redfish")));
}
