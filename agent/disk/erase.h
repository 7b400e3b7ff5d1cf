// File: agent/disk/erase.h
//
// The erase steps (ironic-python-agent's erase_devices_metadata and erase_devices); the
// in-process zeroing they use is zeroRange (agent/disk/device_io.h). Every device of the
// StepContext is handled in its own thread.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "agent/disk/device_io.h"
#include "agent/hardware/step_context.h"
#include "shared/core/error.h"

namespace kiln::agent {

/// erase_devices_metadata: for every device, `wipefs --force --all`, `sgdisk -Z`, then zero
/// the first and the last MiB in-process. Devices run in parallel; the error names every
/// device that failed. Returns {} on success.
Result<nlohmann::json> eraseDevicesMetadata(StepContext& context);

/// erase_devices: for every device, `blkdiscard` when it supports discard (falling back to
/// overwriting when blkdiscard fails), else overwrite it entirely with zeros. Progress (bytes
/// summed over the overwritten devices) goes to context.progress; context.aborted() stops
/// the writes with Conflict "aborted". Devices run in parallel. Returns {} on success.
Result<nlohmann::json> eraseDevices(StepContext& context);

}  // namespace kiln::agent
