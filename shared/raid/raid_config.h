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
#include "shared/json/json_fwd.h"

namespace kiln {

struct LogicalDisk {
  std::string raidLevel;             ///< "0", "1", "5", "6", "1+0", ...
  std::optional<int64_t> sizeGb;     ///< nullopt = "MAX"
  bool isRootVolume = false;
  std::optional<std::string> volumeName;
  std::vector<std::string> physicalDisks;  ///< device names or hints (strings only)
  std::optional<int> numberOfPhysicalDisks;
};

struct RaidConfig {
  std::vector<LogicalDisk> logicalDisks;
};

/// Validates a target RAID configuration against Ironic's schema, plus "at most one root
/// volume". InvalidArgument "RAID config validation error: ..." otherwise.
Result<RaidConfig> parseRaidConfig(const Json& config);

/// Properties of a logical disk with their descriptions
/// (GET /v1/drivers/{name}/raid/logical_disk_properties).
struct LogicalDiskProperty {
  std::string_view name;
  std::string_view description;
};
std::span<const LogicalDiskProperty> logicalDiskProperties();

}  // namespace kiln
