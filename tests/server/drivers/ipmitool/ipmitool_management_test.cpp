#include <catch2/catch.hpp>

#include "server/config.h"
#include "server/drivers/ipmitool/ipmitool_management.h"
#include "tests/server/drivers/ipmitool/ipmitool_test_support.h"

using namespace kiln;
using namespace kiln::server;
using kiln::test::IpmiFixture;

namespace {

const std::initializer_list<std::string> kDisableTimeout = {"raw", "0x00", "0x08", "0x03", "0x08"};
const std::initializer_list<std::string> kGetFlags = {"chassis", "bootparam", "get", "5"};

}  // namespace

TEST_CASE("IpmitoolManagement sets a one-time boot device", "[server][ipmitool]") {
  IpmiFixture f;
  f.bootMode("bios")
      .expect(kDisableTimeout, "raw_disable_boot_timeout")
      .expect({"chassis", "bootdev", "pxe"}, "bootdev_pxe");
  IpmitoolManagement management(Ipmitool(f.runner));
  REQUIRE(management.setBootDevice(f.task, "pxe", false));
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("IpmitoolManagement sets a persistent boot device with options=persistent",
          "[server][ipmitool]") {
  for (const char* device : {"pxe", "disk", "cdrom", "bios", "safe"}) {
    INFO(device);
    IpmiFixture f;
    f.bootMode("bios")
        .expect(kDisableTimeout, "raw_disable_boot_timeout")
        .expect({"chassis", "bootdev", device, "options=persistent"},
                std::string("bootdev_") + device);
    REQUIRE(IpmitoolManagement(Ipmitool(f.runner)).setBootDevice(f.task, device, true));
    test::checkAllConsumed(*f.runner);
  }
}

TEST_CASE(
    "IpmitoolManagement still sets the boot device when the BMC rejects the timeout "
    "override",
    "[server][ipmitool]") {
  IpmiFixture f;
  f.bootMode("bios")
      .expect(kDisableTimeout, "raw_invalid_command")
      .expect({"chassis", "bootdev", "disk"}, "bootdev_disk");
  REQUIRE(IpmitoolManagement(Ipmitool(f.runner)).setBootDevice(f.task, "disk", false));
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("IpmitoolManagement sets UEFI boot devices with raw boot flags, as Ironic",
          "[server][ipmitool][boot_mode]") {
  struct Case {
    const char* device;
    bool persistent;
    const char* flags;
    const char* code;
    const char* vendor;
  };
  for (const Case& c : {Case{"pxe", false, "0xa0", "0x04", ""}, Case{"disk", true, "0xe0", "0x08", ""},
                        Case{"disk", true, "0xe0", "0x24", "SuperMicro"},
                        Case{"cdrom", false, "0xa0", "0x14", ""}, Case{"bios", true, "0xe0", "0x18", ""},
                        Case{"safe", false, "0xa0", "0x0c", ""}}) {
    INFO(c.device << " persistent=" << c.persistent << " vendor=" << c.vendor);
    IpmiFixture f;
    f.bootMode("uefi", c.vendor)
        .expect(kDisableTimeout, "raw_disable_boot_timeout")
        .expect({"raw", "0x00", "0x08", "0x05", c.flags, c.code, "0x00", "0x00", "0x00"},
                "raw_set_boot_flags");
    REQUIRE(IpmitoolManagement(Ipmitool(f.runner)).setBootDevice(f.task, c.device, c.persistent));
    test::checkAllConsumed(*f.runner);
  }
}

TEST_CASE("IpmitoolManagement boots UEFI when nothing asks for a mode ([deploy] default_boot_mode)",
          "[server][ipmitool][boot_mode]") {
  IpmiFixture f;  // no capabilities, no configuration: Ironic's default, uefi
  f.expect(kDisableTimeout, "raw_disable_boot_timeout")
      .expect({"raw", "0x00", "0x08", "0x05", "0xa0", "0x04", "0x00", "0x00", "0x00"},
              "raw_set_boot_flags");
  REQUIRE(IpmitoolManagement(Ipmitool(f.runner)).setBootDevice(f.task, "pxe", false));
  test::checkAllConsumed(*f.runner);

  // default_boot_mode = bios: chassis bootdev.
  auto config = server::parseConfig("[deploy]\ndefault_boot_mode = bios\n", "test");
  REQUIRE(config);
  IpmiFixture g;
  g.task.config = &*config;
  g.expect(kDisableTimeout, "raw_disable_boot_timeout")
      .expect({"chassis", "bootdev", "pxe"}, "bootdev_pxe");
  REQUIRE(IpmitoolManagement(Ipmitool(g.runner)).setBootDevice(g.task, "pxe", false));
  test::checkAllConsumed(*g.runner);
}

TEST_CASE("IpmitoolManagement stops when the BMC cannot be reached", "[server][ipmitool]") {
  IpmiFixture f;
  f.expect(kDisableTimeout, "address_lookup_failed");
  auto done = IpmitoolManagement(Ipmitool(f.runner)).setBootDevice(f.task, "pxe", false);
  REQUIRE_FALSE(done);
  CHECK(done.error().code == ErrorCode::Unavailable);
  CHECK_THAT(done.error().message, Catch::Contains("Address lookup for bmc.invalid failed"));
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("IpmitoolManagement rejects an unsupported boot device without running ipmitool",
          "[server][ipmitool]") {
  IpmiFixture f;
  for (const char* device : {"floppy", "diag", "none", "PXE", ""}) {
    auto done = IpmitoolManagement(Ipmitool(f.runner)).setBootDevice(f.task, device, false);
    REQUIRE_FALSE(done);
    CHECK(done.error().code == ErrorCode::InvalidArgument);
    CHECK_THAT(done.error().message, Catch::StartsWith("Invalid boot device "));
  }
  CHECK(f.runner->received().empty());
}

TEST_CASE("IpmitoolManagement reads the pending boot device and its persistence",
          "[server][ipmitool]") {
  struct Case {
    const char* fixture;
    const char* device;
    std::optional<bool> persistent;
  };
  for (const auto& c :
       {Case{"bootparam_5_pxe_once", "pxe", false},
        Case{"bootparam_5_disk_persistent", "disk", true},
        Case{"bootparam_5_cdrom_efi", "cdrom", false}, Case{"bootparam_5_bios", "bios", false},
        Case{"bootparam_5_safe_persistent", "safe", true}}) {
    INFO(c.fixture);
    IpmiFixture f;
    f.expect(kGetFlags, c.fixture);
    auto boot = IpmitoolManagement(Ipmitool(f.runner)).getBootDevice(f.task);
    REQUIRE(boot);
    CHECK(boot->device == c.device);
    CHECK(boot->persistent == c.persistent);
    test::checkAllConsumed(*f.runner);
  }
}

TEST_CASE("IpmitoolManagement reports no boot device when no override is pending",
          "[server][ipmitool]") {
  // A fresh BMC, a one-time override the BIOS already used (valid bit cleared, selector
  // kept), and a device Ironic cannot name.
  for (const char* fixture :
       {"bootparam_5_no_override", "bootparam_5_pxe_consumed", "bootparam_5_floppy"}) {
    INFO(fixture);
    IpmiFixture f;
    f.expect(kGetFlags, fixture);
    auto boot = IpmitoolManagement(Ipmitool(f.runner)).getBootDevice(f.task);
    REQUIRE(boot);
    CHECK(boot->device == "");
    CHECK_FALSE(boot->persistent);
    test::checkAllConsumed(*f.runner);
  }
}

TEST_CASE("IpmitoolManagement reports garbage boot parameters as Internal", "[server][ipmitool]") {
  IpmiFixture f;
  f.runner->expect(IpmiFixture::argv(kGetFlags),
                   CommandOutput{0, "Boot parameter version: 1\nUnsupported parameter 5\n", ""});
  auto boot = IpmitoolManagement(Ipmitool(f.runner)).getBootDevice(f.task);
  REQUIRE_FALSE(boot);
  CHECK(boot.error().code == ErrorCode::Internal);
  CHECK_THAT(boot.error().message, Catch::Contains("Unsupported parameter 5"));
}

TEST_CASE("IpmitoolManagement describes itself and validates like the power interface",
          "[server][ipmitool]") {
  IpmitoolManagement management(Ipmitool(nullptr));
  IpmiFixture f;
  CHECK(management.name() == "ipmitool");
  CHECK(management.type() == InterfaceType::Management);
  CHECK(management.supportedBootDevices(f.task) ==
        std::vector<std::string>{"pxe", "disk", "cdrom", "bios", "safe"});
  CHECK_FALSE(management.validate(f.task));
  IpmiFixture missing(nlohmann::json::object());
  CHECK(management.validate(missing.task) ==
        "Missing the following IPMI credentials in node's driver_info: ['ipmi_address'].");
}

TEST_CASE("IpmitoolManagement injects an NMI with power diag", "[server][ipmitool]") {
  IpmiFixture f;
  f.expect({"power", "diag"}, "power_diag");
  REQUIRE(IpmitoolManagement(Ipmitool(f.runner)).injectNmi(f.task));
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("IpmitoolManagement reports Ironic's IPMI failure when the BMC refuses the NMI",
          "[server][ipmitool]") {
  IpmiFixture f;
  f.expect({"power", "diag"}, "power_diag_not_supported");
  auto done = IpmitoolManagement(Ipmitool(f.runner)).injectNmi(f.task);
  REQUIRE_FALSE(done);
  CHECK(done.error().code == ErrorCode::Internal);
  CHECK_THAT(done.error().message, Catch::StartsWith("IPMI call failed: power diag. "));
  CHECK_THAT(done.error().message, Catch::Contains("Invalid data field in request"));
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("IpmitoolManagement supports neither boot mode, secure boot nor indicators",
          "[server][ipmitool]") {
  IpmiFixture f;
  f.task.node.setText(kNodeDriver, "ipmi");
  IpmitoolManagement management(Ipmitool(f.runner));
  auto mode = management.getBootMode(f.task);
  REQUIRE_FALSE(mode);
  CHECK(mode.error().code == ErrorCode::InvalidArgument);
  CHECK(mode.error().message ==
        "Driver ipmi does not support get_boot_mode (disabled or not implemented).");
  CHECK(mode.error().is(kiln::Reason::Unsupported));
  CHECK(management.setSecureBoot(f.task, true).error().message ==
        "Driver ipmi does not support set_secure_boot_state (disabled or not implemented).");
  CHECK(management.supportedIndicators(f.task, "").error().message ==
        "Driver ipmi does not support get_supported_indicators (disabled or not implemented).");
  CHECK(f.runner->received().empty());
}
