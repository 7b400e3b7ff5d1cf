// File: server/conductor/node_events_recorder.h
//
// What the conductor journals in the node event journal (server/model/node_event.h,
// docs/observability.md "Events"), always in the transaction of the change it reports, so a
// rolled-back change leaves no event:
//  - recordSaveEvents(), called by every conductor save (TaskStore::saveOver) and by
//    Conductor::failUnfinished: provision_state moves, power_state changes, errors (the new,
//    masked last_error), and the starts and ends of steps and flows it reads from the node
//    (the running step and flow are kept in driver_internal_info, flow::kEventStep and
//    flow::kEventFlow, so their start times survive heartbeats, restarts and takeovers);
//  - recordStepFinished() and recordFlowFinished(): the ONE place each where a step's or a
//    flow's end, with its duration, is recorded (the place for the step and flow duration
//    histograms, kiln_step_duration_seconds and kiln_flow_duration_seconds);
//  - recordWriteProgress(): the image write's progress from an agent heartbeat;
//  - recordAgentLog(): the agent's log lines from a heartbeat (server/model/agent_log.h). It
//    writes no node row, so it is recorded even while a worker holds the node;
//  - recordBmcRequests() and BmcRequestJournal: the node's BMC requests (bmc_request), noted by
//    the drivers in the BmcRequestScopes the conductor opens for the node
//    (server/drivers/bmc_requests.h). recordSaveEvents journals those still pending in the
//    save's transaction; BmcRequestJournal, the scope of work that may save nothing, journals
//    the rest in a short transaction of its own when it closes. The power-state sync uses a
//    bare scope instead: its requests are journalled only when it saves the node (docs/
//    observability.md "Events" has the rule).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/drivers/bmc_requests.h"
#include "server/drivers/interfaces.h"
#include "server/storage/storage.h"
#include "shared/core/clock.h"
#include "shared/protocol/messages.h"

namespace kiln::server::events {

/// Who writes: the clock and this kiln-server's host.
struct Writer {
  const Clock& clock;
  const std::string& host;
};

/// The end of one step.
struct StepEnd {
  std::string flow;       ///< "deploy", "clean", "service"
  std::string interface;  ///< "deploy", "raid", ...
  std::string step;       ///< "write_image", ...
  int priority = 0;
  std::string result;                     ///< "success", "failure" or "aborted"
  std::string startedAt;                  ///< event time format ("" when unknown)
  std::string finishedAt;                 ///< event time format
  std::optional<double> durationSeconds;  ///< unknown when the start is
};

/// The end of one flow.
struct FlowEnd {
  std::string flow;    ///< "deploy", "clean", "service", "inspect", "rescue", ... (flowOf)
  std::string result;  ///< "success", "failure" or "aborted"
  std::string state;   ///< the provision state it ended in
  std::string startedAt;
  std::string finishedAt;
  std::optional<double> durationSeconds;
};

/// The flow a provision state belongs to ("" for a stable or failed state): verifying ->
/// verify; deploying, wait call-back, deploy hold -> deploy; deleting -> undeploy; cleaning,
/// clean wait, clean hold -> clean; inspecting, inspect wait -> inspect; adopting -> adopt;
/// rescuing, rescue wait -> rescue; unrescuing -> unrescue; servicing, service wait, service
/// hold -> service.
std::string_view flowOf(std::string_view provisionState);

/// Records step_finished. Step durations are observed here.
Result<void> recordStepFinished(Transaction& tx, const Writer& w, int64_t nodeId,
                                const std::string& nodeUuid, const StepEnd& end);

/// Records flow_finished. Flow durations are observed here.
Result<void> recordFlowFinished(Transaction& tx, const Writer& w, int64_t nodeId,
                                const std::string& nodeUuid, const FlowEnd& end);

/// Records what a save of `task` over `before` (the row as stored) changes: see the file
/// comment. Updates the bookkeeping keys in task.internalInfo (call it before the info is
/// written into the row) and clears task.stateMoves.
Result<void> recordSaveEvents(Transaction& tx, const Writer& w, const Record& before,
                              TaskContext& task);

/// Records write_progress for a heartbeat's `progress` (nothing when it reports no bytes).
Result<void> recordWriteProgress(Transaction& tx, const Writer& w, int64_t nodeId,
                                 const std::string& nodeUuid, const protocol::Progress& progress);

/// What the server keeps of one heartbeat's log lines at most (twice what an agent sends):
/// the lines past it are not acknowledged, so the agent sends them again.
inline constexpr size_t kMaxAgentLogBytesPerHeartbeat = 2 * protocol::LogBatch::kMaxHeartbeatBytes;

/// Records an agent_log event per line of `batch` (at least the first line, then while the
/// kept lines stay within kMaxAgentLogBytesPerHeartbeat) and one for its dropped count;
/// `token` (the node's agent token) is masked in them. Returns the last seq kept: the
/// heartbeat's log_acknowledged.
Result<uint64_t> recordAgentLog(Transaction& tx, const Writer& w, int64_t nodeId,
                                const std::string& nodeUuid, const protocol::LogBatch& batch,
                                std::string_view token);

/// Records `records` as bmc_request events of the node (oldest first); the first carries
/// `dropped` (the records its scope had to drop before it) when that is not 0.
Result<void> recordBmcRequests(Transaction& tx, const Writer& w, int64_t nodeId,
                               const std::string& nodeUuid,
                               const std::vector<BmcRequestRecord>& records, size_t dropped = 0);

/// A BmcRequestScope for node `nodeUuid` whose requests no save took are journalled, when it
/// closes, in a short write transaction of its own (nothing is opened when there are none; a
/// node deleted meanwhile journals nothing; a failure is logged). Open it around conductor work
/// for a node: a worker's job, a synchronous management call.
class BmcRequestJournal {
 public:
  BmcRequestJournal(Storage& storage, const Writer& w, std::string nodeUuid);
  ~BmcRequestJournal();
  BmcRequestJournal(const BmcRequestJournal&) = delete;
  BmcRequestJournal& operator=(const BmcRequestJournal&) = delete;

 private:
  Storage& storage_;
  Writer writer_;
  BmcRequestScope scope_;
  int uncaught_;
};

}  // namespace kiln::server::events
