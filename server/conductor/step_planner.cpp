#include "server/conductor/step_planner.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>

#include "server/model/resources.h"
#include "shared/core/secrets.h"
#include "shared/core/strings.h"
#include "shared/json/json_util.h"
#include "shared/step/step.h"

namespace kiln::server {
namespace {

using nlohmann::json;

const AvailableStep* findStep(const std::vector<AvailableStep>& available,
                              const std::string& iface, const std::string& step) {
  for (const auto& a : available) {
    if (a.interface == iface && a.step == step) return &a;
  }
  return nullptr;
}

/// "raid.apply_configuration {'args': {...}, ...}": the step's name first, then what was sent,
/// masked (password-like arguments of templates and requests end up in last_error, /validate
/// and the log).
std::string stepRepr(const json& step) {
  json s = json::object();
  for (const char* k : {"interface", "step", "args", "priority"}) {
    if (step.contains(k)) s[k] = step[k];
  }
  const auto name = [&](const char* k) {
    return step.contains(k) && step[k].is_string() ? step[k].get<std::string>() : std::string("?");
  };
  return name("interface") + "." + name("step") + " " + maskedRepr(s);
}

/// Checks a requested step's arguments against the step's argsinfo.
void checkArgs(const std::string& kind, const json& step, const AvailableStep& def,
               const json& args, bool requireRequired, std::vector<std::string>& errors) {
  std::vector<std::string> unknown, missing;
  for (auto it = args.begin(); it != args.end(); ++it) {
    const bool known = std::any_of(def.argsinfo.begin(), def.argsinfo.end(),
                                   [&](const ArgInfo& a) { return a.name == it.key(); });
    if (!known) unknown.push_back(it.key());
  }
  if (requireRequired) {
    for (const auto& a : def.argsinfo) {
      if (a.required && !args.contains(a.name)) missing.push_back(a.name);
    }
  }
  auto list = [](const std::vector<std::string>& v) {
    std::string out;
    for (const auto& x : v) out += (out.empty() ? "" : ", ") + x;
    return out;
  };
  if (!unknown.empty()) {
    errors.push_back(kind + " step " + stepRepr(step) + " has these invalid arguments: " + list(unknown));
  }
  if (!missing.empty()) {
    errors.push_back(kind + " step " + stepRepr(step) + " is missing these required arguments: " +
                     list(missing));
  }
}

Result<void> joined(const std::vector<std::string>& errors) {
  if (errors.empty()) return {};
  std::string msg;
  for (const auto& e : errors) msg += (msg.empty() ? "" : "; ") + e;
  return invalid(msg);
}

}  // namespace

json PlannedStep::toJson() const {
  return json{{"interface", interface}, {"step", step},           {"args", args},
              {"priority", priority},   {"abortable", abortable}, {"requires_ramdisk", requiresRamdisk}};
}

Result<PlannedStep> PlannedStep::fromJson(const json& j) {
  if (!j.is_object() || !j.contains("interface") || !j.contains("step") ||
      !j["interface"].is_string() || !j["step"].is_string()) {
    return invalid("malformed step " + maskedDump(j));
  }
  PlannedStep s;
  s.interface = j["interface"].get<std::string>();
  s.step = j["step"].get<std::string>();
  s.args = j.contains("args") && j["args"].is_object() ? j["args"] : json::object();
  s.priority = j.value("priority", 0);
  s.abortable = j.value("abortable", false);
  s.requiresRamdisk = j.value("requires_ramdisk", false);
  return s;
}

std::vector<AvailableStep> flowSteps() {
  return {
      {"power", "power_on", 0, true, false, {}},
      {"power", "power_off", 0, true, false, {}},
      {"power", "reboot", 0, true, false, {}},
      {"deploy", "wait", 0, true, false,
       {{"seconds", "How long to wait, in seconds, before the next step runs.", true}}},
      {"deploy", "hold", 0, true, false, {}},
  };
}

const StepDefinition* findStepDefinition(const NodeDriver& driver, std::string_view interface,
                                         std::string_view step) {
  for (const auto* impl : driver.byType) {
    if (!impl) continue;
    for (const auto& def : impl->steps()) {
      if (def.interface == interface && def.name == step) return &def;
    }
  }
  return nullptr;
}

int interfacePriority(std::string_view iface) {
  if (iface == "vendor") return 7;
  if (iface == "power") return 6;
  if (iface == "management") return 5;
  if (iface == "firmware") return 4;
  if (iface == "deploy") return 3;
  if (iface == "bios") return 2;
  if (iface == "raid") return 1;
  return 0;
}

namespace {

template <typename Step>
void byPriority(std::vector<Step>& steps) {
  std::stable_sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    return interfacePriority(a.interface) > interfacePriority(b.interface);
  });
}

}  // namespace

void orderSteps(std::vector<PlannedStep>& steps) { byPriority(steps); }

void orderSteps(std::vector<AvailableStep>& steps) { byPriority(steps); }

std::vector<AvailableStep> availableSteps(const NodeDriver& driver, StepKind kind,
                                          const PriorityOverrides& overrides,
                                          const json* agentSteps, const Logger* log) {
  std::vector<AvailableStep> out;
  static const std::map<std::string, int> kNone;
  const auto& over = kind == StepKind::Clean    ? overrides.clean
                     : kind == StepKind::Deploy ? overrides.deploy
                                                : kNone;
  // Service steps run on request only; the agent reports none (Kiln boots no ramdisk on an
  // active node).
  const bool haveAgent = kind != StepKind::Service && agentSteps && agentSteps->is_object() &&
                         !agentSteps->empty();
  for (const auto* impl : driver.byType) {
    if (!impl) continue;
    for (const auto& def : impl->steps()) {
      const int prio = kind == StepKind::Clean    ? def.cleanPriority
                       : kind == StepKind::Deploy ? def.deployPriority
                                                  : (def.service ? 0 : -1);
      if (prio < 0) continue;
      if (def.requiresRamdisk && haveAgent) continue;  // the agent's report replaces these
      AvailableStep a{def.interface, def.name, prio, def.abortable, def.requiresRamdisk, def.argsinfo};
      if (auto it = over.find(a.interface + "." + a.step); it != over.end()) a.priority = it->second;
      out.push_back(std::move(a));
    }
  }
  if (haveAgent) {
    // Read through the shared step model: an entry the agent got wrong is left out (so that
    // step is unknown to the plan) and logged, rather than guessed at.
    const ReadSteps reported = readSteps(*agentSteps);
    if (log) {
      for (const auto& problem : reported.rejected) {
        log->warning("left out a step of the agent's catalogue", {{"reason", problem}});
      }
    }
    for (const auto& [iface, steps] : reported.steps) {
      for (const auto& d : steps) {
        AvailableStep a{d.interface, d.step, d.priority, d.abortable, true, d.argsinfo};
        if (auto o = over.find(a.interface + "." + a.step); o != over.end()) a.priority = o->second;
        if (!findStep(out, a.interface, a.step)) out.push_back(std::move(a));
      }
    }
  }
  for (auto& f : flowSteps()) {
    if (!findStep(out, f.interface, f.step)) out.push_back(std::move(f));
  }
  return out;
}

std::vector<PlannedStep> automatedCleanPlan(const std::vector<AvailableStep>& available) {
  std::vector<PlannedStep> plan;
  for (const auto& a : available) {
    if (a.priority > 0) {
      plan.push_back({a.interface, a.step, json::object(), a.priority, a.abortable, a.requiresRamdisk});
    }
  }
  orderSteps(plan);
  return plan;
}

Result<std::vector<PlannedStep>> manualCleanPlan(const json& requested,
                                                 const std::vector<AvailableStep>& available) {
  std::vector<PlannedStep> plan;
  std::vector<std::string> errors;
  if (!requested.is_array()) return invalid("clean_steps must be a list");
  for (const auto& r : requested) {
    const std::string iface = r.value("interface", "");
    const std::string name = r.value("step", "");
    const json args = r.contains("args") && r["args"].is_object() ? r["args"] : json::object();
    const AvailableStep* def = findStep(available, iface, name);
    if (!def) {
      errors.push_back("Node does not support this clean step: " + stepRepr(r));
      continue;
    }
    checkArgs("Clean", r, *def, args, true, errors);
    plan.push_back({iface, name, args, def->priority, def->abortable, def->requiresRamdisk});
  }
  KILN_TRY_VOID(joined(errors));
  return plan;
}

std::vector<std::string> instanceTraits(const json& instanceInfo) {
  std::vector<std::string> names;
  if (!instanceInfo.is_object()) return names;
  auto it = instanceInfo.find("traits");
  if (it == instanceInfo.end() || !it->is_array()) return names;
  for (const auto& t : *it) {
    if (t.is_string()) names.push_back(t.get<std::string>());
  }
  return names;
}

Result<std::vector<TemplateStep>> templateSteps(const Record& deployTemplate) {
  const std::string& name = deployTemplate.str(kDtName);
  auto parsed = parseJson(deployTemplate.str(kDtSteps), "the stored value");
  if (!parsed || !parsed->is_array()) {
    return internalError("The steps of deploy template " + name +
                         " stored in the database are not a JSON array" +
                         (parsed ? std::string() : " (" + parsed.error().message + ")"));
  }
  std::vector<TemplateStep> out;
  for (auto& s : *parsed) out.push_back({std::move(s), name});
  return out;
}

Result<std::vector<TemplateStep>> selectTemplateSteps(const std::vector<Record>& templates,
                                                      const std::vector<std::string>& traits) {
  std::vector<TemplateStep> out;
  for (const auto& trait : traits) {
    for (const auto& t : templates) {
      if (t.str(kDtName) != trait) continue;
      auto steps = KILN_TRY(templateSteps(t));
      out.insert(out.end(), std::make_move_iterator(steps.begin()),
                 std::make_move_iterator(steps.end()));
    }
  }
  return out;
}

Result<std::vector<PlannedStep>> deployPlan(const std::vector<AvailableStep>& available,
                                            const std::vector<TemplateStep>& templateSteps,
                                            const json& userSteps) {
  std::vector<std::string> errors;
  std::vector<PlannedStep> requested;  // user steps first, then template steps
  std::set<std::string> userKeys;
  auto add = [&](const json& s, const std::string& origin) {
    PlannedStep p;
    p.interface = s.value("interface", "");
    p.step = s.value("step", "");
    p.args = s.contains("args") && s["args"].is_object() ? s["args"] : json::object();
    const json& prio = s.contains("priority") ? s["priority"] : json();
    std::optional<int> priority;
    if (prio.is_number_integer()) {
      priority = prio.get<int>();
    } else if (prio.is_string()) {
      const auto text = parseInt<unsigned>(prio.get_ref<const std::string&>(), 0,
                                           std::numeric_limits<int>::max());
      if (text) priority = static_cast<int>(*text);
    }
    if (!priority) {
      errors.push_back(origin + " deploy step " + stepRepr(s) + " needs an integer priority >= 0");
      return;
    }
    p.priority = *priority;
    const AvailableStep* def = findStep(available, p.interface, p.step);
    if (!def) {
      errors.push_back(origin + " deploy step " + stepRepr(s) +
                       " is not supported by the node's interfaces");
      return;
    }
    checkArgs(origin + " deploy", s, *def, p.args, p.priority > 0, errors);
    if (p.interface == "deploy" && p.step == "deploy" && p.priority != 0) {
      errors.push_back(origin + " deploy step " + stepRepr(s) +
                       ": the core step deploy.deploy can only be disabled (priority 0), not "
                       "given another priority");
    }
    p.abortable = def->abortable;
    p.requiresRamdisk = def->requiresRamdisk;
    requested.push_back(std::move(p));
  };
  if (!userSteps.is_null()) {
    if (!userSteps.is_array()) return invalid("deploy_steps must be a list");
    for (const auto& s : userSteps) {
      add(s, "User");
      userKeys.insert(s.value("interface", "") + "." + s.value("step", ""));
    }
  }
  for (const auto& t : templateSteps) {
    const std::string key = t.step.value("interface", "") + "." + t.step.value("step", "");
    if (userKeys.count(key)) continue;  // the user's step wins
    add(t.step, "Deploy template " + t.templateName + ":");
  }
  // Exact duplicates (same interface, step and arguments) are an error; the same step with
  // different arguments is allowed (deploy templates spec).
  std::set<std::string> seen;
  for (const auto& p : requested) {
    if (!seen.insert(p.key() + " " + dumpJson(p.args)).second) {
      errors.push_back("Duplicate deploy step " + p.key() + " with arguments " +
                       maskedDump(p.args) +
                       " (the same step may only repeat with different arguments)");
    }
  }
  KILN_TRY_VOID(joined(errors));

  std::set<std::string> requestedKeys;
  for (const auto& p : requested) requestedKeys.insert(p.key());
  std::vector<PlannedStep> plan;
  for (const auto& a : available) {
    if (a.priority > 0 && !requestedKeys.count(a.interface + "." + a.step)) {
      plan.push_back({a.interface, a.step, json::object(), a.priority, a.abortable, a.requiresRamdisk});
    }
  }
  for (auto& p : requested) {
    if (p.priority > 0) plan.push_back(std::move(p));
  }
  orderSteps(plan);
  return plan;
}

}  // namespace kiln::server
