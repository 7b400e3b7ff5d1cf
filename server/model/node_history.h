// File: server/model/node_history.h
//
// Node history (API 1.78): a journal of noteworthy events of a node, mostly the failures the
// conductor records in last_error (Ironic's node_history table and node_history_record()).
// Entries are written by the conductor only; the API lists and shows them
// (GET /v1/nodes/{id}/history[/{uuid}]) and they go when their node is deleted.
#pragma once

#include <optional>

#include <string>
#include <string_view>

#include "server/schema/record.h"
#include "server/model/resources.h"
#include "shared/core/clock.h"

namespace kiln::server {

/// Order must match kNodeHistoryFields in node_history.cpp.
enum NodeHistoryField : size_t {
  kHistId,
  kHistUuid,
  kHistNodeId,
  kHistConductor,
  kHistEventType,
  kHistSeverity,
  kHistEvent,
  kHistUser,
  kHistProject,
  kHistState,
  kHistTargetProvisionState,
  kHistDurationSeconds,
  kHistCreatedAt,
  kHistUpdatedAt,
  kHistLinks
};

const Schema& nodeHistorySchema();

/// Ironic's event types (ironic.common.states): where the node was when the event happened.
namespace history_event {
inline constexpr std::string_view kProvisioning = "provisioning";
inline constexpr std::string_view kCleaning = "cleaning";
inline constexpr std::string_view kDeploying = "deploying";
inline constexpr std::string_view kIntrospection = "introspection";
inline constexpr std::string_view kRescue = "rescue";
inline constexpr std::string_view kConductor = "conductor";
inline constexpr std::string_view kTransition = "transition";
inline constexpr std::string_view kUnprovision = "unprovision";
inline constexpr std::string_view kAdoption = "adoption";
inline constexpr std::string_view kServicing = "servicing";
inline constexpr std::string_view kMonitoring = "monitoring";
inline constexpr std::string_view kVerify = "verify";
/// Ironic's type when the caller names none (its power-action failures).
inline constexpr std::string_view kUnknown = "UNKNOWN";
}  // namespace history_event

/// One event to journal.
struct HistoryEvent {
  std::string event;               ///< the text (usually the node's new last_error)
  std::string eventType;           ///< history_event::k*
  std::string severity = "ERROR";  ///< "ERROR" or "INFO"
  std::string user;                ///< the requesting user, "" when unknown
  /// How long the failed flow ran (1.115), when the recorder knows.
  std::optional<int64_t> durationSeconds = std::nullopt;
  /// The node's provision state and target as the event happened (1.115); when unset, the
  /// node's states when the event is recorded.
  std::optional<std::string> state = std::nullopt;
  std::optional<std::string> targetState = std::nullopt;
};

}  // namespace kiln::server
