// File: agent/disk/wipefs.h
//
// Thin typed wrappers over wipefs and blkdiscard through the CommandRunner seam.
#pragma once

#include <string>

#include "shared/core/error.h"
#include "shared/exec/command_runner.h"

namespace kiln::agent {

/// Runs util-linux's wipefs. Thread-safe.
class Wipefs {
 public:
  explicit Wipefs(CommandRunner& runner) : runner_(runner) {}
  /// `wipefs --force --all DEVICE`: erases every file system, RAID and partition-table
  /// signature. Internal "... failed on DEVICE (exit N): <stderr>" on a non-zero exit.
  Result<void> wipeAll(const std::string& device);

 private:
  CommandRunner& runner_;
};

/// Runs util-linux's blkdiscard. Thread-safe.
class Blkdiscard {
 public:
  explicit Blkdiscard(CommandRunner& runner) : runner_(runner) {}
  /// `blkdiscard DEVICE`: discards every sector. Internal on a non-zero exit (e.g. the device
  /// does not support discard after all).
  Result<void> discardAll(const std::string& device);

 private:
  CommandRunner& runner_;
};

/// Runs a tool and turns a non-zero exit into Internal "<argv> failed on DEVICE (exit N):
/// <stderr>". Used by the wrappers above.
Result<CommandOutput> runChecked(CommandRunner& runner, Command command, const std::string& device);

}  // namespace kiln::agent
