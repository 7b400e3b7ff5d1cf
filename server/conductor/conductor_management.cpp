// The management features beyond the boot device, as Ironic's conductor runs them: boot mode
// and secure boot changes (API 1.76; Ironic's change_node_boot_mode / change_node_secure_boot
// and their workers node_change_boot_mode / node_change_secure_boot), inject NMI (1.29), the
// indicators (1.63), and node_cache_boot_mode (called after verify and the power-state sync).
#include "server/conductor/conductor.h"
#include "server/conductor/conductor_detail.h"
#include "server/conductor/node_events_recorder.h"
#include "server/model/node.h"

namespace kiln::server {
namespace {

using Mode = Storage::Mode;

std::string pyBool(bool b) { return b ? "True" : "False"; }

std::unexpected<Error> managementInvalid(const std::string& uuid, const std::string& reason) {
  return invalid("Failed to validate management for node " + uuid + ": " + reason);
}

}  // namespace

// ---- asynchronous: boot mode and secure boot ----------------------------------------------------

Result<void> Conductor::setBootMode(const std::string& uuid, const std::string& mode) {
  {
    auto tx = KILN_TRY(deps_.storage.begin(Mode::Write));
    TaskContext task = KILN_TRY(tasks_.load(*tx, uuid));
    KILN_TRY_VOID(NodeLock::checkFree(task.node));
    auto driver = KILN_TRY(driverFor(task.node));
    task.driver = &driver;
    if (auto reason = driver.management->validate(task)) return managementInvalid(uuid, *reason);
    // A new operation: the previous error goes (a failure puts its own there).
    task.node.setNull(kNodeLastError);
    KILN_TRY_VOID(NodeLock::reserve(task.node, host()));
    KILN_TRY_VOID(tasks_.save(*tx, task));
    KILN_TRY_VOID(tx->commit());
  }
  submit(adoptLock(uuid, "boot mode change"),
         [this, mode](NodeLock& lock) { changeBootMode(lock, mode); });
  return {};
}

Result<void> Conductor::setSecureBoot(const std::string& uuid, bool enabled) {
  {
    auto tx = KILN_TRY(deps_.storage.begin(Mode::Write));
    TaskContext task = KILN_TRY(tasks_.load(*tx, uuid));
    KILN_TRY_VOID(NodeLock::checkFree(task.node));
    auto driver = KILN_TRY(driverFor(task.node));
    task.driver = &driver;
    if (auto reason = driver.management->validate(task)) return managementInvalid(uuid, *reason);
    task.node.setNull(kNodeLastError);
    KILN_TRY_VOID(NodeLock::reserve(task.node, host()));
    KILN_TRY_VOID(tasks_.save(*tx, task));
    KILN_TRY_VOID(tx->commit());
  }
  submit(adoptLock(uuid, "secure boot change"),
         [this, enabled](NodeLock& lock) { changeSecureBoot(lock, enabled); });
  return {};
}

void Conductor::changeBootMode(NodeLock& lock, const std::string& mode) {
  // Ironic's wording, its missing quote included.
  runLocked(lock, {"cannot record the boot mode change", "Failed to change boot mode to '" + mode, {}, {}},
            [&](TaskContext& task, FieldMask& extra) -> Result<void> {
              ManagementInterface& management = *task.driver->management;
              auto current = management.getBootMode(task);
              if (!current) {
                task.log.warning("cannot read the boot mode before changing it",
                                 {{"error", current.error().message}});
              } else if (*current && **current == mode) {
                task.log.info("boot mode already as requested; no change made",
                              {{"boot_mode", mode}});
                return {};
              }
              KILN_TRY_VOID(management.setBootMode(task, mode));
              task.log.info("boot mode changed", {{"boot_mode", mode}});
              task.node.setText(kNodeBootMode, mode);
              extra.set(kNodeBootMode);
              return {};
            });
}

void Conductor::changeSecureBoot(NodeLock& lock, bool enabled) {
  runLocked(lock,
            {"cannot record the secure boot change",
             "Failed to change secure_boot state to '" + pyBool(enabled) + "'", {}, {}},
            [&](TaskContext& task, FieldMask& extra) -> Result<void> {
              ManagementInterface& management = *task.driver->management;
              auto current = management.getSecureBoot(task);
              if (!current) {
                task.log.warning("cannot read the secure boot state before changing it",
                                 {{"error", current.error().message}});
              } else if (*current && **current == enabled) {
                task.log.info("secure boot already as requested; no change made",
                              {{"secure_boot", pyBool(enabled)}});
                return {};
              }
              KILN_TRY_VOID(management.setSecureBoot(task, enabled));
              task.log.info("secure boot changed", {{"secure_boot", pyBool(enabled)}});
              task.node.setBool(kNodeSecureBoot, enabled);
              extra.set(kNodeSecureBoot);
              return {};
            });
}

// ---- synchronous: NMI and indicators
// -------------------------------------------------------------

Result<void> Conductor::withManagementLock(const std::string& uuid,
                                           const std::function<Result<void>(TaskContext&)>& body) {
  events::BmcRequestJournal bmc(deps_.storage, {deps_.clock, host()}, uuid);
  NodeLock lock = KILN_TRY(lockNode(uuid, "management call"));
  TaskContext task = KILN_TRY(tasks_.loadFresh(uuid));
  task.heldBy = host();
  task.onReleased = [&lock] { lock.releasedInSave(); };
  auto run = [&]() -> Result<void> {
    auto driver = KILN_TRY(driverFor(task.node));
    task.driver = &driver;
    if (auto reason = driver.management->validate(task)) return managementInvalid(uuid, *reason);
    return body(task);
  };
  Result<void> result = run();
  task.driver = nullptr;
  KILN_TRY_VOID(tasks_.saveReleasing(task));
  return result;
}

Result<void> Conductor::injectNmi(const std::string& uuid) {
  return withManagementLock(uuid, [](TaskContext& task) -> Result<void> {
    KILN_TRY_VOID(task.driver->management->injectNmi(task));
    task.log.info("NMI injected");
    return {};
  });
}

Result<ManagementInterface::Indicators> Conductor::supportedIndicators(const std::string& uuid) {
  events::BmcRequestJournal bmc(deps_.storage, {deps_.clock, host()}, uuid);
  TaskContext task = KILN_TRY(tasks_.loadFresh(uuid));
  auto driver = KILN_TRY(driverFor(task.node));
  task.driver = &driver;
  return driver.management->supportedIndicators(task, "");
}

Result<std::string> Conductor::getIndicatorState(const std::string& uuid,
                                                 const std::string& component,
                                                 const std::string& indicator) {
  std::string state;
  KILN_TRY_VOID(withManagementLock(uuid, [&](TaskContext& task) -> Result<void> {
    state = KILN_TRY(task.driver->management->getIndicatorState(task, component, indicator));
    return {};
  }));
  return state;
}

Result<void> Conductor::setIndicatorState(const std::string& uuid, const std::string& component,
                                          const std::string& indicator, const std::string& state) {
  return withManagementLock(uuid, [&](TaskContext& task) {
    return task.driver->management->setIndicatorState(task, component, indicator, state);
  });
}

// ---- node_cache_boot_mode ----------------------------------------------------------------------

FieldMask Conductor::cacheBootMode(TaskContext& task) {
  if (!task.driver || !task.driver->management) return {};
  ManagementInterface& management = *task.driver->management;
  std::optional<std::string> mode;
  if (auto got = management.getBootMode(task)) {
    mode = *got;
  } else if (!got.error().is(Reason::Unsupported)) {
    task.log.warning("cannot read the boot mode", {{"error", got.error().message}});
    return {};
  }
  std::optional<bool> secure;
  if (auto got = management.getSecureBoot(task)) {
    secure = *got;
  } else if (!got.error().is(Reason::Unsupported)) {
    task.log.warning("cannot read the secure boot state", {{"error", got.error().message}});
    return {};
  }
  const Record& node = task.node;
  const std::optional<bool> recordedSecure = node[kNodeSecureBoot].isNull()
                                                 ? std::nullopt
                                                 : std::optional<bool>(node.flag(kNodeSecureBoot));
  if (mode == node.optStr(kNodeBootMode) && secure == recordedSecure) return {};
  if (mode)
    task.node.setText(kNodeBootMode, *mode);
  else
    task.node.setNull(kNodeBootMode);
  if (secure)
    task.node.setBool(kNodeSecureBoot, *secure);
  else
    task.node.setNull(kNodeSecureBoot);
  task.log.info(
      "boot mode and secure boot state cached",
      {{"boot_mode", mode.value_or("None")}, {"secure_boot", secure ? pyBool(*secure) : "None"}});
  FieldMask changed;
  changed.set(kNodeBootMode).set(kNodeSecureBoot);
  return changed;
}

}  // namespace kiln::server
