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
