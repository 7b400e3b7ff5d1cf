#include "server/conductor/conductor_registry.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "server/model/conductor_registration.h"
#include "server/model/node.h"
#include "shared/json/json_util.h"

namespace kiln::server {
namespace {

using Mode = Storage::Mode;

RecordStore& conductors(Transaction& tx) { return tx.records(Resource::Conductor); }

Result<std::vector<Record>> allRows(Storage& storage) {
  auto tx = KILN_TRY(storage.begin(Mode::Read));
  ListQuery q;
  q.limit = 0;
  q.sortField = kCondHostname;
  return conductors(*tx).list(q);
}

std::vector<std::string> driversOf(const Record& row) {
  std::vector<std::string> out;
  auto parsed = parseJson(row.str(kCondDrivers), "the stored value");
  if (parsed && parsed->is_array()) {
    for (const auto& d : *parsed) {
      if (d.is_string()) out.push_back(d.get<std::string>());
    }
  }
  return out;
}

}  // namespace

ConductorRegistry::ConductorRegistry(Deps deps)
    : deps_(std::move(deps)),
      ring_(std::make_shared<HashRing>(
          std::vector<HashRing::Member>{{deps_.config.host, deps_.config.conductorGroup}})) {}

ConductorRegistry::~ConductorRegistry() { stopHeartbeats(); }

Result<void> ConductorRegistry::writeRow(bool online) {
  auto tx = KILN_TRY(deps_.storage.begin(Mode::Write));
  const std::string now = formatIsoTime(deps_.clock.now());
  auto row = KILN_TRY(conductors(*tx).findBy(kCondHostname, Value::text(deps_.config.host)));
  if (!row) {
    if (!online) return {};  // nothing registered, nothing to mark
    Record r = defaultRecord(conductorSchema());
    r.setText(kCondHostname, deps_.config.host);
    r.setText(kCondGroup, deps_.config.conductorGroup);
    r.setText(kCondDrivers, dumpJson(Json(deps_.drivers)));
    r.setBool(kCondOnline, true);
    r.setText(kCondCreatedAt, now);
    r.setText(kCondUpdatedAt, now);
    KILN_TRY(conductors(*tx).insert(r));
  } else {
    row->setText(kCondGroup, deps_.config.conductorGroup);
    row->setText(kCondDrivers, dumpJson(Json(deps_.drivers)));
    row->setBool(kCondOnline, online);
    row->setText(kCondUpdatedAt, now);
    KILN_TRY_VOID(conductors(*tx).update(*row));
  }
  return tx->commit();
}

Result<void> ConductorRegistry::registerSelf() {
  KILN_TRY_VOID(writeRow(true));
  log_.info("conductor registered",
            {{"host", deps_.config.host}, {"conductor_group", deps_.config.conductorGroup}});
  return refresh();
}

Result<void> ConductorRegistry::heartbeat() { return writeRow(true); }

Result<void> ConductorRegistry::unregister() { return writeRow(false); }

bool ConductorRegistry::isAlive(const Record& row, std::chrono::system_clock::time_point now) const {
  if (!row.flag(kCondOnline) || row[kCondUpdatedAt].isNull()) return false;
  const auto beat = parseIsoTime(row.str(kCondUpdatedAt));
  if (!beat) return false;
  const auto age = std::chrono::system_clock::to_time_t(now) - *beat;
  return age < deps_.config.heartbeatTimeout;
}

Result<void> ConductorRegistry::refresh() {
  const auto rows = KILN_TRY(allRows(deps_.storage));
  const auto now = deps_.clock.now();
  std::vector<HashRing::Member> live{{deps_.config.host, deps_.config.conductorGroup}};
  std::vector<std::string> dead;
  for (const auto& row : rows) {
    const std::string host = row.str(kCondHostname);
    if (host == deps_.config.host) continue;
    if (isAlive(row, now)) {
      live.push_back({host, row.str(kCondGroup)});
    } else {
      dead.push_back(host);
    }
  }
  auto ring = std::make_shared<const HashRing>(std::move(live));
  std::lock_guard<std::mutex> lock(mutex_);
  if (ring->hosts() != ring_->hosts()) {
    std::string names;
    for (const auto& h : ring->hosts()) names += (names.empty() ? "" : ",") + h;
    log_.info("live conductors changed", {{"live", names}});
  }
  ring_ = std::move(ring);
  dead_ = std::move(dead);
  return {};
}

Result<std::vector<ConductorInfo>> ConductorRegistry::list() {
  const auto rows = KILN_TRY(allRows(deps_.storage));
  const auto now = deps_.clock.now();
  std::vector<ConductorInfo> out;
  bool self = false;
  for (const auto& row : rows) {
    ConductorInfo c;
    c.hostname = row.str(kCondHostname);
    c.group = row.str(kCondGroup);
    c.drivers = driversOf(row);
    c.alive = c.hostname == deps_.config.host || isAlive(row, now);
    c.createdAt = row.optStr(kCondCreatedAt).value_or("");
    c.updatedAt = row.optStr(kCondUpdatedAt).value_or("");
    self = self || c.hostname == deps_.config.host;
    out.push_back(std::move(c));
  }
  if (!self) {
    out.push_back({deps_.config.host, deps_.config.conductorGroup, deps_.drivers, true, "", ""});
    std::sort(out.begin(), out.end(),
              [](const ConductorInfo& a, const ConductorInfo& b) { return a.hostname < b.hostname; });
  }
  return out;
}

std::string ConductorRegistry::ownerOf(const Record& node) const {
  std::shared_ptr<const HashRing> ring;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ring = ring_;
  }
  return ring->ownerOf(node.str(kNodeConductorGroup), node.uuid());
}

std::vector<std::string> ConductorRegistry::deadConductors() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dead_;
}

std::vector<std::string> ConductorRegistry::liveConductors() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ring_->hosts();
}

void ConductorRegistry::startHeartbeats() {
  std::lock_guard<std::mutex> lock(threadMutex_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { heartbeatLoop(); });
}

void ConductorRegistry::stopHeartbeats() {
  {
    std::lock_guard<std::mutex> lock(threadMutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ConductorRegistry::heartbeatLoop() {
  std::unique_lock<std::mutex> lock(threadMutex_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::seconds(deps_.config.heartbeatInterval),
                   [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    // A failed heartbeat is retried at the next interval; the others count this server dead
    // only after heartbeat_timeout.
    if (auto beat = heartbeat(); !beat) {
      log_.error("conductor heartbeat failed", {{"error", beat.error().message}});
    } else if (auto r = refresh(); !r) {
      log_.warning("reading the conductors failed", {{"error", r.error().message}});
    }
    lock.lock();
  }
}

}  // namespace kiln::server
