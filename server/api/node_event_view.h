// File: server/api/node_event_view.h
//
// GET /v1/nodes/{node}/events, the pure parts (docs/observability.md "Events"): the parsers of
// the client's input -- ?since=, ?kind=, the Last-Event-ID header, the Accept header that asks
// for a stream -- and the JSON of one event, shared by the listing and the Server-Sent Events
// stream. Every parser here is in the fuzzing harness (tests/fuzz, target node_event_params).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/model/node_event.h"
#include "shared/core/error.h"

namespace kiln::server {

/// The most kinds one ?kind= may name.
inline constexpr size_t kMaxEventKinds = 32;

/// An event id as ?since= and Last-Event-ID carry it: decimal digits only (no sign, no space),
/// 0 to 2^63-1. InvalidArgument naming `what` ("since", "Last-Event-ID") otherwise.
Result<int64_t> parseEventId(std::string_view text, std::string_view what);

/// ?kind=a,b: a comma-separated list of kinds (node_event::validKind each; at most
/// kMaxEventKinds; duplicates dropped, order kept). InvalidArgument for an empty list, an
/// empty or malformed entry, or too many.
Result<std::vector<std::string>> parseEventKinds(std::string_view text);

/// Whether an Accept header asks for text/event-stream (any of its media ranges, parameters
/// and case ignored).
bool wantsEventStream(std::optional<std::string_view> accept);

/// One event as the API shows it, compact JSON:
/// {"id": 12, "time": "...", "kind": "...", "node_uuid": "...", "conductor": "...", <fields>}.
/// Fields that could hold a secret are masked again here (defence in depth).
std::string renderNodeEvent(const NodeEvent& event);

/// One event as a Server-Sent Events frame: "id: <id>\ndata: <renderNodeEvent>\n\n".
std::string eventStreamFrame(const NodeEvent& event);

}  // namespace kiln::server
