// File: tests/support/replay_command_runner.h
//
// The test side of the CommandRunner seam (house-style rule 14): a runner that serves an ordered
// script of expected commands and their recorded outputs, and fails the test on any command it
// did not expect, printing a diff of the expected and actual argv. Tool-agnostic: ipmitool,
// mdadm, sgdisk ... tests all script it the same way.
//
// Recorded outputs live in tests/data/commands/<tool>/<name>.txt, in this format:
//
//   # ipmitool 1.8.19, lanplus, BMC unreachable      <- optional comment lines
//   exit: 1                                          <- optional, default 0
//   ==> stdout <==
//   ...the tool's stdout, byte for byte...
//   ==> stderr <==
//   ...the tool's stderr...
//
// Each section runs from the line after its marker up to the next marker (or the end of the
// file), newlines included. Either section may be absent (empty output).
#pragma once

#include <cstddef>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "shared/core/error.h"
#include "shared/exec/command_runner.h"

namespace kiln::test {

/// The directory holding test data (tests/data in the source tree). KILN_TEST_DATA_DIR in the
/// environment overrides it (for running an installed test binary elsewhere).
std::filesystem::path testDataDir();

/// The repository's root (the source tree this test binary was built from).
std::filesystem::path sourceDir();

/// A path under tests/data, e.g. testDataPath("commands/ipmitool/power_status_on.txt").
std::filesystem::path testDataPath(std::string_view relative);

/// Parses the recorded-output format above. InvalidArgument for a malformed header (an unknown
/// key, a non-numeric exit code, a duplicated section).
Result<CommandOutput> parseRecordedOutput(std::string_view text);

/// Loads and parses a recorded output; `relative` is under tests/data/commands/
/// ("ipmitool/power_status_on.txt"). NotFound when the file does not exist.
Result<CommandOutput> loadRecordedOutput(std::string_view relative);

/// Like loadRecordedOutput, but fails the current test (Catch2 FAIL) when the fixture cannot
/// be loaded. For use inside TEST_CASEs.
CommandOutput recordedOutput(std::string_view relative);

/// One step of a script: the command expected next and what to answer.
struct ExpectedCommand {
  std::vector<std::string> argv;
  /// When set, the command's Command::env must equal it (order-insensitive).
  std::optional<std::vector<std::pair<std::string, std::string>>> env;
  /// When set, the command's Command::stdinData must equal it.
  std::optional<std::string> stdinData;
  /// What the tool "printed" and its exit code.
  CommandOutput output;
  /// When set, run() returns this error instead of `output` (a missing binary, a timeout).
  std::optional<Error> error;
};

/// A CommandRunner that replays a script. Commands must arrive in script order; each one is
/// matched against the next expectation. A mismatch (or a command after the script ran out)
/// returns an Internal error whose message shows the expected and actual argv and a line diff
/// of the two, records the failure, and, when it happens on the thread that created the
/// runner, also fails the current Catch2 test (FAIL_CHECK), so code that swallows errors
/// cannot hide it. Thread-safe.
///
/// The whole script must run: when the runner is destroyed (on the thread that created it,
/// and not while an exception unwinds the test, e.g. a failed REQUIRE) with expectations that
/// never ran, or with mismatches seen on other threads, it fails the current test
/// (FAIL_CHECK) listing them. allowUnconsumed() turns that off for a test that stops the
/// script early on purpose.
class ReplayCommandRunner final : public CommandRunner {
 public:
  ReplayCommandRunner();
  ~ReplayCommandRunner() override;
  ReplayCommandRunner(const ReplayCommandRunner&) = delete;
  ReplayCommandRunner& operator=(const ReplayCommandRunner&) = delete;

  /// Appends an expectation; returns *this for chaining.
  ReplayCommandRunner& expect(ExpectedCommand command);
  /// Appends an expectation that answers `output`.
  ReplayCommandRunner& expect(std::vector<std::string> argv, CommandOutput output);
  /// Appends an expectation that answers the recorded output `fixture` (see
  /// loadRecordedOutput); fails the test when the fixture cannot be loaded.
  ReplayCommandRunner& expect(std::vector<std::string> argv, std::string_view fixture);

  /// Whether a mismatch should also FAIL_CHECK the running test (default true). Turn it off
  /// only to test the mismatch report itself.
  void setFailTestOnMismatch(bool fail);

  /// Expectations left over at destruction are not a failure (a test that scripts more than
  /// the code under test may run). Mismatches still are.
  void allowUnconsumed();

  Result<CommandOutput> run(const Command& command) override;

  /// True when every expectation was consumed and no command mismatched.
  bool allConsumed() const;
  /// Human-readable state for a failed allConsumed(): the expectations never run and the
  /// mismatches seen.
  std::string describeRemaining() const;
  /// Every command run() received, in order (matched or not).
  std::vector<Command> received() const;
  /// How many expectations are still waiting.
  size_t remaining() const;

 private:
  mutable std::mutex mutex_;
  std::vector<ExpectedCommand> script_;
  size_t next_ = 0;
  std::vector<Command> received_;
  std::vector<std::string> mismatches_;
  size_t reportedMismatches_ = 0;  ///< mismatches already FAIL_CHECKed by run()
  bool failTest_ = true;
  bool allowUnconsumed_ = false;
  std::thread::id owner_;
};

/// Catch2 helper: CHECKs that `runner` consumed its whole script, showing what is left (the
/// runner's destructor checks it too; this is for a check part-way through a test).
void checkAllConsumed(const ReplayCommandRunner& runner);

/// A line diff of two argv vectors ("  same", "- expected only", "+ actual only"), for
/// mismatch messages. Pure.
std::string diffArgv(const std::vector<std::string>& expected,
                     const std::vector<std::string>& actual);

/// argv joined with spaces, elements with spaces or quotes shown quoted. Pure.
std::string joinArgv(const std::vector<std::string>& argv);

}  // namespace kiln::test
