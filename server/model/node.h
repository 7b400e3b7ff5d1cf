// File: server/model/node.h
//
// The node resource: its schema (every field of the node object up to the maximum
// microversion, see docs/ironic-api.md §3.1) and node-specific rules (names, masking).
#pragma once

#include <string>
#include <string_view>

#include "server/model/interface_type.h"
#include "server/schema/record.h"
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
  kNodeFirmwareInterface,
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
  kNodeShard,
  kNodeParentNode,
  kNodeServiceStep,
  kNodeDisablePowerOff,
  kNodeInstanceName,
  kNodeHealth,
  kNodeCreatedAt,
  kNodeUpdatedAt,
  // Computed (not columns of the nodes table), but for allocation_uuid.
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

/// The node field holding the implementation of an interface type. The *_interface fields are
/// contiguous and in InterfaceType's order (static_asserts in node.cpp).
constexpr NodeField nodeInterfaceField(InterfaceType type) {
  return static_cast<NodeField>(kNodeBiosInterface + static_cast<size_t>(type));
}

/// Ironic's is_valid_logical_name: 1-255 characters of [A-Za-z0-9._~-] (RFC 3986 unreserved).
bool isValidLogicalName(std::string_view name);

/// Ironic's NodeLocked (409, Reason::NodeLocked): "Node U is locked by host H, please retry
/// after the current operation is completed."
std::unexpected<Error> nodeLockedError(const Record& node);

/// Ironic's NodeProtected (403): undeploy, rebuild and delete are refused while `protected`.
Error nodeProtectedError(std::string_view uuid);

/// Ironic's logical-name rule (>= 1.10): 1-255 of [A-Za-z0-9._~-], not UUID-shaped, and not
/// a word the API uses as a path segment. InvalidArgument otherwise, in Ironic's words for a
/// create, or (`patchedNode`, the node's identifier in a PATCH) for a rename.
Result<void> validateNodeName(std::string_view name, std::string_view patchedNode = {});

/// A JSON-object field of a node (properties, driver_info, raid_config, ...), parsed; an empty
/// object when the field is null or holds anything but an object.
Json objectField(const Record& node, size_t field);

/// A stored JSON document as the API shows it, masked by the rules of shared/core/secrets.h:
/// every non-null value under a password-like key, at any depth and of any type, as "******"
/// (stricter than oslo's mask_dict_password, which masks scalars only), and URLs with userinfo
/// masked. Returns `json` unchanged when nothing needs masking; a document that may hold a
/// secret but cannot be parsed to mask it is shown as {}.
std::string maskSecrets(const std::string& json);

/// maskSecrets for instance_info. Ironic's show_instance_secrets rule (configdrive and
/// image_url as "******") is part of the shared key list.
std::string maskInstanceInfo(const std::string& json);

/// A stored JSON document whose keys the API shows as they are (properties, extra, raid
/// configurations, network_data): only its URLs with userinfo are masked.
std::string maskUrlCredentials(const std::string& json);

}  // namespace kiln::server
