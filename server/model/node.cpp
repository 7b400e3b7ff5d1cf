#include "server/model/node.h"

#include <array>
#include <nlohmann/json.hpp>

#include "server/model/interface_type.h"
#include "server/model/resources.h"
#include "shared/core/secrets.h"
#include "shared/core/uuid.h"
#include "shared/json/json_util.h"
#include "server/model/versions.h"

namespace kiln::server {
namespace {

using FT = FieldType;
using IT = InterfaceType;

/// The microversion that introduced a `*_interface` field (server/model/interface_type.h).
constexpr int sinceOf(InterfaceType type) { return interfaceInfo(type).since; }
constexpr uint32_t N = kNullable, C = kCreatable, P = kPatchable, S = kSortable, X = kComputed,
                   M = kMaskSecrets, L = kDefaultList, I = kInternal, NS = kNoSelect,
                   D = kNullMeansDefault, RC = kNullRefusedOnCreate, RP = kNullRefusedOnPatch;

// Order must match enum NodeField.
//
// null (record.h): every field of Ironic's node_schema() and node_patch_schema() takes null
// (ironic/api/controllers/v1/node.py). What it then does, where the flags are not N alone:
// - uuid, conductor_group: post() replaces a falsy value with a generated UUID / "" (D); a
//   PATCH to a null conductor_group fails on .lower() in _update_changed_fields (RP).
// - retired, disable_power_off (D): nullable objects, stored as the columns' default False;
//   a PATCH stores None in Ironic, false here (the same meaning everywhere Ironic reads them).
// - protected: only node_patch_schema() has it; _update_changed_fields turns None into False,
//   the rule of a boolean without flags.
// - maintenance, console_enabled: BooleanField() refuses None, a 500 (RC, RP).
// - properties: post() calls .get() on it, a 500 (RC); a PATCH stores {} (D).
// - driver_info, instance_info, extra, network_data (D): JSON columns store None as {}; a
//   PATCH to null network_data fails validate_network_data (RP). instance_info fails (500)
//   only on a node without instance_name: Kiln takes the working answer, {}.
// - boot_mode, secure_boot (D): taken by the schema, so a POST may carry them as null.
// - description: a PATCH's len(None) fails, a 500 (RP); name (not a valid name) and
//   parent_node (no such node) are refused by Ironic's checks (RP; NodeHandlers::update
//   words those two and network_data as Ironic does).
constexpr FieldSpec kNodeFields[] = {
    {"id", FT::Int, ver::k1InitialVersion, I | S},
    {"uuid", FT::String, ver::k1InitialVersion, C | S | L | D, 36},
    {"name", FT::String, ver::k5NodeName, N | C | P | S | L | RP, 255},
    {"driver", FT::String, ver::k1InitialVersion, C | P | S, 255},
    {"driver_info", FT::Object, ver::k1InitialVersion, C | P | M | D},
    {"driver_internal_info", FT::Object, ver::k3DriverInternalInfo, M},
    {"properties", FT::Object, ver::k1InitialVersion, C | P | D | RC},
    {"instance_info", FT::Object, ver::k1InitialVersion, C | P | M | D},
    {"instance_uuid", FT::String, ver::k1InitialVersion, N | C | P | S | L, 36},
    {"chassis_uuid", FT::String, ver::k1InitialVersion, N | C | P | S, 36},
    {"extra", FT::Object, ver::k1InitialVersion, C | P | D},
    {"power_state", FT::String, ver::k1InitialVersion, N | S | L},
    {"target_power_state", FT::String, ver::k1InitialVersion, N | S},
    {"provision_state", FT::String, ver::k1InitialVersion, S | L},
    {"target_provision_state", FT::String, ver::k1InitialVersion, N | S},
    {"provision_updated_at", FT::Time, ver::k1InitialVersion, N | S},
    {"last_error", FT::String, ver::k1InitialVersion, N | S},
    {"maintenance", FT::Bool, ver::k1InitialVersion, C | P | S | L | RC | RP},
    {"maintenance_reason", FT::String, ver::k1InitialVersion, N | S, 255},
    {"fault", FT::String, ver::k42Fault, N | S},
    {"reservation", FT::String, ver::k1InitialVersion, N | S},
    {"console_enabled", FT::Bool, ver::k1InitialVersion, C | S | RC},
    {"clean_step", FT::Object, ver::k7NodeClean, M},
    {"deploy_step", FT::Object, ver::k44NodeDeployStep, M},
    {"raid_config", FT::Object, ver::k12RaidConfig, 0},
    {"target_raid_config", FT::Object, ver::k12RaidConfig, 0},
    {"inspection_started_at", FT::Time, ver::k6InspectState, N | S},
    {"inspection_finished_at", FT::Time, ver::k6InspectState, N | S},
    {"resource_class", FT::String, ver::k21ResourceClass, N | C | P | S, 80},
    {"bios_interface", FT::String, sinceOf(IT::Bios), N | C | P | S, 255},
    {"boot_interface", FT::String, sinceOf(IT::Boot), N | C | P | S, 255},
    {"console_interface", FT::String, sinceOf(IT::Console), N | C | P | S, 255},
    {"deploy_interface", FT::String, sinceOf(IT::Deploy), N | C | P | S, 255},
    {"firmware_interface", FT::String, sinceOf(IT::Firmware), N | C | P | S, 255},
    {"inspect_interface", FT::String, sinceOf(IT::Inspect), N | C | P | S, 255},
    {"management_interface", FT::String, sinceOf(IT::Management), N | C | P | S, 255},
    {"network_interface", FT::String, sinceOf(IT::Network), N | C | P | S, 255},
    {"power_interface", FT::String, sinceOf(IT::Power), N | C | P | S, 255},
    {"raid_interface", FT::String, sinceOf(IT::Raid), N | C | P | S, 255},
    {"rescue_interface", FT::String, sinceOf(IT::Rescue), N | C | P | S, 255},
    {"storage_interface", FT::String, sinceOf(IT::Storage), N | C | P | S, 255},
    {"vendor_interface", FT::String, sinceOf(IT::Vendor), N | C | P | S, 255},
    {"conductor_group", FT::String, ver::k46NodeConductorGroup, C | P | S | D | RP, 255},
    {"automated_clean", FT::Bool, ver::k47NodeAutomatedClean, N | C | P | S},
    {"protected", FT::Bool, ver::k48NodeProtected, P | S},  // a null PATCH: false, as Ironic
    {"protected_reason", FT::String, ver::k48NodeProtected, N | P | S, 255},
    {"owner", FT::String, ver::k50NodeOwner, N | C | P | S, 255},
    {"description", FT::String, ver::k51NodeDescription, N | C | P | S | RP, 4096},
    {"retired", FT::Bool, ver::k61NodeRetired, C | P | S | D},
    {"retired_reason", FT::String, ver::k61NodeRetired, N | C | P | S, 255},
    {"lessee", FT::String, ver::k65NodeLessee, N | C | P | S, 255},
    {"network_data", FT::Object, ver::k66NodeNetworkData, C | P | D | RP},
    {"boot_mode", FT::String, ver::k75NodeBootMode, N | S | D},
    {"secure_boot", FT::Bool, ver::k75NodeBootMode, N | S | D},
    {"shard", FT::String, ver::k82NodeShard, N | C | P | S, 255},
    {"parent_node", FT::String, ver::k83ParentChildNodes, N | C | P | S | RP, 36},
    {"service_step", FT::Object, ver::k87Service, M},
    {"disable_power_off", FT::Bool, ver::k95DisablePowerOff, C | P | S | D},
    {"instance_name", FT::String, ver::k104NodeInstanceName, N | C | P | S, 255},
    {"health", FT::String, ver::k109NodeHealth, N | S},
    {"created_at", FT::Time, ver::k1InitialVersion, N | S},
    {"updated_at", FT::Time, ver::k1InitialVersion, N | S},
    {"traits", FT::Array, ver::k37NodeTraits, X},
    {"conductor", FT::String, ver::k49Conductors, X | N},
    {"allocation_uuid", FT::String, ver::k52Allocation, N, 36},  // a column, set with the allocation
    {"links", FT::Array, ver::k1InitialVersion, X | L},
    {"ports", FT::Array, ver::k1InitialVersion, X | NS},
    {"states", FT::Array, ver::k14LinksNodestatesDriverproperties, X | NS},
    {"portgroups", FT::Array, ver::k24PortgroupsSubcontrollers, X | NS},
    {"volume", FT::Array, ver::k32Volume, X | NS},
};
static_assert(std::size(kNodeFields) == kNodeFieldCount);
// nodeInterfaceField() relies on the *_interface fields following InterfaceType's order.
static_assert(kNodeVendorInterface - kNodeBiosInterface + 1 == kInterfaceCount);
static_assert([] {
  for (const auto& info : kInterfaceTypes) {
    if (kNodeFields[nodeInterfaceField(info.type)].name != info.nodeField) return false;
  }
  return true;
}());

const Schema kNodeSchema{"Node", "nodes", kNodeFields};

}  // namespace

const Schema& nodeSchema() { return kNodeSchema; }

std::unexpected<Error> nodeLockedError(const Record& node) {
  return fail(ErrorCode::Conflict, Reason::NodeLocked,
              "Node " + node.uuid() + " is locked by host " + node.str(kNodeReservation) +
                  ", please retry after the current operation is completed.");
}

Error nodeProtectedError(std::string_view uuid) {
  return Error{ErrorCode::PermissionDenied, "Node " + std::string(uuid) +
                                                " is protected and cannot be undeployed, rebuilt "
                                                "or deleted"};
}

bool isValidLogicalName(std::string_view name) {
  if (name.empty() || name.size() > 255) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '~' ||
          c == '-')) {
      return false;
    }
  }
  return true;
}

Result<void> validateNodeName(std::string_view name, std::string_view patchedNode) {
  // Ironic's reserved words: path segments directly under /v1/nodes/.
  static constexpr std::string_view kReserved[] = {"maintenance", "management", "states",
                                                   "vendor_passthru", "detail", "validate"};
  const bool ok = isValidLogicalName(name) && !isUuidLike(name);
  for (auto r : kReserved) {
    if (name == r) {
      return invalid("The word \"" + std::string(name) +
                     "\" is reserved and can not be used as a node name. Reserved words are: "
                     "maintenance, management, states, vendor_passthru, detail, validate.");
    }
  }
  if (!ok && patchedNode.empty()) {
    return invalid("Cannot create node with invalid name '" + std::string(name) + "'");
  }
  if (!ok) {
    return invalid("Node " + std::string(patchedNode) + ": Cannot change name to invalid name '" +
                   std::string(name) + "'");
  }
  return {};
}

std::string maskSecrets(const std::string& json) {
  if (json.size() <= 2 || !mayContainSecret(json)) return json;  // "{}": most list pages
  auto parsed = parseJson(json);
  if (!parsed) return "{}";
  maskJson(*parsed);
  return dumpJson(*parsed);
}

std::string maskInstanceInfo(const std::string& json) { return maskSecrets(json); }

std::string maskUrlCredentials(const std::string& json) {
  if (json.find("://") == std::string::npos || json.find('@') == std::string::npos) return json;
  auto parsed = parseJson(json);
  if (!parsed) return "{}";
  maskJsonUrls(*parsed);
  return dumpJson(*parsed);
}

Json objectField(const Record& node, size_t field) {
  if (node[field].isNull()) return Json::object();
  auto parsed = parseJson(node.str(field));
  return parsed && parsed->is_object() ? *parsed : Json::object();
}

}  // namespace kiln::server
