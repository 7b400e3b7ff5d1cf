#include "agent/agent.h"

#include <unistd.h>

#include <algorithm>

#include "agent/diagnostics/log_bundle.h"
#include "agent/disk/block_device_lister.h"
#include "agent/hardware/hardware_manager.h"
#include "agent/hardware/inventory.h"
#include "shared/core/base64.h"

namespace kiln::agent {

using nlohmann::json;

std::string agentVersion() { return "kiln-agent 0.1.0"; }

namespace {

/// `text` with %XX escapes decoded (a URL's password as the download sends it); others kept.
std::string percentDecoded(std::string_view text) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
      out += static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

Agent::Agent(AgentConfig config, AgentDeps deps, std::vector<AgentStepDefinition> steps)
    : config_(std::move(config)), deps_(deps), steps_(std::move(steps)) {
  catalogue_ = stepCatalogue(steps_);
  worker_ = std::thread([this] { workerLoop(); });
}

Agent::~Agent() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shutdown_ = true;
    stopping_ = true;
  }
  abort_ = true;
  work_.notify_all();
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void Agent::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
}

bool Agent::hasSession() const { return !token_.empty(); }

void Agent::report(uint64_t done, uint64_t total) {
  progressDone_ = done;
  progressTotal_ = total;
}

// ---- the loop --------------------------------------------------------------------------------

int Agent::run() {
  using std::chrono::seconds;
  const seconds maxBackoff = config_.maxBackoff;
  seconds backoff{1};
  auto backOff = [&] {
    pause(backoff);
    backoff = std::min(backoff * 2, maxBackoff);
  };
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return exitCode_;
    }
    if (!hasSession()) {
      auto looked = lookupOnce();
      if (!looked) {
        if (looked.error().code == ErrorCode::PermissionDenied) {
          log_.error("cannot continue", {{"error", looked.error().message}});
          return 3;
        }
        log_.info("lookup failed; retrying", {{"error", looked.error().message},
                                               {"retry_in_s", std::to_string(backoff.count())}});
        backOff();
        continue;
      }
      backoff = seconds{1};
    }
    auto after = heartbeatOnce();
    if (!after) {
      log_.warning("heartbeat failed; retrying", {{"error", after.error().message},
                                                  {"retry_in_s", std::to_string(backoff.count())}});
      backOff();
      continue;
    }
    backoff = seconds{1};
    if (*after == After::Stop) return exitCode_;
    if (*after == After::LookUpAgain) continue;
    pause(seconds(interval_));
  }
}

void Agent::pause(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mutex_);
  wake_.wait_for(lock, d, [this] { return woken_ || stopping_; });
  woken_ = false;
}

Result<void> Agent::lookupOnce() {
  std::vector<std::string> macs = config_.macs;
  if (macs.empty() && !config_.byHand) macs = nicMacAddresses(deps_.sysfs);
  if (macs.empty() && config_.nodeUuid.empty()) {
    return invalid("no MAC address to look up with (no NIC found; pass --mac or --node-uuid)");
  }
  auto found = KILN_TRY(deps_.server.lookup(macs, config_.nodeUuid));
  if (found.agentToken == "******") {
    return fail(ErrorCode::PermissionDenied,
                "the server already issued the token of this ramdisk session to another agent "
                "(lookup answered \"******\"); reboot the node into the ramdisk to start a new "
                "session");
  }
  if (found.agentToken.size() < 32) return invalid("the server issued an implausibly short agent token");
  if (found.protocolVersion != protocol::kProtocolVersion) {
    return invalid("the server speaks kiln protocol version " + std::to_string(found.protocolVersion) +
                   ", this agent " + std::to_string(protocol::kProtocolVersion));
  }
  waitIdle();  // an aborted command of the previous session finishes first
  {
    std::lock_guard<std::mutex> lock(mutex_);
    commands_.clear();
    queue_.clear();
    abort_ = false;
    pendingPower_.reset();
  }
  nodeUuid_ = found.nodeUuid;
  token_ = found.agentToken;
  node_ = found.node;
  md5Allowed_ = found.md5ChecksumAllowed;
  interval_ = std::clamp(found.heartbeatInterval, 1, 3600);
  inventorySent_ = false;
  if (deps_.record) deps_.record->addSecret(token_);
  log_.info("looked up", {{"node", nodeUuid_}});
  return {};
}

protocol::HeartbeatRequest Agent::buildHeartbeat() {
  protocol::HeartbeatRequest beat;
  beat.agentVersion = agentVersion();
  beat.agentToken = token_;
  beat.steps = catalogue_;
  if (!inventorySent_) beat.inventory = inventory();
  if (deps_.logOutbox) {
    RamdiskRecord* record = deps_.record;
    beat.log = deps_.logOutbox->take(protocol::LogBatch::kMaxHeartbeatBytes,
                                     [record](std::string_view text) {
                                       return record ? record->mask(text) : std::string(text);
                                     });
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [id, entry] : commands_) {
    if (entry.result && !entry.acknowledged) beat.results.push_back(*entry.result);
  }
  for (const auto& id : queue_) beat.running.push_back(id);
  if (!running_.empty()) {
    beat.running.push_back(running_);
    protocol::Progress p;
    p.commandId = running_;
    p.bytesDone = progressDone_;
    p.bytesTotal = progressTotal_;
    const double elapsed =
        std::chrono::duration<double>(deps_.clock.monotonic() - progressStart_).count();
    p.bytesPerSecond = elapsed > 0 ? static_cast<double>(p.bytesDone) / elapsed : 0;
    beat.progress = p;
  }
  return beat;
}

Result<Agent::After> Agent::heartbeatOnce() {
  if (!hasSession()) return invalid("no session: look up first");
  const protocol::HeartbeatRequest beat = buildHeartbeat();
  auto answer = deps_.server.heartbeat(nodeUuid_, beat);
  if (!answer) {
    const ErrorCode code = answer.error().code;
    if (code == ErrorCode::Unauthenticated || code == ErrorCode::NotFound) {
      endSession(answer.error().message);
      return After::LookUpAgain;
    }
    return std::unexpected(answer.error());
  }
  inventorySent_ = true;
  interval_ = std::clamp(answer->heartbeatInterval, 1, 3600);
  if (deps_.logOutbox && beat.log && answer->logAcknowledged) {
    deps_.logOutbox->acknowledge(*answer->logAcknowledged, beat.log->dropped);
  }
  std::optional<std::string> powerCommand;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& id : answer->acknowledged) {
      auto it = commands_.find(id);
      if (it == commands_.end() || !it->second.result) continue;
      it->second.acknowledged = true;
      it->second.command.params = json::object();  // keep the id, drop the (large) params
      if (pendingPower_ && *pendingPower_ == id) powerCommand = it->second.command.name;
    }
  }
  if (powerCommand) return powerAction(*powerCommand);
  for (const auto& command : answer->commands) accept(command);
  return After::Continue;
}

void Agent::accept(const protocol::AgentCommand& command) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (commands_.count(command.id)) return;  // seen before: never run twice
  Entry entry{command, std::nullopt, false};
  const bool power = command.name == "power_off" || command.name == "reboot";
  if (power && queue_.empty() && running_.empty()) {
    // Answered at once; carried out when the server has the answer.
    entry.result = protocol::CommandResult{command.id, command.name, "SUCCEEDED", json::object(), ""};
    pendingPower_ = command.id;
    woken_ = true;
    commands_.emplace(command.id, std::move(entry));
    wake_.notify_all();
    return;
  }
  // A power command behind others is answered by the worker when it reaches it.
  log_.info("command received", {{"command", command.name}, {"id", command.id}});
  commands_.emplace(command.id, std::move(entry));
  queue_.push_back(command.id);
  work_.notify_all();
}

Agent::After Agent::powerAction(const std::string& name) {
  if (config_.byHand) {
    log_.warning("the server asked for " + name + "; run by hand the agent never powers off or "
                 "reboots this machine: stopping instead");
    exitCode_ = 0;
    return After::Stop;
  }
  ::sync();
  Command cmd;
  cmd.argv = {name == "reboot" ? "reboot" : "poweroff", "-f"};
  cmd.timeout = std::chrono::seconds(30);
  if (auto r = deps_.runner.run(cmd); !r || r->exitCode != 0) {
    log_.error(name + " failed", {{"error", r ? r->err : r.error().message}});
    exitCode_ = 1;
  }
  return After::Stop;
}

void Agent::endSession(const std::string& why) {
  log_.warning("session ended; looking up again", {{"reason", why}});
  token_.clear();
  abort_ = true;  // the running command of the old session stops
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.clear();
}

void Agent::waitIdle() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [this] { return queue_.empty() && running_.empty(); });
}

// ---- the worker --------------------------------------------------------------------------------

void Agent::workerLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    work_.wait(lock, [this] { return shutdown_ || !queue_.empty(); });
    if (shutdown_) return;
    const std::string id = queue_.front();
    queue_.pop_front();
    running_ = id;
    const protocol::AgentCommand command = commands_[id].command;
    if (command.name == "power_off" || command.name == "reboot") {
      commands_[id].result =
          protocol::CommandResult{command.id, command.name, "SUCCEEDED", json::object(), ""};
      pendingPower_ = command.id;
      running_.clear();
      woken_ = true;
      wake_.notify_all();
      idle_.notify_all();
      continue;
    }
    progressDone_ = 0;
    progressTotal_ = 0;
    progressStart_ = deps_.clock.monotonic();
    lock.unlock();
    protocol::CommandResult result = execute(command);
    lock.lock();
    commands_[id].result = std::move(result);
    running_.clear();
    woken_ = true;  // an early heartbeat reports it
    wake_.notify_all();
    idle_.notify_all();
  }
}

protocol::CommandResult Agent::execute(const protocol::AgentCommand& command) {
  protocol::CommandResult out{command.id, command.name, "SUCCEEDED", json::object(), ""};
  Result<json> result = json::object();
  try {
    if (command.name == "execute_step") {
      result = executeStep(command.params);
    } else if (command.name == "collect_inventory") {
      result = json{{"inventory", inventory()}};
    } else if (command.name == "sync") {
      ::sync();
    } else if (command.name == "collect_logs") {
      result = collectLogs();
    } else {
      result = invalid("unknown command '" + command.name + "'");
    }
  } catch (const std::exception& e) {
    result = internalError(std::string("unexpected error: ") + e.what());
  }
  if (result) {
    out.result = std::move(*result);
    log_.info("command succeeded", {{"command", command.name}, {"id", command.id}});
  } else {
    out.status = "FAILED";
    out.error = result.error().message;
    log_.error("command failed", {{"command", command.name}, {"id", command.id}, {"error", out.error}});
    const auto asked = command.params.is_object() ? command.params.find("collect_logs_on_failure")
                                                  : command.params.end();
    if (command.name == "execute_step" && asked != command.params.end() && asked->is_boolean() &&
        asked->get<bool>()) {
      // The server wants the logs of a failed step: they ride on the result, before anything
      // (a power-off after the failure) can take the ramdisk away.
      if (auto logs = collectLogs()) {
        out.result = std::move(*logs);
      } else {
        log_.warning("cannot collect the logs of the failed step",
                     {{"error", logs.error().message}});
      }
    }
  }
  return out;
}

Result<json> Agent::collectLogs() {
  static const RamdiskRecord kEmpty;
  BundleInputs in{deps_.record ? *deps_.record : kEmpty,
                  deps_.diagnosticsRunner ? *deps_.diagnosticsRunner : deps_.runner, deps_.sysfs,
                  deps_.clock, inventory()};
  const std::string bundle = KILN_TRY(buildLogBundle(in));
  log_.info("logs collected", {{"bytes", std::to_string(bundle.size())}});
  return json{{"system_logs", base64Encode(bundle)}};
}

void Agent::rememberSecrets(const json& args) {
  if (!deps_.record || !args.is_object()) return;
  const json info = args.contains("image_info") && args["image_info"].is_object()
                        ? args["image_info"]
                        : json::object();
  auto userinfo = [this](const json& value) {
    if (!value.is_string()) return;
    const std::string& url = value.get_ref<const std::string&>();
    const size_t scheme = url.find("://");
    if (scheme == std::string::npos) return;
    const size_t end = url.find_first_of("/?#", scheme + 3);
    const size_t at = url.rfind('@', end == std::string::npos ? url.size() : end);
    if (at == std::string::npos || at < scheme + 3) return;
    const std::string user = url.substr(scheme + 3, at - scheme - 3);
    deps_.record->addSecret(user);
    if (const size_t colon = user.find(':'); colon != std::string::npos) {
      deps_.record->addSecret(user.substr(colon + 1));
      deps_.record->addSecret(percentDecoded(user.substr(colon + 1)));
    }
  };
  if (info.contains("urls") && info["urls"].is_array()) {
    for (const auto& url : info["urls"]) userinfo(url);
  }
  for (const char* key : {"checksum", "os_hash_value"}) {
    if (info.contains(key)) userinfo(info[key]);
  }
  if (args.contains("configdrive")) userinfo(args["configdrive"]);
  if (info.contains("image_server_password") && info["image_server_password"].is_string()) {
    deps_.record->addSecret(info["image_server_password"].get<std::string>());
  }
}

Result<std::vector<BlockDevice>> Agent::currentDevices() {
  if (config_.byHand) return describeDevices(config_.devices);
  return listDisks(deps_.sysfs);
}

Result<json> Agent::executeStep(const json& params) {
  if (!params.contains("step") || !params["step"].is_object()) return invalid("execute_step needs a step");
  const json& step = params["step"];
  const std::string iface = step.value("interface", "");
  const std::string name = step.value("step", "");
  const json args = step.contains("args") && step["args"].is_object() ? step["args"] : json::object();
  rememberSecrets(args);
  auto def = std::find_if(steps_.begin(), steps_.end(), [&](const AgentStepDefinition& d) {
    return d.interface == iface && d.name == name;
  });
  if (def == steps_.end()) {
    return invalid("this agent has no step " + iface + "." + name);
  }
  StepContext ctx;
  ctx.devices = KILN_TRY(currentDevices());
  ctx.node = params.contains("node") && params["node"].is_object() ? params["node"] : node_;
  ctx.runner = &deps_.runner;
  ctx.http = &deps_.http;
  ctx.clock = &deps_.clock;
  ctx.progress = this;
  ctx.abortRequested = &abort_;
  ctx.byHand = config_.byHand;
  ctx.md5Allowed = md5Allowed_;
  ctx.log = Logger("agent").with("step", iface + "." + name);
  ctx.log.info("step started", {{"devices", std::to_string(ctx.devices.size())}});
  return def->handler(ctx, args);
}

json Agent::inventory() {
  auto devices = currentDevices();
  std::vector<BlockDevice> disks = devices ? *devices : std::vector<BlockDevice>{};
  json inv = collectInventory(deps_.sysfs, disks);
  StepContext ctx;
  ctx.devices = disks;
  ctx.node = node_;
  if (auto root = findRootDevice(ctx)) inv["root_disk"] = root->toJson();
  if (config_.byHand) {
    // Run by hand the lookup MACs are the node's, not this machine's.
    inv["interfaces"] = json::array();
    for (const auto& mac : config_.macs) inv["interfaces"].push_back({{"name", ""}, {"mac_address", mac}});
  }
  return inv;
}

}  // namespace kiln::agent
