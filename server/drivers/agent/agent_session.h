// File: server/drivers/agent/agent_session.h
//
// The server's half of the pull protocol with kiln-agent (docs/protocol.md), kept in the node's
// driver_internal_info so it survives restarts and travels with the node's transactions:
//
//   agent_secret_token      issued at lookup, required on every heartbeat (API shows "******")
//   agent_url, agent_version, agent_protocol_version, agent_last_heartbeat,
//   hardware_manager_version                     recorded from heartbeats
//   agent_cached_clean_steps / _deploy_steps     the agent's step catalogue, by interface
//   agent_waiting           what the parked flow waits for: "boot" (the agent's first
//                           heartbeat), "command" (the result of agent_command), "inventory",
//                           "logs" (the answer to collect_logs, ramdisk_logs.h)
//   agent_command           the command queued for the agent: {id, name, params, queued_at}
//   agent_result            the finished command, handed from the heartbeat to the worker
//   agent_progress          progress of the running command (bytes), for operators and demos
//
// Fast track (Ironic's [deploy] fast_track, per node driver_info/fast_track): at the end of an
// agent inspection or of cleaning the session is kept (token, last heartbeat) and with it
// boot_target "agent"; the agent goes on heartbeating in manageable/available, and the next
// deployment, cleaning or inspection started within fast_track_timeout of its last heartbeat
// uses it without a power action or a new network boot (isFastTrack). endFastTrack forgets
// it once it is no longer usable (timeout, power off, maintenance, fast track turned off).
//
// Step handlers and interfaces use these helpers; the conductor's heartbeat processing is the
// only reader of what the agent sends.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/drivers/interfaces.h"

namespace kiln::server::agent {

inline constexpr const char* kToken = "agent_secret_token";
inline constexpr const char* kWaiting = "agent_waiting";
inline constexpr const char* kCommand = "agent_command";
inline constexpr const char* kResult = "agent_result";
inline constexpr const char* kProgress = "agent_progress";
inline constexpr const char* kCachedCleanSteps = "agent_cached_clean_steps";
inline constexpr const char* kCachedDeploySteps = "agent_cached_deploy_steps";
inline constexpr const char* kLastHeartbeat = "agent_last_heartbeat";
inline constexpr const char* kInventory = "agent_inventory";

/// A new agent token: 32 random bytes, URL-safe base64 without padding (43 characters), as
/// Ironic's secrets.token_urlsafe().
std::string generateToken();

/// Constant-time comparison of a presented token with the stored one (false when either is
/// empty).
bool tokenMatches(std::string_view presented, std::string_view stored);

/// Forgets the previous agent session (token, versions, last heartbeat, pending command,
/// result, progress): a new ramdisk boot starts a new session with a new token at lookup. The
/// cached step catalogue stays until the next agent reports its own.
void resetSession(nlohmann::json& internalInfo);

/// Whether an agent has looked up and heartbeated in the current session.
bool agentConnected(const TaskContext& task);

/// Queues a command for the agent (handed out on its next heartbeat) and parks the flow
/// waiting for its result. Returns the command id.
std::string queueCommand(TaskContext& task, std::string_view name, nlohmann::json params);

/// Queues an in-band step ("execute_step") of a clean or deploy flow.
std::string queueStep(TaskContext& task, std::string_view kind, const nlohmann::json& step);

/// Boots the node into the agent ramdisk: boot interface prepareRamdisk, a fresh session, a
/// reboot (or power on), and the flow waits for the agent's first heartbeat.
Result<void> bootRamdisk(TaskContext& task, std::chrono::seconds powerTimeout);

/// Leaves the ramdisk: powers the node off through its power interface, undoes the ramdisk
/// boot configuration and ends the session.
Result<void> leaveRamdisk(TaskContext& task, std::chrono::seconds powerTimeout);
/// After leaveRamdisk on a node with disable_power_off (1.95), which was left on: reboots it
/// out of the ramdisk, as Ironic does where it would have powered the node off (the end of
/// cleaning and of inspection). Nothing to do for other nodes.
Result<void> rebootAfterRamdisk(TaskContext& task, std::chrono::seconds powerTimeout);

/// Whether fast track applies to the node: driver_info/fast_track (a boolean, or a string Ironic's
/// strict bool_from_string takes: true/false, yes/no, on/off, 1/0, t/f, y/n in any case) when
/// set, else [deploy] fast_track. Any other value: InvalidArgument naming it.
Result<bool> fastTrackEnabled(const Config& config, const nlohmann::json& driverInfo);

/// Whether the agent of the current session (a token and a recorded heartbeat) heartbeated
/// within `timeoutSeconds` of `now` (Ironic's agent_is_alive).
bool agentAlive(const nlohmann::json& internalInfo, int timeoutSeconds,
                std::chrono::system_clock::time_point now);

/// The provision states in which the idle agent of a fast-tracked node stays up and
/// heartbeats: manageable and available.
bool fastTrackIdleState(std::string_view provisionState);

/// Ironic's is_fast_track: fast track enabled for the node (an invalid driver_info value
/// counts as off), no last_error, not in maintenance, not servicing, the agent alive within
/// [deploy] fast_track_timeout, and the power interface reads the node as powered on. The one
/// BMC request it may make is that power state read (only once everything else holds).
bool isFastTrack(TaskContext& task);

/// Ends fast track for the node: the agent session is forgotten (resetSession: its agent is
/// refused at its next heartbeat and looks up again) and boot_target "agent" goes.
void endFastTrack(nlohmann::json& internalInfo);

/// What the agent may know about the node: uuid, properties (root_device hints), instance_info
/// without secrets, target_raid_config and raid_config.
nlohmann::json nodeForAgent(const TaskContext& task);

}  // namespace kiln::server::agent
