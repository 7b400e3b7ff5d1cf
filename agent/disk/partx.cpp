#include "agent/disk/partx.h"

#include "agent/disk/device_io.h"

namespace kiln::agent {

void rereadPartitions(StepContext& context, const std::string& device) {
  if (!isBlockDevice(device)) return;
  Command command;
  command.argv = {"partx", "-u", device};
  auto out = context.runner->run(command);
  if (!out || out->exitCode != 0) {
    context.log.warning("partx -u failed; the kernel may keep the old partition table",
                        {{"device", device}});
  }
}

}  // namespace kiln::agent
