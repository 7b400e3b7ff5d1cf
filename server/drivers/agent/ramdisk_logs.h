// File: server/drivers/agent/ramdisk_logs.h
//
// The ramdisk's log bundles, kept as Ironic keeps them ([agent] deploy_logs_collect,
// deploy_logs_storage_backend = local, deploy_logs_local_path; docs/observability.md "Ramdisk
// logs"). The agent makes a bundle (a gzip'd tar, agent/diagnostics/log_bundle.h) in two
// cases:
//   - a failed in-band step: execute_step carries "collect_logs_on_failure" (deploy_logs_collect
//     on_failure or always) and the agent adds the bundle to its FAILED result as
//     result.system_logs, so it arrives with the failure, before anything powers the node off;
//   - the end of a deployment with deploy_logs_collect = always: deploy.tear_down_agent calls
//     requestLogs() before it queues power_off. The request (driver_internal_info
//     agent_logs_request) goes out in heartbeat answers ahead of the flow's own command and the
//     agent answers it before it powers off; it never parks or fails the flow.
//   - the successful end of cleaning, inspection and servicing with always, and (on_failure or
//     always) a failure that is not an in-band step's own (a BMC error, a callback timeout, an
//     abort) while the agent's session is open: awaitLogs() asks for the logs and the conductor
//     parks the flow in its wait state (agent_waiting "logs") until the answer comes or
//     [agent] deploy_logs_collect_timeout passes (then a warning), and only then leaves the
//     ramdisk, or fails the node with the failure it kept aside (agent_logs_then_fail).
//     Asked once per ramdisk session (agent_logs_awaited, which a failed step's result sets
//     too: its bundle came with it).
// The heartbeat takes the bundles out of the results (takeLogs: they never reach
// driver_internal_info) and, after its transaction, storeLogs() checks each one (base64, size,
// gzip, tar) and writes it as <node uuid>[_<instance uuid>]_<YYYY-mm-dd-HH-MM-SS>.tar.gz.
// A missing, failed or malformed bundle is logged; nothing else happens.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/config.h"
#include "server/drivers/interfaces.h"
#include "shared/core/log.h"
#include "shared/protocol/messages.h"

namespace kiln::server::agent {

inline constexpr const char* kLogsRequest = "agent_logs_request";
/// The logs of this ramdisk session were asked for, or came with a failed step (once only).
inline constexpr const char* kLogsAwaited = "agent_logs_awaited";
/// When a flow parked for its logs goes on without them (seconds since the epoch).
inline constexpr const char* kLogsDeadline = "agent_logs_deadline";
/// The failure a flow reports once its logs came or their deadline passed: {message, cause}.
inline constexpr const char* kFailAfterLogs = "agent_logs_then_fail";

/// Largest bundle kiln-server stores (compressed) and inflates while checking it.
inline constexpr size_t kMaxLogBundleBytes = 12 * 1024 * 1024;
inline constexpr size_t kMaxLogBundleInflatedBytes = 64 * 1024 * 1024;

/// Whether deploy_logs_collect asks for logs at the end of a flow that `failed` (false without
/// a configuration).
bool logsWanted(const Config* config, bool failed);

/// The hook of a flow that ends successfully while its agent is up: with deploy_logs_collect =
/// always and a connected agent, queues collect_logs next to the flow's own commands. `flow`
/// names it in the log ("deploy").
void requestLogs(TaskContext& task, std::string_view flow);

/// The end of a flow that leaves the ramdisk (cleaning, inspection, servicing) or its failure
/// (`failed`): with deploy_logs_collect asking for logs then, the agent's session open and the
/// logs of this session not asked for yet, queues collect_logs (requestLogs), sets
/// agent_waiting "logs" and the deadline ([agent] deploy_logs_collect_timeout) and returns
/// true: the caller parks the flow in its wait state. False: nothing to wait for.
bool awaitLogs(TaskContext& task, std::string_view flow, bool failed);

/// Whether a parked flow waits for its logs (agent_waiting "logs").
bool waitingForLogs(const nlohmann::json& internalInfo);

/// Whether the wait for logs is over: the request was answered (or dropped).
bool logsAnswered(const nlohmann::json& internalInfo);

/// Whether the wait's deadline has passed at `nowSeconds` (a missing deadline has).
bool logsDeadlinePassed(const nlohmann::json& internalInfo, int64_t nowSeconds);

/// Ends the wait for logs: agent_waiting, the deadline and any unanswered request go.
void endLogsWait(nlohmann::json& internalInfo);

/// The pending collect_logs command, if any.
std::optional<protocol::AgentCommand> pendingLogsCommand(const nlohmann::json& internalInfo);

/// A bundle as it arrived, still base64.
struct ReceivedLogs {
  std::string base64;
  std::string origin;  ///< "collect_logs" or "failed <command name>"
};

/// Takes the bundles out of a heartbeat's `results` (the answer to the pending request, which
/// is cleared, and result.system_logs of FAILED commands), leaving the results without them.
/// A failed or empty answer to the request is logged on `log` and clears it too.
std::vector<ReceivedLogs> takeLogs(nlohmann::json& internalInfo,
                                   std::vector<protocol::CommandResult>& results,
                                   const Logger& log);

/// The bundle's bytes from its base64: InvalidArgument "Invalid ramdisk log bundle: <why>"
/// when it is not base64, larger than kMaxLogBundleBytes, not gzip, inflates beyond
/// kMaxLogBundleInflatedBytes or is not a tar archive.
Result<std::string> decodeLogBundle(std::string_view base64);

/// "<node uuid>[_<instance uuid>]_<YYYY-mm-dd-HH-MM-SS>.tar.gz" (UTC).
std::string logFileName(const std::string& nodeUuid, const std::string& instanceUuid,
                        std::chrono::system_clock::time_point when);

/// Checks and writes `logs` under [agent] deploy_logs_local_path (made if missing; written to
/// a hidden temporary name, then renamed). Logs the outcome; returns the path written.
Result<std::string> storeLogs(const Config& config, const Logger& log, const std::string& nodeUuid,
                              const std::string& instanceUuid, const ReceivedLogs& logs,
                              std::chrono::system_clock::time_point when);

}  // namespace kiln::server::agent
