// File: server/conductor/flow_keys.h
//
// The conductor's bookkeeping in a node's driver_internal_info, one named key each. Flows write
// and read these between their units of work (every unit is committed before the next runs, so
// the bookkeeping is what a restart or another conductor resumes from). The agent session's own
// keys are in server/drivers/agent/agent_session.h; the step plans' keys are keysFor() below.
#pragma once

#include <cstddef>
#include <string_view>

#include "server/conductor/step_planner.h"

namespace kiln::server::flow {

/// deploy.wait (and in-band waits): the epoch second at which the parked flow resumes.
inline constexpr const char* kWaitUntil = "wait_until";
/// An abort of cleaning arrived while a non-abortable step ran: fail once it finishes.
inline constexpr const char* kAbortAfter = "abort_after";
/// The step that just ran was a hold step (1.85): park in the hold state, not the wait state.
inline constexpr const char* kHold = "hold";
/// Cleaning is planned again once the agent reported its own steps (first heartbeat).
inline constexpr const char* kCleanReplan = "clean_replan";
/// The steps a manual cleaning asked for (their presence makes a cleaning manual).
inline constexpr const char* kCleanStepsRequested = "clean_steps_requested";
/// The steps a servicing asked for (1.87).
inline constexpr const char* kServiceStepsRequested = "service_steps_requested";
/// The deploy steps a deployment request carried (1.69).
inline constexpr const char* kUserDeploySteps = "user_deploy_steps";
/// The agent ramdisk was booted for this servicing (left again at its end).
inline constexpr const char* kServiceRamdisk = "service_ramdisk";
/// The inventory being processed came from continue_inspection or an agent (not the BMC).
inline constexpr const char* kAgentInspecting = "agent_inspecting";
/// Consecutive power-state sync failures (maintenance after [conductor] power_state_sync_max_retries).
inline constexpr const char* kPowerSyncFailures = "power_sync_failures";
/// The user who asked for a flow another server handed to this node's conductor.
inline constexpr const char* kHandedOffUser = "handed_off_user";
/// A power action a server received for a node another conductor owns: {"target", "timeout",
/// "user"}. The receiving server reserves the node in the owner's name with this note
/// (Conductor::changePower); the owner's periodic pass claims and runs it.
inline constexpr const char* kHandedOffPower = "handed_off_power";
/// The node event journal's bookkeeping (server/conductor/node_events_recorder.h): the step
/// running now {"flow", "index", "interface", "step", "priority", "started_at", "started_ms"}
/// and the flow running now {"flow", "started_at", "started_ms"}, so that a step's and a
/// flow's duration survive a heartbeat round trip, a restart and a takeover.
inline constexpr const char* kEventStep = "event_step";
inline constexpr const char* kEventFlow = "event_flow";
/// What the agent reported of itself with its heartbeats.
inline constexpr const char* kAgentVersion = "agent_version";
inline constexpr const char* kAgentProtocolVersion = "agent_protocol_version";
inline constexpr const char* kHardwareManagerVersion = "hardware_manager_version";

/// The keys of one flow's step plan, and the node field holding its current step.
struct FlowKeys {
  const char* steps;      ///< the ordered plan (kept after the flow for inspection)
  const char* index;      ///< the index of the current step
  const char* completed;  ///< the current step finished; the next one runs
  size_t currentField;    ///< clean_step, deploy_step or service_step
};
const FlowKeys& keysFor(StepKind kind);

}  // namespace kiln::server::flow
