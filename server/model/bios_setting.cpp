#include "server/model/bios_setting.h"

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "shared/json/json_util.h"
#include "server/model/versions.h"

namespace kiln::server {
namespace {

using FT = FieldType;
constexpr uint32_t N = kNullable, S = kSortable, I = kInternal;

// Ironic's bios_settings table. Rendered by server/api/bios_handlers.cpp.
constexpr FieldSpec kBiosSettingFields[] = {
    {"id", FT::Int, ver::k40BiosInterface, I | S},
    {"name", FT::String, ver::k40BiosInterface, S, 255},
    {"node_id", FT::Int, ver::k40BiosInterface, I},
    {"value", FT::String, ver::k40BiosInterface, N},
    {"attribute_type", FT::String, ver::k74BiosRegistry, N, 255},
    {"allowable_values", FT::Array, ver::k74BiosRegistry, N},
    {"lower_bound", FT::Int, ver::k74BiosRegistry, N},
    {"max_length", FT::Int, ver::k74BiosRegistry, N},
    {"min_length", FT::Int, ver::k74BiosRegistry, N},
    {"read_only", FT::Bool, ver::k74BiosRegistry, N},
    {"reset_required", FT::Bool, ver::k74BiosRegistry, N},
    {"is_unique", FT::Bool, ver::k74BiosRegistry, N},
    {"upper_bound", FT::Int, ver::k74BiosRegistry, N},
    {"created_at", FT::Time, ver::k40BiosInterface, N},
    {"updated_at", FT::Time, ver::k40BiosInterface, N},
};
static_assert(std::size(kBiosSettingFields) == kBiosUpdatedAt + 1);

const Schema kBiosSettingSchema{"BIOS setting", "bios_settings", kBiosSettingFields};


}  // namespace

const Schema& biosSettingSchema() { return kBiosSettingSchema; }

std::optional<std::string> biosValueText(const Json& value) {
  if (value.is_null()) return std::nullopt;
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "True" : "False";
  return dumpJson(value);
}

}  // namespace kiln::server
