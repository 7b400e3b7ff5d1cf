// Virtual media through the node's management interface (API 1.89 attach/detach, 1.93 list),
// as Ironic's conductor: attach and detach hold the node's lock and run in a worker (the API
// answers 204 at once); a failure is left in last_error and the node's history.
#include "server/conductor/conductor.h"
#include "server/conductor/node_events_recorder.h"
#include "server/model/node.h"

namespace kiln::server {

using Mode = Storage::Mode;

Result<void> Conductor::startManagementAction(const std::string& uuid, const std::string& user,
                                              std::string failure,
                                              std::function<Result<void>(TaskContext&)> body) {
  {
    auto tx = KILN_TRY(deps_.storage.begin(Mode::Write));
    TaskContext task = KILN_TRY(tasks_.load(*tx, uuid));
    KILN_TRY_VOID(NodeLock::checkFree(task.node));
    if (task.node.flag(kNodeMaintenance) && task.node.str(kNodeFault) == "power failure") {
      return fail(ErrorCode::Unavailable,
                  "Node " + uuid + " is in maintenance because of a power failure; try again "
                  "when the BMC can be reached.");
    }
    auto driver = KILN_TRY(driverFor(task.node));
    task.driver = &driver;
    if (!driver.management->hasVirtualMedia()) {
      return ManagementInterface::unsupported(task, failure.find("attach") != std::string::npos
                                                        ? "attach_virtual_media"
                                                        : "detach_virtual_media");
    }
    if (auto reason = driver.management->validate(task)) {
      return invalid("Failed to validate management for node " + uuid + ": " + *reason);
    }
    KILN_TRY_VOID(NodeLock::reserve(task.node, host()));
    KILN_TRY_VOID(tasks_.save(*tx, task));
    KILN_TRY_VOID(tx->commit());
  }
  submit(adoptLock(uuid, "virtual media"),
         [this, action = LockedAction{"cannot record the virtual media action", std::move(failure),
                                      history_event::kConductor, user},
          body = std::move(body)](NodeLock& lock) {
           runLocked(lock, action, [&](TaskContext& task, FieldMask&) { return body(task); });
         });
  return {};
}

Result<void> Conductor::attachVirtualMedia(const std::string& uuid, const std::string& deviceType,
                                           const std::string& url,
                                           const std::string& downloadSource,
                                           const std::string& user) {
  return startManagementAction(
      uuid, user, "Could not attach device " + deviceType + " to node " + uuid,
      [deviceType, url, downloadSource](TaskContext& task) {
        return task.driver->management->attachVirtualMedia(task, deviceType, url, downloadSource);
      });
}

Result<void> Conductor::detachVirtualMedia(const std::string& uuid,
                                           const std::vector<std::string>& deviceTypes,
                                           const std::string& user) {
  return startManagementAction(uuid, user, "Could not detach virtual media from node " + uuid,
                               [deviceTypes](TaskContext& task) {
                                 return task.driver->management->detachVirtualMedia(task,
                                                                                   deviceTypes);
                               });
}

Result<std::vector<ManagementInterface::VirtualMedia>> Conductor::getVirtualMedia(
    const std::string& uuid) {
  events::BmcRequestJournal bmc(deps_.storage, {deps_.clock, host()}, uuid);
  TaskContext task;
  {
    auto tx = KILN_TRY(deps_.storage.begin(Mode::Read));
    task = KILN_TRY(tasks_.load(*tx, uuid));
  }
  auto driver = KILN_TRY(driverFor(task.node));
  task.driver = &driver;
  if (!driver.management->hasVirtualMedia()) {
    return ManagementInterface::unsupported(task, "get_virtual_media");
  }
  if (auto reason = driver.management->validate(task)) {
    return invalid("Failed to validate management for node " + uuid + ": " + *reason);
  }
  return driver.management->getVirtualMedia(task);
}

}  // namespace kiln::server
