// File: shared/step/step.h
//
// The step model both sides of Kiln share, so that the agent and the server cannot disagree
// about a step without an error saying so:
//  - StepDescriptor: one step a catalogue offers (ironic-python-agent's get_clean_steps /
//    get_deploy_steps entries: interface, step, priority, abortable, reboot_requested,
//    argsinfo). The agent writes its catalogue with toJson(); the server reads it back with
//    fromJson(), which refuses a malformed entry instead of guessing.
//  - StepCatalogue: the whole catalogue as it rides on a heartbeat (docs/protocol.md):
//    {"clean": {"<interface>": [step...]}, "deploy": {...}, "hardware_manager_version": {...}}.
//  - StepRequest and parseStepRequests(): the steps a client asks for (manual clean_steps and
//    service_steps, deploy templates, a provision request's deploy_steps, runbooks), checked by
//    one function whose rules say which keys each caller takes and how it words its errors
//    (the callers' messages follow Ironic's jsonschema messages and clients match on them).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "shared/core/error.h"
#include "shared/step/arg_info.h"

namespace kiln {

/// Interfaces a clean, deploy or service step may belong to, in the order of Ironic's
/// CLEANING_INTERFACE_PRIORITY (the enum of its step schemas).
inline constexpr std::string_view kStepInterfaces[] = {
    "vendor", "power", "management", "firmware", "deploy", "bios", "raid"};
/// kStepInterfaces as Ironic's "is not one of" messages quote them.
inline constexpr std::string_view kStepInterfacesRepr =
    "['vendor', 'power', 'management', 'firmware', 'deploy', 'bios', 'raid']";

/// One step of a catalogue. fromJson() requires what Ironic requires of an agent's step
/// (interface, step, priority: agent_base.refresh_steps) and checks argsinfo as Ironic's
/// _validate_argsinfo does.
struct StepDescriptor {
  std::string interface;  ///< "deploy", "raid", ...
  std::string step;       ///< "erase_devices"
  int priority = 0;       ///< the default priority of this kind of step; 0 = only on request
  bool abortable = false;
  bool rebootRequested = false;
  std::vector<ArgInfo> argsinfo;  ///< in the catalogue an object keyed by argument name
  /// Ironic adds requires_ramdisk to the clean steps it caches; an agent leaves it out (every
  /// agent step needs the ramdisk). Written only when set.
  std::optional<bool> requiresRamdisk;

  /// {"interface", "step", "priority", "abortable", "reboot_requested", "argsinfo":
  /// {"<name>": {"description", "required"}}} (+ "requires_ramdisk" when set).
  nlohmann::json toJson() const;
  /// InvalidArgument naming the first problem. Optional on the wire (IPA leaves them out on
  /// some steps): abortable and reboot_requested (false), argsinfo (absent or null = none),
  /// an argument's "required" (false), requires_ramdisk. Everything else must be there and
  /// have its type: interface and step non-empty strings, priority an integer, abortable and
  /// reboot_requested booleans, argsinfo an object of {"description": string, "required":
  /// boolean} objects with no other keys. Keys the model does not know are ignored (a newer
  /// agent may add some).
  static Result<StepDescriptor> fromJson(const nlohmann::json& j);
};

/// One kind of step of a catalogue by interface, as on the wire: {"<interface>": [step...]}.
using StepsByInterface = std::map<std::string, std::vector<StepDescriptor>>;

/// {"<interface>": [StepDescriptor::toJson()...]}.
nlohmann::json stepsToJson(const StepsByInterface& steps);

/// What readSteps() could read, and why it left out the rest.
struct ReadSteps {
  StepsByInterface steps;
  std::vector<std::string> rejected;  ///< one message per entry (or list) left out
};

/// Reads {"<interface>": [step...]} leniently: each malformed entry (StepDescriptor::fromJson
/// refuses it, or its interface is not the one it is listed under) and each interface whose
/// value is not a list is left out with a message; a value that is not an object gives no
/// steps and one message. The server reads the agent's cached catalogue this way, so that one
/// bad entry costs that step only.
ReadSteps readSteps(const nlohmann::json& j);

/// readSteps(), strict: InvalidArgument with the first message when anything was left out.
Result<StepsByInterface> parseSteps(const nlohmann::json& j);

/// The agent's catalogue (HeartbeatRequest::steps).
struct StepCatalogue {
  StepsByInterface clean;
  StepsByInterface deploy;
  /// {"<hardware manager>": "<version>"}, e.g. {"generic": "1"}.
  nlohmann::json hardwareManagerVersion = nlohmann::json::object();

  /// {"clean": {...}, "deploy": {...}, "hardware_manager_version": {...}}; "clean" and
  /// "deploy" are always written, empty objects when the agent offers none.
  nlohmann::json toJson() const;
  /// Strict (parseSteps for each kind); "clean", "deploy" and "hardware_manager_version" may
  /// be absent, the latter must be an object when present.
  static Result<StepCatalogue> fromJson(const nlohmann::json& j);
};

/// The keys of a catalogue's kinds.
inline constexpr const char* kCatalogueClean = "clean";
inline constexpr const char* kCatalogueDeploy = "deploy";

/// One step a client asked for.
struct StepRequest {
  std::string interface;
  std::string step;
  nlohmann::json args = nlohmann::json::object();  ///< {} when the request left it out
  std::optional<int64_t> priority;  ///< deploy templates and deploy_steps
  std::optional<int64_t> order;     ///< runbooks

  /// {"interface", "step", "args", "priority" (when set), "order" (when set)}: the normalised
  /// form callers store.
  nlohmann::json toJson() const;
};

/// Whether a step request may or must carry a key.
enum class StepKey { Forbidden, Optional, Required };

/// An integer key of a step request (priority, order): an integer >= 0 or a string of digits.
struct StepIntegerRule {
  StepKey presence = StepKey::Forbidden;
  /// The longest string of digits taken (9 for priorities: an int; 18 for runbook orders).
  size_t maxDigits = 9;
  /// How a bad value is reported. false (deploy templates): the failing branch of the schema
  /// alone ("-1 is less than the minimum of 0", "'x' does not match '^[0-9]+$'"; another type:
  /// "X is not valid under any of the given schemas"). true (runbooks): "X is not valid under
  /// any of the given schemas. Possible root cause: <the failing branch>".
  bool explainRootCause = false;
};

/// How a repeated step is treated.
enum class StepDuplicates {
  Allowed,
  /// The same interface, step and arguments twice (deploy templates, deploy_steps); listed in
  /// request order as "interface: I, step: S, args: {...}".
  SameArgumentsRefused,
  /// The same interface and step twice, whatever the arguments (runbooks); listed sorted and
  /// once each as "interface: I, step: S".
  SameStepRefused,
};

/// Which steps lists a caller accepts and how it words its errors.
struct StepRequestRules {
  /// How messages start: false: "Schema error for <what>: "; true: "Invalid <what>: ".
  bool invalidPrefix = false;
  bool allowEmpty = false;        ///< else "[] is too short"
  bool unknownKeysFirst = false;  ///< report an unexpected key before a missing one
  StepKey args = StepKey::Optional;
  StepIntegerRule priority;
  StepIntegerRule order;
  /// Appended to "Additional properties are not allowed ('priority' was unexpected)".
  std::string priorityForbiddenHint;
  /// A non-string interface: true: "X is not of type 'string'"; false: "X is not one of [...]".
  bool interfaceTypeMessage = false;
  /// A non-string or empty step name: true: "X is not a valid step name"; false: jsonschema's
  /// "X is not of type 'string'" / "'' is too short".
  bool stepNameMessage = false;
  StepDuplicates duplicates = StepDuplicates::Allowed;
  /// The start of the duplicates message; the list and a full stop follow. Not prefixed.
  std::string duplicatesMessage;
  /// Checks one step's arguments once its args are known to be an object (the server checks a
  /// raid step's raid_config); its error is returned as it is.
  std::function<Result<void>(const nlohmann::json& interface, const nlohmann::json& args)>
      checkArgs;
};

/// The rules of Kiln's step lists; callers add checkArgs (the server's raid_config check).
/// Manual clean_steps and service_steps ([{interface, step, args?}], may be empty; a priority
/// is refused with "; manual clean steps run in the order given"): "Invalid <what>: ...".
StepRequestRules manualStepRules();
/// Deploy templates and a provision request's deploy_steps ([{interface, step, args,
/// priority}], Ironic's DEPLOY_STEP_SCHEMA; an exact duplicate is refused): "Schema error for
/// <what>: ...".
StepRequestRules deployStepRules();
/// Runbooks ([{interface, step, args?, order}], Ironic's RUNBOOK_STEP_SCHEMA; the same
/// interface and step twice is refused, as Ironic's duplicate_steps): "Schema error for
/// <what>: ...".
StepRequestRules runbookStepRules();

/// Checks a requested steps list and returns its steps in the order given. Each step is
/// checked in this order, and the first problem is the error: an object; missing keys
/// (interface, step, args, priority, order as required) and unexpected keys, in the order
/// rules.unknownKeysFirst says; interface; step; order; args and rules.checkArgs; priority.
/// Duplicates, when refused, are reported after every step passed, all in one message.
Result<std::vector<StepRequest>> parseStepRequests(const nlohmann::json& steps,
                                                   const StepRequestRules& rules,
                                                   std::string_view what);

}  // namespace kiln
