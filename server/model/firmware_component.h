// File: server/model/firmware_component.h
//
// Cached firmware components (API 1.86; vendor, model and serial_number 1.114): what the node's
// firmware interface last reported (FirmwareInterface::cacheFirmwareComponents), one row per
// component ("bios", "bmc", "nic:<id>"), kept in step by syncFirmwareComponents() the way
// Ironic's FirmwareComponentList.sync_firmware_components and the redfish firmware interface's
// cache_firmware_components do. Read by GET /v1/nodes/{id}/firmware; deleted with the node.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/model/record.h"
#include "server/model/resources.h"
#include "shared/core/error.h"

namespace kiln::server {

class Transaction;

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

/// The node's cached components, in the order they were first recorded.
Result<std::vector<Record>> listFirmwareComponents(Transaction& tx, int64_t nodeId);

/// Records what the interface reported:
///  - a new component is created with initial_version = current_version = the reported version
///    (created_at = `now`);
///  - a known one whose version differs gets current_version and last_version_flashed = the
///    reported version; its vendor, model and serial number take the reported values; when
///    anything changed (or the version differs from last_version_flashed, once there is one),
///    updated_at = `now`;
///  - components not reported are kept (Ironic never deletes them).
/// A component reported twice counts once (the first report).
Result<void> syncFirmwareComponents(Transaction& tx, int64_t nodeId,
                                    const std::vector<FirmwareComponentInfo>& components,
                                    const std::string& now);

}  // namespace kiln::server
