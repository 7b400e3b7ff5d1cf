// File: server/model/node_event.h
//
// The node event journal (issue 27, docs/observability.md "Events"): one row per thing that
// happened to a node -- a provision or power state change, a step's or a flow's start and
// end, an error, image-write progress, and (written by other parts through the same append)
// BMC requests and agent log lines. Plain data: the queries are in
// server/storage/queries/node_events.h, the recording in server/conductor/node_events_recorder.h,
// the API in server/api/node_event_handlers.h.
//
// An event's id is global and increasing (the Server-Sent Events id); ids are never reused,
// also after pruning. `fields` is the event's own data as one compact JSON object, already
// masked (no secret ever reaches it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::server {

struct NodeEvent {
  int64_t id = 0;             ///< assigned on append
  int64_t nodeId = 0;         ///< the node's integer id (the row's owner; deleted with it)
  std::string nodeUuid;       ///< the node's UUID, for readers that follow several nodes
  std::string time;           ///< UTC, ISO 8601 with milliseconds (formatEventTime)
  std::string kind;           ///< node_event::k*
  std::string fields = "{}";  ///< compact JSON object, the kind's fields
  std::string conductor;      ///< the kiln-server ([DEFAULT] host) that wrote it
};

/// The kinds this part records (other parts add their own: bmc_request, agent_log, ...). A
/// kind is lower-case letters, digits and underscores, at most 64 characters.
namespace node_event {
inline constexpr std::string_view kProvisionState = "provision_state";
inline constexpr std::string_view kPowerState = "power_state";
inline constexpr std::string_view kStepStarted = "step_started";
inline constexpr std::string_view kStepFinished = "step_finished";
inline constexpr std::string_view kFlowStarted = "flow_started";
inline constexpr std::string_view kFlowFinished = "flow_finished";
inline constexpr std::string_view kError = "error";
inline constexpr std::string_view kWriteProgress = "write_progress";
inline constexpr std::string_view kAgentLog = "agent_log";
/// A request to the node's BMC (server/drivers/bmc_requests.h, recordBmcRequests).
inline constexpr std::string_view kBmcRequest = "bmc_request";

/// Whether `kind` is spelled as a kind must be (see above).
bool validKind(std::string_view kind);
}  // namespace node_event

}  // namespace kiln::server
