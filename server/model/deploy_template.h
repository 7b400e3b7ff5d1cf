// File: server/model/deploy_template.h
//
// Deploy template validation (deploy templates spec; Ironic's TEMPLATE_SCHEMA): the name is a
// valid trait; steps is a non-empty list of {interface, step, args, priority} objects with no
// other keys. Past Ironic, following the spec: the same step may appear more than once with
// different arguments; only an exact duplicate (same interface, step and args) is rejected.
#pragma once

#include <string_view>

#include "shared/core/error.h"
#include "shared/json/json_fwd.h"

namespace kiln::server {

/// Checks a template name. `what` prefixes schema messages ("template" or "patch").
Result<void> validateTemplateName(const Json& name, std::string_view what);

/// Validates a steps list (kiln::parseStepRequests with kiln::deployStepRules; step interfaces
/// are kiln::kStepInterfaces) and returns it normalised (priority as an integer, key order
/// interface, step, args, priority). Each step's arguments as validateStepArgs checks them.
Result<Json> validateTemplateSteps(const Json& steps, std::string_view what);

/// The arguments Kiln can check before a step runs: a "raid" step's "raid_config" (Ironic's
/// raid.apply_configuration) must be a valid target RAID configuration (kiln::parseRaidConfig,
/// including the device hints of physical_disks), so that a bad one is a 400 at request time
/// rather than a failed deployment. Used for deploy templates, provision deploy_steps and
/// manual clean_steps; other steps pass.
Result<void> validateStepArgs(const Json& interface, const Json& args);

}  // namespace kiln::server
