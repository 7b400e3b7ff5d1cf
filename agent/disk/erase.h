// File: agent/disk/erase.h
//
// The erase steps (ironic-python-agent's erase_devices_metadata and erase_devices) and the
// in-process zeroing they use. Every device of the StepContext is handled in its own thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "agent/hardware/step_context.h"
#include "shared/core/error.h"

namespace kiln::agent {

/// Called after each written chunk with the bytes written by that chunk; returning false
/// stops the write (abort).
using ChunkCallback = std::function<bool(uint64_t bytes)>;

/// Writes zeros to [offset, offset + length) of `path` (a device or a regular file, which is
/// never extended past `offset + length`), with a large aligned buffer, O_DIRECT when the
/// file system allows it (buffered otherwise), then fsync. Internal on an I/O error,
/// Conflict "aborted" when `onChunk` returns false.
Result<void> zeroRange(const std::string& path, uint64_t offset, uint64_t length,
                       const ChunkCallback& onChunk = {});

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
