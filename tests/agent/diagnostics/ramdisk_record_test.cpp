// What kiln-agent keeps of its ramdisk session (agent/diagnostics/ramdisk_record.h) and the log
// bundle made of it (agent/diagnostics/log_bundle.h).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "agent/diagnostics/log_bundle.h"
#include "agent/diagnostics/ramdisk_record.h"
#include "shared/core/gzip.h"
#include "shared/core/tar.h"
#include "tests/support/fake_clock.h"
#include "tests/support/temp_dir.h"

using namespace kiln;
using namespace kiln::agent;

namespace {

/// Answers every command with `output` after `takes` of fake time; counts the calls.
class StubRunner final : public CommandRunner {
 public:
  StubRunner(test::FakeClock& clock, CommandOutput output, std::chrono::milliseconds takes = {})
      : clock_(clock), output_(std::move(output)), takes_(takes) {}
  std::optional<Error> error;
  std::vector<std::vector<std::string>> seen;
  Result<CommandOutput> run(const Command& command) override {
    seen.push_back(command.argv);
    clock_.advance(takes_);
    if (error) return std::unexpected(*error);
    return output_;
  }

 private:
  test::FakeClock& clock_;
  CommandOutput output_;
  std::chrono::milliseconds takes_;
};

Command cmd(std::vector<std::string> argv) {
  Command c;
  c.argv = std::move(argv);
  return c;
}

}  // namespace

TEST_CASE("the recording runner records each command's argv, status, duration and output",
          "[agent][diagnostics]") {
  test::FakeClock clock;
  StubRunner inner(clock, CommandOutput{2, "out\n", "err\n"}, std::chrono::milliseconds(1500));
  RamdiskRecord record;
  RecordingCommandRunner runner(inner, record, clock);
  auto r = runner.run(cmd({"sgdisk", "-Z", "/dev/vda"}));
  REQUIRE(r);
  CHECK(r->exitCode == 2);  // passed through unchanged
  auto commands = record.commands();
  REQUIRE(commands.size() == 1);
  CHECK(commands[0].command == "sgdisk -Z /dev/vda");
  CHECK(commands[0].exitCode == 2);
  CHECK(commands[0].seconds == Approx(1.5));
  CHECK(commands[0].out == "out\n");
  CHECK(commands[0].err == "err\n");
  CHECK(commands[0].started == "2026-01-01T00:00:00+00:00");

  inner.error = Error{ErrorCode::Unavailable, "cannot start mdadm: No such file or directory"};
  CHECK_FALSE(runner.run(cmd({"mdadm", "--detail"})));
  commands = record.commands();
  REQUIRE(commands.size() == 2);
  CHECK_FALSE(commands[1].exitCode.has_value());
  CHECK_THAT(commands[1].error, Catch::Contains("cannot start mdadm"));
}

TEST_CASE("the record masks secrets: display names, URL credentials, registered strings",
          "[agent][diagnostics]") {
  test::FakeClock clock;
  StubRunner inner(
      clock, CommandOutput{0, "fetched http://user:hunter22@10.0.0.1/img with tok3n-abcdef\n", ""});
  RamdiskRecord record;
  RecordingCommandRunner runner(inner, record, clock);
  Command hidden = cmd({"tool", "--password", "s3cret-pass"});
  hidden.displayName = "tool --password ******";
  (void)runner.run(hidden);
  (void)runner.run(cmd({"curl", "http://user:hunter22@10.0.0.1/img"}));
  record.addSecret("tok3n-abcdef");
  record.addSecret("ab");  // too short to mask
  record.appendLogLine("INFO  agent: token tok3n-abcdef\n");
  std::string all;
  for (const auto& c : record.commands()) all += c.command + "\n" + c.out + c.err;
  all += record.log();
  CHECK_THAT(all, Catch::Contains("tool --password ******"));
  CHECK_THAT(all, Catch::Contains("curl http://10.0.0.1/******"));
  CHECK_THAT(all, !Catch::Contains("s3cret-pass"));
  CHECK_THAT(all, !Catch::Contains("hunter22"));
  CHECK_THAT(all, !Catch::Contains("tok3n-abcdef"));
  CHECK_THAT(all, Catch::Contains("token ******"));
}

TEST_CASE("the record is bounded: output per command, commands and log lines, oldest dropped",
          "[agent][diagnostics]") {
  test::FakeClock clock;
  StubRunner inner(clock, CommandOutput{0, std::string(300, 'o'), std::string(10, 'e')});
  RamdiskRecord record(RecordLimits{100, 1000, 50});
  RecordingCommandRunner runner(inner, record, clock);
  for (int i = 0; i < 10; ++i) (void)runner.run(cmd({"cmd" + std::to_string(i)}));
  auto commands = record.commands();
  REQUIRE_FALSE(commands.empty());
  CHECK(commands.size() < 10);
  CHECK(record.droppedCommands() == 10 - commands.size());
  CHECK(commands.back().command == "cmd9");  // the newest stay
  CHECK(commands.back().out.size() == 100);
  CHECK(commands.back().outDropped == 200);
  CHECK(commands.back().errDropped == 0);
  for (int i = 0; i < 10; ++i) record.appendLogLine("line " + std::to_string(i) + "\n");
  const std::string log = record.log();
  CHECK_THAT(log, Catch::StartsWith("[") && Catch::Contains("older log lines dropped]"));
  CHECK_THAT(log, Catch::Contains("line 9\n"));
  CHECK_THAT(log, !Catch::Contains("line 0\n"));
  CHECK(log.size() < 100);
}

TEST_CASE("the log bundle is a gzip'd tar of the agent's log, the commands and the machine's state",
          "[agent][diagnostics]") {
  test::FakeClock clock;
  test::TempDir root("kiln-bundle");
  std::filesystem::create_directories(root.path / "proc");
  std::ofstream(root.path / "proc" / "mdstat") << "Personalities : [raid1]\n";
  RootedSysfsReader sysfs(root.path.string());
  StubRunner steps(clock, CommandOutput{1, "", "sgdisk: bad disk http://u:p4ssw0rd@h/x\n"});
  RamdiskRecord record;
  RecordingCommandRunner runner(steps, record, clock);
  (void)runner.run(cmd({"sgdisk", "-Z", "/dev/vda"}));
  record.appendLogLine(
      "2026-01-01T00:00:00+00:00 ERROR agent: command failed error=\"checksum mismatch\"\n");
  record.addSecret("the-agent-token-0123456789");
  StubRunner tools(clock, CommandOutput{0, "tool output the-agent-token-0123456789\n", ""});
  auto bundle =
      buildLogBundle(BundleInputs{record, tools, sysfs, clock, {{"cpu", {{"count", 2}}}}});
  REQUIRE(bundle);
  auto tar = gunzip(*bundle, 64 << 20);
  REQUIRE(tar);
  auto members = listTar(*tar);
  REQUIRE(members);
  std::vector<std::string> names;
  for (const auto& m : *members) names.push_back(m.name);
  CHECK(names == std::vector<std::string>{"agent.log", "commands.log", "dmesg", "inventory.json",
                                          "ip_addr", "ip_route", "lsblk", "mdstat"});
  // The bundle's own tools ran through their runner, unrecorded.
  CHECK(tools.seen == std::vector<std::vector<std::string>>{
                          {"dmesg"}, {"ip", "addr"}, {"ip", "route"}, {"lsblk", "--all"}});
  CHECK(record.commands().size() == 1);
  CHECK_THAT(*tarMemberContent(*tar, "agent.log"), Catch::Contains("checksum mismatch"));
  const std::string commands = *tarMemberContent(*tar, "commands.log");
  CHECK_THAT(commands,
             Catch::Contains("=== 2026-01-01T00:00:00+00:00 sgdisk -Z /dev/vda\n"
                             "exit status 1, 0.000 s\n--- stdout\n--- stderr\nsgdisk: bad disk"));
  CHECK_THAT(*tarMemberContent(*tar, "mdstat"), Catch::Contains("raid1"));
  CHECK_THAT(*tarMemberContent(*tar, "inventory.json"), Catch::Contains("\"count\": 2"));
  CHECK_THAT(*tarMemberContent(*tar, "ip_addr"), Catch::Contains("tool output ******"));
  CHECK(tar->find("the-agent-token-0123456789") == std::string::npos);
  CHECK(tar->find("p4ssw0rd") == std::string::npos);
}

TEST_CASE("the log bundle is made whatever tools are missing", "[agent][diagnostics]") {
  test::FakeClock clock;
  RootedSysfsReader sysfs("/nonexistent-root");
  RamdiskRecord record;
  StubRunner tools(clock, {});
  tools.error = Error{ErrorCode::Unavailable, "cannot start lsblk: No such file or directory"};
  auto bundle = buildLogBundle(BundleInputs{record, tools, sysfs, clock});
  REQUIRE(bundle);
  auto tar = gunzip(*bundle, 64 << 20);
  REQUIRE(tar);
  CHECK_THAT(*tarMemberContent(*tar, "lsblk"),
             Catch::Contains("$ lsblk --all\ncannot start lsblk"));
  CHECK(*tarMemberContent(*tar, "mdstat") == "(no /proc/mdstat)\n");
}
