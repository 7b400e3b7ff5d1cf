// File: server/conductor/provision_state_machine.h
//
// Ironic's provision state machine as data (house-style rule 21): one (from, event, to) table.
// Events are the API verbs (manage, provide, deploy, rebuild, deleted, clean, abort, inspect,
// adopt) and the conductor's internal events (done, fail, wait, resume). A test renders the
// table to docs/states.dot and fails when the committed file is stale.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace kiln::server {

struct StateTransition {
  std::string_view from;
  std::string_view event;
  std::string_view to;
};

/// Every transition.
std::span<const StateTransition> provisionTransitions();

/// The state `event` leads to from `from`, or nullopt when the event is not valid there.
std::optional<std::string_view> nextProvisionState(std::string_view from, std::string_view event);

/// Maps API verbs to events: "active" is "deploy", "undeploy" is "deleted"; others unchanged.
std::string_view verbToEvent(std::string_view verb);

/// The stable state a verb aims at (target_provision_state while the work runs).
std::optional<std::string_view> verbTarget(std::string_view verb);

/// The microversion that introduced a verb (406 below it); nullopt for unknown verbs.
std::optional<int> verbSince(std::string_view verb);

/// The machine in Graphviz DOT form.
std::string provisionStatesDot();

}  // namespace kiln::server
