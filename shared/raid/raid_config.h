// File: shared/raid/raid_config.h
//
// The target RAID configuration (Ironic's raid_config_schema.json): a list of logical disks,
// each with a RAID level and a size. Used by the server (validating `target_raid_config` and
// deploy-template arguments) and by the agent (building software RAID with mdadm).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shared/core/error.h"
#include "shared/disk/device_hints.h"
#include "shared/json/json_fwd.h"

namespace kiln {

/// One `physical_disks` entry: a device name ("/dev/sda", "sda"), taken as the hint
/// {"name": entry}, or an object of device hints ({"size": ">= 100", "rotational": false}).
struct PhysicalDiskHints {
  std::string text;  ///< the entry as given: the string, or the object as compact JSON
  DeviceHints hints;
};

struct LogicalDisk {
  std::string raidLevel;             ///< "0", "1", "5", "6", "1+0", ...
  std::optional<int64_t> sizeGb;     ///< nullopt = "MAX" (size_gb "MAX", or null)
  bool isRootVolume = false;
  std::optional<std::string> volumeName;
  std::vector<PhysicalDiskHints> physicalDisks;
  std::optional<int> numberOfPhysicalDisks;
};

struct RaidConfig {
  std::vector<LogicalDisk> logicalDisks;
};

/// Validates a target RAID configuration against Ironic's schema, plus "at most one root
/// volume" and valid device hints in `physical_disks` (kiln::parseDeviceHints). Unlike Ironic,
/// size_gb may be null, meaning "MAX" (what Metal3 means by leaving the size out).
/// InvalidArgument "RAID config validation error: ..." otherwise.
Result<RaidConfig> parseRaidConfig(const Json& config);

/// Properties of a logical disk with their descriptions
/// (GET /v1/drivers/{name}/raid/logical_disk_properties).
struct LogicalDiskProperty {
  std::string_view name;
  std::string_view description;
};
std::span<const LogicalDiskProperty> logicalDiskProperties();

}  // namespace kiln
