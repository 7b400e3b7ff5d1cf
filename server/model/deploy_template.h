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

/// Interfaces a deploy step may belong to.
inline constexpr std::string_view kDeployStepInterfaces[] = {"bios", "deploy", "management",
                                                             "power", "raid", "vendor"};

/// Checks a template name. `what` prefixes schema messages ("template" or "patch").
Result<void> validateTemplateName(const Json& name, std::string_view what);

/// Validates a steps list and returns it normalised (priority as an integer, key order
/// interface, step, args, priority).
Result<Json> validateTemplateSteps(const Json& steps, std::string_view what);

}  // namespace kiln::server
