// ProcessCommandRunner runs real (local, short-lived) processes: coreutils and /bin/sh only, no
// network; the slowest case is the 200 ms timeout.
#include <pthread.h>
#include <signal.h>

#include <chrono>

#include <catch2/catch.hpp>

#include "shared/exec/command_runner.h"

using namespace kiln;
using Args = std::vector<std::string>;

namespace {

Result<CommandOutput> runCommand(Args argv, std::optional<std::string> stdinData = std::nullopt,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  Command c;
  c.argv = std::move(argv);
  c.stdinData = std::move(stdinData);
  c.timeout = timeout;
  return ProcessCommandRunner().run(c);
}

}  // namespace

TEST_CASE("ProcessCommandRunner runs a command that succeeds silently", "[shared][exec]") {
  auto out = runCommand({"/bin/true"});
  REQUIRE(out);
  CHECK(out->exitCode == 0);
  CHECK(out->out.empty());
  CHECK(out->err.empty());
}

TEST_CASE("ProcessCommandRunner captures stdout and stderr separately", "[shared][exec]") {
  auto echo = runCommand({"/bin/echo", "hello", "world"});
  REQUIRE(echo);
  CHECK(echo->out == "hello world\n");
  auto both = runCommand({"/bin/sh", "-c", "echo out; echo err >&2"});
  REQUIRE(both);
  CHECK(both->out == "out\n");
  CHECK(both->err == "err\n");
}

TEST_CASE("ProcessCommandRunner passes arguments verbatim, without a shell", "[shared][exec]") {
  auto out = runCommand({"/bin/echo", "$HOME", "a;b", "*", "two words"});
  REQUIRE(out);
  CHECK(out->out == "$HOME a;b * two words\n");
}

TEST_CASE("ProcessCommandRunner reports a non-zero exit as output, not an error",
          "[shared][exec]") {
  auto out = runCommand({"/bin/sh", "-c", "echo failing >&2; exit 3"});
  REQUIRE(out);
  CHECK(out->exitCode == 3);
  CHECK(out->err == "failing\n");
  SECTION("a process killed by a signal exits with 128 + the signal") {
    auto killed = runCommand({"/bin/sh", "-c", "kill -9 $$"});
    REQUIRE(killed);
    CHECK(killed->exitCode == 128 + 9);
  }
}

TEST_CASE("ProcessCommandRunner feeds stdinData to the command", "[shared][exec]") {
  auto out = runCommand({"cat"}, std::string("line one\nline two\n"));
  REQUIRE(out);
  CHECK(out->out == "line one\nline two\n");
  SECTION("without stdinData the command reads end-of-file at once") {
    auto empty = runCommand({"cat"});
    REQUIRE(empty);
    CHECK(empty->out.empty());
  }
  SECTION("input and output larger than a pipe buffer do not deadlock") {
    std::string big(1 << 20, 'x');
    auto copied = runCommand({"cat"}, big);
    REQUIRE(copied);
    CHECK(copied->out.size() == big.size());
  }
}

TEST_CASE("ProcessCommandRunner survives a command that exits without reading its stdin",
          "[shared][exec]") {
  // Writing the rest of the input to a pipe nobody reads raises SIGPIPE, which must not kill
  // the server.
  auto out = runCommand({"/bin/true"}, std::string(4 << 20, 'x'));
  REQUIRE(out);
  CHECK(out->exitCode == 0);
}

TEST_CASE("ProcessCommandRunner drains large stdout and stderr concurrently", "[shared][exec]") {
  auto out = runCommand(
      {"/bin/sh", "-c", "head -c 300000 /dev/zero; head -c 200000 /dev/zero >&2; echo done"});
  REQUIRE(out);
  CHECK(out->exitCode == 0);
  CHECK(out->out.size() == 300000 + 5);
  CHECK(out->err.size() == 200000);
}

TEST_CASE("ProcessCommandRunner kills a command that outlives its timeout", "[shared][exec]") {
  const auto start = std::chrono::steady_clock::now();
  auto out = runCommand({"sleep", "10"}, std::nullopt, std::chrono::milliseconds(200));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  REQUIRE_FALSE(out);
  CHECK(out.error().code == ErrorCode::DeadlineExceeded);
  CHECK_THAT(out.error().message, Catch::Contains("sleep 10"));
  CHECK_THAT(out.error().message, Catch::Contains("200 ms"));
  CHECK(elapsed < std::chrono::seconds(5));
}

TEST_CASE("ProcessCommandRunner runs with LC_ALL=C, PATH and the command's env only",
          "[shared][exec]") {
  Command c;
  c.argv = {"/bin/sh", "-c", "echo \"$LC_ALL|$IPMI_PASSWORD|${HOME-unset}\"; test -n \"$PATH\""};
  c.env = {{"IPMI_PASSWORD", "s3cret"}};
  auto out = ProcessCommandRunner().run(c);
  REQUIRE(out);
  CHECK(out->exitCode == 0);
  CHECK(out->out == "C|s3cret|unset\n");
}

TEST_CASE("ProcessCommandRunner looks up argv[0] in PATH", "[shared][exec]") {
  auto out = runCommand({"echo", "found"});
  REQUIRE(out);
  CHECK(out->out == "found\n");
}

TEST_CASE("ProcessCommandRunner reports a missing binary as Unavailable", "[shared][exec]") {
  for (const char* tool : {"kiln-no-such-tool", "/nonexistent/bin/tool"}) {
    auto out = runCommand({tool, "--version"});
    REQUIRE_FALSE(out);
    CHECK(out.error().code == ErrorCode::Unavailable);
    CHECK_THAT(out.error().message, Catch::Contains(tool));
  }
}

TEST_CASE("ProcessCommandRunner rejects an empty argv", "[shared][exec]") {
  auto out = runCommand({});
  REQUIRE_FALSE(out);
  CHECK(out.error().code == ErrorCode::InvalidArgument);
}

TEST_CASE("Command::display prefers displayName over argv", "[shared][exec]") {
  Command c;
  c.argv = {"ipmitool", "-I", "lanplus"};
  CHECK(c.display() == "ipmitool -I lanplus");
  c.displayName = "ipmitool (redacted)";
  CHECK(c.display() == "ipmitool (redacted)");
}

TEST_CASE("ProcessCommandRunner starts commands with no signal blocked when the caller blocks "
          "the stop signals",
          "[shared][exec]") {
  // kiln-server and kiln-agent block SIGTERM and SIGINT in every thread (they take them with
  // sigwait): a tool they run must still be stoppable by SIGTERM.
  sigset_t stop, old;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  REQUIRE(pthread_sigmask(SIG_BLOCK, &stop, &old) == 0);
  auto r = runCommand({"grep", "^SigBlk:", "/proc/self/status"});
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  REQUIRE(r);
  CHECK(r->exitCode == 0);
  CHECK(r->out == "SigBlk:\t0000000000000000\n");
}
