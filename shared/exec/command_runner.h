// File: shared/exec/command_runner.h
//
// Every external tool (ipmitool, mdadm, sgdisk, qemu-img, ...) runs through a CommandRunner
// (house-style rule 14): an argv vector, never a shell line, with a timeout, LC_ALL=C, and
// stdout, stderr and the exit code captured. Production uses ProcessCommandRunner; tests use
// ReplayCommandRunner (tests/support), which serves recorded outputs and fails on any argv it
// did not expect.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "shared/core/error.h"

namespace kiln {

struct Command {
  std::vector<std::string> argv;  ///< argv[0] is the tool (looked up in PATH if it has no '/').
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
  std::optional<std::string> stdinData;
  /// Extra environment variables (for secrets a tool reads from its environment, such as
  /// ipmitool's IPMI_PASSWORD with -E, which keeps them out of argv and `ps`).
  std::vector<std::pair<std::string, std::string>> env;
  /// Text shown instead of argv in logs and errors (to keep passwords out of them); empty =
  /// argv joined with spaces.
  std::string displayName;

  std::string display() const;
};

struct CommandOutput {
  int exitCode = 0;
  std::string out;
  std::string err;
};

/// The message of a command that exited non-zero: "<command> failed[ on <device>] (exit N):
/// <its stderr, or its stdout when stderr is empty>", trimmed.
std::string failureMessage(const Command& command, const CommandOutput& output,
                           const std::string& device = {});

/// Runs external tools. Thread-safe.
class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  /// Runs the command to completion. Errors: Unavailable when argv[0] cannot be started,
  /// DeadlineExceeded when it outlives its timeout (it is killed). A non-zero exit is NOT an
  /// error here; callers decide what an exit code means.
  virtual Result<CommandOutput> run(const Command& command) = 0;
};
using CommandRunnerPtr = std::shared_ptr<CommandRunner>;

/// The real runner: posix_spawnp, pipes for stdin/stdout/stderr, poll() for the timeout,
/// SIGKILL on expiry, environment LC_ALL=C plus PATH plus Command::env.
class ProcessCommandRunner final : public CommandRunner {
 public:
  Result<CommandOutput> run(const Command& command) override;
};

}  // namespace kiln
