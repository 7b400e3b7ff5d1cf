// File: server/model/inspection_rule.h
//
// Inspection rules (API 1.96; Ironic's ironic/common/inspection_rules): a rule holds
// `conditions` checked against the inspection data and `actions` run on the node when they all
// hold. This file owns the resource (its FieldSpec table and record conversions), the catalogue
// of condition operators and actions with the arguments each takes, and the validation of a rule
// body that POST and PATCH share (Ironic's create_request_body schema plus validate_rule). The
// engine that evaluates rules is server/inspection/rules_engine.h.
//
// A stored rule keeps each condition as {"op", "args", "loop"?, "multiple"?} and each action as
// {"op", "args", "loop"?}: the keys Ironic renders and its engine reads. `args` stays as the
// client sent it, a dict of named arguments or (deprecated) a positional list.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/schema/record.h"
#include "server/model/resources.h"
#include "shared/core/error.h"
#include "shared/json/json_fwd.h"

namespace kiln::server {

/// Order must match kInspectionRuleFields in inspection_rule.cpp.
enum InspectionRuleField : size_t {
  kIrId,
  kIrUuid,
  kIrDescription,
  kIrPhase,
  kIrPriority,
  kIrSensitive,
  kIrConditions,
  kIrActions,
  kIrCreatedAt,
  kIrUpdatedAt,
  kIrLinks
};

const Schema& inspectionRuleSchema();

/// The only inspection phase Ironic defines (InspectionPhase.MAIN).
inline constexpr std::string_view kInspectionPhaseMain = "main";
/// The highest priority a user-defined rule may have (built-in rules may go beyond).
inline constexpr int64_t kMaxUserRulePriority = 9999;

/// One condition operator or action and its arguments, as Ironic derives them from the
/// plugin's call signature: the required ones, the optional ones (in positional order after the
/// required ones), and those formatted as templates outside loops (FORMATTED_ARGS; inside a
/// loop every argument is). `plugin_data` is not listed: the engine supplies it.
struct RuleOpSpec {
  std::string_view name;
  std::span<const std::string_view> required;
  std::span<const std::string_view> optional;
  std::span<const std::string_view> formatted;
  /// Ironic's REQUIRES_PLUGIN_DATA: the action works on the inspection plugin data.
  bool pluginData = false;

  bool takes(std::string_view arg) const;
  bool isFormatted(std::string_view arg) const;
};

/// Every condition operator, in Ironic's order (operators.OPERATORS).
std::span<const RuleOpSpec> ruleConditionOperators();
/// Every action, in Ironic's order (actions.ACTIONS), including api-call, which Kiln refuses.
std::span<const RuleOpSpec> ruleActions();

/// The operator or action of that name, or null.
const RuleOpSpec* findConditionOperator(std::string_view name);
const RuleOpSpec* findRuleAction(std::string_view name);

/// A condition's op split into the operator and its `!` negation ("!eq" -> {"eq", true}).
/// Spaces around the name and after the `!` are dropped, as Ironic's parse_inverted_operator.
struct ParsedConditionOp {
  std::string name;
  bool inverted = false;
};
/// InvalidArgument for more than one `!`.
Result<ParsedConditionOp> parseConditionOp(std::string_view op);

/// The action Kiln refuses: rules make no outbound HTTP calls from the conductor.
inline constexpr std::string_view kApiCallAction = "api-call";

/// An operation's arguments in named form. A dict must hold every required argument and
/// nothing but the operation's arguments ("missing required argument(s): values",
/// "unexpected argument(s): foo"); a list (deprecated in Ironic) is mapped onto the required
/// then the optional arguments in order and must be long enough. A `plugin_data` argument of
/// plugin-data actions is accepted and dropped (the engine passes the real plugin data).
/// Besides Ironic's checks, arguments that can only fail when the rule runs are refused here:
/// `path`, `name`, `port_id`, `regex`, `level` and `url` must be strings, and the `values` of
/// eq, lt and gt a list. Messages are the reason only (no operator prefix).
Result<Json> normalizeRuleArgs(const RuleOpSpec& spec, const Json& args);

/// Validates a rule body as Ironic's create_request_body schema and validate_rule do, and
/// returns it normalised: uuid (when given), description (string or null), phase ("main"),
/// priority (0-9999, default 0), sensitive (default false), conditions (default []), actions
/// (at least one), each operation reduced to the keys stored (see the file comment).
/// Schema errors are "<schemaPrefix><jsonschema message>" ("Schema error: " for POST,
/// "Schema error for patch: " for PATCH); rule errors are Ironic's ("Invalid phase: x. Valid
/// phases are: main", "Priority must be between 0 and 9999 for user-defined rules.",
/// "Invalid parameters for condition operator eq: missing required argument(s): values", and
/// "Multiple validation errors occurred: a; b" when there are several). api-call is refused.
Result<Json> validateInspectionRule(const Json& body, std::string_view schemaPrefix);

/// The record of a validated rule body (validateInspectionRule's result); the uuid stays null
/// when the body had none, and the timestamps are null.
Record inspectionRuleRecord(const Json& rule);

/// Writes the rule fields of a validated body onto an existing record (PATCH).
void assignInspectionRule(Record& record, const Json& rule);

/// The document a PATCH edits: uuid, description, phase, priority, sensitive, conditions and
/// actions of the stored rule.
Json inspectionRuleDocument(const Record& record);

}  // namespace kiln::server
