// File: server/drivers/bmc_requests.h
//
// Which BMC requests were made for which node, for the node event journal's `bmc_request`
// events (docs/observability.md "Events"). The drivers know each request (the same call sites
// as the metrics, server/drivers/bmc_metrics.h: Ipmitool::send and RedfishClient::transmit)
// but not the node or the transaction; the conductor knows both. So the conductor opens a
// BmcRequestScope for a node around the driver calls it makes for it, the call sites append a
// BmcRequestRecord to the scope open on their thread (noteBmcRequest), and the conductor takes
// the records out (takeBmcRequests) and journals them in the transaction that saves the node
// (server/conductor/node_events_recorder.h).
//
// A scope is thread-local and nestable: a request is noted in the innermost open scope; what
// an inner scope still holds when it closes passes to the enclosing one when that is for the
// same node, and is dropped otherwise. With no scope open, noting costs one thread-local read.
// A scope keeps at most kMaxBmcRequestsPerScope records between two takes (the oldest go first;
// `dropped` counts them).
//
// Every field is masked where it is made: no password, token, URL credential or request body
// ever reaches a record (the BMC's address and the Redfish path, without its query, do).
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shared/core/clock.h"

namespace kiln::server {

/// One request to a BMC.
struct BmcRequestRecord {
  std::string driver;     ///< "ipmitool" or "redfish"
  std::string operation;  ///< as the metrics label it: ipmitool's command words, HTTP method
  std::string bmc;        ///< the BMC's address (host[:port]), no credentials
  std::string path;       ///< Redfish: the resource path, no query; "" for ipmitool
  std::string result;     ///< kBmcSuccess, kBmcError or kBmcTimeout
  double durationSeconds = 0;
  std::optional<int> httpStatus;  ///< Redfish: the answer's status, when one came
  std::optional<int> exitStatus;  ///< ipmitool: its exit status, when it ran to the end
  std::string error;              ///< not success: the masked, bounded error text
  std::chrono::system_clock::time_point finishedAt;  ///< the scope's clock when it was noted
};

inline constexpr size_t kMaxBmcRequestsPerScope = 1000;
/// How much of an error text a record keeps.
inline constexpr size_t kMaxBmcErrorChars = 500;

/// The BMC requests made on this thread for node `nodeUuid` while the scope is open.
class BmcRequestScope {
 public:
  BmcRequestScope(std::string nodeUuid, const Clock& clock);
  ~BmcRequestScope();
  BmcRequestScope(const BmcRequestScope&) = delete;
  BmcRequestScope& operator=(const BmcRequestScope&) = delete;

  const std::string& nodeUuid() const { return nodeUuid_; }
  /// The records noted so far (and leaves the scope empty).
  std::vector<BmcRequestRecord> take();
  /// Forgets the records noted so far.
  void discard();
  /// Records dropped since the last take (kMaxBmcRequestsPerScope), reset by take().
  size_t dropped() const { return dropped_; }

 private:
  friend void noteBmcRequest(BmcRequestRecord record);
  friend std::vector<BmcRequestRecord> takeBmcRequests(std::string_view nodeUuid, size_t* dropped);
  void add(BmcRequestRecord record);

  std::string nodeUuid_;
  const Clock& clock_;
  BmcRequestScope* outer_;
  std::deque<BmcRequestRecord> records_;
  size_t dropped_ = 0;
};

/// Whether a scope is open on this thread (call sites build a record only then).
bool bmcRequestScopeOpen();

/// Appends `record` to the innermost scope open on this thread (stamping finishedAt with its
/// clock); nothing when none is.
void noteBmcRequest(BmcRequestRecord record);

/// Takes the records of every scope open on this thread for `nodeUuid`, oldest first (the
/// outermost scope's first); `dropped` (if given) gets how many those scopes dropped.
std::vector<BmcRequestRecord> takeBmcRequests(std::string_view nodeUuid, size_t* dropped = nullptr);

/// `text` bounded to kMaxBmcErrorChars (on a UTF-8 character boundary), "..." marking a cut.
std::string boundBmcError(std::string_view text);

}  // namespace kiln::server
