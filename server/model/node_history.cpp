#include "server/model/node_history.h"

#include "server/model/node.h"
#include "shared/core/uuid.h"
#include "server/model/versions.h"

namespace kiln::server {
namespace {

using FT = FieldType;
constexpr uint32_t N = kNullable, S = kSortable, X = kComputed, I = kInternal;

// Ironic's node_history table (conductor 255, user 32 characters). Rendered by
// server/api/history_handlers.cpp, not through fields=.
constexpr FieldSpec kNodeHistoryFields[] = {
    {"id", FT::Int, ver::k78NodeHistory, I | S},
    {"uuid", FT::String, ver::k78NodeHistory, S, 36},
    {"node_id", FT::Int, ver::k78NodeHistory, I},
    {"conductor", FT::String, ver::k78NodeHistory, N, 255},
    {"event_type", FT::String, ver::k78NodeHistory, N, 255},
    {"severity", FT::String, ver::k78NodeHistory, N, 255},
    {"event", FT::String, ver::k78NodeHistory, N},
    {"user", FT::String, ver::k78NodeHistory, N, 32},
    {"project", FT::String, ver::k113NodeHistoryProject, N, 255},
    {"state", FT::String, ver::k115NodeHistoryFields, N, 15},
    {"target_provision_state", FT::String, ver::k115NodeHistoryFields, N, 15},
    {"duration_seconds", FT::Int, ver::k115NodeHistoryFields, N},
    {"created_at", FT::Time, ver::k78NodeHistory, N | S},
    {"updated_at", FT::Time, ver::k78NodeHistory, N},
    {"links", FT::Array, ver::k78NodeHistory, X},
};
static_assert(std::size(kNodeHistoryFields) == kHistLinks + 1);

const Schema kNodeHistorySchema{"Node history record", "node_history", kNodeHistoryFields};

}  // namespace

const Schema& nodeHistorySchema() { return kNodeHistorySchema; }

}  // namespace kiln::server
