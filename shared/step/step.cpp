#include "shared/step/step.h"

#include <algorithm>
#include <climits>
#include <set>
#include <utility>

#include "shared/core/secrets.h"
#include "shared/core/strings.h"
#include "shared/json/json_util.h"

namespace kiln {
namespace {

using nlohmann::json;

// ---- catalogue entries ----------------------------------------------------------------------

std::unexpected<Error> malformed(const json& step, const std::string& problem) {
  return invalid("Malformed step " + maskedDump(step) + ": " + problem);
}

Result<std::string> requiredName(const json& step, const char* key) {
  auto it = step.find(key);
  if (it == step.end()) return malformed(step, std::string("missing '") + key + "'");
  if (!it->is_string() || it->get_ref<const std::string&>().empty()) {
    return malformed(step, std::string("'") + key + "' must be a non-empty string, not " +
                               maskedRepr(*it));
  }
  return it->get<std::string>();
}

/// An optional boolean: absent gives nullopt, anything but a boolean is an error.
Result<std::optional<bool>> optionalBool(const json& step, const char* key) {
  auto it = step.find(key);
  if (it == step.end()) return std::optional<bool>();
  if (!it->is_boolean()) {
    return malformed(step, std::string("'") + key + "' must be a boolean, not " + maskedRepr(*it));
  }
  return std::optional<bool>(it->get<bool>());
}

Result<std::vector<ArgInfo>> parseArgsinfo(const json& step) {
  std::vector<ArgInfo> out;
  auto it = step.find("argsinfo");
  if (it == step.end() || it->is_null()) return out;
  if (!it->is_object()) {
    return malformed(step, "'argsinfo' must be an object keyed by argument name, not " +
                               maskedRepr(*it));
  }
  for (auto arg = it->begin(); arg != it->end(); ++arg) {
    const std::string where = "argument '" + arg.key() + "' of 'argsinfo'";
    const json& info = arg.value();
    if (!info.is_object()) return malformed(step, where + " must be an object, not " + maskedRepr(info));
    ArgInfo a{arg.key(), "", false};
    bool described = false;
    for (auto key = info.begin(); key != info.end(); ++key) {
      if (key.key() == "description") {
        if (!key->is_string()) {
          return malformed(step, where + ": 'description' must be a string, not " + maskedRepr(*key));
        }
        a.description = key->get<std::string>();
        described = true;
      } else if (key.key() == "required") {
        if (!key->is_boolean()) {
          return malformed(step, where + ": 'required' must be a boolean, not " + maskedRepr(*key));
        }
        a.required = key->get<bool>();
      } else {
        return malformed(step, where + " has the unknown key '" + key.key() +
                                   "' (only 'description' and 'required' are allowed)");
      }
    }
    if (!described) return malformed(step, where + " has no 'description'");
    out.push_back(std::move(a));
  }
  return out;
}

// ---- step requests --------------------------------------------------------------------------

/// An integer key of a step request (priority, order): the value, or the message (without the
/// caller's prefix).
std::expected<int64_t, std::string> stepInteger(const json& v, const StepIntegerRule& rule) {
  const std::string repr = maskedRepr(v);
  const std::string anyOf = repr + " is not valid under any of the given schemas";
  const auto because = [&](const std::string& cause) {
    return std::unexpected(rule.explainRootCause ? anyOf + ". Possible root cause: " + cause : cause);
  };
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      // Beyond int64. Deploy templates have always answered as for a negative number (the
      // value read back negative); kept so that no message changes.
      if (rule.explainRootCause) return std::unexpected(anyOf);
      return because(repr + " is less than the minimum of 0");
    }
    const int64_t n = v.get<int64_t>();
    if (n < 0) return because(repr + " is less than the minimum of 0");
    return n;
  }
  if (v.is_string()) {
    const auto& text = v.get_ref<const std::string&>();
    if (text.empty() && rule.explainRootCause) return because("'' is too short");
    const auto n = parseInt<uint64_t>(text, 0, INT64_MAX);  // digits only, as ^[0-9]+$
    if (text.size() > rule.maxDigits || !n) return because(repr + " does not match '^[0-9]+$'");
    return static_cast<int64_t>(*n);
  }
  if (rule.explainRootCause) return because(repr + " is not of type 'integer'");
  return std::unexpected(anyOf);
}

bool allowed(StepKey k) { return k != StepKey::Forbidden; }

Result<StepRequest> parseStepRequest(const json& s, const StepRequestRules& rules,
                                     const std::string& prefix) {
  const auto error = [&](const std::string& message) { return invalid(prefix + message); };
  if (!s.is_object()) return error(maskedRepr(s) + " is not of type 'object'");

  const auto missingKeys = [&]() -> Result<void> {
    const std::pair<const char*, StepKey> keys[] = {{"interface", StepKey::Required},
                                                    {"step", StepKey::Required},
                                                    {"args", rules.args},
                                                    {"priority", rules.priority.presence},
                                                    {"order", rules.order.presence}};
    for (const auto& [key, presence] : keys) {
      if (presence == StepKey::Required && !s.contains(key)) {
        return error("'" + std::string(key) + "' is a required property");
      }
    }
    return {};
  };
  const auto unexpectedKeys = [&]() -> Result<void> {
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string& k = it.key();
      const bool known = k == "interface" || k == "step" || (k == "args" && allowed(rules.args)) ||
                         (k == "priority" && allowed(rules.priority.presence)) ||
                         (k == "order" && allowed(rules.order.presence));
      if (!known) {
        return error("Additional properties are not allowed ('" + k + "' was unexpected)" +
                     (k == "priority" ? rules.priorityForbiddenHint : std::string()));
      }
    }
    return {};
  };
  if (rules.unknownKeysFirst) {
    KILN_TRY_VOID(unexpectedKeys());
    KILN_TRY_VOID(missingKeys());
  } else {
    KILN_TRY_VOID(missingKeys());
    KILN_TRY_VOID(unexpectedKeys());
  }

  StepRequest out;
  const json& iface = s["interface"];
  if (!iface.is_string() && rules.interfaceTypeMessage) {
    return error(maskedRepr(iface) + " is not of type 'string'");
  }
  const bool knownInterface =
      iface.is_string() && std::any_of(std::begin(kStepInterfaces), std::end(kStepInterfaces),
                                       [&](std::string_view i) { return iface.get_ref<const std::string&>() == i; });
  if (!knownInterface) {
    return error(maskedRepr(iface) + " is not one of " + std::string(kStepInterfacesRepr));
  }
  out.interface = iface.get<std::string>();

  const json& name = s["step"];
  if (rules.stepNameMessage) {
    if (!name.is_string() || name.get_ref<const std::string&>().empty()) {
      return error(maskedRepr(name) + " is not a valid step name");
    }
  } else if (!name.is_string()) {
    return error(maskedRepr(name) + " is not of type 'string'");
  } else if (name.get_ref<const std::string&>().empty()) {
    return error("'' is too short");
  }
  out.step = name.get<std::string>();

  if (allowed(rules.order.presence) && s.contains("order")) {
    auto order = stepInteger(s["order"], rules.order);
    if (!order) return error(order.error());
    out.order = *order;
  }

  if (s.contains("args")) {
    if (!s["args"].is_object()) return error(maskedRepr(s["args"]) + " is not of type 'object'");
    out.args = s["args"];
  }
  if (rules.checkArgs) KILN_TRY_VOID(rules.checkArgs(iface, out.args));

  if (allowed(rules.priority.presence) && s.contains("priority")) {
    auto priority = stepInteger(s["priority"], rules.priority);
    if (!priority) return error(priority.error());
    out.priority = *priority;
  }
  return out;
}

Result<void> checkDuplicates(const std::vector<StepRequest>& steps, const StepRequestRules& rules) {
  std::string list;
  const auto append = [&](const std::string& entry) { list += (list.empty() ? "" : "; ") + entry; };
  if (rules.duplicates == StepDuplicates::SameArgumentsRefused) {
    std::set<std::string> seen;
    for (const auto& s : steps) {
      if (!seen.insert(s.interface + "." + s.step + " " + dumpJson(s.args)).second) {
        append("interface: " + s.interface + ", step: " + s.step + ", args: " + maskedDump(s.args));
      }
    }
  } else if (rules.duplicates == StepDuplicates::SameStepRefused) {
    std::set<std::pair<std::string, std::string>> seen, repeated;
    for (const auto& s : steps) {
      auto key = std::make_pair(s.interface, s.step);
      if (!seen.insert(key).second) repeated.insert(std::move(key));
    }
    for (const auto& [iface, step] : repeated) append("interface: " + iface + ", step: " + step);
  }
  if (list.empty()) return {};
  return invalid(rules.duplicatesMessage + list + ".");
}

}  // namespace

// ---- StepDescriptor -------------------------------------------------------------------------

json StepDescriptor::toJson() const {
  json args = json::object();
  for (const auto& a : argsinfo) args[a.name] = {{"description", a.description}, {"required", a.required}};
  json out{{"interface", interface},   {"step", step},
           {"priority", priority},     {"abortable", abortable},
           {"reboot_requested", rebootRequested}, {"argsinfo", std::move(args)}};
  if (requiresRamdisk) out["requires_ramdisk"] = *requiresRamdisk;
  return out;
}

Result<StepDescriptor> StepDescriptor::fromJson(const json& j) {
  if (!j.is_object()) return malformed(j, "a step must be a JSON object");
  StepDescriptor d;
  d.interface = KILN_TRY(requiredName(j, "interface"));
  d.step = KILN_TRY(requiredName(j, "step"));
  auto priority = j.find("priority");
  if (priority == j.end()) return malformed(j, "missing 'priority'");
  const bool fitsInt =
      priority->is_number_integer() &&
      (priority->is_number_unsigned() ? priority->get<uint64_t>() <= static_cast<uint64_t>(INT_MAX)
                                      : priority->get<int64_t>() >= INT_MIN &&
                                            priority->get<int64_t>() <= INT_MAX);
  if (!fitsInt) return malformed(j, "'priority' must be an integer, not " + maskedRepr(*priority));
  d.priority = priority->get<int>();
  d.abortable = KILN_TRY(optionalBool(j, "abortable")).value_or(false);
  d.rebootRequested = KILN_TRY(optionalBool(j, "reboot_requested")).value_or(false);
  d.requiresRamdisk = KILN_TRY(optionalBool(j, "requires_ramdisk"));
  d.argsinfo = KILN_TRY(parseArgsinfo(j));
  return d;
}

// ---- catalogue ------------------------------------------------------------------------------

json stepsToJson(const StepsByInterface& steps) {
  json out = json::object();
  for (const auto& [iface, list] : steps) {
    json entries = json::array();
    for (const auto& s : list) entries.push_back(s.toJson());
    out[iface] = std::move(entries);
  }
  return out;
}

ReadSteps readSteps(const json& j) {
  ReadSteps out;
  if (!j.is_object()) {
    out.rejected.push_back("The steps must be a JSON object keyed by interface, not " +
                           maskedRepr(j));
    return out;
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it->is_array()) {
      out.rejected.push_back("The steps of interface '" + it.key() + "' must be a list, not " +
                             maskedRepr(*it));
      continue;
    }
    auto& list = out.steps[it.key()];
    for (const auto& entry : *it) {
      auto step = StepDescriptor::fromJson(entry);
      if (!step) {
        out.rejected.push_back(step.error().message);
      } else if (step->interface != it.key()) {
        out.rejected.push_back(malformed(entry, "listed under interface '" + it.key() +
                                                    "' but its interface is '" + step->interface + "'")
                                   .error().message);
      } else {
        list.push_back(std::move(*step));
      }
    }
  }
  return out;
}

Result<StepsByInterface> parseSteps(const json& j) {
  ReadSteps read = readSteps(j);
  if (!read.rejected.empty()) return invalid(read.rejected.front());
  return std::move(read.steps);
}

json StepCatalogue::toJson() const {
  return json{{kCatalogueClean, stepsToJson(clean)},
              {kCatalogueDeploy, stepsToJson(deploy)},
              {"hardware_manager_version", hardwareManagerVersion}};
}

Result<StepCatalogue> StepCatalogue::fromJson(const json& j) {
  if (!j.is_object()) return invalid("The step catalogue must be a JSON object, not " + maskedRepr(j));
  StepCatalogue c;
  if (auto it = j.find(kCatalogueClean); it != j.end()) c.clean = KILN_TRY(parseSteps(*it));
  if (auto it = j.find(kCatalogueDeploy); it != j.end()) c.deploy = KILN_TRY(parseSteps(*it));
  if (auto it = j.find("hardware_manager_version"); it != j.end()) {
    if (!it->is_object()) {
      return invalid("The catalogue's hardware_manager_version must be an object, not " +
                     maskedRepr(*it));
    }
    c.hardwareManagerVersion = *it;
  }
  return c;
}

// ---- StepRequest ----------------------------------------------------------------------------

json StepRequest::toJson() const {
  json out{{"interface", interface}, {"step", step}, {"args", args}};
  if (priority) out["priority"] = *priority;
  if (order) out["order"] = *order;
  return out;
}

StepRequestRules manualStepRules() {
  StepRequestRules r;
  r.invalidPrefix = true;
  r.allowEmpty = true;
  r.unknownKeysFirst = true;
  r.args = StepKey::Optional;
  r.priorityForbiddenHint = "; manual clean steps run in the order given";
  r.stepNameMessage = true;
  return r;
}

StepRequestRules deployStepRules() {
  StepRequestRules r;
  r.args = StepKey::Required;
  r.priority = {StepKey::Required, 9, false};
  r.duplicates = StepDuplicates::SameArgumentsRefused;
  r.duplicatesMessage =
      "Deploy template invalid: Duplicate deploy steps. A deploy template cannot have the same "
      "deploy step twice with the same arguments. Duplicates: ";
  return r;
}

StepRequestRules runbookStepRules() {
  StepRequestRules r;
  r.args = StepKey::Optional;
  r.order = {StepKey::Required, 18, true};
  r.interfaceTypeMessage = true;
  r.duplicates = StepDuplicates::SameStepRefused;
  r.duplicatesMessage =
      "Deploy template invalid: Duplicate deploy steps. A template cannot have multiple deploy "
      "steps with the same interface and step. Duplicates: ";
  return r;
}

Result<std::vector<StepRequest>> parseStepRequests(const json& steps, const StepRequestRules& rules,
                                                   std::string_view what) {
  const std::string prefix =
      (rules.invalidPrefix ? "Invalid " : "Schema error for ") + std::string(what) + ": ";
  if (!steps.is_array()) return invalid(prefix + maskedRepr(steps) + " is not of type 'array'");
  if (steps.empty() && !rules.allowEmpty) return invalid(prefix + "[] is too short");
  std::vector<StepRequest> out;
  for (const auto& s : steps) out.push_back(KILN_TRY(parseStepRequest(s, rules, prefix)));
  KILN_TRY_VOID(checkDuplicates(out, rules));
  return out;
}

}  // namespace kiln
