#include "agent/disk/wipefs.h"

namespace kiln::agent {
namespace {

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

}  // namespace

Result<CommandOutput> runChecked(CommandRunner& runner, Command command,
                                 const std::string& device) {
  CommandOutput out = KILN_TRY(runner.run(command));
  if (out.exitCode != 0) {
    std::string detail = trimmed(out.err);
    if (detail.empty()) detail = trimmed(out.out);
    return internalError(command.display() + " failed on " + device + " (exit " +
                         std::to_string(out.exitCode) + "): " + detail);
  }
  return out;
}

Result<void> Wipefs::wipeAll(const std::string& device) {
  Command command;
  command.argv = {"wipefs", "--force", "--all", device};
  KILN_TRY(runChecked(runner_, std::move(command), device));
  return {};
}

Result<void> Blkdiscard::discardAll(const std::string& device) {
  Command command;
  command.argv = {"blkdiscard", device};
  // NOTE(kiln): a discard of a large disk can take minutes on some controllers.
  command.timeout = std::chrono::hours(2);
  KILN_TRY(runChecked(runner_, std::move(command), device));
  return {};
}

}  // namespace kiln::agent
