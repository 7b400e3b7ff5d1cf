#include <catch2/catch.hpp>

#include "tests/support/replay_command_runner.h"

using namespace kiln;
using kiln::test::ExpectedCommand;
using kiln::test::ReplayCommandRunner;
using Args = std::vector<std::string>;

namespace {

Command command(Args argv) {
  Command c;
  c.argv = std::move(argv);
  return c;
}

}  // namespace

TEST_CASE("ReplayCommandRunner serves the script in order", "[shared][exec]") {
  ReplayCommandRunner runner;
  runner.expect({"mdadm", "--detail", "/dev/md0"}, CommandOutput{0, "detail\n", ""})
      .expect({"sgdisk", "-p", "/dev/sda"}, CommandOutput{2, "", "no disk\n"});
  CHECK(runner.remaining() == 2);
  CHECK_FALSE(runner.allConsumed());
  auto first = runner.run(command({"mdadm", "--detail", "/dev/md0"}));
  REQUIRE(first);
  CHECK(first->out == "detail\n");
  auto second = runner.run(command({"sgdisk", "-p", "/dev/sda"}));
  REQUIRE(second);
  CHECK(second->exitCode == 2);
  CHECK(second->err == "no disk\n");
  CHECK(runner.allConsumed());
  CHECK(runner.received().size() == 2);
  test::checkAllConsumed(runner);
}

TEST_CASE("ReplayCommandRunner returns a diff of the argv when a command is unexpected",
          "[shared][exec]") {
  ReplayCommandRunner runner;
  runner.setFailTestOnMismatch(false);
  runner.expect({"ipmitool", "-I", "lanplus", "chassis", "power", "status"}, CommandOutput{});
  auto out = runner.run(command({"ipmitool", "-I", "lan", "chassis", "power", "on"}));
  REQUIRE_FALSE(out);
  CHECK(out.error().code == ErrorCode::Internal);
  CHECK(out.error().message ==
        "ReplayCommandRunner: command #1 does not match the script\n"
        "  expected: ipmitool -I lanplus chassis power status\n"
        "  actual:   ipmitool -I lan chassis power on\n"
        "  argv diff (- expected, + actual):\n"
        "      ipmitool\n"
        "      -I\n"
        "    - lanplus\n"
        "    + lan\n"
        "      chassis\n"
        "      power\n"
        "    - status\n"
        "    + on");
  // The expectation is still pending and the mismatch is remembered.
  CHECK(runner.remaining() == 1);
  CHECK_FALSE(runner.allConsumed());
  CHECK_THAT(runner.describeRemaining(), Catch::Contains("1 expected command(s) never ran"));
  CHECK_THAT(runner.describeRemaining(), Catch::Contains("does not match the script"));
}

TEST_CASE("ReplayCommandRunner rejects commands after the script ran out", "[shared][exec]") {
  ReplayCommandRunner runner;
  runner.setFailTestOnMismatch(false);
  auto out = runner.run(command({"wipefs", "-a", "/dev/sdb"}));
  REQUIRE_FALSE(out);
  CHECK(out.error().code == ErrorCode::Internal);
  CHECK_THAT(out.error().message, Catch::Contains("unexpected command #1"));
  CHECK_THAT(out.error().message, Catch::Contains("actual: wipefs -a /dev/sdb"));
  CHECK_FALSE(runner.allConsumed());
}

TEST_CASE("ReplayCommandRunner checks env and stdin when the script names them", "[shared][exec]") {
  ReplayCommandRunner runner;
  runner.setFailTestOnMismatch(false);
  ExpectedCommand e;
  e.argv = {"tool"};
  e.env = std::vector<std::pair<std::string, std::string>>{{"B", "2"}, {"A", "1"}};
  e.stdinData = "input";
  runner.expect(e).expect(e);

  Command good = command({"tool"});
  good.env = {{"A", "1"}, {"B", "2"}};  // order does not matter
  good.stdinData = "input";
  CHECK(runner.run(good));

  Command bad = command({"tool"});
  bad.env = {{"A", "1"}};
  auto out = runner.run(bad);
  REQUIRE_FALSE(out);
  CHECK_THAT(out.error().message, Catch::Contains("env expected: [A=1, B=2]"));
  CHECK_THAT(out.error().message, Catch::Contains("env actual:   [A=1]"));
  CHECK_THAT(out.error().message, Catch::Contains("stdin expected: input"));
}

TEST_CASE("ReplayCommandRunner can answer with a runner error", "[shared][exec]") {
  ReplayCommandRunner runner;
  ExpectedCommand e;
  e.argv = {"sleep", "100"};
  e.error = Error{ErrorCode::DeadlineExceeded, "sleep 100 did not finish"};
  runner.expect(e);
  auto out = runner.run(command({"sleep", "100"}));
  REQUIRE_FALSE(out);
  CHECK(out.error().code == ErrorCode::DeadlineExceeded);
  CHECK(runner.allConsumed());
}

TEST_CASE("parseRecordedOutput reads the exit code and both sections", "[shared][exec]") {
  auto out = test::parseRecordedOutput(
      "# a comment\n\nexit: 3\n==> stdout <==\nline 1\n\nline 3\n==> stderr <==\noops\n");
  REQUIRE(out);
  CHECK(out->exitCode == 3);
  CHECK(out->out == "line 1\n\nline 3\n");
  CHECK(out->err == "oops\n");

  SECTION("sections are optional and in any order") {
    auto errOnly = test::parseRecordedOutput("==> stderr <==\nbad\n==> stdout <==\ngood");
    REQUIRE(errOnly);
    CHECK(errOnly->exitCode == 0);
    CHECK(errOnly->err == "bad\n");
    CHECK(errOnly->out == "good");
    auto empty = test::parseRecordedOutput("");
    REQUIRE(empty);
    CHECK(empty->out.empty());
  }
  SECTION("a '#' inside a section is output, not a comment") {
    CHECK(test::parseRecordedOutput("==> stdout <==\n# not a comment\n")->out ==
          "# not a comment\n");
  }
  SECTION("a malformed header is an error") {
    CHECK_FALSE(test::parseRecordedOutput("exit: one\n"));
    CHECK_FALSE(test::parseRecordedOutput("exit:\n"));
    CHECK_FALSE(test::parseRecordedOutput("status: 0\n"));
    CHECK_FALSE(test::parseRecordedOutput("==> stdout <==\n==> stdout <==\n"));
  }
}

TEST_CASE("loadRecordedOutput finds fixtures under tests/data/commands", "[shared][exec]") {
  auto out = test::loadRecordedOutput("ipmitool/power_status_on.txt");
  REQUIRE(out);
  CHECK(out->out == "Chassis Power is on\n");
  CHECK(std::filesystem::is_directory(test::testDataPath("commands")));
  auto missing = test::loadRecordedOutput("ipmitool/no_such_fixture.txt");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::NotFound);
}

TEST_CASE("diffArgv marks removed and added arguments", "[shared][exec]") {
  CHECK(test::diffArgv({"a", "b", "c"}, {"a", "c", "d"}) == "  a\n- b\n  c\n+ d\n");
  CHECK(test::diffArgv({}, {"x"}) == "+ x\n");
  CHECK(test::diffArgv({"x"}, {}) == "- x\n");
  CHECK(test::joinArgv({"sh", "-c", "echo 'hi there'"}) == "sh -c 'echo '\\''hi there'\\'''");
}
