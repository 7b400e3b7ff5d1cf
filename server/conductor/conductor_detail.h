// File: server/conductor/conductor_detail.h
//
// Helpers the conductor's translation units share (conductor.cpp, conductor_agent.cpp). Not
// part of the conductor's interface.
#pragma once

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

}  // namespace kiln::server::detail
