// File: server/conductor/firmware_cache.h
//
// Caching of a node's firmware components (API 1.86), Ironic's node_cache_firmware_components:
// what the node's firmware interface reports is recorded for GET /v1/nodes/{id}/firmware
// (server/model/firmware_component.h). Ironic caches at the end of verify, at the start and end
// of cleaning and servicing, after inspection and after a firmware update.
#pragma once

#include "server/drivers/interfaces.h"
#include "server/storage/storage.h"
#include "shared/core/clock.h"

namespace kiln::server {

/// Reads the node's components through its firmware interface, outside any transaction, then
/// records them in a write transaction of its own (timestamps from `clock`). Does nothing for a
/// no-op interface (no-firmware) or a node without a driver. Never fails: a validation error,
/// an interface that reports nothing (Unimplemented) or any other failure is logged as a
/// warning on task.log, as Ironic does, and the flow goes on.
void cacheFirmwareComponents(TaskContext& task, Storage& storage, const Clock& clock);

}  // namespace kiln::server
