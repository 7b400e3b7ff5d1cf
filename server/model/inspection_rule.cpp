#include "server/model/inspection_rule.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "server/model/versions.h"
#include "shared/core/secrets.h"
#include "shared/json/json_util.h"

namespace kiln::server {
namespace {

using FT = FieldType;
constexpr uint32_t N = kNullable, C = kCreatable, P = kPatchable, S = kSortable, X = kComputed,
                   L = kDefaultList, I = kInternal, D = kNullMeansDefault,
                   RC = kNullRefusedOnCreate, RP = kNullRefusedOnPatch;

// Ironic's inspection_rules table (models.InspectionRule) without `scope`, which the API never
// shows. The short list shows Ironic's DEFAULT_RETURN_FIELDS: uuid, priority, phase,
// description (and the links). validateInspectionRule checks bodies itself; the null flags
// document Ironic's create_request_body: uuid (generated), description, sensitive
// (BooleanField(default=False)) and phase take null, but validate_rule refuses a null phase
// ("Invalid phase: None. ...").
constexpr FieldSpec kInspectionRuleFields[] = {
    {"id", FT::Int, ver::k96InspectionRules, I | S},
    {"uuid", FT::String, ver::k96InspectionRules, C | S | L | D, 36},
    {"description", FT::String, ver::k96InspectionRules, N | C | P | S | L, 255},
    {"phase", FT::String, ver::k96InspectionRules, C | P | S | L | RC | RP, 16},
    {"priority", FT::Int, ver::k96InspectionRules, C | P | S | L},
    {"sensitive", FT::Bool, ver::k96InspectionRules, C | P | S | D},
    {"conditions", FT::Array, ver::k96InspectionRules, C | P},
    {"actions", FT::Array, ver::k96InspectionRules, C | P},
    {"created_at", FT::Time, ver::k96InspectionRules, N | S},
    {"updated_at", FT::Time, ver::k96InspectionRules, N | S},
    {"links", FT::Array, ver::k96InspectionRules, X | L},
};
static_assert(std::size(kInspectionRuleFields) == kIrLinks + 1);

const Schema kInspectionRuleSchema{"Rule", "inspection_rules", kInspectionRuleFields};

// ---- the catalogue ---------------------------------------------------------------------------

constexpr std::string_view kNone[] = {""};
constexpr std::span<const std::string_view> kNoArgs(kNone, 0);

constexpr std::string_view kValues[] = {"values"};
constexpr std::string_view kForceStrings[] = {"force_strings"};
constexpr std::string_view kValue[] = {"value"};
constexpr std::string_view kAddressSubnet[] = {"address", "subnet"};
constexpr std::string_view kValueRegex[] = {"value", "regex"};
constexpr std::string_view kMsg[] = {"msg"};
constexpr std::string_view kLevel[] = {"level"};
constexpr std::string_view kPathValue[] = {"path", "value"};
constexpr std::string_view kPath[] = {"path"};
constexpr std::string_view kUnique[] = {"unique"};
constexpr std::string_view kName[] = {"name"};
constexpr std::string_view kNameValue[] = {"name", "value"};
constexpr std::string_view kPortPathValue[] = {"port_id", "path", "value"};
constexpr std::string_view kPortPath[] = {"port_id", "path"};
constexpr std::string_view kUrl[] = {"url"};
constexpr std::string_view kApiCallOptional[] = {"headers", "proxies", "timeout", "retries",
                                                 "backoff_factor"};

// The arguments of each plugin's __call__ (after `task`), and its FORMATTED_ARGS.
const RuleOpSpec kConditionOperators[] = {
    {"eq", kValues, kForceStrings, kValues},
    {"lt", kValues, kForceStrings, kValues},
    {"gt", kValues, kForceStrings, kValues},
    {"is-empty", kValue, kNoArgs, kValue},
    {"in-net", kAddressSubnet, kNoArgs, kAddressSubnet},
    {"matches", kValueRegex, kNoArgs, kValue},
    {"contains", kValueRegex, kNoArgs, kValue},
    {"one-of", kValue, kValues, kValue},
    {"is-none", kValue, kNoArgs, kValue},
    {"is-true", kValue, kNoArgs, kValue},
    {"is-false", kValue, kNoArgs, kValue},
};

const RuleOpSpec kActions[] = {
    {"fail", kMsg, kNoArgs, kNoArgs},
    {"log", kMsg, kLevel, kMsg},
    {"set-attribute", kPathValue, kNoArgs, kValue},
    {"extend-attribute", kPathValue, kUnique, kValue},
    {"del-attribute", kPath, kNoArgs, kNoArgs},
    {"set-capability", kNameValue, kNoArgs, kValue},
    {"unset-capability", kName, kNoArgs, kNoArgs},
    {"add-trait", kName, kNoArgs, kNoArgs},
    {"remove-trait", kName, kNoArgs, kNoArgs},
    {"set-plugin-data", kPathValue, kNoArgs, kValue, true},
    {"extend-plugin-data", kPathValue, kUnique, kValue, true},
    {"unset-plugin-data", kPath, kNoArgs, kNoArgs, true},
    {"set-port-attribute", kPortPathValue, kNoArgs, kValue},
    {"extend-port-attribute", kPortPathValue, kUnique, kValue},
    {"del-port-attribute", kPortPath, kNoArgs, kNoArgs},
    {"api-call", kUrl, kApiCallOptional, kUrl},
};

constexpr std::string_view kMultipleValues[] = {"any", "all", "first", "last"};

bool contains(std::span<const std::string_view> list, std::string_view name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

std::string joinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += out.empty() ? n : ", " + n;
  return out;
}

/// Characters (code points) of UTF-8 text, as jsonschema's maxLength counts them.
size_t codePoints(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

/// jsonschema's enum message: "'x' is not one of ['a', 'b']".
std::string notOneOf(const Json& value, const std::vector<std::string>& allowed) {
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "'" : ", '") + a + "'";
  return maskedRepr(value) + " is not one of [" + list + "]";
}

/// Checks one condition or action object against its item schema and returns the stored form.
Result<Json> checkOperation(const Json& item, bool condition, const std::string& prefix) {
  if (!item.is_object()) return invalid(prefix + maskedRepr(item) + " is not of type 'object'");
  for (const char* key : {"op", "args"}) {
    if (!item.contains(key)) {
      return invalid(prefix + "'" + std::string(key) + "' is a required property");
    }
  }
  const Json& op = item["op"];
  std::vector<std::string> allowed;
  if (condition) {
    for (const auto& spec : ruleConditionOperators()) allowed.emplace_back(spec.name);
    for (const auto& spec : ruleConditionOperators()) allowed.push_back("!" + std::string(spec.name));
  } else {
    for (const auto& spec : ruleActions()) allowed.emplace_back(spec.name);
  }
  if (!op.is_string() ||
      std::find(allowed.begin(), allowed.end(), op.get<std::string>()) == allowed.end()) {
    return invalid(prefix + notOneOf(op, allowed));
  }
  const Json& args = item["args"];
  if (!args.is_array() && !args.is_object()) {
    return invalid(prefix + maskedRepr(args) + " is not of type 'array', 'object'");
  }
  Json out = Json::object();
  out["op"] = op;
  out["args"] = args;
  auto loop = item.find("loop");
  if (loop != item.end() && !loop->is_array() && !loop->is_object()) {
    return invalid(prefix + maskedRepr(*loop) + " is not of type 'array', 'object'");
  }
  std::string multiple = "any";
  if (condition) {
    if (auto m = item.find("multiple"); m != item.end()) {
      if (!m->is_string() || !contains(kMultipleValues, m->get<std::string>())) {
        return invalid(prefix + notOneOf(*m, {"any", "all", "first", "last"}));
      }
      multiple = m->get<std::string>();
    }
  }
  // Ironic renders (and its engine reads) a loop only when it is non-empty, and a condition's
  // `multiple` only with a loop.
  if (loop != item.end() && !loop->empty()) {
    out["loop"] = *loop;
    if (condition) out["multiple"] = multiple;
  }
  return out;
}

Result<Json> checkOperations(const Json& list, bool condition, const std::string& prefix) {
  if (!list.is_array()) return invalid(prefix + maskedRepr(list) + " is not of type 'array'");
  if (!condition && list.empty()) return invalid(prefix + "[] is too short");
  Json out = Json::array();
  for (const auto& item : list) out.push_back(KILN_TRY(checkOperation(item, condition, prefix)));
  return out;
}

Result<Json> nullableString(const Json& body, const char* key, size_t maxLength,
                            const std::string& prefix) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return Json();
  if (!it->is_string()) {
    return invalid(prefix + maskedRepr(*it) + " is not of type 'string', 'null'");
  }
  if (maxLength > 0 && codePoints(it->get<std::string>()) > maxLength) {
    return invalid(prefix + maskedRepr(*it) + " is too long");
  }
  return *it;
}

}  // namespace

bool RuleOpSpec::takes(std::string_view arg) const {
  return contains(required, arg) || contains(optional, arg);
}

bool RuleOpSpec::isFormatted(std::string_view arg) const { return contains(formatted, arg); }

const Schema& inspectionRuleSchema() { return kInspectionRuleSchema; }

std::span<const RuleOpSpec> ruleConditionOperators() { return kConditionOperators; }
std::span<const RuleOpSpec> ruleActions() { return kActions; }

const RuleOpSpec* findConditionOperator(std::string_view name) {
  for (const auto& spec : kConditionOperators) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

const RuleOpSpec* findRuleAction(std::string_view name) {
  for (const auto& spec : kActions) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

Result<ParsedConditionOp> parseConditionOp(std::string_view op) {
  if (std::count(op.begin(), op.end(), '!') > 1) {
    return invalid("Multiple exclamation marks are not allowed. To apply the invert of an "
                   "operation, simply add an exclamation mark (with an optional space) before "
                   "the operator, e.g. eq - !eq.");
  }
  auto strip = [](std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
  };
  op = strip(op);
  ParsedConditionOp out;
  out.inverted = !op.empty() && op.front() == '!';
  if (out.inverted) op.remove_prefix(1);
  out.name = std::string(strip(op));
  return out;
}

Result<Json> normalizeRuleArgs(const RuleOpSpec& spec, const Json& args) {
  Json named = Json::object();
  if (args.is_array()) {
    if (args.size() < spec.required.size()) {
      std::vector<std::string> missing;
      for (size_t i = args.size(); i < spec.required.size(); ++i) {
        missing.emplace_back(spec.required[i]);
      }
      return invalid("Not enough arguments provided. Missing: " + joinNames(missing));
    }
    const size_t known = spec.required.size() + spec.optional.size();
    for (size_t i = 0; i < args.size() && i < known; ++i) {
      const std::string_view name =
          i < spec.required.size() ? spec.required[i] : spec.optional[i - spec.required.size()];
      named[std::string(name)] = args[i];
    }
  } else if (args.is_object()) {
    std::vector<std::string> missing, unexpected;
    for (auto name : spec.required) {
      if (!args.contains(std::string(name))) missing.emplace_back(name);
    }
    for (auto it = args.begin(); it != args.end(); ++it) {
      if (spec.pluginData && it.key() == "plugin_data") continue;
      if (!spec.takes(it.key())) {
        unexpected.push_back(it.key());
        continue;
      }
      named[it.key()] = it.value();
    }
    std::string msg;
    if (!missing.empty()) msg = "missing required argument(s): " + joinNames(missing);
    if (!unexpected.empty()) {
      msg += (msg.empty() ? "" : "; ") + std::string("unexpected argument(s): ") +
             joinNames(unexpected);
    }
    if (!msg.empty()) return invalid(msg);
  } else {
    return invalid("args must be either a list or dictionary");
  }
  // Kiln's additions: arguments that could only fail when the rule runs.
  for (const char* key : {"path", "name", "port_id", "regex", "level", "url"}) {
    auto it = named.find(key);
    if (it != named.end() && !it->is_string()) {
      return invalid("argument '" + std::string(key) + "' must be a string, not " +
                     pyTypeName(*it));
    }
  }
  if (spec.name == "eq" || spec.name == "lt" || spec.name == "gt") {
    const Json& values = named["values"];
    if (!values.is_array()) {
      return invalid("argument 'values' must be a list, not " + pyTypeName(values));
    }
  }
  return named;
}

Result<Json> validateInspectionRule(const Json& body, std::string_view schemaPrefix) {
  const std::string prefix(schemaPrefix);
  if (!body.is_object()) return invalid(prefix + maskedRepr(body) + " is not of type 'object'");
  if (!body.contains("actions")) return invalid(prefix + "'actions' is a required property");
  static constexpr std::string_view kProperties[] = {
      "actions", "conditions", "description", "phase", "priority", "sensitive", "uuid"};
  std::vector<std::string> extra;
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (!contains(kProperties, it.key())) extra.push_back("'" + it.key() + "'");
  }
  if (!extra.empty()) {
    return invalid(prefix + "Additional properties are not allowed (" + joinNames(extra) +
                   (extra.size() == 1 ? " was" : " were") + " unexpected)");
  }

  Json rule = Json::object();
  rule["actions"] = KILN_TRY(checkOperations(body["actions"], false, prefix));
  rule["conditions"] = Json::array();
  if (auto it = body.find("conditions"); it != body.end()) {
    rule["conditions"] = KILN_TRY(checkOperations(*it, true, prefix));
  }
  rule["description"] = KILN_TRY(nullableString(body, "description", 255, prefix));
  Json phase = KILN_TRY(nullableString(body, "phase", 16, prefix));
  int64_t priority = 0;
  if (auto it = body.find("priority"); it != body.end()) {
    // jsonschema counts 5.0 as an integer; bool is not one.
    const bool integral =
        it->is_number_integer() ||
        (it->is_number_float() && std::abs(it->get<double>()) < 1e15 &&
         it->get<double>() == static_cast<double>(static_cast<int64_t>(it->get<double>())));
    if (!integral) return invalid(prefix + maskedRepr(*it) + " is not of type 'integer'");
    if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      priority = INT64_MAX;
    } else {
      priority = it->is_number_float() ? static_cast<int64_t>(it->get<double>())
                                       : it->get<int64_t>();
    }
    if (priority < 0) return invalid(prefix + maskedRepr(*it) + " is less than the minimum of 0");
  }
  bool sensitive = false;
  if (auto it = body.find("sensitive"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) {
      return invalid(prefix + maskedRepr(*it) + " is not of type 'boolean', 'null'");
    }
    sensitive = it->get<bool>();
  }
  if (auto it = body.find("uuid"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) {
      return invalid(prefix + maskedRepr(*it) + " is not of type 'string', 'null'");
    }
    rule["uuid"] = *it;
  }

  // validate_rule: the phase, the priority range, and each operation's arguments.
  std::vector<std::string> errors;
  if (auto it = body.find("phase"); it != body.end() && phase != std::string(kInspectionPhaseMain)) {
    errors.push_back("Invalid phase: " + (phase.is_null() ? std::string("None")
                                                          : phase.get<std::string>()) +
                     ". Valid phases are: main");
  }
  if (priority > kMaxUserRulePriority) {
    errors.emplace_back("Priority must be between 0 and 9999 for user-defined rules.");
  }
  for (const auto& condition : rule["conditions"]) {
    auto parsed = parseConditionOp(condition["op"].get<std::string>());
    const RuleOpSpec* spec = parsed ? findConditionOperator(parsed->name) : nullptr;
    if (!spec) {
      errors.push_back("Unsupported condition operator: " + condition["op"].get<std::string>());
      continue;
    }
    if (auto args = normalizeRuleArgs(*spec, condition["args"]); !args) {
      errors.push_back("Invalid parameters for condition operator " + parsed->name + ": " +
                       args.error().message);
    }
  }
  for (const auto& action : rule["actions"]) {
    const std::string op = action["op"].get<std::string>();
    const RuleOpSpec* spec = findRuleAction(op);
    if (!spec) {
      errors.push_back("Unsupported action operator: " + op);
      continue;
    }
    if (op == kApiCallAction) {
      errors.emplace_back(
          "Unsupported action operator: api-call. Kiln's inspection rules make no outbound HTTP "
          "calls.");
      continue;
    }
    if (auto args = normalizeRuleArgs(*spec, action["args"]); !args) {
      errors.push_back("Invalid parameters for action operator " + op + ": " +
                       args.error().message);
    }
  }
  if (errors.size() == 1) return invalid(errors.front());
  if (errors.size() > 1) {
    std::string all;
    for (const auto& e : errors) all += all.empty() ? e : "; " + e;
    return invalid("Multiple validation errors occurred: " + all);
  }
  rule["phase"] = std::string(kInspectionPhaseMain);
  rule["priority"] = priority;
  rule["sensitive"] = sensitive;
  return rule;
}

void assignInspectionRule(Record& record, const Json& rule) {
  if (rule["description"].is_string()) {
    record.setText(kIrDescription, rule["description"].get<std::string>());
  } else {
    record.setNull(kIrDescription);
  }
  record.setText(kIrPhase, rule["phase"].get<std::string>());
  record[kIrPriority] = Value::integer(rule["priority"].get<int64_t>());
  record.setBool(kIrSensitive, rule["sensitive"].get<bool>());
  record.setText(kIrConditions, dumpJson(rule["conditions"]));
  record.setText(kIrActions, dumpJson(rule["actions"]));
}

Record inspectionRuleRecord(const Json& rule) {
  Record record = defaultRecord(kInspectionRuleSchema);
  if (auto it = rule.find("uuid"); it != rule.end() && it->is_string()) {
    record.setText(kIrUuid, it->get<std::string>());
  }
  assignInspectionRule(record, rule);
  return record;
}

Json inspectionRuleDocument(const Record& record) {
  Json doc = Json::object();
  for (size_t field : {kIrUuid, kIrDescription, kIrPhase, kIrPriority, kIrSensitive,
                       kIrConditions, kIrActions}) {
    const FieldSpec& spec = kInspectionRuleFields[field];
    doc[std::string(spec.name)] = valueToJson(record[field], spec.type);
  }
  return doc;
}

}  // namespace kiln::server
