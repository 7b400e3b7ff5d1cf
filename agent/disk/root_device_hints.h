// File: agent/disk/root_device_hints.h
//
// Choosing the install target from Ironic root device hints (node.properties.root_device).
// Pure: it only looks at BlockDevice values.
#pragma once

#include <span>

#include <nlohmann/json_fwd.hpp>

#include "agent/disk/block_device.h"
#include "shared/core/error.h"

namespace kiln::agent {

/// The smallest disk ironic-python-agent considers as a root device without hints.
inline constexpr uint64_t kMinRootDeviceBytes = 4ULL << 30;

/// Picks the root device.
///
/// Hints (all given must match): "name" ("/dev/sda" or "sda"), "size" (GiB, floor of the
/// device size; an int, "100", or "<op> 100" with ==, !=, >=, <=, >, <), "serial", "wwn",
/// "model", "vendor" (model, vendor and wwn compared case-insensitively), "by_path",
/// "rotational" (bool, 0/1 or "true"/"false"). String hints may carry the oslo operators
/// "s== x", "s!= x" and "<in> x" (substring).
///
/// No hints: the only device when exactly one is given (run by hand on an image file of any
/// size), else the smallest device of at least 4 GiB, like ironic-python-agent.
///
/// Errors: InvalidArgument for an unknown hint or a malformed value; NotFound when nothing
/// matches; Conflict "... are ambiguous ..." naming the candidates when several match — the
/// agent never guesses between disks.
Result<BlockDevice> chooseRootDevice(std::span<const BlockDevice> devices,
                                     const nlohmann::json& hints);

}  // namespace kiln::agent
