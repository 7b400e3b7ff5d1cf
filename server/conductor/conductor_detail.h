// File: server/conductor/conductor_detail.h
//
// Helpers the conductor's translation units share (conductor.cpp, conductor_requests.cpp,
// conductor_agent.cpp, conductor_periodic.cpp, ...). Not part of the conductor's interface.
// The state facts they use are in server/model/provision_state.h, the bookkeeping keys in
// server/conductor/flow_keys.h.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "server/conductor/flow_keys.h"
#include "server/conductor/step_planner.h"
#include "server/storage/storage.h"

namespace kiln::server::detail {

/// Forgets a flow's plan and bookkeeping in driver_internal_info (its steps, index, completion
/// marker, wait deadline and requested steps).
void clearFlow(nlohmann::json& info, StepKind kind);

/// "interface.step" of a step object; "" when it names no step.
std::string stepName(const nlohmann::json& step);

/// Calls `fn(node)` for every node matching `filters`, in id order, reading 200 nodes at a time
/// in short read transactions: the periodic tasks of a server with tens of thousands of nodes
/// never hold them all in memory. `fn` returns false to stop; so does a failed read.
void forEachNode(Storage& storage, const std::vector<ListFilter>& filters,
                 const std::function<bool(const Record&)>& fn);

}  // namespace kiln::server::detail
