#include "server/model/resources.h"

#include "server/model/bios_setting.h"
#include "server/model/node.h"
#include "server/model/node_history.h"

namespace kiln::server {
namespace {

using FT = FieldType;
constexpr uint32_t N = kNullable, C = kCreatable, P = kPatchable, S = kSortable,
                   X = kComputed, L = kDefaultList, I = kInternal,
                   NS = kNoSelect, E = kShownBeforeSince;

// Ports (docs/ironic-api.md §9). Order must match enum PortField in port.h.
constexpr FieldSpec kPortFields[] = {
    {"id", FT::Int, 1, I | S},
    {"uuid", FT::String, 1, C | S | L, 36},
    {"address", FT::String, 1, C | P | S | L, 17},
    {"node_uuid", FT::String, 1, C | P | S, 36},
    {"extra", FT::Object, 1, C | P},
    {"internal_info", FT::Object, 18, 0},
    {"local_link_connection", FT::Object, 19, C | P},
    {"pxe_enabled", FT::Bool, 19, C | P | S},
    {"portgroup_uuid", FT::String, 24, N | C | P | S, 36},
    {"physical_network", FT::String, 34, N | C | P | S, 64},
    {"is_smartnic", FT::Bool, 53, C | P | S},
    {"created_at", FT::Time, 1, N | S},
    {"updated_at", FT::Time, 1, N | S},
    {"links", FT::Array, 1, X | L},
};

constexpr FieldSpec kPortgroupFields[] = {
    {"id", FT::Int, 1, I | S},
    {"uuid", FT::String, 23, C | S | L, 36},
    {"name", FT::String, 23, N | C | P | S | L, 255},
    {"address", FT::String, 23, N | C | P | S | L, 17},
    {"node_uuid", FT::String, 23, C | P | S, 36},
    {"extra", FT::Object, 23, C | P},
    {"internal_info", FT::Object, 23, 0},
    {"standalone_ports_supported", FT::Bool, 23, C | P | S},
    {"mode", FT::String, 26, N | C | P | S | E, 255},
    {"properties", FT::Object, 26, C | P | E},
    {"created_at", FT::Time, 23, N | S},
    {"updated_at", FT::Time, 23, N | S},
    {"links", FT::Array, 23, X | L},
    {"ports", FT::Array, 24, X | NS | E},
};

constexpr FieldSpec kChassisFields[] = {
    {"id", FT::Int, 1, I | S},
    {"uuid", FT::String, 1, C | S | L, 36},
    {"description", FT::String, 1, N | C | P | S | L, 255},
    {"extra", FT::Object, 1, C | P},
    {"created_at", FT::Time, 1, N | S},
    {"updated_at", FT::Time, 1, N | S},
    {"links", FT::Array, 1, X | L},
    {"nodes", FT::Array, 1, X | NS},
};

constexpr FieldSpec kDeployTemplateFields[] = {
    {"id", FT::Int, 55, I | S},
    {"uuid", FT::String, 55, C | S | L, 36},
    {"name", FT::String, 55, C | P | S | L, 255},
    {"steps", FT::Array, 55, C | P},
    {"extra", FT::Object, 55, C | P},
    {"created_at", FT::Time, 55, N | S},
    {"updated_at", FT::Time, 55, N | S},
    {"links", FT::Array, 55, X | L},
};

// Allocations (docs/ironic-api-1.79-1.115.md, "G1"). The list shows every field. node_uuid is
// set by the scheduler (or by a backfill's "node"), never by the client directly.
constexpr FieldSpec kAllocationFields[] = {
    {"id", FT::Int, 52, I | S},
    {"uuid", FT::String, 52, C | S | L, 36},
    {"name", FT::String, 52, N | C | P | S | L, 255},
    {"node_uuid", FT::String, 52, N | S | L, 36},
    {"state", FT::String, 52, S | L},
    {"last_error", FT::String, 52, N | S | L},
    {"resource_class", FT::String, 52, N | C | S | L, 80},
    {"traits", FT::Array, 52, C | L},
    {"candidate_nodes", FT::Array, 52, C | L},
    {"extra", FT::Object, 52, C | P | L},
    {"owner", FT::String, 60, N | C | S | L, 255},
    {"created_at", FT::Time, 52, N | S | L},
    {"updated_at", FT::Time, 52, N | S | L},
    {"links", FT::Array, 52, X | L},
};
static_assert(std::size(kAllocationFields) == kAllocLinks + 1);

// Volume connectors and targets (API 1.32). Ironic's columns: type String(32), connector_id
// String(255), volume_type String(64), volume_id String(36). node_uuid stands for Ironic's
// node_id (as for ports). The short list shows Ironic's _DEFAULT_RETURN_FIELDS.
constexpr FieldSpec kVolumeConnectorFields[] = {
    {"id", FT::Int, 32, I | S},
    {"uuid", FT::String, 32, C | S | L, 36},
    {"node_uuid", FT::String, 32, C | P | L, 36},
    {"type", FT::String, 32, C | P | S | L, 32},
    {"connector_id", FT::String, 32, C | P | S | L, 255},
    {"extra", FT::Object, 32, C | P},
    {"created_at", FT::Time, 32, N | S},
    {"updated_at", FT::Time, 32, N | S},
    {"links", FT::Array, 32, X | L},
};
static_assert(std::size(kVolumeConnectorFields) == kVcLinks + 1);

constexpr FieldSpec kVolumeTargetFields[] = {
    {"id", FT::Int, 32, I | S},
    {"uuid", FT::String, 32, C | S | L, 36},
    {"node_uuid", FT::String, 32, C | P | L, 36},
    {"volume_type", FT::String, 32, C | P | S | L, 64},
    {"properties", FT::Object, 32, C | P},
    {"boot_index", FT::Int, 32, C | P | S | L},
    {"volume_id", FT::String, 32, C | P | S | L, 36},
    {"extra", FT::Object, 32, C | P},
    {"created_at", FT::Time, 32, N | S},
    {"updated_at", FT::Time, 32, N | S},
    {"links", FT::Array, 32, X | L},
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
  }
  return nodeSchema();
}

}  // namespace kiln::server
