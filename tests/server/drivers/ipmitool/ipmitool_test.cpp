#include <catch2/catch.hpp>

#include "server/drivers/ipmitool/ipmitool.h"
#include "tests/server/drivers/ipmitool/ipmitool_test_support.h"

using namespace kiln;
using namespace kiln::server;
using kiln::test::IpmiFixture;
using kiln::test::recordedOutput;
using nlohmann::json;
using Args = std::vector<std::string>;

namespace {

std::string fixtureOut(const std::string& name) {
  return recordedOutput("ipmitool/" + name + ".txt").out;
}

std::string fixtureErr(const std::string& name) {
  return recordedOutput("ipmitool/" + name + ".txt").err;
}

Command commandFor(const json& driverInfo, const Args& args = {"chassis", "power", "status"}) {
  auto info = parseIpmiDriverInfo(driverInfo);
  REQUIRE(info);
  return Ipmitool(nullptr).buildCommand(*info, args);
}

std::string driverInfoError(const json& driverInfo) {
  auto info = parseIpmiDriverInfo(driverInfo);
  REQUIRE_FALSE(info);
  CHECK(info.error().code == ErrorCode::InvalidArgument);
  return info.error().message;
}

}  // namespace

// --- parsers ---------------------------------------------------------------------------------

TEST_CASE("parsePowerStatus reads the power state ipmitool recorded", "[server][ipmitool]") {
  CHECK(parsePowerStatus(fixtureOut("power_status_on")) == "power on");
  CHECK(parsePowerStatus(fixtureOut("power_status_off")) == "power off");
  CHECK(parsePowerStatus("Chassis Power is on\n") == "power on");
  SECTION("tolerating CRLF, indentation and extra lines") {
    CHECK(parsePowerStatus("  Chassis Power is off\r\n") == "power off");
    CHECK(parsePowerStatus("Loading IANA PEN Registry...\nChassis Power is on\n") == "power on");
  }
}

TEST_CASE("parsePowerStatus rejects output that is not a power status", "[server][ipmitool]") {
  for (const std::string& garbage :
       std::vector<std::string>{"", "\n", "Chassis Power is unknown\n", "Chassis Power is",
                                "Chassis Power is on and off\n", "power on\n",
                                "Set Boot Device to pxe\n", std::string("\x00\xff\x01", 3)}) {
    INFO("output: " << garbage);
    auto state = parsePowerStatus(garbage);
    REQUIRE_FALSE(state);
    CHECK(state.error().code == ErrorCode::Internal);
    CHECK_THAT(state.error().message, Catch::Contains("chassis power status"));
  }
}

TEST_CASE("parseBootFlags maps each recorded boot device selector to Ironic's name",
          "[server][ipmitool]") {
  struct Case {
    const char* fixture;
    const char* device;
    bool valid;
    bool persistent;
    bool efi;
  };
  for (const auto& c : {Case{"bootparam_5_pxe_once", "pxe", true, false, false},
                        Case{"bootparam_5_disk_persistent", "disk", true, true, false},
                        Case{"bootparam_5_cdrom_efi", "cdrom", true, false, true},
                        Case{"bootparam_5_bios", "bios", true, false, false},
                        Case{"bootparam_5_safe_persistent", "safe", true, true, false},
                        Case{"bootparam_5_no_override", "", false, false, false},
                        Case{"bootparam_5_pxe_consumed", "pxe", false, false, false},
                        Case{"bootparam_5_floppy", "", true, false, false}}) {
    INFO(c.fixture);
    auto flags = parseBootFlags(fixtureOut(c.fixture));
    REQUIRE(flags);
    CHECK(flags->device == c.device);
    CHECK(flags->valid == c.valid);
    CHECK(flags->persistent == c.persistent);
    CHECK(flags->efi == c.efi);
  }
  auto safe = parseBootFlags(fixtureOut("bootparam_5_safe_persistent"));
  CHECK(safe->selector == "Force Boot from default Hard-Drive, request Safe-Mode");
}

TEST_CASE("parseBootFlags rejects output without a boot device selector", "[server][ipmitool]") {
  for (const std::string& garbage : std::vector<std::string>{
           "", "Chassis Power is on\n",
           "Boot parameter version: 1\nBoot parameter 5 is valid/unlocked\n",
           "   - Boot Device Selector Force PXE\n", std::string("\xff\xfe", 2)}) {
    INFO("output: " << garbage);
    auto flags = parseBootFlags(garbage);
    REQUIRE_FALSE(flags);
    CHECK(flags.error().code == ErrorCode::Internal);
    CHECK_THAT(flags.error().message, Catch::Contains("bootparam get 5"));
  }
}

TEST_CASE("classifyIpmitoolFailure tells transient session failures from refusals",
          "[server][ipmitool]") {
  CHECK(classifyIpmitoolFailure(fixtureErr("session_failed_lanplus")) ==
        IpmitoolFailure::Transient);
  CHECK(classifyIpmitoolFailure(fixtureErr("session_failed_lan")) == IpmitoolFailure::Transient);
  CHECK(classifyIpmitoolFailure(fixtureErr("insufficient_resources")) ==
        IpmitoolFailure::Transient);
  CHECK(classifyIpmitoolFailure(fixtureErr("power_status_node_busy")) ==
        IpmitoolFailure::Transient);
  // Without -v, ipmitool says no more about a wrong password than about an unanswered session
  // request (recorded from ipmi_sim): retried, as Ironic retries it.
  CHECK(classifyIpmitoolFailure(fixtureErr("wrong_password_ipmi_sim")) ==
        IpmitoolFailure::Transient);
  SECTION("credentials and names are not retried") {
    CHECK(classifyIpmitoolFailure(fixtureErr("rakp_unauthorized_name")) ==
          IpmitoolFailure::Connection);
    CHECK(classifyIpmitoolFailure(fixtureErr("rakp_hmac_invalid")) == IpmitoolFailure::Connection);
    CHECK(classifyIpmitoolFailure(fixtureErr("address_lookup_failed")) ==
          IpmitoolFailure::Connection);
  }
  SECTION("a refused command is the BMC's answer") {
    CHECK(classifyIpmitoolFailure(fixtureErr("power_soft_not_supported")) ==
          IpmitoolFailure::Command);
    CHECK(classifyIpmitoolFailure(fixtureErr("raw_invalid_command")) == IpmitoolFailure::Command);
    CHECK(classifyIpmitoolFailure(fixtureErr("power_on_insufficient_privilege_ipmi_sim")) ==
          IpmitoolFailure::Command);
    CHECK(classifyIpmitoolFailure("Invalid privilege level FOO\n"
                                  "Error: Unable to establish IPMI v2 / RMCP+ session\n") ==
          IpmitoolFailure::Command);
    CHECK(classifyIpmitoolFailure("") == IpmitoolFailure::Command);
  }
}

// --- driver_info ----------------------------------------------------------------------------

TEST_CASE("parseIpmiDriverInfo requires ipmi_address with Ironic's message", "[server][ipmitool]") {
  const std::string expected =
      "Missing the following IPMI credentials in node's driver_info: ['ipmi_address'].";
  CHECK(driverInfoError(json::object()) == expected);
  CHECK(driverInfoError({{"ipmi_address", ""}}) == expected);
  CHECK(driverInfoError({{"ipmi_address", nullptr}, {"ipmi_username", "admin"}}) == expected);
  CHECK(driverInfoError(json::array()) == expected);
}

TEST_CASE("parseIpmiDriverInfo applies defaults when only the address is given",
          "[server][ipmitool]") {
  auto info = parseIpmiDriverInfo({{"ipmi_address", "bmc-7.example.org"}});
  REQUIRE(info);
  CHECK(info->address == "bmc-7.example.org");
  CHECK_FALSE(info->port);
  CHECK_FALSE(info->username);
  CHECK_FALSE(info->password);
  CHECK_FALSE(info->privLevel);
  CHECK(info->protocolVersion == "2.0");
}

TEST_CASE("parseIpmiDriverInfo accepts ports as integers or digit strings in 1-65535",
          "[server][ipmitool]") {
  for (const json& port : {json(623), json("623"), json(1), json(65535), json("65535")}) {
    auto info = parseIpmiDriverInfo({{"ipmi_address", "a"}, {"ipmi_port", port}});
    REQUIRE(info);
    CHECK(info->port == (port.is_string() ? std::stoi(port.get<std::string>()) : port.get<int>()));
  }
  CHECK_FALSE(parseIpmiDriverInfo({{"ipmi_address", "a"}, {"ipmi_port", ""}})->port);
  for (const json& port : {json(0), json(65536), json(-1), json("abc"), json("62 3"), json(62.3),
                           json(true), json("99999999999999"), json::array()}) {
    INFO("ipmi_port: " << port.dump());
    const auto message = driverInfoError({{"ipmi_address", "a"}, {"ipmi_port", port}});
    CHECK_THAT(message, Catch::StartsWith("Invalid ipmi_port \""));
    CHECK_THAT(message, Catch::EndsWith("expected an integer between 1 and 65535."));
  }
  CHECK(driverInfoError({{"ipmi_address", "a"}, {"ipmi_port", "abc"}}) ==
        "Invalid ipmi_port \"abc\" in node's driver_info; expected an integer between 1 and "
        "65535.");
}

TEST_CASE("parseIpmiDriverInfo accepts only ipmitool's privilege levels", "[server][ipmitool]") {
  for (const char* level : {"ADMINISTRATOR", "CALLBACK", "OPERATOR", "USER"}) {
    auto info = parseIpmiDriverInfo({{"ipmi_address", "a"}, {"ipmi_priv_level", level}});
    REQUIRE(info);
    CHECK(info->privLevel == level);
  }
  CHECK(driverInfoError({{"ipmi_address", "a"}, {"ipmi_priv_level", "administrator"}}) ==
        "Invalid ipmi_priv_level \"administrator\" in node's driver_info; expected one of "
        "ADMINISTRATOR, CALLBACK, OPERATOR, USER.");
  CHECK_THAT(driverInfoError({{"ipmi_address", "a"}, {"ipmi_priv_level", 4}}),
             Catch::StartsWith("Invalid ipmi_priv_level 4"));
}

TEST_CASE("parseIpmiDriverInfo accepts protocol versions 1.5 and 2.0 only", "[server][ipmitool]") {
  for (const json& v : {json("1.5"), json(1.5)}) {
    CHECK(parseIpmiDriverInfo({{"ipmi_address", "a"}, {"ipmi_protocol_version", v}})
              ->protocolVersion == "1.5");
  }
  for (const json& v : {json("2.0"), json(2), json(2.0), json("")}) {
    CHECK(parseIpmiDriverInfo({{"ipmi_address", "a"}, {"ipmi_protocol_version", v}})
              ->protocolVersion == "2.0");
  }
  CHECK(driverInfoError({{"ipmi_address", "a"}, {"ipmi_protocol_version", "3.0"}}) ==
        "Invalid ipmi_protocol_version \"3.0\" in node's driver_info; expected one of 1.5, 2.0.");
  CHECK_THAT(driverInfoError({{"ipmi_address", "a"}, {"ipmi_protocol_version", "2"}}),
             Catch::Contains("\"2\""));
}

TEST_CASE("parseIpmiDriverInfo accepts a cipher suite number for IPMI 2.0 only",
          "[server][ipmitool]") {
  for (const json& suite : {json(3), json("3"), json(17), json("17"), json(0), json(255)}) {
    INFO("ipmi_cipher_suite: " << suite.dump());
    auto info = parseIpmiDriverInfo({{"ipmi_address", "a"}, {"ipmi_cipher_suite", suite}});
    REQUIRE(info);
    CHECK(info->cipherSuite ==
          (suite.is_string() ? std::stoi(suite.get<std::string>()) : suite.get<int>()));
  }
  CHECK_FALSE(parseIpmiDriverInfo({{"ipmi_address", "a"}})->cipherSuite);
  CHECK_FALSE(parseIpmiDriverInfo({{"ipmi_address", "a"}, {"ipmi_cipher_suite", ""}})->cipherSuite);
  CHECK_FALSE(
      parseIpmiDriverInfo({{"ipmi_address", "a"}, {"ipmi_cipher_suite", nullptr}})->cipherSuite);
  CHECK(driverInfoError({{"ipmi_address", "a"}, {"ipmi_cipher_suite", "aes"}}) ==
        "Invalid cipher suite aes, expected a number");
  for (const json& suite :
       {json(-1), json(256), json(3.5), json(true), json("1 7"), json("9999"), json::array()}) {
    INFO("ipmi_cipher_suite: " << suite.dump());
    CHECK_THAT(
        driverInfoError({{"ipmi_address", "a"}, {"ipmi_cipher_suite", suite}}),
        Catch::StartsWith("Invalid cipher suite ") && Catch::EndsWith(", expected a number"));
  }
  CHECK(driverInfoError(
            {{"ipmi_address", "a"}, {"ipmi_protocol_version", "1.5"}, {"ipmi_cipher_suite", 3}}) ==
        "Cipher suites cannot be used with IPMI 1.5");
}

TEST_CASE("parseIpmiDriverInfo rejects non-string credentials without echoing a password",
          "[server][ipmitool]") {
  CHECK(driverInfoError({{"ipmi_address", 42}}) ==
        "Invalid ipmi_address 42 in node's driver_info; expected a string.");
  CHECK(driverInfoError({{"ipmi_address", "a"}, {"ipmi_username", json::array()}}) ==
        "Invalid ipmi_username [] in node's driver_info; expected a string.");
  const auto message = driverInfoError({{"ipmi_address", "a"}, {"ipmi_password", 918273645}});
  CHECK(message == "Invalid ipmi_password in node's driver_info; expected a string.");
  CHECK_THAT(message, !Catch::Contains("918273645"));
}

// --- argv --------------------------------------------------------------------------------------

TEST_CASE("Ipmitool builds a lanplus argv with the password only in the environment",
          "[server][ipmitool]") {
  const Command c = commandFor(test::ipmiDriverInfo());
  CHECK(c.argv == Args{"ipmitool", "-I", "lanplus", "-H", "10.20.30.40", "-U", "admin", "-E", "-R",
                       "1", "chassis", "power", "status"});
  CHECK(c.env == std::vector<std::pair<std::string, std::string>>{
                     {"IPMI_PASSWORD", std::string(test::kIpmiPassword)}});
  CHECK(c.timeout == std::chrono::seconds(30));
  CHECK(c.display() == "ipmitool -I lanplus -H 10.20.30.40 -U admin -E -R 1 chassis power status");
  for (const auto& arg : c.argv)
    CHECK_THAT(arg, !Catch::Contains(std::string(test::kIpmiPassword)));
  CHECK_THAT(c.display(), !Catch::Contains(std::string(test::kIpmiPassword)));
}

TEST_CASE("Ipmitool uses the lan interface for IPMI 1.5", "[server][ipmitool]") {
  const Command c = commandFor({{"ipmi_address", "10.0.0.9"}, {"ipmi_protocol_version", "1.5"}});
  CHECK(c.argv ==
        Args{"ipmitool", "-I", "lan", "-H", "10.0.0.9", "-R", "1", "chassis", "power", "status"});
}

TEST_CASE("Ipmitool passes port, user and privilege level when driver_info has them",
          "[server][ipmitool]") {
  const Command c = commandFor({{"ipmi_address", "10.0.0.9"},
                                {"ipmi_port", "6230"},
                                {"ipmi_username", "ops"},
                                {"ipmi_password", "pw"},
                                {"ipmi_priv_level", "OPERATOR"},
                                {"ipmi_protocol_version", "2.0"}},
                               {"chassis", "bootdev", "pxe"});
  CHECK(c.argv == Args{"ipmitool", "-I", "lanplus", "-H", "10.0.0.9", "-p", "6230", "-U", "ops",
                       "-L", "OPERATOR", "-E", "-R", "1", "chassis", "bootdev", "pxe"});
}

TEST_CASE("Ipmitool passes the cipher suite with -C when driver_info names one",
          "[server][ipmitool]") {
  json info = test::ipmiDriverInfo();
  info["ipmi_cipher_suite"] = "3";
  CHECK(commandFor(info).argv == Args{"ipmitool", "-I", "lanplus", "-H", "10.20.30.40", "-U",
                                      "admin", "-C", "3", "-E", "-R", "1", "chassis", "power",
                                      "status"});
}

TEST_CASE("Ipmitool leaves out -E and the environment when there is no password",
          "[server][ipmitool]") {
  for (const json& info :
       {json{{"ipmi_address", "h"}, {"ipmi_username", "u"}},
        json{{"ipmi_address", "h"}, {"ipmi_username", "u"}, {"ipmi_password", ""}}}) {
    const Command c = commandFor(info);
    CHECK(c.argv == Args{"ipmitool", "-I", "lanplus", "-H", "h", "-U", "u", "-R", "1", "chassis",
                         "power", "status"});
    CHECK(c.env.empty());
  }
}

// --- running, retries and errors --------------------------------------------------------------

TEST_CASE("Ipmitool returns stdout of a successful run", "[server][ipmitool]") {
  IpmiFixture f;
  f.expect({"chassis", "power", "status"}, "power_status_on");
  Ipmitool ipmitool(f.runner);
  auto out = ipmitool.run(f.task, {"chassis", "power", "status"});
  REQUIRE(out);
  CHECK(*out == "Chassis Power is on\n");
  CHECK(f.waited().count() == 0);
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("Ipmitool retries a session failure and succeeds when the BMC answers",
          "[server][ipmitool]") {
  IpmiFixture f;
  f.expect({"chassis", "power", "status"}, "session_failed_lanplus")
      .expect({"chassis", "power", "status"}, "insufficient_resources")
      .expect({"chassis", "power", "status"}, "power_status_off");
  Ipmitool ipmitool(f.runner);
  auto state = ipmitool.powerStatus(f.task);
  REQUIRE(state);
  CHECK(*state == "power off");
  // Two waits of IpmitoolOptions::retryDelay, on the fake clock.
  CHECK(f.waited() == std::chrono::seconds(4));
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("Ipmitool reports Unavailable with ipmitool's stderr when every attempt fails",
          "[server][ipmitool]") {
  IpmiFixture f;
  for (int i = 0; i < 3; ++i) f.expect({"chassis", "power", "status"}, "session_failed_lanplus");
  Ipmitool ipmitool(f.runner);
  auto state = ipmitool.powerStatus(f.task);
  REQUIRE_FALSE(state);
  CHECK(state.error().code == ErrorCode::Unavailable);
  CHECK(state.error().message ==
        "IPMI command \"chassis power status\" to BMC 10.20.30.40 of node "
        "1be26c0b-03f2-4d2e-ae87-c02d7f33c123 failed (exit code 1): Error: Unable to establish "
        "IPMI v2 / RMCP+ session [3 attempts]");
  CHECK_THAT(state.error().message, !Catch::Contains(std::string(test::kIpmiPassword)));
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("Ipmitool quotes ipmitool's reason when ipmi_sim refuses the password",
          "[server][ipmitool]") {
  IpmiFixture f;
  for (int i = 0; i < 3; ++i) f.expect({"chassis", "power", "on"}, "wrong_password_ipmi_sim");
  auto done = Ipmitool(f.runner).powerControl(f.task, "on");
  REQUIRE_FALSE(done);
  CHECK(done.error().code == ErrorCode::Unavailable);
  CHECK(done.error().message ==
        "IPMI command \"chassis power on\" to BMC 10.20.30.40 of node "
        "1be26c0b-03f2-4d2e-ae87-c02d7f33c123 failed (exit code 1): Unable to Get Channel Cipher "
        "Suites; Error: Unable to establish IPMI v2 / RMCP+ session [3 attempts]");
  CHECK_THAT(done.error().message, !Catch::Contains(std::string(test::kIpmiPassword)));
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("Ipmitool masks the node's password wherever ipmitool's output quotes it",
          "[server][ipmitool]") {
  const std::string password(test::kIpmiPassword);
  const auto argv = IpmiFixture::argv({"chassis", "power", "status"});
  SECTION("in stderr") {
    IpmiFixture f;
    f.runner->expect(argv, CommandOutput{1, "",
                                         "Set Chassis Power Control failed: user admin/" +
                                             password + " refused\n"});
    auto state = Ipmitool(f.runner).powerStatus(f.task);
    REQUIRE_FALSE(state);
    CHECK_THAT(state.error().message,
               Catch::EndsWith("(exit code 1): Set Chassis Power Control failed: user "
                               "admin/****** refused"));
  }
  SECTION("in stdout, quoted when stderr is empty") {
    IpmiFixture f;
    f.runner->expect(argv, CommandOutput{1, password + "\n" + password, ""});
    auto state = Ipmitool(f.runner).powerStatus(f.task);
    REQUIRE_FALSE(state);
    CHECK_THAT(state.error().message, Catch::EndsWith("(exit code 1): ******; ******"));
  }
  SECTION("across the bound on quoted output, where a cut would leave part of it") {
    IpmiFixture f;
    f.runner->expect(argv, CommandOutput{1, "", std::string(495, 'x') + password + "\n"});
    auto state = Ipmitool(f.runner).powerStatus(f.task);
    REQUIRE_FALSE(state);
    CHECK_THAT(state.error().message, !Catch::Contains(password.substr(0, 4)));
    CHECK_THAT(state.error().message, Catch::EndsWith("xxxxx*****..."));
  }
}

TEST_CASE("Ipmitool honours a custom attempt count and delay", "[server][ipmitool]") {
  IpmiFixture f;
  f.expect({"chassis", "power", "status"}, "power_status_node_busy")
      .expect({"chassis", "power", "status"}, "power_status_node_busy");
  Ipmitool ipmitool(f.runner, IpmitoolOptions{.attempts = 2,
                                              .retryDelay = std::chrono::milliseconds(250),
                                              .commandTimeout = std::chrono::seconds(5)});
  auto state = ipmitool.powerStatus(f.task);
  REQUIRE_FALSE(state);
  CHECK(state.error().code == ErrorCode::Unavailable);
  CHECK_THAT(state.error().message, Catch::Contains("Node busy"));
  CHECK(f.waited() == std::chrono::milliseconds(250));
  for (const auto& c : f.runner->received()) CHECK(c.timeout == std::chrono::seconds(5));
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("Ipmitool does not retry rejected credentials", "[server][ipmitool]") {
  IpmiFixture f;
  f.expect({"chassis", "power", "status"}, "rakp_unauthorized_name");
  auto state = Ipmitool(f.runner).powerStatus(f.task);
  REQUIRE_FALSE(state);
  CHECK(state.error().code == ErrorCode::Unavailable);
  CHECK_THAT(state.error().message,
             Catch::EndsWith("(exit code 1): RAKP 2 message indicates an error : unauthorized "
                             "name; Error: Unable to establish IPMI v2 / RMCP+ session"));
  CHECK(f.waited().count() == 0);
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("Ipmitool maps a command the BMC refuses to Internal without retrying",
          "[server][ipmitool]") {
  IpmiFixture f;
  f.expect({"chassis", "power", "soft"}, "power_soft_not_supported");
  auto done = Ipmitool(f.runner).powerControl(f.task, "soft");
  REQUIRE_FALSE(done);
  CHECK(done.error().code == ErrorCode::Internal);
  CHECK_THAT(done.error().message,
             Catch::Contains("Set Chassis Power Control to Soft failed: Command not supported in "
                             "present state"));
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("Ipmitool retries an ipmitool that hangs past its timeout", "[server][ipmitool]") {
  IpmiFixture f;
  for (int i = 0; i < 3; ++i) {
    test::ExpectedCommand hang;
    hang.argv = IpmiFixture::argv({"chassis", "power", "status"});
    hang.error = Error{ErrorCode::DeadlineExceeded, "killed"};
    f.runner->expect(hang);
  }
  auto state = Ipmitool(f.runner).powerStatus(f.task);
  REQUIRE_FALSE(state);
  CHECK(state.error().code == ErrorCode::DeadlineExceeded);
  CHECK_THAT(state.error().message, Catch::Contains("did not finish within 30000 ms"));
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("Ipmitool reports a missing ipmitool binary as Unavailable at once",
          "[server][ipmitool]") {
  IpmiFixture f;
  test::ExpectedCommand missing;
  missing.argv = IpmiFixture::argv({"chassis", "power", "status"});
  missing.error = Error{ErrorCode::Unavailable, "cannot run ipmitool: No such file or directory"};
  f.runner->expect(missing);
  auto state = Ipmitool(f.runner).powerStatus(f.task);
  REQUIRE_FALSE(state);
  CHECK(state.error().code == ErrorCode::Unavailable);
  CHECK_THAT(state.error().message, Catch::EndsWith("No such file or directory"));
  test::checkAllConsumed(*f.runner);
}

TEST_CASE("Ipmitool refuses to run with invalid driver_info", "[server][ipmitool]") {
  IpmiFixture f(nlohmann::json{{"ipmi_address", "h"}, {"ipmi_port", "http"}});
  auto state = Ipmitool(f.runner).powerStatus(f.task);
  REQUIRE_FALSE(state);
  CHECK(state.error().code == ErrorCode::InvalidArgument);
  CHECK(f.runner->received().empty());
}

TEST_CASE("Ipmitool reports unparsable output as Internal", "[server][ipmitool]") {
  IpmiFixture f;
  f.runner->expect(IpmiFixture::argv({"chassis", "power", "status"}),
                   CommandOutput{0, "Chassis Power is sideways\n", ""});
  auto state = Ipmitool(f.runner).powerStatus(f.task);
  REQUIRE_FALSE(state);
  CHECK(state.error().code == ErrorCode::Internal);
  CHECK_THAT(state.error().message, Catch::Contains("Chassis Power is sideways"));
}
