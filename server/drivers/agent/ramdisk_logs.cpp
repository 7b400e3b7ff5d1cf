#include "server/drivers/agent/ramdisk_logs.h"

#include <ctime>
#include <filesystem>
#include <system_error>

#include "server/drivers/agent/agent_session.h"
#include "shared/core/base64.h"
#include "shared/core/file.h"
#include "shared/core/gzip.h"
#include "shared/core/tar.h"
#include "shared/core/uuid.h"

namespace kiln::server::agent {

using nlohmann::json;

namespace {

Error badBundle(const std::string& why) {
  return Error{ErrorCode::InvalidArgument, "Invalid ramdisk log bundle: " + why};
}

}  // namespace

bool logsWanted(const Config* config, bool failed) {
  if (!config) return false;
  const std::string& when = config->deployLogsCollect;
  return when == "always" || (failed && when == "on_failure");
}

void requestLogs(TaskContext& task, std::string_view flow) {
  if (!logsWanted(task.config, /*failed=*/false) || !agentConnected(task)) return;
  const std::string id = generateUuid();
  task.internalInfo[kLogsRequest] = json{{"id", id},
                                         {"name", "collect_logs"},
                                         {"params", json::object()},
                                         {"flow", std::string(flow)}};
  task.internalInfo[kLogsAwaited] = true;
  task.log.info("asked the agent for its logs", {{"flow", std::string(flow)}, {"id", id}});
}

bool awaitLogs(TaskContext& task, std::string_view flow, bool failed) {
  json& info = task.internalInfo;
  if (!logsWanted(task.config, failed) || !agentConnected(task)) return false;
  if (info.value(kLogsAwaited, false) || info.contains(kLogsRequest)) return false;
  const std::string id = generateUuid();
  info[kLogsRequest] = json{{"id", id},
                            {"name", "collect_logs"},
                            {"params", json::object()},
                            {"flow", std::string(flow)}};
  info[kLogsAwaited] = true;
  info[kWaiting] = "logs";
  const int timeout = task.config->deployLogsCollectTimeout;
  info[kLogsDeadline] =
      static_cast<int64_t>(std::chrono::system_clock::to_time_t(task.clock->now())) + timeout;
  task.log.info(
      "asked the agent for its logs; the flow waits for them",
      {{"flow", std::string(flow)}, {"id", id}, {"timeout_seconds", std::to_string(timeout)}});
  return true;
}

bool waitingForLogs(const json& info) {
  auto it = info.find(kWaiting);
  return it != info.end() && it->is_string() && it->get_ref<const std::string&>() == "logs";
}

bool logsAnswered(const json& info) { return !info.contains(kLogsRequest); }

bool logsDeadlinePassed(const json& info, int64_t nowSeconds) {
  auto it = info.find(kLogsDeadline);
  return it == info.end() || !it->is_number_integer() || it->get<int64_t>() <= nowSeconds;
}

void endLogsWait(json& info) {
  info.erase(kWaiting);
  info.erase(kLogsDeadline);
  info.erase(kLogsRequest);
}

std::optional<protocol::AgentCommand> pendingLogsCommand(const json& internalInfo) {
  auto it = internalInfo.find(kLogsRequest);
  if (it == internalInfo.end() || !it->is_object()) return std::nullopt;
  protocol::AgentCommand command;
  command.id = it->value("id", "");
  command.name = "collect_logs";
  if (command.id.empty()) return std::nullopt;
  return command;
}

std::vector<ReceivedLogs> takeLogs(json& internalInfo,
                                   std::vector<protocol::CommandResult>& results,
                                   const Logger& log) {
  std::vector<ReceivedLogs> out;
  const auto pending = pendingLogsCommand(internalInfo);
  for (auto& result : results) {
    const bool requested = pending && result.id == pending->id;
    const bool failedStep = result.status == "FAILED";
    if (!requested && !failedStep) continue;
    std::string logs;
    if (result.result.is_object()) {
      if (auto it = result.result.find("system_logs"); it != result.result.end()) {
        if (it->is_string()) logs = it->get<std::string>();
        result.result.erase(it);  // never into driver_internal_info
      }
    }
    if (requested) {
      internalInfo.erase(kLogsRequest);
      if (result.status != "SUCCEEDED" || logs.empty()) {
        log.warning("the agent did not send its logs",
                    {{"status", result.status}, {"error", result.error}});
        continue;
      }
    }
    if (!logs.empty()) {
      out.push_back(
          {std::move(logs), requested ? std::string("collect_logs") : "failed " + result.name});
    }
  }
  return out;
}

Result<std::string> decodeLogBundle(std::string_view base64) {
  // base64 grows the bytes by 4/3: refuse what cannot fit before decoding it.
  if (base64.size() / 4 * 3 > kMaxLogBundleBytes + 3) {
    return std::unexpected(
        badBundle("larger than " + std::to_string(kMaxLogBundleBytes) + " bytes"));
  }
  auto bytes = base64Decode(base64);
  if (!bytes) return std::unexpected(badBundle(bytes.error().message));
  if (bytes->size() > kMaxLogBundleBytes) {
    return std::unexpected(
        badBundle("larger than " + std::to_string(kMaxLogBundleBytes) + " bytes"));
  }
  if (bytes->size() < 2 || static_cast<unsigned char>((*bytes)[0]) != 0x1f ||
      static_cast<unsigned char>((*bytes)[1]) != 0x8b) {
    return std::unexpected(badBundle("not gzip data"));
  }
  auto archive = gunzip(*bytes, kMaxLogBundleInflatedBytes);
  if (!archive) return std::unexpected(badBundle(archive.error().message));
  if (auto members = listTar(*archive); !members) {
    return std::unexpected(badBundle(members.error().message));
  }
  return std::move(*bytes);
}

std::string logFileName(const std::string& nodeUuid, const std::string& instanceUuid,
                        std::chrono::system_clock::time_point when) {
  const std::time_t t = std::chrono::system_clock::to_time_t(when);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d-%H-%M-%S", &tm);
  std::string name = nodeUuid;
  if (!instanceUuid.empty()) name += "_" + instanceUuid;
  return name + "_" + stamp + ".tar.gz";
}

Result<std::string> storeLogs(const Config& config, const Logger& log, const std::string& nodeUuid,
                              const std::string& instanceUuid, const ReceivedLogs& logs,
                              std::chrono::system_clock::time_point when) {
  if (config.deployLogsCollect == "never") {
    log.info("ramdisk logs not stored: [agent] deploy_logs_collect is never",
             {{"origin", logs.origin}});
    return fail(ErrorCode::Conflict, "[agent] deploy_logs_collect is never");
  }
  auto bundle = decodeLogBundle(logs.base64);
  if (!bundle) {
    log.error("ramdisk logs not stored",
              {{"origin", logs.origin}, {"error", bundle.error().message}});
    return std::unexpected(bundle.error());
  }
  namespace fs = std::filesystem;
  const fs::path dir = config.deployLogsLocalPath;
  const std::string name = logFileName(nodeUuid, instanceUuid, when);
  const fs::path temporary = dir / ("." + name + ".tmp");
  const fs::path path = dir / name;
  auto written = writeFile(temporary, *bundle);
  std::error_code ec;
  if (written) fs::rename(temporary, path, ec);
  if (!written || ec) {
    fs::remove(temporary, ec);
    const std::string why =
        !written ? written.error().message : "cannot rename to " + path.string();
    log.error("ramdisk logs not stored", {{"origin", logs.origin}, {"error", why}});
    return internalError(why);
  }
  log.info("ramdisk logs stored", {{"origin", logs.origin},
                                   {"path", path.string()},
                                   {"bytes", std::to_string(bundle->size())}});
  return path.string();
}

}  // namespace kiln::server::agent
