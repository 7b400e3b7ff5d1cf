// File: server/storage/queries/firmware_components.h
//
// Cached firmware components (API 1.86): list and sync a node's rows.
// Storage-side queries of cached firmware components (server/model/firmware_component.h has the
// schema and the plain data): they take the caller's Transaction, so they run inside its atomic
// unit.
#pragma once

#include <string>
#include <vector>

#include "server/model/firmware_component.h"
#include "server/storage/storage.h"

namespace kiln::server {

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
