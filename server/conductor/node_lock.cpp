#include "server/conductor/node_lock.h"

#include <exception>
#include <utility>

#include "server/model/node.h"
#include "shared/core/log.h"

namespace kiln::server {
namespace {

Logger lockLog(const std::string& uuid) { return Logger("conductor").with("node", uuid); }

/// Taking or giving back the lock writes these columns only (storage.h's rule).
const FieldMask& reservationColumns() {
  static const FieldMask mask = FieldMask().set(kNodeReservation).set(kNodeUpdatedAt);
  return mask;
}

}  // namespace

Result<void> NodeLock::checkFree(const Record& node) {
  if (!node[kNodeReservation].isNull()) return nodeLockedError(node);
  return {};
}

Result<void> NodeLock::reserve(Record& node, const std::string& host) {
  KILN_TRY_VOID(checkFree(node));
  node.setText(kNodeReservation, host);
  return {};
}

Result<NodeLock> NodeLock::acquire(Storage& storage, const Clock& clock, const std::string& uuid,
                                   const std::string& host, std::string purpose,
                                   const Precondition& precondition) {
  {
    auto tx = KILN_TRY(storage.begin(Storage::Mode::Write));
    auto node = KILN_TRY(tx->nodes().findBy(kNodeUuid, Value::text(uuid)));
    if (!node) return notFound("Node " + uuid + " could not be found.");
    KILN_TRY_VOID(checkFree(*node));
    if (precondition) KILN_TRY_VOID(precondition(*node));
    node->setText(kNodeReservation, host);
    node->setText(kNodeUpdatedAt, formatIsoTime(clock.now()));
    KILN_TRY_VOID(tx->nodes().updateFields(*node, reservationColumns()));
    KILN_TRY_VOID(tx->commit());
  }
  lockLog(uuid).debug("node reserved", {{"purpose", purpose}, {"host", host}});
  return NodeLock(storage, clock, uuid, host, std::move(purpose));
}

NodeLock NodeLock::adopt(Storage& storage, const Clock& clock, std::string uuid, std::string host,
                         std::string purpose) {
  lockLog(uuid).debug("node reservation taken over from the request",
                      {{"purpose", purpose}, {"host", host}});
  return NodeLock(storage, clock, std::move(uuid), std::move(host), std::move(purpose));
}

NodeLock::NodeLock(Storage& storage, const Clock& clock, std::string uuid, std::string host,
                   std::string purpose)
    : storage_(&storage),
      clock_(&clock),
      uuid_(std::move(uuid)),
      host_(std::move(host)),
      purpose_(std::move(purpose)),
      held_(true) {}

NodeLock::NodeLock(NodeLock&& other) noexcept
    : storage_(other.storage_),
      clock_(other.clock_),
      uuid_(std::move(other.uuid_)),
      host_(std::move(other.host_)),
      purpose_(std::move(other.purpose_)),
      held_(std::exchange(other.held_, false)) {}

NodeLock& NodeLock::operator=(NodeLock&& other) noexcept {
  if (this != &other) {
    release();
    storage_ = other.storage_;
    clock_ = other.clock_;
    uuid_ = std::move(other.uuid_);
    host_ = std::move(other.host_);
    purpose_ = std::move(other.purpose_);
    held_ = std::exchange(other.held_, false);
  }
  return *this;
}

NodeLock::~NodeLock() { release(); }

void NodeLock::releasedInSave() {
  if (!held_) return;
  held_ = false;
  lockLog(uuid_).debug("node released with the flow's last save", {{"purpose", purpose_}});
}

void NodeLock::release() {
  if (!held_) return;
  held_ = false;
  enum class Outcome { Released, Gone, NotOurs };
  try {
    std::string holder;
    auto done = [&]() -> Result<Outcome> {
      auto tx = KILN_TRY(storage_->begin(Storage::Mode::Write));
      auto node = KILN_TRY(tx->nodes().findBy(kNodeUuid, Value::text(uuid_)));
      if (!node) return Outcome::Gone;
      // Only while it is still ours: a takeover by another conductor is not undone.
      if ((*node)[kNodeReservation].isNull() || node->str(kNodeReservation) != host_) {
        holder = (*node)[kNodeReservation].isNull() ? "None" : node->str(kNodeReservation);
        return Outcome::NotOurs;
      }
      node->setNull(kNodeReservation);
      node->setText(kNodeUpdatedAt, formatIsoTime(clock_->now()));
      KILN_TRY_VOID(tx->nodes().updateFields(*node, reservationColumns()));
      KILN_TRY_VOID(tx->commit());
      return Outcome::Released;
    }();
    const Logger log = lockLog(uuid_);
    if (!done) {
      log.error("cannot release the node's reservation; it stays reserved",
                {{"purpose", purpose_}, {"error", done.error().message}});
    } else if (*done == Outcome::Released) {
      log.debug("node released", {{"purpose", purpose_}});
    } else if (*done == Outcome::Gone) {
      log.debug("node deleted while reserved", {{"purpose", purpose_}});
    } else {
      log.warning("node no longer reserved by this conductor; its reservation is left as it is",
                  {{"purpose", purpose_}, {"reservation", holder}});
    }
  } catch (const std::exception& e) {
    lockLog(uuid_).error("releasing the node's reservation threw", {{"error", e.what()}});
  } catch (...) {
    lockLog(uuid_).error("releasing the node's reservation threw something that is not a "
                         "std::exception");
  }
}

}  // namespace kiln::server
