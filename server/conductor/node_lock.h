// File: server/conductor/node_lock.h
//
// A node's exclusive lock (house-style rule 20; Ironic's TaskManager reservation). The node's
// `reservation` column names the conductor (its [DEFAULT] host) working on the node; a NodeLock
// is the one owner of that reservation in this process and gives it back when it goes.
//
// Taking it is a check-and-set in one write transaction: the row is read under its lock
// (findBy: SQLite's serialised BEGIN IMMEDIATE, PostgreSQL's row lock), checked free, and its
// reservation column written (reservation IS NULL -> host), so it is correct across processes
// sharing one database. Giving it back clears the reservation only while it still names this
// host, again in one short transaction of its own.
//
// Three ways to hold one:
//  - acquire(): the lock's own transaction (periodic tasks, synchronous management calls);
//  - reserve() + adopt(): an API request reserves the node in its own transaction, with the
//    state change it commits, and the worker it queues adopts that reservation;
//  - a flow that ends or parks in a wait state clears the reservation in the same save that
//    records its last state (the agent, the API and the timers can act on the node as soon as
//    it is committed) and then tells its lock with releasedInSave().
//
// Never destroy or release a NodeLock while the same thread has a transaction open: the
// in-memory SQLite store serialises every transaction, so that would wait on itself.
#pragma once

#include <functional>
#include <string>

#include "server/schema/record.h"
#include "server/storage/storage.h"
#include "shared/core/clock.h"
#include "shared/core/error.h"

namespace kiln::server {

class NodeLock {
 public:
  /// Checked by acquire() in its transaction once the node is known to be free: an error
  /// refuses the lock (it is returned as is) and nothing is written.
  using Precondition = std::function<Result<void>(const Record& node)>;

  /// Conflict with Ironic's NodeLocked message ("Node U is locked by host H, please retry
  /// after the current operation is completed.") when `node` is reserved by anyone, this
  /// conductor included.
  static Result<void> checkFree(const Record& node);

  /// The compare-and-set inside the caller's write transaction: checkFree(), then `host` in
  /// `node`'s reservation. The caller saves the row and commits; its worker then adopt()s the
  /// reservation.
  static Result<void> reserve(Record& node, const std::string& host);

  /// Reserves node `uuid` for `host` in one short write transaction. NotFound ("Node U could
  /// not be found.") for an unknown node, Conflict (checkFree) when it is reserved,
  /// `precondition`'s error when that refuses; otherwise database errors. `purpose` names the
  /// work in the log. Sets updated_at, as any save of the node does.
  static Result<NodeLock> acquire(Storage& storage, const Clock& clock, const std::string& uuid,
                                  const std::string& host, std::string purpose,
                                  const Precondition& precondition = {});

  /// Takes over the reservation `host` holds on node `uuid`, committed by the caller (reserve()
  /// in an API request's transaction). No database access; the lock then releases as any other.
  static NodeLock adopt(Storage& storage, const Clock& clock, std::string uuid, std::string host,
                        std::string purpose);

  /// A lock that holds nothing.
  NodeLock() = default;
  NodeLock(const NodeLock&) = delete;
  NodeLock& operator=(const NodeLock&) = delete;
  /// The moved-from lock holds nothing afterwards.
  NodeLock(NodeLock&& other) noexcept;
  /// Releases what this lock held, then takes over `other`'s.
  NodeLock& operator=(NodeLock&& other) noexcept;
  /// release().
  ~NodeLock();

  /// Whether this lock still holds its node's reservation.
  bool held() const { return held_; }
  const std::string& uuid() const { return uuid_; }
  const std::string& host() const { return host_; }

  /// The caller's own save cleared the reservation and committed (a flow's last state, or its
  /// move to a wait or hold state): the lock no longer holds the node and will not write
  /// again. Call it only after that commit: until then the lock still owns the reservation and
  /// releases it itself if the save failed.
  void releasedInSave();

  /// Clears the reservation in a short write transaction of its own if it still names this
  /// host (another conductor may have taken the node over meanwhile: that is left alone).
  /// Never throws: a failure is logged, and the lock holds nothing afterwards either way.
  /// Idempotent.
  void release();

 private:
  NodeLock(Storage& storage, const Clock& clock, std::string uuid, std::string host,
           std::string purpose);

  Storage* storage_ = nullptr;
  const Clock* clock_ = nullptr;
  std::string uuid_;
  std::string host_;
  std::string purpose_;
  bool held_ = false;
};

}  // namespace kiln::server
