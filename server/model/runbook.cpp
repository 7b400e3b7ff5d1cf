#include "server/model/runbook.h"

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "server/model/deploy_template.h"
#include "server/model/node.h"
#include "server/model/trait.h"
#include "server/model/versions.h"
#include "shared/core/secrets.h"
#include "shared/core/uuid.h"
#include "shared/json/json_util.h"
#include "shared/step/step.h"

namespace kiln::server {
namespace {

using FT = FieldType;
constexpr uint32_t N = kNullable, C = kCreatable, P = kPatchable, S = kSortable, X = kComputed,
                   L = kDefaultList, I = kInternal, D = kNullMeansDefault;

// Ironic's runbooks table (name, description and owner 255 characters). The short list shows
// Ironic's DEFAULT_RETURN_FIELDS (uuid, name) and the links. traits is neither creatable nor
// patchable: only the /traits sub-resource changes it. The handlers validate bodies themselves
// (validateRunbookDocument), so C, P and the null flags here only document what a body may
// carry: RUNBOOK_SCHEMA takes null for uuid (generated), disable_ramdisk and public
// (BooleanField(default=False)), extra ({}), owner and description.
constexpr FieldSpec kRunbookFields[] = {
    {"id", FT::Int, ver::k92Runbooks, I | S},
    {"uuid", FT::String, ver::k92Runbooks, C | S | L | D, 36},
    {"name", FT::String, ver::k92Runbooks, C | P | S | L, 255},
    {"description", FT::String, ver::k112RunbookTraits, N | C | P | S, 255},
    {"steps", FT::Array, ver::k92Runbooks, C | P},
    {"disable_ramdisk", FT::Bool, ver::k92Runbooks, C | P | S | D},
    {"extra", FT::Object, ver::k92Runbooks, C | P | D},
    {"public", FT::Bool, ver::k92Runbooks, C | P | S | D},
    {"owner", FT::String, ver::k92Runbooks, N | C | P | S, 255},
    {"traits", FT::Array, ver::k112RunbookTraits, 0},
    {"created_at", FT::Time, ver::k92Runbooks, N | S},
    {"updated_at", FT::Time, ver::k92Runbooks, N | S},
    {"links", FT::Array, ver::k92Runbooks, X | L},
};
static_assert(std::size(kRunbookFields) == kRbLinks + 1);

const Schema kRunbookSchema{"Runbook", "runbooks", kRunbookFields};

constexpr size_t kMaxRunbookString = 255;

std::unexpected<Error> schemaError(std::string_view what, const std::string& message) {
  return invalid("Schema error for " + std::string(what) + ": " + message);
}

/// jsonschema's "X is not of type 'a', 'b'" for a property of the document.
Result<void> requireType(const Json& doc, const char* key, std::string_view what,
                         bool (Json::*check)() const noexcept, std::string_view typeName) {
  if (!doc.contains(key)) return {};
  const Json& v = doc[key];
  if (v.is_null() || (v.*check)()) return {};
  return schemaError(what,
                     maskedRepr(v) + " is not of type '" + std::string(typeName) + "', 'null'");
}

/// A string-or-null property of at most 255 characters (owner, description).
Result<void> requireShortString(const Json& doc, const char* key, std::string_view what) {
  KILN_TRY_VOID(requireType(doc, key, what, &Json::is_string, "string"));
  if (doc.contains(key) && doc[key].is_string() &&
      doc[key].get_ref<const std::string&>().size() > kMaxRunbookString) {
    return schemaError(what, maskedRepr(doc[key]) + " is too long");
  }
  return {};
}

Result<void> validateName(const Json& name, RunbookNameRule rule, std::string_view what) {
  if (rule == RunbookNameRule::Trait) return validateRunbookTrait(name, what);
  if (!name.is_string()) return schemaError(what, maskedRepr(name) + " is not of type 'string'");
  const auto& s = name.get_ref<const std::string&>();
  if (s.empty()) return schemaError(what, "'' is too short");
  if (s.size() > kMaxRunbookString) return schemaError(what, maskedRepr(name) + " is too long");
  if (!isValidLogicalName(s)) {
    return schemaError(what, maskedRepr(name) + " does not match '^[A-Za-z0-9\\\\-._~]+$'");
  }
  return {};
}

}  // namespace

const Schema& runbookSchema() { return kRunbookSchema; }

Result<void> validateRunbookTrait(const Json& trait, std::string_view what) {
  if (!trait.is_string()) return schemaError(what, maskedRepr(trait) + " is not of type 'string'");
  const auto& s = trait.get_ref<const std::string&>();
  if (s.empty()) return schemaError(what, "'' is too short");
  if (s.size() > kMaxTraitLength) return schemaError(what, maskedRepr(trait) + " is too long");
  if (!validateTrait(s)) {
    return schemaError(what, maskedRepr(trait) +
                                 " is not valid under any of the given schemas. Possible root "
                                 "cause: " +
                                 maskedRepr(trait) + " does not match '^CUSTOM_[A-Z0-9_]+$'");
  }
  return {};
}

Result<Json> validateRunbookSteps(const Json& steps, std::string_view what) {
  StepRequestRules rules = runbookStepRules();
  // A bad raid_config (device hints included) is refused now, not when the step runs.
  rules.checkArgs = validateStepArgs;
  Json out = Json::array();
  for (const auto& step : KILN_TRY(parseStepRequests(steps, rules, what))) {
    out.push_back(step.toJson());
  }
  return out;
}

Result<Json> validateRunbookDocument(const Json& doc, RunbookNameRule nameRule,
                                     bool allowDescription, std::string_view what) {
  if (!doc.is_object()) return schemaError(what, maskedRepr(doc) + " is not of type 'object'");
  // jsonschema reports the errors nearest the top first: the required and unexpected keys,
  // then each property, then the steps' own properties.
  for (const char* key : {"steps", "name"}) {
    if (!doc.contains(key)) {
      return schemaError(what, "'" + std::string(key) + "' is a required property");
    }
  }
  static constexpr std::string_view kKeys[] = {"uuid",  "name",   "steps", "disable_ramdisk",
                                               "extra", "public", "owner", "description"};
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const bool known = std::find(std::begin(kKeys), std::end(kKeys), it.key()) != std::end(kKeys);
    if (!known || (it.key() == "description" && !allowDescription)) {
      return schemaError(
          what, "Additional properties are not allowed ('" + it.key() + "' was unexpected)");
    }
  }
  KILN_TRY_VOID(requireType(doc, "uuid", what, &Json::is_string, "string"));
  KILN_TRY_VOID(validateName(doc["name"], nameRule, what));
  if (!doc["steps"].is_array()) {
    return schemaError(what, maskedRepr(doc["steps"]) + " is not of type 'array'");
  }
  KILN_TRY_VOID(requireType(doc, "disable_ramdisk", what, &Json::is_boolean, "boolean"));
  KILN_TRY_VOID(requireType(doc, "extra", what, &Json::is_object, "object"));
  KILN_TRY_VOID(requireType(doc, "public", what, &Json::is_boolean, "boolean"));
  KILN_TRY_VOID(requireShortString(doc, "owner", what));
  if (allowDescription) KILN_TRY_VOID(requireShortString(doc, "description", what));
  Json out = doc;
  // The steps, then Ironic's duplicate_steps (validateRunbookSteps).
  out["steps"] = KILN_TRY(validateRunbookSteps(doc["steps"], what));
  return out;
}

std::vector<std::string> runbookTraits(const Record& runbook) {
  std::vector<std::string> out;
  auto parsed = parseJson(runbook.str(kRbTraits));
  if (!parsed || !parsed->is_array()) return out;
  for (const auto& item : *parsed) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
}

}  // namespace kiln::server
