// File: agent/disk/root_device_hints.h
//
// Matching Ironic device hints (parsed by shared/disk/device_hints.h) against the agent's disks,
// and choosing the install target from root device hints (node.properties.root_device).
// Pure: it only looks at BlockDevice values.
#pragma once

#include <span>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "agent/disk/block_device.h"
#include "shared/core/error.h"
#include "shared/disk/device_hints.h"

namespace kiln::agent {

/// The smallest disk ironic-python-agent considers as a root device without hints.
inline constexpr uint64_t kMinRootDeviceBytes = 4ULL << 30;

/// Whether `device` satisfies every hint: "name" (the device path), "size" (GiB, floor of the
/// device size), "serial", "wwn", "model", "vendor" (model, vendor and wwn compared
/// case-insensitively), "by_path", "rotational".
bool matchesHints(const BlockDevice& device, const DeviceHints& hints);

/// The devices that satisfy `hints`, in the order given.
std::vector<const BlockDevice*> findDevicesByHints(std::span<const BlockDevice> devices,
                                                   const DeviceHints& hints);

/// Picks the root device. Hints as kiln::parseDeviceHints accepts them ("name" as "/dev/sda"
/// or "sda"; "size" as 100, "100" or ">= 100"; oslo operators on strings such as "s== x",
/// "<in> x").
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
