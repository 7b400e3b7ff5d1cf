// File: agent/agent.h
//
// kiln-agent's main loop (docs/protocol.md): look the node up (backing off while the server is
// unreachable or not expecting an agent), then heartbeat: each heartbeat carries the step
// catalogue, the results of finished commands not yet acknowledged, and the progress of the
// running command; the answer carries the commands to run. One worker thread runs commands
// one at a time. A command is identified by its id: one seen before is never run again, so a
// retried heartbeat never runs a step twice. A finished command wakes the loop for an early
// heartbeat. A refused token (401) or a vanished node (404) ends the session: the running
// command is asked to abort and the agent looks up again.
//
// power_off and reboot are answered first and carried out once the server acknowledged the
// answer; run by hand the agent only logs them and stops. A power command that arrives while
// other commands are queued or running is answered after them, in order (so a collect_logs
// sent before it is answered before the machine goes down).
//
// The agent's new log lines ride on each heartbeat from its LogOutbox
// (agent/diagnostics/log_outbox.h), masked, until the server acknowledges them.
//
// collect_logs answers with the log bundle (agent/diagnostics/log_bundle.h); an execute_step
// whose params carry "collect_logs_on_failure": true adds the bundle to its FAILED result as
// result.system_logs.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/agent_config.h"
#include "agent/diagnostics/log_outbox.h"
#include "agent/diagnostics/ramdisk_record.h"
#include "agent/hardware/step_context.h"
#include "agent/hardware/sysfs.h"
#include "agent/server_client.h"
#include "shared/protocol/messages.h"

namespace kiln::agent {

/// The agent's version string ("kiln-agent 0.4.0").
std::string agentVersion();

struct AgentDeps {
  ServerClient& server;
  CommandRunner& runner;
  HttpClient& http;
  const Clock& clock;
  SysfsReader& sysfs;
  /// The ramdisk session's record for collect_logs (agent/diagnostics/ramdisk_record.h);
  /// nullptr: the bundle has no commands and no agent log.
  RamdiskRecord* record = nullptr;
  /// Runs the bundle's own tools (dmesg, ip, lsblk) unrecorded; nullptr: `runner`.
  CommandRunner* diagnosticsRunner = nullptr;
  /// The log lines to send with the heartbeats; nullptr: none are sent.
  LogOutbox* logOutbox = nullptr;
};

class Agent final : public ProgressReporter {
 public:
  /// What the loop should do after a heartbeat.
  enum class After { Continue, LookUpAgain, Stop };

  Agent(AgentConfig config, AgentDeps deps, std::vector<AgentStepDefinition> steps);
  ~Agent() override;

  /// Runs until stop() or a power command; returns the process exit code.
  int run();
  /// Asks run() to return (signal handlers may call it: it only sets a flag and notifies).
  void stop();

  // ---- one step at a time (run() is these in a loop; tests call them directly) ----
  /// One lookup. On success the agent has a session (node UUID and token).
  Result<void> lookupOnce();
  /// One heartbeat: sends, takes acknowledgements and new commands. After::LookUpAgain when
  /// the session ended; After::Stop after a power command was acknowledged.
  Result<After> heartbeatOnce();
  /// Blocks until the worker has nothing queued or running.
  void waitIdle();

  bool hasSession() const;
  const std::string& nodeUuid() const { return nodeUuid_; }
  /// Seconds the server asked the agent to wait before the next heartbeat.
  int heartbeatInterval() const { return interval_; }
  /// The exit code run() returns when a power command stops it.
  int exitCode() const { return exitCode_; }

  /// ProgressReporter: the running command's progress.
  void report(uint64_t done, uint64_t total) override;

 private:
  struct Entry {
    protocol::AgentCommand command;
    std::optional<protocol::CommandResult> result;  ///< set when finished
    bool acknowledged = false;
  };

  protocol::HeartbeatRequest buildHeartbeat();
  void accept(const protocol::AgentCommand& command);
  void workerLoop();
  protocol::CommandResult execute(const protocol::AgentCommand& command);
  Result<nlohmann::json> executeStep(const nlohmann::json& params);
  Result<std::vector<BlockDevice>> currentDevices();
  nlohmann::json inventory();
  /// {"system_logs": base64 of the log bundle}.
  Result<nlohmann::json> collectLogs();
  /// Registers the credentials a step's arguments carry with the record, to be masked.
  void rememberSecrets(const nlohmann::json& args);
  void endSession(const std::string& why);
  /// Waits up to `d` or until woken (a finished command, stop()).
  void pause(std::chrono::milliseconds d);
  After powerAction(const std::string& name);

  AgentConfig config_;
  AgentDeps deps_;
  std::vector<AgentStepDefinition> steps_;
  nlohmann::json catalogue_;
  Logger log_{"agent"};

  // Session (loop thread only).
  std::string nodeUuid_;
  std::string token_;
  nlohmann::json node_ = nlohmann::json::object();
  bool md5Allowed_ = false;
  bool inventorySent_ = false;
  int interval_ = 10;
  int exitCode_ = 0;

  // Shared with the worker.
  mutable std::mutex mutex_;
  std::condition_variable wake_;     ///< the loop: a command finished, or stop()
  std::condition_variable work_;     ///< the worker: a command queued, or shutdown
  std::condition_variable idle_;     ///< waitIdle()
  std::map<std::string, Entry> commands_;  ///< every command of this session, by id
  std::deque<std::string> queue_;
  std::string running_;
  std::optional<std::string> pendingPower_;  ///< power command id waiting for its ack
  std::atomic<bool> abort_{false};
  std::atomic<uint64_t> progressDone_{0};
  std::atomic<uint64_t> progressTotal_{0};
  std::chrono::steady_clock::time_point progressStart_{};
  bool stopping_ = false;
  bool shutdown_ = false;
  bool woken_ = false;
  std::thread worker_;
};

}  // namespace kiln::agent
