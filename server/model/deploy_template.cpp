#include "server/model/deploy_template.h"

#include <nlohmann/json.hpp>

#include "server/model/trait.h"
#include "shared/core/secrets.h"
#include "shared/json/json_util.h"
#include "shared/raid/raid_config.h"
#include "shared/step/step.h"

namespace kiln::server {

Result<void> validateTemplateName(const Json& name, std::string_view what) {
  const std::string prefix = "Schema error for " + std::string(what) + ": ";
  if (!name.is_string()) {
    return invalid(prefix + maskedRepr(name) + " is not of type 'string'");
  }
  const auto& s = name.get_ref<const std::string&>();
  if (!validateTrait(s)) {
    return invalid(prefix + maskedRepr(name) +
                   " does not match '^CUSTOM_[A-Z0-9_]+$' and is not a standard trait (a "
                   "deploy template name must be a valid trait, at most 255 characters)");
  }
  return {};
}

Result<void> validateStepArgs(const Json& interface, const Json& args) {
  if (interface == "raid" && args.is_object() && args.contains("raid_config")) {
    KILN_TRY(parseRaidConfig(args["raid_config"]));
  }
  return {};
}

Result<Json> validateTemplateSteps(const Json& steps, std::string_view what) {
  StepRequestRules rules = deployStepRules();
  rules.checkArgs = validateStepArgs;
  Json out = Json::array();
  for (const auto& step : KILN_TRY(parseStepRequests(steps, rules, what))) {
    out.push_back(step.toJson());
  }
  return out;
}

}  // namespace kiln::server
