// File: server/model/resources.h
//
// The API resources Kiln stores, and their schemas.
#pragma once

#include "server/model/record.h"

namespace kiln::server {

enum class Resource { Node, Port, Portgroup, Chassis, DeployTemplate };

/// The schema of a resource (defined next to each resource's model code).
const Schema& schemaOf(Resource resource);

}  // namespace kiln::server

namespace kiln::server {

enum PortField : size_t {
  kPortId, kPortUuid, kPortAddress, kPortNodeUuid, kPortExtra, kPortInternalInfo,
  kPortLocalLinkConnection, kPortPxeEnabled, kPortPortgroupUuid, kPortPhysicalNetwork,
  kPortIsSmartnic, kPortCreatedAt, kPortUpdatedAt, kPortLinks
};

enum PortgroupField : size_t {
  kPgId, kPgUuid, kPgName, kPgAddress, kPgNodeUuid, kPgExtra, kPgInternalInfo,
  kPgStandalonePortsSupported, kPgMode, kPgProperties, kPgCreatedAt, kPgUpdatedAt, kPgLinks,
  kPgPorts
};

enum ChassisField : size_t {
  kChassisId, kChassisUuid, kChassisDescription, kChassisExtra, kChassisCreatedAt,
  kChassisUpdatedAt, kChassisLinks, kChassisNodes
};

enum DeployTemplateField : size_t {
  kDtId, kDtUuid, kDtName, kDtSteps, kDtExtra, kDtCreatedAt, kDtUpdatedAt, kDtLinks
};

}  // namespace kiln::server
