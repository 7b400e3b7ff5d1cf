// File: server/conductor/step_planner.h
//
// Builds the ordered step lists of automated cleaning, manual cleaning and deployment (house-
// style rule 10: small pure functions with exhaustive tests). The rules are Ironic's
// (docs/ironic-api.md §5.2 and §7) with the deploy templates spec's allowance for repeated steps:
//  - steps run highest priority first; ties go by interface priority (vendor 7, power 6,
//    management 5, firmware 4, deploy 3, bios 2, raid 1); priority 0 runs only when asked for;
//  - automated cleaning runs every clean step with priority > 0;
//  - manual cleaning runs the requested steps in the given order; each must exist, take only
//    arguments its argsinfo names and get every required one;
//  - deployment: user steps (the provision request's deploy_steps) override template steps
//    with the same (interface, step), which override driver steps; a template or user step
//    with priority 0 disables the driver step; the core step deploy.deploy can only be disabled;
//    the same step may appear more than once with different arguments, an exact duplicate
//    (same interface, step and arguments) is an error.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/drivers/interfaces.h"
#include "shared/core/error.h"
#include "shared/core/log.h"

namespace kiln::server {

enum class StepKind { Clean, Deploy, Service };

/// A step the node's interfaces offer, with its effective default priority.
struct AvailableStep {
  std::string interface;
  std::string step;
  int priority = 0;
  bool abortable = false;
  bool requiresRamdisk = false;
  std::vector<ArgInfo> argsinfo;
};

/// A step to run.
struct PlannedStep {
  std::string interface;
  std::string step;
  nlohmann::json args = nlohmann::json::object();
  int priority = 0;
  bool abortable = false;
  bool requiresRamdisk = false;

  std::string key() const { return interface + "." + step; }
  /// {"interface", "step", "args", "priority", "abortable", "requires_ramdisk"}
  nlohmann::json toJson() const;
  static Result<PlannedStep> fromJson(const nlohmann::json& j);
};

/// Priority overrides from configuration, keyed "interface.step".
struct PriorityOverrides {
  std::map<std::string, int> clean;
  std::map<std::string, int> deploy;
};

/// Steps the conductor itself implements in any flow, priority 0: power.power_on,
/// power.power_off, power.reboot, deploy.wait (args: seconds) and deploy.hold (1.85: parks the
/// flow in its hold state until unhold).
std::vector<AvailableStep> flowSteps();

/// The steps of one kind the node's interfaces offer, with overrides applied, plus the flow
/// steps. `agentSteps` (driver_internal_info.agent_cached_<kind>_steps, keyed by interface)
/// replaces the statically declared in-band steps when the agent has reported. It is read
/// through the shared step model (kiln::readSteps): a malformed entry is left out, so the
/// step is unknown to the plan (a request naming it gets "does not support"), and each one
/// left out is a warning on `log` when given.
std::vector<AvailableStep> availableSteps(const NodeDriver& driver, StepKind kind,
                                          const PriorityOverrides& overrides,
                                          const nlohmann::json* agentSteps = nullptr,
                                          const Logger* log = nullptr);

/// The declaration of interface.step among the node's interface implementations; nullptr when
/// none declares it (a step only the agent reported, or a flow step).
const StepDefinition* findStepDefinition(const NodeDriver& driver, std::string_view interface,
                                         std::string_view step);

/// Interface priority used to break ties.
int interfacePriority(std::string_view interface);

/// Sorts by priority (descending), then interface priority (descending); stable otherwise.
void orderSteps(std::vector<PlannedStep>& steps);
/// The same order for the steps a node offers (GET /v1/nodes/{id}/cleaning/steps).
void orderSteps(std::vector<AvailableStep>& steps);

/// Automated cleaning: every available step with priority > 0, ordered.
std::vector<PlannedStep> automatedCleanPlan(const std::vector<AvailableStep>& available);

/// Manual cleaning: the requested steps ([{interface, step, args?}]) in the given order.
/// InvalidArgument naming every unknown step, unexpected argument and missing required
/// argument.
Result<std::vector<PlannedStep>> manualCleanPlan(const nlohmann::json& requested,
                                                 const std::vector<AvailableStep>& available);

/// A deploy template's step with the template it comes from (for messages).
struct TemplateStep {
  nlohmann::json step;  ///< {interface, step, args, priority}
  std::string templateName;
};

/// The names among an instance_info's "traits" (strings in a list; anything else is ignored):
/// the traits that select deploy templates.
std::vector<std::string> instanceTraits(const nlohmann::json& instanceInfo);

/// A deploy template's stored steps (its steps column, a JSON array) with the template's
/// name. Internal when the stored value is not a JSON array.
Result<std::vector<TemplateStep>> templateSteps(const Record& deployTemplate);

/// Deploy template selection: the steps of the templates (deploy template records) whose
/// names are among `traits`, the templates in the order the traits name them (a trait named
/// twice adds its template twice), each template's steps in stored order; a trait naming no
/// template adds nothing. The first template whose stored steps are corrupt is the error.
Result<std::vector<TemplateStep>> selectTemplateSteps(const std::vector<Record>& templates,
                                                      const std::vector<std::string>& traits);

/// The deployment's step list from the driver's steps, the matching templates' steps and the
/// user's steps. InvalidArgument describing every problem (unknown steps, bad arguments, a
/// re-prioritised core step, exact duplicates). When `skipUnknownInBand` is set, steps that
/// the agent may report later are not yet required to exist.
Result<std::vector<PlannedStep>> deployPlan(const std::vector<AvailableStep>& available,
                                            const std::vector<TemplateStep>& templateSteps,
                                            const nlohmann::json& userSteps);

}  // namespace kiln::server
