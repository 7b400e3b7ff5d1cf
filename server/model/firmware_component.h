// File: server/model/firmware_component.h
//
// Cached firmware components (API 1.86; vendor, model and serial_number 1.114): what the node's
// firmware interface last reported (FirmwareInterface::cacheFirmwareComponents), one row per
// component ("bios", "bmc", "nic:<id>"), kept in step by syncFirmwareComponents()
// (server/storage/queries/firmware_components.h) the way Ironic's
// FirmwareComponentList.sync_firmware_components and the redfish firmware interface's
// cache_firmware_components do. Read by GET /v1/nodes/{id}/firmware; deleted with the node.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/schema/record.h"
#include "server/model/resources.h"
#include "shared/core/error.h"

namespace kiln::server {

/// Order must match kFirmwareComponentFields in firmware_component.cpp. As for BIOS settings,
/// field 1 is the component's name (a component has no UUID).
enum FirmwareComponentField : size_t {
  kFwId,
  kFwComponent,
  kFwNodeId,
  kFwInitialVersion,
  kFwCurrentVersion,
  kFwLastVersionFlashed,
  kFwVendor,
  kFwModel,
  kFwSerialNumber,
  kFwCreatedAt,
  kFwUpdatedAt
};

const Schema& firmwareComponentSchema();

/// One component as a firmware interface reports it (Ironic's settings dicts of
/// cache_firmware_components). The identity fields are null where the hardware does not say:
/// Ironic's redfish reports the BIOS without any, the BMC with its model only.
struct FirmwareComponentInfo {
  std::string component;  ///< "bios", "bmc", "nic:<serial number or adapter id>"
  std::string currentVersion;
  std::optional<std::string> vendor;
  std::optional<std::string> model;
  std::optional<std::string> serialNumber;
};

}  // namespace kiln::server
