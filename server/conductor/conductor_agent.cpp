// File: server/conductor/conductor_agent.cpp
//
// The conductor's side of the pull protocol with kiln-agent (docs/protocol.md): lookup,
// heartbeat, and handing a finished agent command back to the flow that queued it. The
// session state lives in the node's driver_internal_info (server/drivers/agent/agent_session.h).
#include <algorithm>
#include <future>
#include <set>

#include "server/conductor/conductor.h"
#include "server/conductor/conductor_detail.h"
#include "server/conductor/node_events_recorder.h"
#include "server/conductor/conductor_metrics.h"
#include "server/drivers/agent/agent_session.h"
#include "server/drivers/agent/ramdisk_logs.h"
#include "server/model/node.h"
#include "server/model/provision_state.h"
#include "server/model/resources.h"
#include "shared/core/secrets.h"
#include "shared/json/json_util.h"

namespace kiln::server {
namespace {

using nlohmann::json;
using Mode = Storage::Mode;
using namespace detail;

constexpr const char* kLookupNotFound = "Node with the given addresses or UUID could not be found.";

/// The bytes a successful deploy.write_image result reports written (0 for anything else).
uint64_t imageBytesWritten(const protocol::CommandResult& result) {
  if (result.status != "SUCCEEDED" || !result.result.is_object()) return 0;
  const auto it = result.result.find("bytes_written");
  return it != result.result.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

/// States in which an agent is expected to look up ([api] restrict_lookup).
bool agentExpected(std::string_view s) {
  return s == state::kDeploying || s == state::kDeployWait || s == state::kCleaning ||
         s == state::kCleanWait || s == state::kInspecting || s == state::kInspectWait ||
         s == state::kServicing || s == state::kServiceWait;
}

/// driver_internal_info as the agent may see it: no token, no bookkeeping of the session.
json internalInfoForAgent(const json& info) {
  json out = info;
  for (const char* key :
       {agent::kToken, agent::kCommand, agent::kResult, agent::kProgress, agent::kInventory,
        agent::kCachedCleanSteps, agent::kCachedDeploySteps, agent::kLogsRequest,
        agent::kLogsAwaited, agent::kLogsDeadline, agent::kFailAfterLogs}) {
    out.erase(key);
  }
  return out;
}

/// The agent's step catalogue of one kind, when the heartbeat carries a non-empty one.
const json* reportedSteps(const protocol::HeartbeatRequest& beat, const char* kind) {
  if (!beat.steps.is_object()) return nullptr;
  auto it = beat.steps.find(kind);
  if (it == beat.steps.end() || !it->is_object() || it->empty()) return nullptr;
  return &*it;
}

}  // namespace

bool Conductor::fastTrackIdle(const TaskContext& task) const {
  if (!agent::fastTrackIdleState(task.node.str(kNodeProvisionState)) ||
      task.node.flag(kNodeMaintenance)) {
    return false;
  }
  auto enabled = agent::fastTrackEnabled(deps_.config, task.driverInfo);
  return enabled && *enabled;
}

Result<json> Conductor::lookup(const std::vector<std::string>& macs, const std::string& nodeUuid) {
  auto tx = KILN_TRY(deps_.storage.begin(Mode::Write));
  std::string uuid = nodeUuid;
  if (uuid.empty()) {
    ListQuery q;
    q.limit = 0;
    q.filters.push_back({ListFilter::Op::In, kPortAddress, {}, macs});
    std::set<std::string> owners;
    for (const auto& port : KILN_TRY(tx->ports().list(q))) {
      if (!port[kPortNodeUuid].isNull()) owners.insert(port.str(kPortNodeUuid));
    }
    if (owners.empty()) return notFound(kLookupNotFound);
    if (owners.size() > 1) {
      return notFound("The given addresses belong to ports of more than one node; pass node_uuid.");
    }
    uuid = *owners.begin();
  }
  auto loaded = tasks_.load(*tx, uuid);
  if (!loaded) {
    if (loaded.error().code == ErrorCode::NotFound) return notFound(kLookupNotFound);
    return std::unexpected(loaded.error());
  }
  TaskContext task = std::move(*loaded);
  // Deliberately indistinguishable from an unknown node (Ironic's restrict_lookup). Fast track
  // adds manageable and available (Ironic's FASTTRACK_LOOKUP_ALLOWED_STATES), out of
  // maintenance.
  if (deps_.config.restrictLookup && !agentExpected(task.node.str(kNodeProvisionState)) &&
      !fastTrackIdle(task)) {
    return notFound(kLookupNotFound);
  }
  KILN_TRY_VOID(NodeLock::checkFree(task.node));

  protocol::LookupResponse response;
  response.nodeUuid = uuid;
  response.heartbeatTimeout = deps_.config.ramdiskHeartbeatTimeout;
  response.heartbeatInterval = deps_.config.agentHeartbeatInterval;
  response.md5ChecksumAllowed = deps_.config.allowMd5Checksum;
  if (task.internalInfo.contains(agent::kToken)) {
    response.agentToken = "******";  // issued once per ramdisk session
  } else {
    response.agentToken = agent::generateToken();
    task.internalInfo[agent::kToken] = response.agentToken;
    KILN_TRY_VOID(tasks_.save(*tx, task));
    KILN_TRY_VOID(tx->commit());
    task.log.info("agent looked up; token issued");
  }
  response.node = agent::nodeForAgent(task);
  response.node["driver_internal_info"] = internalInfoForAgent(task.internalInfo);
  json out = response.toJson();
  // The rest of Ironic's lookup config that applies to Kiln.
  out["config"]["permitted_image_formats"] = json::array({"raw", "qcow2"});
  out["config"]["disable_deep_image_inspection"] = false;
  return out;
}

Result<protocol::HeartbeatResponse> Conductor::heartbeat(const std::string& uuid,
                                                         const protocol::HeartbeatRequest& beat) {
  if (beat.protocolVersion != protocol::kProtocolVersion) {
    return invalid("Unsupported kiln agent protocol version " + std::to_string(beat.protocolVersion) +
                   "; this kiln-server speaks version " + std::to_string(protocol::kProtocolVersion) +
                   ". Rebuild the agent ramdisk from the same Kiln release.");
  }
  if (beat.agentVersion.empty()) return invalid("Missing agent_version in the heartbeat.");

  protocol::HeartbeatResponse response;
  response.heartbeatInterval = deps_.config.agentHeartbeatInterval;
  bool resumed = false;
  bool mine = true;
  uint64_t imageBytes = 0;
  TaskContext task;
  // Log bundles the results carry (server/drivers/agent/ramdisk_logs.h): stored after commit.
  std::vector<protocol::CommandResult> results = beat.results;
  std::vector<agent::ReceivedLogs> logs;
  {
    auto tx = KILN_TRY(deps_.storage.begin(Mode::Write));
    // Nothing here needs the node's ports or traits, and the row read now stays this
    // transaction's (saveTaskOver): the busiest path of a large site reads the row once.
    auto loaded = tasks_.load(*tx, uuid, /*withRelations=*/false);
    if (!loaded) return std::unexpected(loaded.error());
    task = std::move(*loaded);
    const Record storedRow = task.node;
    mine = registry_.owns(task.node);
    json& info = task.internalInfo;
    const std::string stored = info.value(agent::kToken, "");
    if (!agent::tokenMatches(beat.agentToken, stored)) {
      return fail(ErrorCode::Unauthenticated,
                  "Invalid or missing agent token for node " + uuid + ": look the node up again.");
    }
    // The agent's log lines are journalled at once, also while a worker holds the node: they
    // write no node row.
    if (beat.log) {
      response.logAcknowledged = KILN_TRY(events::recordAgentLog(
          *tx, {deps_.clock, host()}, task.node.id(), task.uuid(), *beat.log, stored));
    }
    if (!task.node[kNodeReservation].isNull()) {
      // A worker is acting on the node: record nothing else now (its save would overwrite
      // it); the agent resends its results until they are acknowledged.
      if (beat.log) KILN_TRY_VOID(tx->commit());
      response.heartbeatInterval = deps_.config.agentCommandHeartbeatInterval;
      return response;
    }
    const std::string now = formatIsoTime(deps_.clock.now());
    if (agent::fastTrackIdleState(task.node.str(kNodeProvisionState))) {
      if (!fastTrackIdle(task)) {
        // An agent left up by fast track that may no longer be used (maintenance, or fast
        // track turned off for the node): its session and boot_target "agent" end; it looks
        // up again and is not found until fast track applies again.
        agent::endFastTrack(info);
        task.log.info("fast track ended: the idle agent is no longer used");
        KILN_TRY_VOID(tasks_.saveOver(*tx, task, storedRow));
        KILN_TRY_VOID(tx->commit());
        return fail(ErrorCode::Unauthenticated, "Fast track does not apply to node " + uuid +
                                                    " any more: look the node up again.");
      }
      // Fast track: the idle agent is recorded, and keeps its DHCP entry (boot_target). No
      // step runs until a deployment, cleaning or inspection starts.
      info["boot_target"] = "agent";
    }
    info[flow::kAgentVersion] = beat.agentVersion;
    info[flow::kAgentProtocolVersion] = beat.protocolVersion;
    info[agent::kLastHeartbeat] = now;
    if (const json* clean = reportedSteps(beat, "clean")) info[agent::kCachedCleanSteps] = *clean;
    if (const json* deploy = reportedSteps(beat, "deploy")) info[agent::kCachedDeploySteps] = *deploy;
    if (beat.steps.is_object() && beat.steps.contains("hardware_manager_version")) {
      info[flow::kHardwareManagerVersion] = beat.steps["hardware_manager_version"];
    }
    if (beat.inventory) info[agent::kInventory] = *beat.inventory;
    if (beat.progress) {
      info[agent::kProgress] = beat.progress->toJson();
      KILN_TRY_VOID(events::recordWriteProgress(*tx, {deps_.clock, host()}, task.node.id(),
                                                task.uuid(), *beat.progress));
    } else if (!info.contains(agent::kCommand)) {
      info.erase(agent::kProgress);
    }
    const std::string pendingId =
        info.contains(agent::kCommand) ? info[agent::kCommand].value("id", "") : std::string();
    logs = agent::takeLogs(info, results, task.log);
    for (const auto& result : results) {
      response.acknowledged.push_back(result.id);
      if (result.id != pendingId || pendingId.empty()) continue;  // stale or already taken
      info[agent::kResult] = result.toJson();
      info.erase(agent::kCommand);
      imageBytes += imageBytesWritten(result);
      task.log.info("agent command finished", {{"command", result.name}, {"status", result.status}});
    }

    const std::string s = task.node.str(kNodeProvisionState);
    const std::string waiting = info.value(agent::kWaiting, "");
    const bool maintenance = task.node.flag(kNodeMaintenance);
    if (state::isWaitState(s)) {
      // Ironic: an agent heartbeat keeps the callback timeout from expiring.
      task.node.setText(kNodeProvisionUpdatedAt, now);
    }
    if (state::isWaitState(s) && agent::waitingForLogs(info) && agent::logsAnswered(info)) {
      // The flow parked for the agent's logs (ramdisk_logs.h) goes on now that they came (or
      // the agent answered without them): it leaves the ramdisk, or reports the failure it
      // kept aside. Not a step of the flow: maintenance does not hold it.
      agent::endLogsWait(info);
      KILN_TRY_VOID(markResumed(task, !info.contains(agent::kFailAfterLogs)));
      resumed = true;
    } else if (!maintenance) {
      const bool stepWait = s == state::kCleanWait || s == state::kDeployWait || s == state::kServiceWait;
      if (stepWait && waiting == "boot") {
        // The ramdisk is up. Cleaning that has not started is re-planned with the agent's own
        // step catalogue; a deployment's deploy.deploy step is done; servicing starts its
        // first step.
        info.erase(agent::kWaiting);
        const bool cleanNotStarted = s == state::kCleanWait && !info.contains("clean_step_index");
        if (cleanNotStarted) {
          info.erase("clean_steps");
          info[flow::kCleanReplan] = true;
        }
        KILN_TRY_VOID(markResumed(task, !cleanNotStarted && s != state::kServiceWait));
        resumed = true;
      } else if (s == state::kInspectWait && waiting == "inventory" && info.contains(agent::kInventory)) {
        info.erase(agent::kWaiting);
        KILN_TRY_VOID(markResumed(task, true));
        resumed = true;
      } else if (stepWait && info.contains(agent::kResult)) {
        info.erase(agent::kWaiting);
        KILN_TRY_VOID(markResumed(task, false));  // runNextStep takes the result first
        resumed = true;
      }
    }
    KILN_TRY_VOID(tasks_.saveOver(*tx, task, storedRow));
    KILN_TRY_VOID(tx->commit());
  }
  // Counted once: only the heartbeat whose transaction took the result counts it.
  if (imageBytes > 0) recordImageBytesWritten(imageBytes);
  for (const auto& bundle : logs) {
    (void)agent::storeLogs(deps_.config, task.log, uuid,
                           task.node.optStr(kNodeInstanceUuid).value_or(""), bundle,
                           deps_.clock.now());
  }
  if (resumed) {
    // Run the flow now and, for a short while, wait for it: the next command then rides on this
    // heartbeat's answer instead of the next one's.
    auto done = std::make_shared<std::promise<void>>();
    auto finished = done->get_future();
    startFlow(adoptLock(uuid, "agent heartbeat"), mine, {}, [done] { done->set_value(); });
    (void)finished.wait_for(std::chrono::seconds(2));
    // The flow may have queued a command or moved the node on: read what it left.
    auto tx = KILN_TRY(deps_.storage.begin(Mode::Read));
    task = KILN_TRY(tasks_.load(*tx, uuid));
  }
  const json& info = task.internalInfo;
  // The agent answers commands in order: a log request goes out ahead of the flow's command.
  if (auto request = agent::pendingLogsCommand(info)) response.commands.push_back(*request);
  if (auto it = info.find(agent::kCommand); it != info.end() && it->is_object()) {
    response.commands.push_back(KILN_TRY(protocol::AgentCommand::parse(*it)));
  }
  if (!response.commands.empty() || !task.node[kNodeReservation].isNull() ||
      state::isWorkingState(task.node.str(kNodeProvisionState))) {
    response.heartbeatInterval = deps_.config.agentCommandHeartbeatInterval;
  }
  return response;
}

Result<void> Conductor::stopWaitingForLogs(const std::string& uuid) {
  bool mine = true;
  {
    auto tx = KILN_TRY(deps_.storage.begin(Mode::Write));
    TaskContext task = KILN_TRY(tasks_.load(*tx, uuid));
    json& info = task.internalInfo;
    const std::string s = task.node.str(kNodeProvisionState);
    if (!state::isWaitState(s) || !agent::waitingForLogs(info)) {
      return conflict("Node " + uuid + " is not waiting for its agent's logs.");
    }
    KILN_TRY_VOID(NodeLock::checkFree(task.node));
    mine = registry_.owns(task.node);
    task.log.warning(
        "the agent did not send its logs in time; the flow goes on without them",
        {{"state", s}, {"timeout_seconds", std::to_string(deps_.config.deployLogsCollectTimeout)}});
    agent::endLogsWait(info);
    KILN_TRY_VOID(markResumed(task, !info.contains(agent::kFailAfterLogs)));
    KILN_TRY_VOID(tasks_.save(*tx, task));
    KILN_TRY_VOID(tx->commit());
  }
  startFlow(adoptLock(uuid, "ramdisk logs timeout"), mine);
  return {};
}

Result<Conductor::Next> Conductor::takeAgentResult(TaskContext& task, StepKind kind) {
  const flow::FlowKeys& keys = flow::keysFor(kind);
  json& info = task.internalInfo;
  const json report = info[agent::kResult];
  info.erase(agent::kResult);
  info.erase(agent::kProgress);
  info.erase(agent::kWaiting);
  const json& steps = info[keys.steps];
  const int index = info.value(keys.index, -1);
  if (!steps.is_array() || index < 0 || index >= static_cast<int>(steps.size())) {
    task.log.warning("agent result without a current step; ignored");
    KILN_TRY_VOID(tasks_.saveNew(task));
    return Next::Continue;
  }
  auto step = KILN_TRY(PlannedStep::fromJson(steps[static_cast<size_t>(index)]));
  const std::string status = report.value("status", "");
  if (status != "SUCCEEDED") {
    // The agent's logs came with its failure (collect_logs_on_failure): not asked for again.
    info[agent::kLogsAwaited] = true;
    // The agent's message may quote the image URL (temporary-URL signatures, credentials):
    // every URL in it is masked before it reaches last_error and the log.
    std::string error = report.contains("error") && report["error"].is_string()
                            ? maskUrlsInText(report["error"].get<std::string>(), UrlScope::All)
                            : "the agent reported status " + maskUrlsInText(status, UrlScope::All);
    return stepOutcome(task, kind, step, invalid(std::move(error)));
  }
  Result<StepResult> outcome = StepResult::Done;
  const StepDefinition* def = findStepDefinition(*task.driver, step.interface, step.step);
  if (def && def->onAgentResult) {
    const json result = report.contains("result") ? report["result"] : json::object();
    outcome = def->onAgentResult(task, step.args, result);
  }
  return stepOutcome(task, kind, step, outcome);
}

}  // namespace kiln::server
