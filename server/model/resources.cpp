#include "server/model/resources.h"

#include "server/model/bios_setting.h"
#include "server/model/conductor_registration.h"
#include "server/model/firmware_component.h"
#include "server/model/inspection_rule.h"
#include "server/model/node.h"
#include "server/model/node_history.h"
#include "server/model/node_inventory.h"
#include "server/model/runbook.h"
#include "server/model/versions.h"

namespace kiln::server {
namespace {

using FT = FieldType;
constexpr uint32_t N = kNullable, C = kCreatable, P = kPatchable, S = kSortable, X = kComputed,
                   L = kDefaultList, I = kInternal, NS = kNoSelect, E = kShownBeforeSince,
                   W = kWritableBeforeSince, D = kNullMeansDefault, RC = kNullRefusedOnCreate,
                   RP = kNullRefusedOnPatch;

// null (record.h) follows the request schemas of Ironic's controllers (PORT_SCHEMA,
// PORTGROUP_SCHEMA, CHASSIS_SCHEMA, TEMPLATE_SCHEMA, ALLOCATION_SCHEMA, CONNECTOR_SCHEMA,
// TARGET_SCHEMA in ironic/api/controllers/v1/, the create_request_body of
// ironic/api/schemas/v1/): a null uuid is generated (D); JSON documents (extra, properties,
// local_link_connection, traits, candidate_nodes) are stored as {} or [] (D); pxe_enabled and
// standalone_ports_supported are BooleanField()s that refuse None, a 500 in Ironic (RC, RP);
// is_smartnic is nullable with the default False (D; a PATCH stores None in Ironic, false
// here); available_for_dynamic_portgroup is boolean only in Ironic's schema (RC, RP).

// Ports (docs/ironic-api.md §9). Order must match enum PortField in port.h.
constexpr FieldSpec kPortFields[] = {
    {"id", FT::Int, ver::k1InitialVersion, I | S},
    {"uuid", FT::String, ver::k1InitialVersion, C | S | L | D, 36},
    {"address", FT::String, ver::k1InitialVersion, C | P | S | L, 17},
    {"node_uuid", FT::String, ver::k1InitialVersion, C | P | S, 36},
    {"extra", FT::Object, ver::k1InitialVersion, C | P | D},
    {"internal_info", FT::Object, ver::k18PortInternalInfo, 0},
    {"local_link_connection", FT::Object, ver::k19PortAdvancedNetFields, C | P | D},
    {"pxe_enabled", FT::Bool, ver::k19PortAdvancedNetFields, C | P | S | RC | RP},
    {"portgroup_uuid", FT::String, ver::k24PortgroupsSubcontrollers, N | C | P | S, 36},
    {"physical_network", FT::String, ver::k34PortPhysicalNetwork, N | C | P | S, 64},
    {"is_smartnic", FT::Bool, ver::k53PortSmartnic, C | P | S | D},
    {"name", FT::String, ver::k88PortName, N | C | P | S, 255},
    {"description", FT::String, ver::k97PortDescription, N | C | P | S, 255},
    {"vendor", FT::String, ver::k100PortVendor, N | C | P | S, 32},
    {"category", FT::String, ver::k101PortCategory, N | C | P | S, 80},
    {"available_for_dynamic_portgroup", FT::Bool, ver::k111DynamicPortgroup, C | P | S | RC | RP},
    {"created_at", FT::Time, ver::k1InitialVersion, N | S},
    {"updated_at", FT::Time, ver::k1InitialVersion, N | S},
    {"links", FT::Array, ver::k1InitialVersion, X | L},
};

constexpr FieldSpec kPortgroupFields[] = {
    {"id", FT::Int, ver::k1InitialVersion, I | S},
    {"uuid", FT::String, ver::k23Portgroups, C | S | L | D, 36},
    {"name", FT::String, ver::k23Portgroups, N | C | P | S | L, 255},
    {"address", FT::String, ver::k23Portgroups, N | C | P | S | L, 17},
    {"node_uuid", FT::String, ver::k23Portgroups, C | P | S, 36},
    {"extra", FT::Object, ver::k23Portgroups, C | P | D},
    {"internal_info", FT::Object, ver::k23Portgroups, 0},
    {"standalone_ports_supported", FT::Bool, ver::k23Portgroups, C | P | S | RC | RP},
    {"mode", FT::String, ver::k26PortgroupModeProperties, N | C | P | S | E, 255},
    {"properties", FT::Object, ver::k26PortgroupModeProperties, C | P | E | D},
    {"physical_network", FT::String, ver::k102PortgroupPhysicalNetwork, N | C | P | S | W, 64},
    {"category", FT::String, ver::k103PortgroupCategory, N | C | P | S | W, 80},
    {"dynamic_portgroup", FT::Bool, ver::k111DynamicPortgroup, S},
    {"created_at", FT::Time, ver::k23Portgroups, N | S},
    {"updated_at", FT::Time, ver::k23Portgroups, N | S},
    {"links", FT::Array, ver::k23Portgroups, X | L},
    {"ports", FT::Array, ver::k24PortgroupsSubcontrollers, X | NS | E},
};

constexpr FieldSpec kChassisFields[] = {
    {"id", FT::Int, ver::k1InitialVersion, I | S},
    {"uuid", FT::String, ver::k1InitialVersion, C | S | L | D, 36},
    {"description", FT::String, ver::k1InitialVersion, N | C | P | S | L, 255},
    {"extra", FT::Object, ver::k1InitialVersion, C | P | D},
    {"created_at", FT::Time, ver::k1InitialVersion, N | S},
    {"updated_at", FT::Time, ver::k1InitialVersion, N | S},
    {"links", FT::Array, ver::k1InitialVersion, X | L},
    {"nodes", FT::Array, ver::k1InitialVersion, X | NS},
};

constexpr FieldSpec kDeployTemplateFields[] = {
    {"id", FT::Int, ver::k55DeployTemplates, I | S},
    {"uuid", FT::String, ver::k55DeployTemplates, C | S | L | D, 36},
    {"name", FT::String, ver::k55DeployTemplates, C | P | S | L, 255},
    {"steps", FT::Array, ver::k55DeployTemplates, C | P},
    {"extra", FT::Object, ver::k55DeployTemplates, C | P | D},
    {"created_at", FT::Time, ver::k55DeployTemplates, N | S},
    {"updated_at", FT::Time, ver::k55DeployTemplates, N | S},
    {"links", FT::Array, ver::k55DeployTemplates, X | L},
};

// Allocations (docs/ironic-api-1.79-1.115.md, "G1"). The list shows every field. node_uuid is
// set by the scheduler (or by a backfill's "node"), never by the client directly.
constexpr FieldSpec kAllocationFields[] = {
    {"id", FT::Int, ver::k52Allocation, I | S},
    {"uuid", FT::String, ver::k52Allocation, C | S | L | D, 36},
    {"name", FT::String, ver::k52Allocation, N | C | P | S | L, 255},
    {"node_uuid", FT::String, ver::k52Allocation, N | S | L, 36},
    {"state", FT::String, ver::k52Allocation, S | L},
    {"last_error", FT::String, ver::k52Allocation, N | S | L},
    {"resource_class", FT::String, ver::k52Allocation, N | C | S | L, 80},
    {"traits", FT::Array, ver::k52Allocation, C | L | D},
    {"candidate_nodes", FT::Array, ver::k52Allocation, C | L | D},
    {"extra", FT::Object, ver::k52Allocation, C | P | L | D},
    {"owner", FT::String, ver::k60AllocationOwner, N | C | S | L, 255},
    {"created_at", FT::Time, ver::k52Allocation, N | S | L},
    {"updated_at", FT::Time, ver::k52Allocation, N | S | L},
    {"links", FT::Array, ver::k52Allocation, X | L},
};
static_assert(std::size(kAllocationFields) == kAllocLinks + 1);

// Volume connectors and targets (API 1.32). Ironic's columns: type String(32), connector_id
// String(255), volume_type String(64), volume_id String(36). node_uuid stands for Ironic's
// node_id (as for ports). The short list shows Ironic's _DEFAULT_RETURN_FIELDS.
constexpr FieldSpec kVolumeConnectorFields[] = {
    {"id", FT::Int, ver::k32Volume, I | S},
    {"uuid", FT::String, ver::k32Volume, C | S | L | D, 36},
    {"node_uuid", FT::String, ver::k32Volume, C | P | L, 36},
    {"type", FT::String, ver::k32Volume, C | P | S | L, 32},
    {"connector_id", FT::String, ver::k32Volume, C | P | S | L, 255},
    {"extra", FT::Object, ver::k32Volume, C | P | D},
    {"created_at", FT::Time, ver::k32Volume, N | S},
    {"updated_at", FT::Time, ver::k32Volume, N | S},
    {"links", FT::Array, ver::k32Volume, X | L},
};
static_assert(std::size(kVolumeConnectorFields) == kVcLinks + 1);

constexpr FieldSpec kVolumeTargetFields[] = {
    {"id", FT::Int, ver::k32Volume, I | S},
    {"uuid", FT::String, ver::k32Volume, C | S | L | D, 36},
    {"node_uuid", FT::String, ver::k32Volume, C | P | L, 36},
    {"volume_type", FT::String, ver::k32Volume, C | P | S | L, 64},
    {"properties", FT::Object, ver::k32Volume, C | P | D},
    {"boot_index", FT::Int, ver::k32Volume, C | P | S | L},
    {"volume_id", FT::String, ver::k32Volume, C | P | S | L, 36},
    {"extra", FT::Object, ver::k32Volume, C | P | D},
    {"created_at", FT::Time, ver::k32Volume, N | S},
    {"updated_at", FT::Time, ver::k32Volume, N | S},
    {"links", FT::Array, ver::k32Volume, X | L},
};
static_assert(std::size(kVolumeTargetFields) == kVtLinks + 1);

const Schema kPortSchema{"Port", "ports", kPortFields};
const Schema kPortgroupSchema{"Portgroup", "portgroups", kPortgroupFields};
const Schema kChassisSchema{"Chassis", "chassis", kChassisFields};
const Schema kDeployTemplateSchema{"Deploy template", "deploy_templates", kDeployTemplateFields};
const Schema kAllocationSchema{"Allocation", "allocations", kAllocationFields};
const Schema kVolumeConnectorSchema{"Volume connector", "volume_connectors",
                                    kVolumeConnectorFields};
const Schema kVolumeTargetSchema{"Volume target", "volume_targets", kVolumeTargetFields};

}  // namespace

const Schema& schemaOf(Resource resource) {
  switch (resource) {
    case Resource::Node: return nodeSchema();
    case Resource::Port: return kPortSchema;
    case Resource::Portgroup: return kPortgroupSchema;
    case Resource::Chassis: return kChassisSchema;
    case Resource::DeployTemplate: return kDeployTemplateSchema;
    case Resource::Allocation: return kAllocationSchema;
    case Resource::VolumeConnector: return kVolumeConnectorSchema;
    case Resource::VolumeTarget: return kVolumeTargetSchema;
    case Resource::NodeHistory:
      return nodeHistorySchema();
    case Resource::BiosSetting:
      return biosSettingSchema();
    case Resource::NodeInventory:
      return nodeInventorySchema();
    case Resource::Runbook:
      return runbookSchema();
    case Resource::FirmwareComponent:
      return firmwareComponentSchema();
    case Resource::InspectionRule:
      return inspectionRuleSchema();
    case Resource::Conductor:
      return conductorSchema();
  }
  return nodeSchema();
}

}  // namespace kiln::server
