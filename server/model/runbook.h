// File: server/model/runbook.h
//
// Runbooks (API 1.92; traits and description 1.112): a named, ordered list of steps that a
// manual clean (or service) request runs instead of its own clean_steps/service_steps, as
// Ironic's runbooks table with its runbook_steps and runbook_traits folded into JSON columns.
// This file holds the schema (kRunbookFields in runbook.cpp), the validation of a runbook
// document against Ironic's RUNBOOK_SCHEMA (jsonschema's messages, "Schema error for runbook:
// ...") and resolveRunbookForNode(), the approval rules of a provision request naming a runbook.
// The API is server/api/runbook_handlers.cpp.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "server/schema/record.h"
#include "server/model/resources.h"
#include "shared/core/error.h"
#include "shared/json/json_fwd.h"

namespace kiln::server {

/// Order must match kRunbookFields in runbook.cpp.
enum RunbookField : size_t {
  kRbId,
  kRbUuid,
  kRbName,
  kRbDescription,  ///< 1.112
  kRbSteps,        ///< [{interface, step, args, order}], as validated
  kRbDisableRamdisk,
  kRbExtra,
  kRbPublic,
  kRbOwner,
  kRbTraits,  ///< 1.112; sorted, no duplicates; changed only through /traits
  kRbCreatedAt,
  kRbUpdatedAt,
  kRbLinks
};

const Schema& runbookSchema();

/// Which names a runbook document may carry.
enum class RunbookNameRule {
  Trait,    ///< below 1.112 on POST: a valid trait (Ironic's TRAITS_SCHEMA)
  Logical,  ///< from 1.112, and on every PATCH: [A-Za-z0-9-._~]{1,255}
};

/// Checks `trait` as Ironic's TRAITS_SCHEMA does: a string of 1-255 characters that is a
/// standard trait or matches ^CUSTOM_[A-Z0-9_]+$. Messages are "Schema error for <what>: ...".
Result<void> validateRunbookTrait(const Json& trait, std::string_view what);

/// Checks a runbook document (a POST body, or the document a PATCH produced) against Ironic's
/// RUNBOOK_SCHEMA: an object with only uuid, name, steps, disable_ramdisk, extra, public, owner
/// (and description when `allowDescription`), each of its type or null; name and steps
/// required; owner and description at most 255 characters; steps as validateRunbookSteps; no
/// (interface, step) twice. Returns the document with its steps normalised.
Result<Json> validateRunbookDocument(const Json& doc, RunbookNameRule nameRule,
                                     bool allowDescription, std::string_view what);

/// Checks a steps list (Ironic's RUNBOOK_STEP_SCHEMA, at least one step, no (interface, step)
/// twice; kiln::parseStepRequests with kiln::runbookStepRules) and returns it normalised: each
/// step {interface, step, args ({} when absent), order (an integer)}, in the order given. A
/// raid step's raid_config is checked as for deploy templates (validateStepArgs). Step
/// interfaces are kiln::kStepInterfaces.
Result<Json> validateRunbookSteps(const Json& steps, std::string_view what);

/// The traits of a runbook record (its stored JSON list).
std::vector<std::string> runbookTraits(const Record& runbook);

/// What a provision request naming a runbook runs.
struct RunbookPlan {
  /// The runbook's steps as a manual clean_steps/service_steps list: [{interface, step, args}]
  /// sorted by the runbook's `order` (stable, so equal orders keep the stored order). The
  /// `order` key itself is dropped: Kiln's manual step lists run in list order and refuse keys
  /// other than interface, step and args. The interface may be "firmware", which runbooks allow.
  Json steps;
  bool disableRamdisk = false;  ///< the runbook's disable_ramdisk (Ironic uses it as the request's)
  std::string uuid;
  std::string name;
  /// Ironic's admin_approved: owner is null or the runbook is public. Ironic then skips its
  /// per-step policy checks; Kiln has none, so this is informative only.
  bool adminApproved = true;
};

}  // namespace kiln::server
