// File: server/inspection/rules_engine.h
//
// The inspection rules engine (API 1.96; Ironic's ironic/common/inspection_rules/engine.py,
// operators.py, actions.py and base.py): at the end of an inspection the conductor runs every
// rule of the "main" phase, highest priority first, against the inventory the agent sent and
// the plugin data; a rule whose conditions all hold runs its actions, which edit the node, its
// ports and the plugin data. A `fail` action, or a rule that cannot run, stops the whole
// pass with an error (the inspection fails with it).
//
// Pure code: no storage, no I/O, no clock. The caller loads the rules (loadInspectionRules in
// server/storage/queries/inspection_rules.h), fills a NodeView from the node and its ports, and writes
// back what changed. Rules are the records stored through /v1/inspection_rules.
//
// Semantics follow Ironic's engine, including its Python-isms:
//  - Arguments named in an operation's FORMATTED_ARGS (inside a loop: every argument) are
//    Python str.format templates over `node`, `inventory`, `plugin_data` and, in a loop,
//    `item`: "{inventory[cpu][count]}", "{plugin_data[x][0]}", "{node.properties[cpus]}",
//    "{node.driver}", "{item[path]}". A formatted value is always a string (Python's str() of
//    what the field names: True, None, {'a': 1}); a template that cannot be formatted stays as
//    written, except that a missing key makes is-empty see None. Inside a loop, strings are
//    formatted twice, so a loop item may itself hold a template. Format specs (":>10") are not
//    supported and leave the template as written.
//  - Reading the inventory and the plugin data, the values of the keys "password",
//    "auth_token" and "bmc_password" are "***" (Ironic's [inspection_rules] mask_secrets,
//    RulesOptions::maskSecrets).
//  - Conditions: eq, lt, gt compare `values` pairwise as Python does (1 == 1.0, "1" != 1,
//    ordering str against int is an error); is-empty is str(value) in "", "None", "[]", "{}";
//    in-net takes IPv4 and IPv6 networks ("10.0.0.0/8", "10.0.0.0/255.0.0.0", a bare address);
//    matches (anchored at both ends) and contains (anywhere) take Python regular expressions,
//    translated to ECMAScript (leading (?i), (?m), (?s) flags, (?P<name>...), \A, \Z); one-of,
//    is-none, is-true ("yes"/"true", non-zero numbers), is-false. A `!` prefix negates. With a
//    `loop`, the condition is checked once per item and `multiple` (any, all, first, last)
//    combines the results; in a loop eq/lt/gt compare as strings.
//  - Actions: fail, log (into RulesReport), set-attribute, extend-attribute, del-attribute
//    (paths "a/b/c" or "a.b.c" from a node field), set-capability and unset-capability
//    (properties.capabilities "k:v,k2:v2"), add-trait (a valid trait), remove-trait,
//    set-plugin-data, extend-plugin-data, unset-plugin-data (dotted paths),
//    set-port-attribute, extend-port-attribute, del-port-attribute (the port named by UUID, or,
//    Kiln's addition, by MAC address). api-call is refused: Kiln makes no outbound calls from
//    rules (the API refuses such rules too).
#pragma once

#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/schema/record.h"
#include "shared/core/error.h"
#include "shared/core/log.h"

namespace kiln::server {

/// One port of the node as rules see it. set/extend/del-port-attribute edit `fields` (the
/// port's API fields the caller lets rules change: extra, local_link_connection,
/// physical_network, pxe_enabled, ...); a path's first segment must be one of its keys.
struct PortView {
  std::string uuid;
  std::string address;  ///< MAC; port_id may name the port by it (case-insensitive)
  nlohmann::json fields = nlohmann::json::object();
  bool changed = false;  ///< set when an action changed `fields`
};

/// The node as rules see and edit it. A path's first segment names one of the documents or a
/// key of `attributes`; "{node.X}" templates read the same names plus `uuid` and `traits`.
struct NodeView {
  std::string uuid;
  nlohmann::json properties = nlohmann::json::object();
  nlohmann::json extra = nlohmann::json::object();
  nlohmann::json driverInfo = nlohmann::json::object();    ///< "driver_info"
  nlohmann::json instanceInfo = nlohmann::json::object();  ///< "instance_info"
  /// The node's other fields by API name that rules may read and set ("driver", "name",
  /// "resource_class", "auto_discovered", ...). A field absent here cannot be set.
  nlohmann::json attributes = nlohmann::json::object();
  std::vector<std::string> traits;  ///< add-trait appends, remove-trait erases
  std::vector<PortView> ports;
  bool changed = false;  ///< set when an action changed a document, an attribute or the traits
};

/// Ironic's [inspection_rules] mask_secrets.
enum class MaskSecrets {
  Always,     ///< every rule reads secrets as "***" (Ironic's default)
  Never,      ///< no rule does
  Sensitive,  ///< only sensitive rules read the real values
};

struct RulesOptions {
  MaskSecrets maskSecrets = MaskSecrets::Always;
};

/// A line a rule asked to log (the `log` action) or a warning the engine raised (remove-trait
/// of a missing trait, unset-plugin-data of a missing path). The caller logs them.
struct RuleLogLine {
  LogLevel level = LogLevel::Info;
  std::string rule;  ///< the rule's UUID
  std::string message;
};

/// What a pass did, for the caller's logs and the node history.
struct RulesReport {
  std::vector<std::string> applied;  ///< UUIDs of the rules whose actions ran, in order
  std::vector<RuleLogLine> log;
};

/// Applies `rules` (records of Resource::InspectionRule; run highest priority first, equal
/// priorities in the given order) to the inspection data and the node. On error (a `fail`
/// action: "Failed to inspect hardware. Reason: <msg>"; an action or a condition that cannot
/// run, with Ironic's message; a malformed stored rule) the pass stops there and `node`,
/// `pluginData` and the ports may hold the changes made so far: the caller must not persist
/// them. The error's code is InvalidArgument. A null `pluginData` is treated as {}.
Result<void> applyInspectionRules(std::span<const Record> rules, const nlohmann::json& inventory,
                                  nlohmann::json& pluginData, NodeView& node,
                                  const RulesOptions& options = {},
                                  RulesReport* report = nullptr);

}  // namespace kiln::server
