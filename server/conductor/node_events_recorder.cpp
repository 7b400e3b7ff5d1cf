#include "server/conductor/node_events_recorder.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>

#include <nlohmann/json.hpp>

#include "server/conductor/conductor_metrics.h"
#include "server/conductor/flow_keys.h"
#include "server/model/agent_log.h"
#include "server/model/node.h"
#include "server/model/node_event.h"
#include "server/model/provision_state.h"
#include "server/storage/queries/node_events.h"
#include "shared/core/log.h"
#include "shared/core/secrets.h"

namespace kiln::server::events {
namespace {

using nlohmann::json;

int64_t epochMs(std::chrono::system_clock::time_point tp) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(tp.time_since_epoch()).count();
}

bool failedState(std::string_view s) {
  return s == state::kError || (s.size() > 7 && s.substr(s.size() - 7) == " failed");
}

/// The step kind whose plan runs in this provision state (none in the others).
std::optional<StepKind> stepKindOf(std::string_view s) {
  if (s == state::kDeploying || s == state::kDeployWait || s == state::kDeployHold) {
    return StepKind::Deploy;
  }
  if (s == state::kCleaning || s == state::kCleanWait || s == state::kCleanHold) {
    return StepKind::Clean;
  }
  if (s == state::kServicing || s == state::kServiceWait || s == state::kServiceHold) {
    return StepKind::Service;
  }
  return std::nullopt;
}

std::string_view stepFlowName(StepKind kind) {
  return kind == StepKind::Clean ? "clean" : kind == StepKind::Deploy ? "deploy" : "service";
}

/// The step of `kind`'s plan that is running: the planned step at the index, not yet
/// completed; null when there is none.
const json* runningStep(const json& info, StepKind kind, int& index) {
  const flow::FlowKeys& keys = flow::keysFor(kind);
  auto steps = info.find(keys.steps);
  auto at = info.find(keys.index);
  if (steps == info.end() || !steps->is_array() || at == info.end() || !at->is_number_integer()) {
    return nullptr;
  }
  if (info.value(keys.completed, false)) return nullptr;
  index = at->get<int>();
  if (index < 0 || index >= static_cast<int>(steps->size())) return nullptr;
  const json& step = (*steps)[static_cast<size_t>(index)];
  return step.is_object() ? &step : nullptr;
}

std::string resultOf(std::string_view to, std::string_view event) {
  if (event == "abort") return "aborted";
  return failedState(to) ? "failure" : "success";
}

std::optional<double> secondsSince(const json& marker, int64_t nowMs) {
  auto it = marker.find("started_ms");
  if (it == marker.end() || !it->is_number_integer()) return std::nullopt;
  return static_cast<double>(std::max<int64_t>(0, nowMs - it->get<int64_t>())) / 1000.0;
}

json durationJson(const std::optional<double>& d) { return d ? json(*d) : json(nullptr); }

json textOrNull(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

}  // namespace

std::string_view flowOf(std::string_view s) {
  if (s == state::kVerifying) return "verify";
  if (s == state::kDeploying || s == state::kDeployWait || s == state::kDeployHold) return "deploy";
  if (s == state::kDeleting) return "undeploy";
  if (s == state::kCleaning || s == state::kCleanWait || s == state::kCleanHold) return "clean";
  if (s == state::kInspecting || s == state::kInspectWait) return "inspect";
  if (s == state::kAdopting) return "adopt";
  if (s == state::kRescuing || s == state::kRescueWait) return "rescue";
  if (s == state::kUnrescuing) return "unrescue";
  if (s == state::kServicing || s == state::kServiceWait || s == state::kServiceHold) {
    return "service";
  }
  return "";
}

Result<void> recordStepFinished(Transaction& tx, const Writer& w, int64_t nodeId,
                                const std::string& nodeUuid, const StepEnd& end) {
  // kiln_step_duration_seconds{interface,step,result}: only when the start is known. Observed
  // before the save commits: a save that rolls back afterwards is still counted.
  if (end.durationSeconds) {
    observeStep(end.interface, end.step, end.result,
                std::chrono::duration<double>(*end.durationSeconds));
  }
  json fields{{"flow", end.flow},
              {"interface", end.interface},
              {"step", end.step},
              {"priority", end.priority},
              {"result", end.result},
              {"started_at", textOrNull(end.startedAt)},
              {"finished_at", end.finishedAt},
              {"duration", durationJson(end.durationSeconds)}};
  KILN_TRY(
      appendNodeEvent(tx, w.clock, w.host, nodeId, nodeUuid, node_event::kStepFinished, fields));
  return {};
}

Result<void> recordFlowFinished(Transaction& tx, const Writer& w, int64_t nodeId,
                                const std::string& nodeUuid, const FlowEnd& end) {
  // kiln_flow_duration_seconds{flow,result}, as the step's above.
  if (end.durationSeconds) {
    observeFlow(end.flow, end.result, std::chrono::duration<double>(*end.durationSeconds));
  }
  json fields{{"flow", end.flow},
              {"result", end.result},
              {"provision_state", end.state},
              {"started_at", textOrNull(end.startedAt)},
              {"finished_at", end.finishedAt},
              {"duration", durationJson(end.durationSeconds)}};
  KILN_TRY(
      appendNodeEvent(tx, w.clock, w.host, nodeId, nodeUuid, node_event::kFlowFinished, fields));
  return {};
}

Result<void> recordSaveEvents(Transaction& tx, const Writer& w, const Record& before,
                              TaskContext& task) {
  const Record& node = task.node;
  const int64_t nodeId = node.id();
  const std::string& uuid = node.uuid();
  const auto now = w.clock.now();
  const int64_t nowMs = epochMs(now);
  const std::string nowText = formatEventTime(now);
  json& info = task.internalInfo;
  auto append = [&](std::string_view kind, const json& fields) -> Result<void> {
    KILN_TRY(appendNodeEvent(tx, w.clock, w.host, nodeId, uuid, kind, fields));
    return {};
  };

  // The BMC requests that led here come first (server/drivers/bmc_requests.h).
  {
    size_t dropped = 0;
    const auto requests = takeBmcRequests(uuid, &dropped);
    KILN_TRY_VOID(recordBmcRequests(tx, w, nodeId, uuid, requests, dropped));
  }

  // Provision-state moves: those TaskStore::transition made, else the difference.
  std::vector<TaskContext::StateMove> moves = std::move(task.stateMoves);
  task.stateMoves.clear();
  const std::string oldState = before.str(kNodeProvisionState);
  const std::string newState = node.str(kNodeProvisionState);
  if (moves.empty() && oldState != newState) moves.push_back({oldState, newState, ""});
  std::string lastEvent;
  for (const auto& m : moves) {
    json fields{{"from", m.from},
                {"to", m.to},
                {"event", textOrNull(m.event)},
                {"target_provision_state", node[kNodeTargetProvisionState].isNull()
                                               ? json(nullptr)
                                               : json(node.str(kNodeTargetProvisionState))},
                {"user", textOrNull(task.user)}};
    KILN_TRY_VOID(append(node_event::kProvisionState, fields));
    if (!m.event.empty()) lastEvent = m.event;
  }

  // The running step: finished when it is no longer the one running, started when a new one is.
  int index = -1;
  const auto kind = stepKindOf(newState);
  const json* current = kind ? runningStep(info, *kind, index) : nullptr;
  if (auto marker = info.find(flow::kEventStep); marker != info.end()) {
    const bool same = marker->is_object() && current && kind &&
                      marker->value("flow", "") == stepFlowName(*kind) &&
                      marker->value("index", -2) == index &&
                      marker->value("step", "") == current->value("step", "") &&
                      marker->value("interface", "") == current->value("interface", "");
    if (!same) {
      if (marker->is_object()) {
        StepEnd end;
        end.flow = marker->value("flow", "");
        end.interface = marker->value("interface", "");
        end.step = marker->value("step", "");
        end.priority = marker->value("priority", 0);
        // Not running any more: it completed unless the flow failed or was aborted.
        const bool flowLeft = !kind || stepFlowName(*kind) != end.flow;
        end.result = flowLeft ? resultOf(newState, lastEvent) : "success";
        end.startedAt = marker->value("started_at", "");
        end.finishedAt = nowText;
        end.durationSeconds = secondsSince(*marker, nowMs);
        KILN_TRY_VOID(recordStepFinished(tx, w, nodeId, uuid, end));
      }
      info.erase(flow::kEventStep);
    }
  }
  if (current && !info.contains(flow::kEventStep)) {
    const int priority = current->value("priority", 0);
    json marker{{"flow", stepFlowName(*kind)},
                {"index", index},
                {"interface", current->value("interface", "")},
                {"step", current->value("step", "")},
                {"priority", priority},
                {"started_at", nowText},
                {"started_ms", nowMs}};
    KILN_TRY_VOID(append(node_event::kStepStarted, {{"flow", marker["flow"]},
                                                    {"interface", marker["interface"]},
                                                    {"step", marker["step"]},
                                                    {"priority", priority},
                                                    {"index", index},
                                                    {"started_at", nowText}}));
    info[flow::kEventStep] = std::move(marker);
  }

  // Flows: a move between states of different flows ends one and starts the other.
  std::vector<TaskContext::StateMove> flowMoves = moves;
  for (const auto& m : flowMoves) {
    const std::string_view from = flowOf(m.from);
    const std::string_view to = flowOf(m.to);
    if (from == to) continue;
    if (!from.empty()) {
      FlowEnd end;
      end.flow = std::string(from);
      end.result = resultOf(m.to, m.event);
      end.state = m.to;
      end.finishedAt = nowText;
      if (auto f = info.find(flow::kEventFlow);
          f != info.end() && f->is_object() && f->value("flow", "") == from) {
        end.startedAt = f->value("started_at", "");
        end.durationSeconds = secondsSince(*f, nowMs);
      }
      info.erase(flow::kEventFlow);
      KILN_TRY_VOID(recordFlowFinished(tx, w, nodeId, uuid, end));
    }
    if (!to.empty()) {
      KILN_TRY_VOID(append(node_event::kFlowStarted, {{"flow", std::string(to)},
                                                      {"provision_state", m.to},
                                                      {"user", textOrNull(task.user)},
                                                      {"started_at", nowText}}));
      info[flow::kEventFlow] = {
          {"flow", std::string(to)}, {"started_at", nowText}, {"started_ms", nowMs}};
    }
  }

  // Power state.
  if (before[kNodePowerState] != node[kNodePowerState]) {
    KILN_TRY_VOID(append(
        node_event::kPowerState,
        {{"from",
          before[kNodePowerState].isNull() ? json(nullptr) : json(before.str(kNodePowerState))},
         {"to", node[kNodePowerState].isNull() ? json(nullptr) : json(node.str(kNodePowerState))},
         {"user", textOrNull(task.user)}}));
  }

  // A new error.
  if (!node[kNodeLastError].isNull() && !node.str(kNodeLastError).empty() &&
      before[kNodeLastError] != node[kNodeLastError]) {
    KILN_TRY_VOID(append(node_event::kError,
                         {{"message", maskUrlsInText(node.str(kNodeLastError), UrlScope::All)},
                          {"provision_state", newState}}));
  }
  return {};
}

Result<void> recordWriteProgress(Transaction& tx, const Writer& w, int64_t nodeId,
                                 const std::string& nodeUuid, const protocol::Progress& progress) {
  if (progress.bytesDone == 0 && progress.bytesTotal == 0) return {};
  json fields{{"bytes_done", progress.bytesDone},
              {"bytes_total", progress.bytesTotal > 0 ? json(progress.bytesTotal) : json(nullptr)},
              {"bytes_per_second", progress.bytesPerSecond}};
  json eta = nullptr;
  if (progress.bytesTotal > 0 && progress.bytesPerSecond > 0) {
    const uint64_t left =
        progress.bytesTotal > progress.bytesDone ? progress.bytesTotal - progress.bytesDone : 0;
    eta = static_cast<double>(left) / progress.bytesPerSecond;
  }
  fields["eta_seconds"] = eta;
  if (!progress.commandId.empty()) fields["command_id"] = progress.commandId;
  KILN_TRY(
      appendNodeEvent(tx, w.clock, w.host, nodeId, nodeUuid, node_event::kWriteProgress, fields));
  return {};
}

Result<uint64_t> recordAgentLog(Transaction& tx, const Writer& w, int64_t nodeId,
                                const std::string& nodeUuid, const protocol::LogBatch& batch,
                                std::string_view token) {
  if (batch.dropped > 0) {
    KILN_TRY(appendNodeEvent(tx, w.clock, w.host, nodeId, nodeUuid, node_event::kAgentLog,
                             droppedAgentLogFields(batch.dropped)));
  }
  uint64_t last = batch.firstSeq - 1;
  size_t bytes = 0;
  for (const std::string& raw : batch.lines) {
    const AgentLogLine line = readAgentLogLine(raw, token);
    if (last >= batch.firstSeq && bytes + line.message.size() > kMaxAgentLogBytesPerHeartbeat) break;
    bytes += line.message.size();
    ++last;
    KILN_TRY(appendNodeEvent(tx, w.clock, w.host, nodeId, nodeUuid, node_event::kAgentLog,
                             agentLogFields(last, line)));
  }
  return last;
}

Result<void> recordBmcRequests(Transaction& tx, const Writer& w, int64_t nodeId,
                               const std::string& nodeUuid,
                               const std::vector<BmcRequestRecord>& records, size_t dropped) {
  for (const auto& r : records) {
    json fields{{"driver", r.driver},
                {"operation", r.operation},
                {"bmc", r.bmc},
                {"result", r.result},
                {"duration", std::round(r.durationSeconds * 1000.0) / 1000.0},
                {"finished_at", formatEventTime(r.finishedAt)}};
    if (!r.path.empty()) fields["path"] = r.path;
    if (r.httpStatus) fields["status"] = *r.httpStatus;
    if (r.exitStatus) fields["exit_status"] = *r.exitStatus;
    if (!r.error.empty()) fields["error"] = r.error;
    if (dropped > 0) {
      fields["dropped_before"] = dropped;
      dropped = 0;
    }
    KILN_TRY(
        appendNodeEvent(tx, w.clock, w.host, nodeId, nodeUuid, node_event::kBmcRequest, fields));
  }
  return {};
}

BmcRequestJournal::BmcRequestJournal(Storage& storage, const Writer& w, std::string nodeUuid)
    : storage_(storage),
      writer_(w),
      scope_(std::move(nodeUuid), w.clock),
      uncaught_(std::uncaught_exceptions()) {}

BmcRequestJournal::~BmcRequestJournal() {
  // Unwinding: no database work here (the records go to an enclosing scope, or are lost).
  if (std::uncaught_exceptions() > uncaught_) return;
  const std::string& uuid = scope_.nodeUuid();
  size_t dropped = 0;
  const auto records = takeBmcRequests(uuid, &dropped);
  if (records.empty()) return;
  auto written = [&]() -> Result<void> {
    auto tx = KILN_TRY(storage_.begin(Storage::Mode::Write));
    auto node = KILN_TRY(tx->nodes().findBy(kNodeUuid, Value::text(uuid)));
    if (!node) return {};  // deleted meanwhile: its events went with it
    KILN_TRY_VOID(recordBmcRequests(*tx, writer_, node->id(), uuid, records, dropped));
    return tx->commit();
  }();
  if (!written) {
    Logger("conductor")
        .warning("cannot journal the node's BMC requests",
                 {{"node", uuid}, {"error", written.error().message}});
  }
}

}  // namespace kiln::server::events
