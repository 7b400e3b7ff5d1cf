// File: server/model/resources.h
//
// The API resources Kiln stores, and their schemas.
#pragma once

#include "server/schema/record.h"

namespace kiln::server {

enum class Resource {
  Node,
  Port,
  Portgroup,
  Chassis,
  DeployTemplate,
  Allocation,
  VolumeConnector,
  VolumeTarget,
  NodeHistory,  ///< node history events (1.78; server/model/node_history.h)
  BiosSetting,  ///< cached BIOS settings (1.40; server/model/bios_setting.h)
  NodeInventory,  ///< inspection data (1.81; server/model/node_inventory.h)
  Runbook,        ///< runbooks (1.92, 1.112; server/model/runbook.h)
  FirmwareComponent,  ///< cached firmware components (1.86; server/model/firmware_component.h)
  InspectionRule,     ///< inspection rules (1.96; server/model/inspection_rule.h)
  Conductor,          ///< registered conductors (server/model/conductor_registration.h)
};

/// How many kinds of Resource there are.
inline constexpr size_t kResourceCount = 15;

/// The schema of a resource (defined next to each resource's model code).
const Schema& schemaOf(Resource resource);

}  // namespace kiln::server

namespace kiln::server {

enum PortField : size_t {
  kPortId, kPortUuid, kPortAddress, kPortNodeUuid, kPortExtra, kPortInternalInfo,
  kPortLocalLinkConnection, kPortPxeEnabled, kPortPortgroupUuid, kPortPhysicalNetwork,
  kPortIsSmartnic, kPortName, kPortDescription, kPortVendor, kPortCategory,
  kPortAvailableForDynamicPortgroup, kPortCreatedAt, kPortUpdatedAt, kPortLinks
};

enum PortgroupField : size_t {
  kPgId, kPgUuid, kPgName, kPgAddress, kPgNodeUuid, kPgExtra, kPgInternalInfo,
  kPgStandalonePortsSupported, kPgMode, kPgProperties, kPgPhysicalNetwork, kPgCategory,
  kPgDynamicPortgroup, kPgCreatedAt, kPgUpdatedAt, kPgLinks, kPgPorts
};

enum ChassisField : size_t {
  kChassisId, kChassisUuid, kChassisDescription, kChassisExtra, kChassisCreatedAt,
  kChassisUpdatedAt, kChassisLinks, kChassisNodes
};

enum DeployTemplateField : size_t {
  kDtId, kDtUuid, kDtName, kDtSteps, kDtExtra, kDtCreatedAt, kDtUpdatedAt, kDtLinks
};

/// Allocations (scheduler requests, API 1.52; server/model/allocation.h).
enum AllocationField : size_t {
  kAllocId, kAllocUuid, kAllocName, kAllocNodeUuid, kAllocState, kAllocLastError,
  kAllocResourceClass, kAllocTraits, kAllocCandidateNodes, kAllocExtra, kAllocOwner,
  kAllocCreatedAt, kAllocUpdatedAt, kAllocLinks
};

/// Volume connectors (API 1.32): a node's initiator identities (iqn, wwpn, ...).
enum VolumeConnectorField : size_t {
  kVcId, kVcUuid, kVcNodeUuid, kVcType, kVcConnectorId, kVcExtra, kVcCreatedAt, kVcUpdatedAt,
  kVcLinks
};

/// Volume targets (API 1.32): the volumes a node boots from or attaches.
enum VolumeTargetField : size_t {
  kVtId, kVtUuid, kVtNodeUuid, kVtVolumeType, kVtProperties, kVtBootIndex, kVtVolumeId, kVtExtra,
  kVtCreatedAt, kVtUpdatedAt, kVtLinks
};

}  // namespace kiln::server
