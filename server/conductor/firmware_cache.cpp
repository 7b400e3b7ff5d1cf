#include "server/conductor/firmware_cache.h"
#include "server/storage/queries/firmware_components.h"

namespace kiln::server {

void cacheFirmwareComponents(TaskContext& task, Storage& storage, const Clock& clock) {
  auto* firmware = task.driver
                       ? dynamic_cast<FirmwareInterface*>(task.driver->get(InterfaceType::Firmware))
                       : nullptr;
  if (!firmware || firmware->isNoop()) return;
  if (auto reason = firmware->validate(task)) {
    task.log.warning("firmware components not cached: the firmware interface is not set up",
                     {{"node", task.uuid()}, {"reason", *reason}});
    return;
  }
  auto components = firmware->cacheFirmwareComponents(task);
  if (!components) {
    if (components.error().code == ErrorCode::Unimplemented) {
      task.log.warning("firmware components are not supported for the node; skipping",
                       {{"node", task.uuid()}, {"reason", components.error().message}});
    } else {
      task.log.warning("caching of the firmware components failed",
                       {{"node", task.uuid()}, {"error", components.error().message}});
    }
    return;
  }
  auto cached = [&]() -> Result<void> {
    auto tx = KILN_TRY(storage.begin(Storage::Mode::Write));
    KILN_TRY_VOID(
        syncFirmwareComponents(*tx, task.node.id(), *components, formatIsoTime(clock.now())));
    return tx->commit();
  }();
  if (!cached) {
    task.log.warning("caching of the firmware components failed",
                     {{"node", task.uuid()}, {"error", cached.error().message}});
  }
}

}  // namespace kiln::server
