#include "server/api/api_metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>

#include "server/conductor/conductor_metrics.h"
#include "server/drivers/bmc_metrics.h"
#include "server/drivers/sensor_metrics.h"
#include "server/model/node.h"
#include "server/storage/storage_metrics.h"
#include "shared/core/log.h"

#ifndef KILN_VERSION
#define KILN_VERSION "unknown"
#endif

namespace kiln::server {
namespace {

struct ApiFamilies {
  metrics::CounterFamily& requests;
  metrics::HistogramFamily& duration;
  metrics::Counter& heartbeats;
  metrics::CounterFamily& lookups;
};

ApiFamilies& families() {
  auto& registry = metrics::processRegistry();
  static ApiFamilies f{
      registry.counter("kiln_api_requests_total",
                       "API requests answered, by method, route template and status code.",
                       {"method", "route", "code"}),
      registry.histogram("kiln_api_request_duration_seconds",
                         "Time to answer API requests in seconds, by route template.", {"route"},
                         metrics::defaultSecondsBuckets()),
      registry.counter("kiln_heartbeats_total", "Agent heartbeats received.").get(),
      registry.counter("kiln_agent_lookups_total", "Agent lookups, by result.", {"result"})};
  return f;
}

/// The status code's text, without allocating.
struct CodeText {
  std::array<char, 8> buf{};
  size_t size = 0;
  explicit CodeText(int status) {
    size = static_cast<size_t>(std::to_chars(buf.data(), buf.data() + buf.size(), status).ptr -
                               buf.data());
  }
  std::string_view view() const { return {buf.data(), size}; }
};

std::chrono::system_clock::time_point& startTime() {
  static std::chrono::system_clock::time_point start = std::chrono::system_clock::now();
  return start;
}

double seconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

/// kiln_nodes from one GROUP BY over the nodes; false when the database did not answer.
bool renderNodes(metrics::TextWriter& writer, Storage& storage) {
  writer.header("kiln_nodes",
                "Nodes of the whole fleet (read from the database at scrape time), by provision "
                "state, power state and maintenance.",
                metrics::Type::Gauge);
  auto counts = [&]() -> Result<std::vector<std::pair<std::vector<Value>, int64_t>>> {
    auto tx = KILN_TRY(storage.begin(Storage::Mode::Read));
    static constexpr std::array<int, 3> kFields = {kNodeProvisionState, kNodePowerState,
                                                   kNodeMaintenance};
    return tx->nodes().countGrouped(kFields);
  }();
  if (!counts) {
    Logger("metrics").warning("cannot count the nodes for a scrape",
                              {{"error", counts.error().message}});
    return false;
  }
  static const std::vector<std::string> kLabels = {"provision_state", "power_state", "maintenance"};
  // Sorted by label values here: both back ends group alike, but may order text differently.
  std::map<std::vector<std::string>, int64_t> rows;
  for (const auto& [values, n] : *counts) {
    auto text = [](const Value& v) { return v.isNull() ? std::string("none") : v.s; };
    const bool inMaintenance = values[2].kind == Value::Kind::Bool ? values[2].b : values[2].i != 0;
    const std::string maintenance = inMaintenance ? "true" : "false";
    rows[{text(values[0]), text(values[1]), maintenance}] += n;
  }
  for (const auto& [labels, n] : rows) {
    writer.sample("kiln_nodes", kLabels, labels, static_cast<uint64_t>(n));
  }
  return true;
}

void renderProcess(metrics::TextWriter& writer) {
  const std::vector<std::string> none;
  writer.header("process_start_time_seconds",
                "Start time of the process since the Unix epoch in seconds.", metrics::Type::Gauge);
  writer.sample("process_start_time_seconds", none, none, seconds(startTime()));

  timespec cpu{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
  writer.header("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                metrics::Type::Counter);
  writer.sample("process_cpu_seconds_total", none, none,
                static_cast<double>(cpu.tv_sec) + static_cast<double>(cpu.tv_nsec) / 1e9);

  uint64_t pages = 0;
  uint64_t resident = 0;
  if (std::ifstream statm("/proc/self/statm"); statm >> pages >> resident) {
    writer.header("process_resident_memory_bytes", "Resident memory size in bytes.",
                  metrics::Type::Gauge);
    writer.sample("process_resident_memory_bytes", none, none,
                  resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
    writer.header("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                  metrics::Type::Gauge);
    writer.sample("process_virtual_memory_bytes", none, none,
                  pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
  }

  std::error_code ec;
  uint64_t fds = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++fds;
  }
  if (!ec) {
    writer.header("process_open_fds", "Number of open file descriptors.", metrics::Type::Gauge);
    writer.sample("process_open_fds", none, none, fds);
  }
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    writer.header("process_max_fds", "Maximum number of open file descriptors.",
                  metrics::Type::Gauge);
    writer.sample("process_max_fds", none, none, static_cast<uint64_t>(limit.rlim_cur));
  }
}

}  // namespace

std::string_view methodLabel(std::string_view method) {
  for (std::string_view known : {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}) {
    if (method == known) return known;
  }
  return "other";
}

RequestMetrics::RequestMetrics(const std::vector<const Route*>& routes) {
  ApiFamilies& f = families();
  for (const Route* route : routes) {
    auto entry = std::make_unique<PerRoute>();
    entry->pattern = route->pattern;
    entry->duration = &f.duration.labels({route->pattern});
    routes_.emplace(route, std::move(entry));
  }
  unmatched_.pattern = std::string(kUnmatchedRoute);
  unmatched_.duration = &f.duration.labels({kUnmatchedRoute});
}

metrics::Counter& RequestMetrics::counterFor(PerRoute& route, std::string_view method, int status) {
  const std::string_view label = methodLabel(method);
  // Key: the method's index in methodLabel's list (8 = other) and the status, never 0.
  static constexpr std::array<std::string_view, 7> kMethods = {"GET",   "HEAD",   "POST",   "PUT",
                                                               "PATCH", "DELETE", "OPTIONS"};
  uint32_t methodIndex = 8;
  for (uint32_t i = 0; i < kMethods.size(); ++i) {
    if (kMethods[i] == label) methodIndex = i + 1;
  }
  const uint32_t key = (static_cast<uint32_t>(status & 0xffff) << 4) | methodIndex;
  for (size_t i = 0; i < PerRoute::kSlots; ++i) {
    const uint32_t k = route.keys[i].load(std::memory_order_acquire);
    if (k == key) return *route.counters[i];
    if (k == 0) break;
  }
  const CodeText code(status);
  metrics::Counter& counter = families().requests.labels({label, route.pattern, code.view()});
  std::lock_guard lock(publish_);
  for (size_t i = 0; i < PerRoute::kSlots; ++i) {
    const uint32_t k = route.keys[i].load(std::memory_order_relaxed);
    if (k == key) break;  // published meanwhile
    if (k == 0) {
      route.counters[i] = &counter;
      route.keys[i].store(key, std::memory_order_release);
      break;
    }
  }
  return counter;  // slots full: the family's lookup every time (no allocation either)
}

void RequestMetrics::record(const Route* route, std::string_view method, int status,
                            double seconds) {
  PerRoute* entry = &unmatched_;
  if (route) {
    if (auto it = routes_.find(route); it != routes_.end()) entry = it->second.get();
  }
  counterFor(*entry, method, status).inc();
  entry->duration->observe(seconds);
}

void recordHeartbeat() { families().heartbeats.inc(); }

void recordLookup(std::string_view result) { families().lookups.labels({result}).inc(); }

void registerAllMetrics() {
  (void)startTime();
  ApiFamilies& f = families();
  for (std::string_view result : {"found", "not_found", "invalid", "error"}) {
    (void)f.lookups.labels({result});
  }
  registerBmcMetrics();
  registerStorageMetrics();
  registerConductorMetrics();
}

std::string renderMetrics(Storage& storage, const Config& config) {
  std::string out;
  out.reserve(32 * 1024);
  metrics::TextWriter writer(out);
  metrics::processRegistry().renderTo(writer);
  // The BMC sensor samples of the nodes this server read ([sensor_data] send_sensor_data).
  processSensorMetrics().render(writer);

  const bool databaseUp = renderNodes(writer, storage);
  const std::vector<std::string> none;
  writer.header("kiln_database_up",
                "1 when this scrape could read the fleet from the database, else 0.",
                metrics::Type::Gauge);
  writer.sample("kiln_database_up", none, none, static_cast<uint64_t>(databaseUp ? 1 : 0));

  static const std::vector<std::string> kInfoLabels = {"host", "version"};
  writer.header("kiln_server_info",
                "The kiln-server that answered this scrape (its [DEFAULT] host) and its version; "
                "always 1.",
                metrics::Type::Gauge);
  writer.sample("kiln_server_info", kInfoLabels,
                std::vector<std::string>{config.host, KILN_VERSION}, static_cast<uint64_t>(1));
  static const std::vector<std::string> kBuildLabels = {"version"};
  writer.header("kiln_build_info", "The version kiln-server was built from; always 1.",
                metrics::Type::Gauge);
  writer.sample("kiln_build_info", kBuildLabels, std::vector<std::string>{KILN_VERSION},
                static_cast<uint64_t>(1));
  renderProcess(writer);
  return out;
}

}  // namespace kiln::server
