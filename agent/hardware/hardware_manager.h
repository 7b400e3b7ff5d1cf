// File: agent/hardware/hardware_manager.h
//
// The agent's step catalogue: ironic-python-agent's GenericHardwareManager names and default
// priorities (docs/ironic-api.md §7.4), each wired to the code that does the work. The
// catalogue rides on every heartbeat (HeartbeatRequest::steps); the server plans with it.
#pragma once

#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/hardware/step_context.h"
#include "agent/hardware/sysfs.h"

namespace kiln::agent {

/// The version reported as hardware_manager_version {"generic": "<n>"}; bumped when a step's
/// meaning changes.
inline constexpr const char* kGenericHardwareManagerVersion = "1";

/// Every step the agent offers. `sysfs` (outlives the steps) is where RAID teardown finds
/// existing arrays.
std::vector<AgentStepDefinition> genericHardwareSteps(SysfsReader& sysfs);

/// The heartbeat's "steps" document: {"clean": {"<interface>": [step...]}, "deploy": {...},
/// "hardware_manager_version": {"generic": "1"}}, written through the shared step model
/// (kiln::StepCatalogue, shared/step/step.h) that the server reads it back with.
nlohmann::json stepCatalogue(std::span<const AgentStepDefinition> steps);

/// The disk an image goes to: the node's root device hints (properties.root_device) when
/// set; else the root volume of the node's software RAID (raid_config); else the default
/// choice among the step's devices (chooseRootDevice without hints).
Result<BlockDevice> findRootDevice(const StepContext& ctx);

/// deploy.write_image: args {"image_info": {...}, "configdrive": "<url or base64 gzip>"}.
/// Result {"root_device": "/dev/...", "bytes_written", "checksum", "configdrive": bool}.
Result<nlohmann::json> writeImageStep(StepContext& ctx, const nlohmann::json& args);

}  // namespace kiln::agent
