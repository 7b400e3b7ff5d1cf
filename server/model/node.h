// File: server/model/node.h
//
// The node resource: its schema (every field of the node object up to the maximum
// microversion, see docs/ironic-api.md §3.1) and node-specific rules (names, masking).
#pragma once

#include <string>
#include <string_view>

#include "server/drivers/interface_types.h"
#include "server/model/record.h"
#include "shared/core/error.h"
#include "shared/json/json_fwd.h"

namespace kiln::server {

/// Field indices of the node schema (the order of kNodeFields in node.cpp).
enum NodeField : size_t {
  kNodeId,
  kNodeUuid,
  kNodeName,
  kNodeDriver,
  kNodeDriverInfo,
  kNodeDriverInternalInfo,
  kNodeProperties,
  kNodeInstanceInfo,
  kNodeInstanceUuid,
  kNodeChassisUuid,
  kNodeExtra,
  kNodePowerState,
  kNodeTargetPowerState,
  kNodeProvisionState,
  kNodeTargetProvisionState,
  kNodeProvisionUpdatedAt,
  kNodeLastError,
  kNodeMaintenance,
  kNodeMaintenanceReason,
  kNodeFault,
  kNodeReservation,
  kNodeConsoleEnabled,
  kNodeCleanStep,
  kNodeDeployStep,
  kNodeRaidConfig,
  kNodeTargetRaidConfig,
  kNodeInspectionStartedAt,
  kNodeInspectionFinishedAt,
  kNodeResourceClass,
  kNodeBiosInterface,
  kNodeBootInterface,
  kNodeConsoleInterface,
  kNodeDeployInterface,
  kNodeInspectInterface,
  kNodeManagementInterface,
  kNodeNetworkInterface,
  kNodePowerInterface,
  kNodeRaidInterface,
  kNodeRescueInterface,
  kNodeStorageInterface,
  kNodeVendorInterface,
  kNodeConductorGroup,
  kNodeAutomatedClean,
  kNodeProtected,
  kNodeProtectedReason,
  kNodeOwner,
  kNodeDescription,
  kNodeRetired,
  kNodeRetiredReason,
  kNodeLessee,
  kNodeNetworkData,
  kNodeBootMode,
  kNodeSecureBoot,
  kNodeCreatedAt,
  kNodeUpdatedAt,
  // Computed (not columns of the nodes table).
  kNodeTraits,
  kNodeConductor,
  kNodeAllocationUuid,
  kNodeLinks,
  kNodePorts,
  kNodeStates,
  kNodePortgroups,
  kNodeVolume,
  kNodeFieldCount
};

const Schema& nodeSchema();

/// The node field holding the implementation of an interface type.
inline NodeField nodeInterfaceField(InterfaceType type) {
  return static_cast<NodeField>(kNodeBiosInterface + static_cast<size_t>(type));
}

/// Ironic's logical-name rule (>= 1.10): 1-255 of [A-Za-z0-9._~-], not UUID-shaped, and not
/// a word the API uses as a path segment. InvalidArgument otherwise.
Result<void> validateNodeName(std::string_view name);

/// Masks password-like keys of a JSON object ("******"), recursively, as oslo's
/// A JSON-object field of a node (properties, driver_info, raid_config, ...), parsed; an empty
/// object when the field is null or holds anything but an object.
Json objectField(const Record& node, size_t field);

/// mask_dict_password does. Returns `json` unchanged when nothing needs masking.
std::string maskSecrets(const std::string& json);

/// Masks instance_info's configdrive and image_url (Ironic's show_instance_secrets rule) and
/// its password-like keys.
std::string maskInstanceInfo(const std::string& json);

}  // namespace kiln::server
