// File: server/conductor/dhcp_sync.h
//
// Keeps the provisioning network's DHCP entries in line with the database on the kiln-server
// that serves DHCP (`[dhcp] dhcp_provider = dnsmasq`): at start and then every
// [dnsmasq] sync_interval seconds it reads every node and port and hands them to the provider's
// syncAll (server/drivers/dhcp/dhcp_provider.h). That is what makes the entries right whichever
// conductor drives a node: a node another server prepares, or took over, gets its entry here
// within one interval; the node's own conductor also writes it at once on its own machine.
// Maintenance set through the API, a failure saved without the node's ports and a deleted node
// end their entries the same way.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "server/drivers/dhcp/dhcp_provider.h"
#include "server/storage/storage.h"
#include "shared/core/log.h"

namespace kiln::server {

class DhcpSync {
 public:
  DhcpSync(Storage& storage, DhcpProvider& provider, int intervalSeconds)
      : storage_(storage), provider_(provider), interval_(intervalSeconds) {}
  ~DhcpSync() { stop(); }
  DhcpSync(const DhcpSync&) = delete;
  DhcpSync& operator=(const DhcpSync&) = delete;

  /// One pass: every node and port read in one read transaction, then syncAll.
  Result<void> syncOnce();
  /// syncOnce() now (its error is returned: a start-up that cannot write the files fails), then
  /// the thread that repeats it.
  Result<void> start();
  void stop();
  uint64_t passes() const;

 private:
  Storage& storage_;
  DhcpProvider& provider_;
  int interval_;
  Logger log_{"dhcp"};
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_;
  bool stopping_ = false;
  uint64_t passes_ = 0;
};

}  // namespace kiln::server
