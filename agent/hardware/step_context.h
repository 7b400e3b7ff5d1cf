// File: agent/hardware/step_context.h
//
// What an agent step sees while it runs: the machine's disks (or, run by hand, only the
// devices given with --device), the node as the server described it at lookup, the seams to
// the outside world, a progress reporter and an abort flag.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/disk/block_device.h"
#include "shared/core/clock.h"
#include "shared/core/error.h"
#include "shared/core/log.h"
#include "shared/exec/command_runner.h"
#include "shared/http/http_client.h"
#include "shared/step/arg_info.h"

namespace kiln::agent {

/// Receives the progress of a long step (image writes: bytes). Thread-safe.
class ProgressReporter {
 public:
  virtual ~ProgressReporter() = default;
  /// `total` 0 = unknown.
  virtual void report(uint64_t done, uint64_t total) = 0;
};

struct StepContext {
  /// The disks the step may touch. Run by hand (--device) these are exactly the given paths.
  std::vector<BlockDevice> devices;
  /// The node from the lookup response: "uuid", "properties" (with "root_device" hints),
  /// "instance_info", "driver_internal_info".
  nlohmann::json node = nlohmann::json::object();
  CommandRunner* runner = nullptr;
  HttpClient* http = nullptr;
  const Clock* clock = nullptr;
  ProgressReporter* progress = nullptr;
  const std::atomic<bool>* abortRequested = nullptr;
  /// Run by hand (tests, labs): never power off or reboot the machine; act only on `devices`.
  bool byHand = false;
  /// The server allows md5 image checksums (lookup's agent_md5_checksum_enable).
  bool md5Allowed = false;
  Logger log{"agent"};

  bool aborted() const { return abortRequested && abortRequested->load(); }
};

/// A step handler: the step's result document (e.g. {"raid_config": ...}) or an error.
using AgentStepHandler =
    std::function<Result<nlohmann::json>(StepContext& context, const nlohmann::json& args)>;

/// One step of the agent's catalogue (ironic-python-agent's names and default priorities).
struct AgentStepDefinition {
  std::string interface;   ///< "deploy", "raid"
  std::string name;        ///< "erase_devices"
  int cleanPriority = -1;  ///< -1 = not a clean step
  int deployPriority = -1; ///< -1 = not a deploy step
  bool abortable = false;
  std::vector<ArgInfo> argsinfo;
  AgentStepHandler handler;
};

}  // namespace kiln::agent
