#include "server/model/firmware_component.h"

#include <map>
#include <set>

#include "server/model/versions.h"

namespace kiln::server {
namespace {

using FT = FieldType;
constexpr uint32_t N = kNullable, S = kSortable, I = kInternal;

// Ironic's firmware_information table. Rendered by server/api/firmware_handlers.cpp.
constexpr FieldSpec kFirmwareComponentFields[] = {
    {"id", FT::Int, ver::k86FirmwareInterface, I | S},
    {"component", FT::String, ver::k86FirmwareInterface, S, 255},
    {"node_id", FT::Int, ver::k86FirmwareInterface, I},
    {"initial_version", FT::String, ver::k86FirmwareInterface, 0, 255},
    {"current_version", FT::String, ver::k86FirmwareInterface, N, 255},
    {"last_version_flashed", FT::String, ver::k86FirmwareInterface, N, 255},
    {"vendor", FT::String, ver::k114FirmwareIdentity, N, 255},
    {"model", FT::String, ver::k114FirmwareIdentity, N, 255},
    {"serial_number", FT::String, ver::k114FirmwareIdentity, N, 255},
    {"created_at", FT::Time, ver::k86FirmwareInterface, N},
    {"updated_at", FT::Time, ver::k86FirmwareInterface, N},
};
static_assert(std::size(kFirmwareComponentFields) == kFwUpdatedAt + 1);

const Schema kFirmwareComponentSchema{"Firmware component", "firmware_information",
                                      kFirmwareComponentFields};


}  // namespace

const Schema& firmwareComponentSchema() { return kFirmwareComponentSchema; }

}  // namespace kiln::server
