// File: server/drivers/boot_mode.h
//
// Which firmware mode a node boots in, "uefi" or "bios", as Ironic decides it
// (ironic/drivers/modules/boot_mode_utils.py):
//
//   requested  instance_info.capabilities secure_boot "true" -> uefi; else instance_info
//              capabilities boot_mode, instance_info deploy_boot_mode (deprecated), node
//              properties.capabilities "boot_mode:<mode>", driver_internal_info deploy_boot_mode.
//              An instance request that contradicts the node's capability is an error.
//   effective  the requested mode, else [deploy] default_boot_mode ("uefi", as Ironic).
//   sync       before the node network-boots (the agent) and before it boots its instance, the
//              boot interfaces align the machine with the request: the BMC's mode is read
//              (management get_boot_mode; unsupported = unknown) and, when they differ, set
//              (management set_boot_mode; unsupported is fatal only when both are known and
//              differ). The outcome is remembered in driver_internal_info deploy_boot_mode and
//              the node's boot_mode field.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "server/drivers/interfaces.h"
#include "shared/core/error.h"

namespace kiln::server {

inline constexpr std::string_view kBootModeUefi = "uefi";
inline constexpr std::string_view kBootModeBios = "bios";

/// The value of `key` in a node's properties.capabilities string ("k1:v1,k2:v2"), trimmed;
/// nullopt when absent (malformed items are skipped, as Ironic does).
std::optional<std::string> nodeCapability(const nlohmann::json& properties, std::string_view key);

/// instance_info.capabilities as an object (it may be an object or JSON text of one).
/// InvalidArgument in Ironic's words when it is neither.
Result<nlohmann::json> instanceCapabilities(const TaskContext& task);

/// The requested boot mode (see above), lower-cased; nullopt when nothing asks for one.
/// InvalidArgument when the instance's request violates the node's capability, or when a mode
/// is neither "uefi" nor "bios".
Result<std::optional<std::string>> requestedBootMode(const TaskContext& task);

/// The requested boot mode, else [deploy] default_boot_mode.
Result<std::string> effectiveBootMode(const TaskContext& task);

/// Aligns the machine's boot mode with the requested one (Ironic's sync_boot_mode), recording
/// driver_internal_info.deploy_boot_mode and the node's boot_mode when the BMC reports it.
Result<void> syncBootMode(TaskContext& task);

}  // namespace kiln::server
