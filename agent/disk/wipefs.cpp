#include "agent/disk/wipefs.h"

namespace kiln::agent {
Result<CommandOutput> runChecked(CommandRunner& runner, Command command,
                                 const std::string& device) {
  CommandOutput out = KILN_TRY(runner.run(command));
  if (out.exitCode != 0) return internalError(failureMessage(command, out, device));
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
