// File: server/drivers/raid_validation.h
//
// Ironic's task.driver.raid.validate_raid_config, for PUT /v1/nodes/{id}/states/raid and node
// validation: the checks a RAID interface makes of a target RAID configuration beyond the
// common schema (kiln::parseRaidConfig). Kept apart from the interface objects because the API
// checks a configuration by the node's raid_interface name, without a conductor task.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "shared/core/error.h"

namespace kiln::server {

/// Checks `config` (a non-empty target RAID configuration) for the raid interface named
/// `raidInterface` (an alias is checked as what it names): parseRaidConfig's checks, plus those
/// of the interface ("redfish": validateRedfishRaidConfig). InvalidArgument with the reason.
Result<void> validateRaidConfigFor(std::string_view raidInterface, const nlohmann::json& config);

}  // namespace kiln::server
