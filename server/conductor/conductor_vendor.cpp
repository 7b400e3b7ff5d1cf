// Vendor passthru (Ironic's ConductorManager.vendor_passthru and
// get_node_vendor_passthru_methods): methods of the node's vendor interface.
#include <algorithm>

#include "server/conductor/conductor.h"
#include "server/conductor/conductor_detail.h"
#include "server/conductor/node_events_recorder.h"
#include "server/model/node.h"

namespace kiln::server {
namespace {

using Mode = Storage::Mode;
using nlohmann::json;

/// The end of an exclusive method: its changes to the node are saved and the node given up.
void releaseAfterCall(const TaskStore& tasks, TaskContext& task, NodeLock& lock) {
  task.onReleased = [&lock] { lock.releasedInSave(); };
  if (auto saved = tasks.saveReleasing(task); !saved) {
    task.log.error("cannot release the node after a vendor method",
                   {{"error", saved.error().message}});
  }
}

Result<VendorInterface*> vendorOf(const NodeDriver& driver, const Record& node) {
  auto* vendor = dynamic_cast<VendorInterface*>(driver.get(InterfaceType::Vendor));
  if (vendor == nullptr) {
    return invalid("Driver " + node.str(kNodeDriver) +
                   " does not support vendor (disabled or not implemented).");
  }
  return vendor;
}

}  // namespace

Result<json> Conductor::vendorMethods(const std::string& uuid) {
  auto tx = KILN_TRY(deps_.storage.begin(Mode::Read));
  TaskContext task = KILN_TRY(tasks_.load(*tx, uuid));
  tx.reset();
  const NodeDriver driver = KILN_TRY(driverFor(task.node));
  VendorInterface* vendor = KILN_TRY(vendorOf(driver, task.node));
  json out = json::object();
  for (const auto& m : vendor->methods()) {
    json http = json::array();
    for (auto h : m.httpMethods) http.push_back(std::string(h));
    out[std::string(m.name)] = {{"http_methods", http},
                                {"async", m.async},
                                {"description", std::string(m.description)},
                                {"attach", m.attach},
                                {"require_exclusive_lock", m.requireExclusiveLock}};
  }
  return out;
}

Result<VendorCallResult> Conductor::vendorPassthru(const std::string& uuid,
                                                   const std::string& method,
                                                   const std::string& httpMethod,
                                                   const json& args) {
  events::BmcRequestJournal bmc(deps_.storage, {deps_.clock, host()}, uuid);
  TaskContext task;
  NodeDriver driver;
  VendorInterface* vendor = nullptr;
  const VendorMethod* spec = nullptr;
  NodeLock lock;
  {
    auto tx = KILN_TRY(deps_.storage.begin(Mode::Write));
    task = KILN_TRY(tasks_.load(*tx, uuid));
    driver = KILN_TRY(driverFor(task.node));
    task.driver = &driver;
    vendor = KILN_TRY(vendorOf(driver, task.node));
    const auto methods = vendor->methods();
    const auto it = std::find_if(methods.begin(), methods.end(),
                                 [&](const VendorMethod& m) { return m.name == method; });
    if (it == methods.end()) return invalid("No handler for method " + method);
    spec = &*it;
    if (std::find(spec->httpMethods.begin(), spec->httpMethods.end(), httpMethod) ==
        spec->httpMethods.end()) {
      return invalid("The method " + method + " does not support HTTP " + httpMethod);
    }
    if (spec->requireExclusiveLock) KILN_TRY_VOID(NodeLock::checkFree(task.node));
    if (auto reason = vendor->validateCall(task, method, args)) return invalid(*reason);
    if (spec->requireExclusiveLock) {
      KILN_TRY_VOID(NodeLock::reserve(task.node, host()));
      KILN_TRY_VOID(tasks_.save(*tx, task));
      KILN_TRY_VOID(tx->commit());
    }
  }
  if (spec->requireExclusiveLock) lock = adoptLock(uuid, "vendor passthru " + method);
  // An exclusive method's changes to the node are saved, and the node released, at its end.
  if (spec->async) {
    auto job = [this, vendor, method, httpMethod, args, task = std::move(task),
                driver](NodeLock* held) mutable {
      task.driver = &driver;
      if (auto done = vendor->call(task, method, httpMethod, args); !done) {
        task.log.error("vendor passthru failed",
                       {{"method", method}, {"error", done.error().message}});
      }
      if (held) releaseAfterCall(tasks_, task, *held);
    };
    if (lock.held()) {
      submit(std::move(lock), [job](NodeLock& held) mutable { job(&held); });
    } else {
      submitUnlocked(uuid, [job]() mutable { job(nullptr); });
    }
    return VendorCallResult{json(), true, spec->attach};
  }
  auto result = vendor->call(task, method, httpMethod, args);
  if (lock.held()) releaseAfterCall(tasks_, task, lock);
  if (!result) return std::unexpected(result.error());
  return VendorCallResult{std::move(*result), false, spec->attach};
}

}  // namespace kiln::server
