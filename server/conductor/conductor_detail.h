// File: server/conductor/conductor_detail.h
//
// Helpers the conductor's translation units share (conductor.cpp, conductor_agent.cpp,
// conductor_periodic.cpp). Not part of the conductor's interface.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "server/conductor/step_planner.h"
#include "server/storage/storage.h"

namespace kiln::server::detail {

/// States in which a worker owns the node (it holds the reservation).
bool isWorkingState(std::string_view s);
/// clean wait, wait call-back, inspect wait.
bool isWaitState(std::string_view s);

/// Keys of one flow kind in driver_internal_info, and the node field of its current step.
struct FlowKeys {
  const char* steps;
  const char* index;
  const char* completed;
  size_t currentField;
};
const FlowKeys& keysFor(StepKind kind);

/// Forgets a flow's plan and bookkeeping in driver_internal_info (its steps, index, completion
/// marker, wait deadline and requested steps).
void clearFlow(nlohmann::json& info, StepKind kind);

/// driver_internal_info key of a power action a server received for a node another conductor
/// owns: {"target", "timeout", "user"}. The receiving server reserves the node in the owner's
/// name with this note (Conductor::changePower); the owner's periodic pass claims and runs it
/// (Conductor::pickUpHandedOffPower).
inline constexpr const char* kHandedOffPower = "handed_off_power";

/// "interface.step" of a step object; "" when it names no step.
std::string stepName(const nlohmann::json& step);

/// Calls `fn(node)` for every node matching `filters`, in id order, reading 200 nodes at a time
/// in short read transactions: the periodic tasks of a server with tens of thousands of nodes
/// never hold them all in memory. `fn` returns false to stop; so does a failed read.
void forEachNode(Storage& storage, const std::vector<ListFilter>& filters,
                 const std::function<bool(const Record&)>& fn);

}  // namespace kiln::server::detail
