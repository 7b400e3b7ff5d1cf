#include "server/model/conductor_registration.h"

#include "server/model/versions.h"

namespace kiln::server {
namespace {

using FT = FieldType;
constexpr uint32_t N = kNullable, S = kSortable, I = kInternal;

// Ironic's conductors table (without its `version` column). Rendered by
// server/api/catalog_handlers.cpp.
constexpr FieldSpec kConductorFields[] = {
    {"id", FT::Int, ver::k49Conductors, I | S},
    {"hostname", FT::String, ver::k49Conductors, S, 255},
    {"conductor_group", FT::String, ver::k49Conductors, 0, 255},
    {"drivers", FT::Array, ver::k49Conductors, 0},
    {"online", FT::Bool, ver::k49Conductors, 0},
    {"created_at", FT::Time, ver::k49Conductors, N},
    {"updated_at", FT::Time, ver::k49Conductors, N},
};
static_assert(std::size(kConductorFields) == kCondUpdatedAt + 1);

const Schema kConductorSchema{"Conductor", "conductors", kConductorFields};

}  // namespace

const Schema& conductorSchema() { return kConductorSchema; }

}  // namespace kiln::server
