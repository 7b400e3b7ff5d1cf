// File: server/conductor/conductor_registry.h
//
// This kiln-server's conductor in the database, and its view of the others (issue 15). Every
// kiln-server registers a row in the conductors table when it starts ([DEFAULT] host,
// [conductor] conductor_group, its hardware types), writes a heartbeat into it every
// [conductor] heartbeat_interval seconds from a thread of its own, and marks it offline when it
// stops. A conductor is alive while its row is online and its heartbeat is younger than
// [conductor] heartbeat_timeout (by this server's clock).
//
// From the rows it reads, refresh() builds the hash ring of the live conductors (hash_ring.h):
// the node's owner runs its flows, its timers and its power sync; the conductors that are
// registered but dead are the ones whose reservations the owners take over. This server always
// counts itself as alive, so a single server owns every node whatever its database says.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/conductor/hash_ring.h"
#include "server/config.h"
#include "server/schema/record.h"
#include "server/storage/storage.h"
#include "shared/core/clock.h"
#include "shared/core/error.h"
#include "shared/core/log.h"

namespace kiln::server {

/// One conductor as GET /v1/conductors shows it.
struct ConductorInfo {
  std::string hostname;
  std::string group;
  std::vector<std::string> drivers;
  bool alive = false;
  std::string createdAt;  ///< "" when unknown
  std::string updatedAt;
};

class ConductorRegistry {
 public:
  struct Deps {
    Storage& storage;
    const Config& config;
    const Clock& clock;
    std::vector<std::string> drivers;  ///< the hardware types this server enables
  };

  explicit ConductorRegistry(Deps deps);
  ~ConductorRegistry();

  /// Writes this conductor's row (created, or taken over from an earlier run of the same host):
  /// online, heartbeat now, group and drivers as configured; then refresh().
  Result<void> registerSelf();
  /// One heartbeat: the row's updated_at = now (re-created if someone deleted it).
  Result<void> heartbeat();
  /// Marks the row offline (a clean stop): the others stop counting on this server at once.
  Result<void> unregister();

  /// Starts the heartbeat thread: heartbeat() then refresh() every heartbeat_interval seconds.
  void startHeartbeats();
  /// Stops it (idempotent).
  void stopHeartbeats();

  /// Re-reads the conductors table: the ring of the live conductors and the dead ones.
  Result<void> refresh();

  /// Every registered conductor, sorted by host name, with `alive` as of now. This server is
  /// listed even before its row is written.
  Result<std::vector<ConductorInfo>> list();

  /// The conductor that owns `node` by the last refresh() (its conductor_group and UUID).
  std::string ownerOf(const Record& node) const;
  /// Whether this server owns `node`.
  bool owns(const Record& node) const { return ownerOf(node) == deps_.config.host; }
  /// Registered conductors that are not alive by the last refresh(): the ones whose
  /// reservations are taken over. Never this server.
  std::vector<std::string> deadConductors() const;
  /// The live conductors by the last refresh() (this server included), sorted.
  std::vector<std::string> liveConductors() const;

  /// Whether a row says its conductor is alive at `now`.
  bool isAlive(const Record& row, std::chrono::system_clock::time_point now) const;

 private:
  Result<void> writeRow(bool online);
  void heartbeatLoop();

  Deps deps_;
  Logger log_{"conductor"};
  mutable std::mutex mutex_;
  std::shared_ptr<const HashRing> ring_;
  std::vector<std::string> dead_;
  std::thread thread_;
  std::mutex threadMutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
};

}  // namespace kiln::server
