// File: server/drivers/firmware_update.h
//
// What the firmware interfaces share about the firmware.update step (API 1.86): its declaration
// (a clean and deploy step, priority 0, not abortable, one required argument "settings") and
// the check of its settings, with the messages of Ironic's
// validate_firmware_interface_update_args (its JSON schema: a non-empty list of
// {"component": "bios" | "bmc" | "nic:<id>", "url": non-empty string, "wait": integer >= 1},
// nothing else).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/drivers/interfaces.h"
#include "shared/core/error.h"

namespace kiln::server {

/// The kinds of component Ironic's redfish firmware interface knows.
enum class FirmwareComponentType { Bios, Bmc, Nic };

/// One entry of firmware.update's settings, checked.
struct FirmwareUpdateSetting {
  std::string component;  ///< "bios", "bmc" or "nic:<id>"
  FirmwareComponentType type = FirmwareComponentType::Bios;
  std::string url;              ///< where the BMC (or the fake) takes the image from
  std::optional<int64_t> wait;  ///< seconds to wait after the update (>= 1)
};

/// The settings of firmware.update, checked against Ironic's schema. InvalidArgument
/// "Invalid firmware update <settings as Python repr>. Errors: <the schema error jsonschema's
/// best_match reports>", e.g. "'x' is not valid under any of the given schemas".
Result<std::vector<FirmwareUpdateSetting>> parseFirmwareUpdateSettings(
    const nlohmann::json& settings);

/// The "settings" argument of firmware.update's args (null when there is none).
const nlohmann::json& firmwareSettingsArg(const nlohmann::json& args);

/// The step firmware.update with `handler` (which receives the step's args, {"settings": ...}).
StepDefinition firmwareUpdateStep(StepHandler handler);

}  // namespace kiln::server
