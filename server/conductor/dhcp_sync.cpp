#include "server/conductor/dhcp_sync.h"

#include <map>

#include <nlohmann/json.hpp>

#include "server/model/node.h"
#include "server/model/resources.h"
#include "shared/json/json_util.h"

namespace kiln::server {

Result<void> DhcpSync::syncOnce() {
  std::vector<DhcpNode> nodes;
  {
    auto tx = KILN_TRY(storage_.begin(Storage::Mode::Read));
    ListQuery all;
    all.limit = 0;
    const auto ports = KILN_TRY(tx->ports().list(all));
    std::map<std::string, std::vector<Record>> byNode;
    for (const auto& port : ports) {
      if (!port[kPortNodeUuid].isNull()) byNode[port.str(kPortNodeUuid)].push_back(port);
    }
    const auto rows = KILN_TRY(tx->nodes().list(all));
    nodes.reserve(rows.size());
    static const std::vector<Record> kNoPorts;
    for (const auto& row : rows) {
      const auto it = byNode.find(row.uuid());
      // Only rows that mention a boot target can want an entry: the others skip the JSON parse.
      const bool mayBoot = row.str(kNodeDriverInternalInfo).find("boot_target") != std::string::npos;
      nodes.push_back(dhcpNodeOf(row, mayBoot ? objectField(row, kNodeDriverInternalInfo) : nlohmann::json::object(),
                                 it == byNode.end() ? kNoPorts : it->second));
    }
  }
  KILN_TRY_VOID(provider_.syncAll(nodes));
  std::lock_guard lock(mutex_);
  ++passes_;
  return {};
}

Result<void> DhcpSync::start() {
  KILN_TRY_VOID(syncOnce());
  thread_ = std::thread([this] {
    std::unique_lock lock(mutex_);
    for (;;) {
      if (wake_.wait_for(lock, std::chrono::seconds(interval_), [this] { return stopping_; })) return;
      lock.unlock();
      if (auto done = syncOnce(); !done) {
        log_.warning("could not bring the DHCP entries in line with the database",
                     {{"error", done.error().message}});
      }
      lock.lock();
    }
  });
  return {};
}

void DhcpSync::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

uint64_t DhcpSync::passes() const {
  std::lock_guard lock(mutex_);
  return passes_;
}

}  // namespace kiln::server
