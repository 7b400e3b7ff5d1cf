#include "server/inspection/rules_engine.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <expected>
#include <functional>
#include <optional>
#include <regex>

#include "server/model/capabilities.h"
#include "server/model/inspection_rule.h"
#include "server/model/trait.h"
#include "shared/core/strings.h"
#include "shared/json/json_util.h"
#include "shared/net/ip.h"

namespace kiln::server {
namespace {

using Json = nlohmann::json;

// ---- errors ----------------------------------------------------------------------------------
//
// Ironic's engine lets two kinds of exception out of a rule: its own (the message stands as it
// is) and anything else Python raised (apply_rules wraps it: "Failed to apply rule <uuid> to
// node <uuid>: <error>"). Inside the engine the second kind travels as ErrorCode::Internal and
// is wrapped once, per rule; everything leaves as InvalidArgument.

std::unexpected<Error> pythonError(std::string message) {
  return fail(ErrorCode::Internal, std::move(message));
}
std::unexpected<Error> ironicError(std::string message) { return invalid(std::move(message)); }
std::unexpected<Error> executionFailure(const std::string& reason) {
  return invalid("Inspection rule execution failed. Reason: " + reason);
}
std::unexpected<Error> actionFailure(const std::string& reason) {
  return invalid("Inspection rule action execution failed. Reason: " + reason);
}
std::unexpected<Error> conditionFailure(const std::string& reason) {
  return invalid("Inspection rule condition check failed. Reason: " + reason);
}
std::unexpected<Error> malformedRule(const std::string& reason) {
  return invalid("Inspection rule validation failed. Reason: " + reason);
}

// ---- Python values ---------------------------------------------------------------------------

/// Ironic's SENSITIVE_FIELDS: what ShallowMaskDict shows as "***".
constexpr std::string_view kMaskedKeys[] = {"password", "auth_token", "bmc_password"};
constexpr std::string_view kMaskedText = "***";

bool isMaskedKey(std::string_view key) {
  return std::find(std::begin(kMaskedKeys), std::end(kMaskedKeys), key) != std::end(kMaskedKeys);
}

/// `v` with the values of masked keys replaced, however deep (as nested ShallowMaskDicts show).
Json maskedCopy(const Json& v) {
  if (v.is_object()) {
    Json out = Json::object();
    for (auto it = v.begin(); it != v.end(); ++it) {
      out[it.key()] = isMaskedKey(it.key()) ? Json(kMaskedText) : maskedCopy(it.value());
    }
    return out;
  }
  if (v.is_array()) {
    Json out = Json::array();
    for (const auto& e : v) out.push_back(maskedCopy(e));
    return out;
  }
  return v;
}

/// Python's str(): strings as they are, everything else as repr() (None, True, 1.5,
/// {'a': [1]}); `mask` hides the secrets inside containers.
std::string pyStr(const Json& v, bool mask = false) {
  if (v.is_string()) return v.get<std::string>();
  if (mask && (v.is_object() || v.is_array())) return pyRepr(maskedCopy(v));
  return pyRepr(v);
}

bool pyTruthy(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return false;
    case Json::value_t::boolean: return v.get<bool>();
    case Json::value_t::number_integer: return v.get<int64_t>() != 0;
    case Json::value_t::number_unsigned: return v.get<uint64_t>() != 0;
    case Json::value_t::number_float: return v.get<double>() != 0.0;
    case Json::value_t::string:
    case Json::value_t::array:
    case Json::value_t::object: return !v.empty();
    default: return true;
  }
}

/// bool, int and float are all numbers to Python's comparisons (True == 1).
bool isPyNumber(const Json& v) { return v.is_number() || v.is_boolean(); }

/// -1, 0, 1 for two Python numbers.
int compareNumbers(const Json& a, const Json& b) {
  auto asInt = [](const Json& v) -> __int128 {
    if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
    if (v.is_number_unsigned()) return static_cast<__int128>(v.get<uint64_t>());
    return static_cast<__int128>(v.get<int64_t>());
  };
  if (a.is_number_float() || b.is_number_float()) {
    const double x = a.is_number_float() ? a.get<double>() : static_cast<double>(asInt(a));
    const double y = b.is_number_float() ? b.get<double>() : static_cast<double>(asInt(b));
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  const __int128 x = asInt(a), y = asInt(b);
  return x < y ? -1 : (x > y ? 1 : 0);
}

/// Python's ==.
bool pyEquals(const Json& a, const Json& b) {
  if (isPyNumber(a) && isPyNumber(b)) return compareNumbers(a, b) == 0;
  if (a.type() != b.type()) return false;
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!pyEquals(a[i], b[i])) return false;
    }
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(); it != a.end(); ++it) {
      auto other = b.find(it.key());
      if (other == b.end() || !pyEquals(it.value(), *other)) return false;
    }
    return true;
  }
  return a == b;
}

/// Python's a < b (`less`) or a > b; ordering values Python cannot order is its TypeError.
Result<bool> pyOrder(const Json& a, const Json& b, bool less) {
  if (isPyNumber(a) && isPyNumber(b)) {
    const int c = compareNumbers(a, b);
    return less ? c < 0 : c > 0;
  }
  if (a.is_string() && b.is_string()) {
    // UTF-8 byte order is code point order, which is how Python orders str.
    const int c = a.get_ref<const std::string&>().compare(b.get_ref<const std::string&>());
    return less ? c < 0 : c > 0;
  }
  if (a.is_array() && b.is_array()) {
    const size_t n = std::min(a.size(), b.size());
    for (size_t i = 0; i < n; ++i) {
      if (!pyEquals(a[i], b[i])) return pyOrder(a[i], b[i], less);
    }
    return less ? a.size() < b.size() : a.size() > b.size();
  }
  return pythonError("'" + std::string(less ? "<" : ">") +
                     "' not supported between instances of '" + pyTypeName(a) + "' and '" +
                     pyTypeName(b) + "'");
}

bool allDigits(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// ---- str.format over the inspection data -----------------------------------------------------

/// What evaluates "{...}" fields.
struct Scope {
  const Json& inventory;
  const Json& pluginData;
  const NodeView& node;
  const Json* item = nullptr;  ///< the loop item; null outside loops
  bool mask = true;            ///< inventory and plugin data show secrets as "***"
  bool isEmptyOp = false;      ///< the operator is is-empty: a missing key formats as None
};

/// The node documents (set-attribute paths and "{node.X}" templates name them like the API).
const Json* nodeDocument(const NodeView& node, std::string_view name) {
  if (name == "properties") return &node.properties;
  if (name == "extra") return &node.extra;
  if (name == "driver_info") return &node.driverInfo;
  if (name == "instance_info") return &node.instanceInfo;
  return nullptr;
}

/// A node field an action may change: a document or an attribute; null for anything else.
Json* nodeField(NodeView& node, const std::string& name) {
  if (const Json* doc = nodeDocument(node, name)) return const_cast<Json*>(doc);
  auto it = node.attributes.find(name);
  return it == node.attributes.end() ? nullptr : &*it;
}

/// A value met while resolving a field: a reference into the data or a value made on the way.
class FieldValue {
 public:
  void point(const Json* p) { ptr_ = p; }
  void own(Json v) {
    owned_ = std::move(v);
    ptr_ = nullptr;
  }
  /// Moves to a child of the current value.
  void descend(const Json& child) {
    if (ptr_) {
      ptr_ = &child;
    } else {
      Json copy = child;
      own(std::move(copy));
    }
  }
  const Json& get() const { return ptr_ ? *ptr_ : owned_; }

  bool isNode = false;     ///< the `node` object itself (only attributes can be read from it)
  bool maskBelow = false;  ///< read through the masked inventory or plugin data

 private:
  const Json* ptr_ = nullptr;
  Json owned_;
};

/// Python's exception classes, as far as formatting cares.
enum class FormatError { KeyError, Other };

/// Resolves a field name ("inventory[cpu][count]", "node.driver", "item") as str.format's
/// get_field does.
std::optional<FormatError> resolveField(std::string_view field, const Scope& scope,
                                        FieldValue& out) {
  size_t i = 0;
  while (i < field.size() && field[i] != '.' && field[i] != '[') ++i;
  const std::string_view first = field.substr(0, i);
  // Automatic and positional fields ("{}", "{0}"): format() gets no positional arguments.
  if (first.empty() || allDigits(first)) return FormatError::Other;
  if (first == "inventory") {
    out.point(&scope.inventory);
    out.maskBelow = scope.mask;
  } else if (first == "plugin_data") {
    out.point(&scope.pluginData);
    out.maskBelow = scope.mask;
  } else if (first == "node") {
    out.isNode = true;
  } else if (first == "item" && scope.item) {
    out.point(scope.item);
  } else {
    return FormatError::KeyError;
  }
  while (i < field.size()) {
    if (field[i] == '.') {
      size_t j = i + 1;
      while (j < field.size() && field[j] != '.' && field[j] != '[') ++j;
      const std::string name(field.substr(i + 1, j - i - 1));
      i = j;
      if (name.empty() || !out.isNode) return FormatError::Other;  // AttributeError
      out.isNode = false;
      if (name == "uuid") {
        out.own(scope.node.uuid);
      } else if (name == "traits") {
        out.own(Json(scope.node.traits));
      } else if (const Json* doc = nodeDocument(scope.node, name)) {
        out.point(doc);
      } else if (auto it = scope.node.attributes.find(name); it != scope.node.attributes.end()) {
        out.point(&*it);
      } else {
        return FormatError::Other;
      }
      continue;
    }
    // field[i] == '['
    const size_t close = field.find(']', i + 1);
    if (close == std::string_view::npos) return FormatError::Other;  // "Missing ']'"
    const std::string key(field.substr(i + 1, close - i - 1));
    i = close + 1;
    if (key.empty()) return FormatError::Other;
    if (i < field.size() && field[i] != '.' && field[i] != '[') return FormatError::Other;
    if (out.isNode) return FormatError::Other;  // TypeError: not subscriptable
    const Json& current = out.get();
    const bool index = allDigits(key);
    if (current.is_object()) {
      // A digits-only key is an int to Python, and the data's keys are all str.
      if (index) return FormatError::KeyError;
      auto it = current.find(key);
      if (it == current.end()) return FormatError::KeyError;
      if (out.maskBelow && isMaskedKey(key)) {
        out.own(Json(kMaskedText));
      } else {
        out.descend(*it);
      }
    } else if (current.is_array()) {
      const auto n = parseInt<size_t>(key);
      if (!index || key.size() > 9 || !n) return FormatError::Other;  // TypeError, IndexError
      if (*n >= current.size()) return FormatError::Other;
      out.descend(current[*n]);
    } else if (current.is_string()) {
      const auto wanted = parseInt<size_t>(key);
      if (!index || key.size() > 9 || !wanted) return FormatError::Other;
      // Python indexes code points.
      const std::string& s = current.get_ref<const std::string&>();
      size_t seen = 0, start = std::string::npos;
      for (size_t b = 0; b < s.size(); ++b) {
        if ((static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) continue;
        if (seen == *wanted) {
          start = b;
          break;
        }
        ++seen;
      }
      if (start == std::string::npos) return FormatError::Other;
      size_t end = start + 1;
      while (end < s.size() && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) ++end;
      out.own(Json(s.substr(start, end - start)));
    } else {
      return FormatError::Other;  // TypeError: not subscriptable
    }
  }
  return std::nullopt;
}

std::string renderField(const FieldValue& value, const Scope& scope, char conversion) {
  if (value.isNode) return "Node(uuid=" + scope.node.uuid + ")";
  const Json& v = value.get();
  if (conversion == 'r' || conversion == 'a') {
    return pyRepr(value.maskBelow ? maskedCopy(v) : v);
  }
  return pyStr(v, value.maskBelow);
}

/// Python's `text.format(node=..., inventory=..., plugin_data=..., item=...)`.
std::expected<std::string, FormatError> formatTemplate(std::string_view text, const Scope& scope) {
  const auto other = std::unexpected(FormatError::Other);
  std::string out;
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const char c = text[i];
    if (c == '}') {
      if (i + 1 < n && text[i + 1] == '}') {
        out.push_back('}');
        i += 2;
        continue;
      }
      return other;  // "Single '}' encountered in format string"
    }
    if (c != '{') {
      out.push_back(c);
      ++i;
      continue;
    }
    if (i + 1 < n && text[i + 1] == '{') {
      out.push_back('{');
      i += 2;
      continue;
    }
    // The field name runs to '}', ':' or '!'; a '[' skips to its ']'.
    size_t j = i + 1;
    while (j < n) {
      const char d = text[j];
      if (d == '[') {
        const size_t close = text.find(']', j);
        j = close == std::string_view::npos ? n : close + 1;
        continue;
      }
      if (d == '}' || d == ':' || d == '!') break;
      if (d == '{') return other;  // "unexpected '{' in field name"
      ++j;
    }
    if (j >= n) return other;  // "expected '}' before end of string"
    const std::string_view field = text.substr(i + 1, j - i - 1);
    char conversion = 0;
    if (text[j] == '!') {
      if (j + 1 >= n) return other;
      conversion = text[j + 1];
      if (conversion != 'r' && conversion != 's' && conversion != 'a') return other;
      j += 2;
      if (j >= n || (text[j] != ':' && text[j] != '}')) return other;
    }
    if (text[j] == ':') {
      int depth = 1;
      size_t k = j + 1;
      for (; k < n; ++k) {
        if (text[k] == '{') ++depth;
        if (text[k] == '}' && --depth == 0) break;
      }
      if (k >= n) return other;
      if (k != j + 1) return other;  // format specs are not supported
      j = k;
    }
    FieldValue value;
    if (auto error = resolveField(field, scope, value)) return std::unexpected(*error);
    out += renderField(value, scope, conversion);
    i = j + 1;
  }
  return out;
}

/// Ironic's safe_format: a string that cannot be formatted stays as it is, or is None for
/// is-empty when a key is missing.
Json safeFormat(const Json& value, const Scope& scope) {
  if (!value.is_string()) return value;
  auto formatted = formatTemplate(value.get_ref<const std::string&>(), scope);
  if (formatted) return *formatted;
  if (formatted.error() == FormatError::KeyError && scope.isEmptyOp) return nullptr;
  return value;
}

/// Ironic's interpolate_variables.
Json interpolate(const Json& value, const Scope& scope) {
  // In a loop a string is formatted twice: an item may carry a template of its own.
  const Json v = scope.item ? safeFormat(value, scope) : value;
  if (v.is_string()) return safeFormat(v, scope);
  if (v.is_object()) {
    Json out = Json::object();
    for (auto it = v.begin(); it != v.end(); ++it) {
      const Json key = safeFormat(Json(it.key()), scope);
      out[key.is_string() ? key.get<std::string>() : pyStr(key)] = interpolate(it.value(), scope);
    }
    return out;
  }
  if (v.is_array()) {
    Json out = Json::array();
    for (const auto& e : v) out.push_back(e.is_string() ? safeFormat(e, scope) : interpolate(e, scope));
    return out;
  }
  return v;
}

/// The operation's arguments in named form, templates formatted (Ironic's _process_args).
Result<Json> processArgs(const RuleOpSpec& spec, const Json& operation, const Scope& scope) {
  const auto argsIt = operation.find("args");
  auto named = normalizeRuleArgs(spec, argsIt == operation.end() ? Json::object() : *argsIt);
  if (!named) return malformedRule(std::string(spec.name) + ": " + named.error().message);
  for (auto it = named->begin(); it != named->end(); ++it) {
    if (scope.item || spec.isFormatted(it.key())) it.value() = interpolate(it.value(), scope);
  }
  return std::move(*named);
}

/// An operation must be an object with a string `op`.
Result<std::string> operationName(const Json& operation) {
  if (!operation.is_object()) {
    return malformedRule("an operation is not a dictionary: " + pyStr(operation));
  }
  auto op = operation.find("op");
  if (op == operation.end() || !op->is_string()) {
    return malformedRule("an operation has no 'op': " + pyStr(operation));
  }
  return op->get<std::string>();
}

// ---- conditions ------------------------------------------------------------------------------

/// Subjects longer than this are not matched: std::regex recurses per character and would
/// exhaust a worker's stack on very long text.
constexpr size_t kMaxRegexSubject = 4096;

/// A Python regular expression as std::regex (ECMAScript): leading global flags (?i) (?m) (?s)
/// (?a) (?u), named groups (?P<name>...), \A and \Z are translated; other Python-only syntax
/// is an error.
Result<std::regex> compilePythonRegex(const std::string& pattern) {
  auto flags = std::regex_constants::ECMAScript;
  bool dotAll = false;
  size_t pos = 0;
  while (pattern.compare(pos, 2, "(?") == 0) {
    size_t k = pos + 2;
    while (k < pattern.size() && std::isalpha(static_cast<unsigned char>(pattern[k]))) ++k;
    if (k == pos + 2 || k >= pattern.size() || pattern[k] != ')') break;
    for (size_t f = pos + 2; f < k; ++f) {
      switch (pattern[f]) {
        case 'i': flags |= std::regex_constants::icase; break;
        case 'm': flags |= std::regex_constants::multiline; break;
        case 's': dotAll = true; break;
        case 'a':
        case 'u': break;
        default:
          return executionFailure("invalid regular expression: the flag '" +
                                  std::string(1, pattern[f]) + "' is not supported");
      }
    }
    pos = k + 1;
  }
  std::string out;
  bool inClass = false;
  for (size_t i = pos; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char d = pattern[++i];
      if (!inClass && d == 'A') {
        out += '^';
      } else if (!inClass && d == 'Z') {
        out += '$';
      } else {
        out += c;
        out += d;
      }
      continue;
    }
    if (inClass) {
      if (c == ']') inClass = false;
      out += c;
      continue;
    }
    if (c == '[') {
      inClass = true;
      out += c;
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') {
        out += "\\]";
        ++i;
      }
      continue;
    }
    if (c == '(' && pattern.compare(i, 4, "(?P<") == 0) {
      const size_t close = pattern.find('>', i);
      if (close == std::string::npos) {
        return executionFailure("invalid regular expression: unterminated group name");
      }
      out += '(';
      i = close;
      continue;
    }
    if (c == '(' && pattern.compare(i, 4, "(?P=") == 0) {
      return executionFailure(
          "invalid regular expression: named back-references (?P=...) are not supported");
    }
    if (c == '(' && (pattern.compare(i, 4, "(?<=") == 0 || pattern.compare(i, 4, "(?<!") == 0)) {
      return executionFailure("invalid regular expression: look-behind is not supported");
    }
    if (c == '.' && dotAll) {
      out += "[\\s\\S]";
      continue;
    }
    out += c;
  }
  try {
    return std::regex(out, flags);
  } catch (const std::regex_error& e) {
    return executionFailure(std::string("invalid regular expression: ") + e.what());
  }
}

/// matches (`anchored`: re.match with a trailing '$') and contains (re.search).
Result<bool> regexCheck(const Json& value, const Json& regexArg, bool anchored) {
  if (!regexArg.is_string()) {
    return pythonError("first argument must be string or compiled pattern");
  }
  std::string pattern = regexArg.get<std::string>();
  if (anchored) {
    if (pattern.empty()) return pythonError("string index out of range");
    if (pattern.back() != '$') pattern += '$';
  }
  const std::regex re = KILN_TRY(compilePythonRegex(pattern));
  const std::string subject = pyStr(value);
  if (subject.size() > kMaxRegexSubject) {
    return executionFailure("the value to match is " + std::to_string(subject.size()) +
                            " characters long; Kiln matches at most " +
                            std::to_string(kMaxRegexSubject));
  }
  try {
    if (anchored) {
      return std::regex_search(subject, re, std::regex_constants::match_continuous);
    }
    return std::regex_search(subject, re);
  } catch (const std::regex_error& e) {
    return executionFailure(std::string("regular expression failed: ") + e.what());
  }
}

const Json& argOr(const Json& args, const char* name, const Json& fallback) {
  auto it = args.find(name);
  return it == args.end() ? fallback : *it;
}

/// One operator's check on its processed arguments.
Result<bool> evalOperator(const std::string& op, const Json& args) {
  static const Json kNull;
  const Json& value = argOr(args, "value", kNull);
  if (op == "eq" || op == "lt" || op == "gt") {
    const Json& values = argOr(args, "values", kNull);
    if (!values.is_array()) {
      return conditionFailure("Failed to check condition: '" + op + "' on values: " +
                              pyStr(values) + ": Expected list for 'values', got: " +
                              pyTypeName(values));
    }
    if (values.size() < 2) return true;
    std::vector<Json> items(values.begin(), values.end());
    if (pyTruthy(argOr(args, "force_strings", kNull))) {
      for (auto& v : items) v = pyStr(v);
    }
    for (size_t i = 0; i + 1 < items.size(); ++i) {
      const bool holds = op == "eq" ? pyEquals(items[i], items[i + 1])
                                    : KILN_TRY(pyOrder(items[i], items[i + 1], op == "lt"));
      if (!holds) return false;
    }
    return true;
  }
  if (op == "is-empty") {
    const std::string s = pyStr(value);
    return s.empty() || s == "None" || s == "[]" || s == "{}";
  }
  if (op == "in-net") {
    const std::string subnet = pyStr(argOr(args, "subnet", kNull));
    const std::string address = pyStr(argOr(args, "address", kNull));
    // netaddr.IPNetwork's forms: "addr/len", "v4addr/netmask", a bare address (one host).
    const auto network = net::parseIpNetwork(subnet);
    if (!network) return executionFailure("invalid value: invalid IPNetwork " + subnet);
    const auto ip = net::parseIpAddress(address);
    if (!ip) return pythonError("failed to detect a valid IP address from '" + address + "'");
    return network->contains(*ip);
  }
  if (op == "matches" || op == "contains") {
    return regexCheck(value, argOr(args, "regex", kNull), op == "matches");
  }
  if (op == "one-of") {
    static const Json kEmptyList = Json::array();
    const Json& values = argOr(args, "values", kEmptyList);
    if (values.is_array()) {
      return std::any_of(values.begin(), values.end(),
                         [&](const Json& v) { return pyEquals(value, v); });
    }
    if (values.is_string()) {
      if (!value.is_string()) {
        return pythonError("'in <string>' requires string as left operand, not " +
                           pyTypeName(value));
      }
      return values.get_ref<const std::string&>().find(value.get<std::string>()) !=
             std::string::npos;
    }
    if (values.is_object()) {
      if (value.is_array() || value.is_object()) {
        return pythonError("unhashable type: '" + pyTypeName(value) + "'");
      }
      return value.is_string() && values.contains(value.get<std::string>());
    }
    return pythonError("argument of type '" + pyTypeName(values) + "' is not iterable");
  }
  if (op == "is-none") return value.is_null();
  if (op == "is-true" || op == "is-false") {
    const bool wantTrue = op == "is-true";
    if (value.is_boolean()) return value.get<bool>() == wantTrue;
    if (value.is_number()) return pyTruthy(value) == wantTrue;
    if (value.is_string()) {
      const std::string lower = asciiLower(value.get<std::string>());
      return wantTrue ? (lower == "yes" || lower == "true") : (lower == "no" || lower == "false");
    }
    return !wantTrue && value.is_null();
  }
  return pythonError("Unsupported operator '" + op + "'.");
}

/// One condition, once (check_condition).
Result<bool> checkCondition(const Json& condition, Scope scope) {
  const std::string opText = KILN_TRY(operationName(condition));
  auto parsed = parseConditionOp(opText);
  if (!parsed) return pythonError(parsed.error().message);
  const RuleOpSpec* spec = findConditionOperator(parsed->name);
  if (!spec) {
    std::string supported;
    for (const auto& s : ruleConditionOperators()) {
      supported += (supported.empty() ? "" : ", ") + std::string(s.name);
    }
    return pythonError("Unsupported operator: '" + parsed->name +
                       "'. Supported operators are: " + supported + ".");
  }
  scope.isEmptyOp = parsed->name == "is-empty";
  Json args = KILN_TRY(processArgs(*spec, condition, scope));
  // In a loop values may have become strings: compare everything as strings.
  if (scope.item && spec->takes("force_strings")) args["force_strings"] = true;
  const bool result = KILN_TRY(evalOperator(parsed->name, args));
  return parsed->inverted ? !result : result;
}

/// One condition with its loop (check_with_loop).
Result<bool> checkLoopedCondition(const Json& condition, const Scope& scope) {
  auto loop = condition.is_object() ? condition.find("loop") : condition.end();
  if (loop == condition.end() || !pyTruthy(*loop) || (!loop->is_array() && !loop->is_object())) {
    return checkCondition(condition, scope);
  }
  std::string multiple = "any";
  if (auto m = condition.find("multiple"); m != condition.end() && m->is_string()) {
    multiple = m->get<std::string>();
  }
  Scope looped = scope;
  if (loop->is_object()) {
    looped.item = &*loop;
    return checkCondition(condition, looped);
  }
  std::vector<bool> results;
  for (const auto& item : *loop) {
    looped.item = &item;
    const bool result = KILN_TRY(checkCondition(condition, looped));
    if (multiple == "first" && result) return true;
    if (multiple == "last") results.clear();
    results.push_back(result);
  }
  if (multiple == "any") return std::any_of(results.begin(), results.end(), [](bool b) { return b; });
  if (multiple == "all") return std::all_of(results.begin(), results.end(), [](bool b) { return b; });
  return !results.empty() && results.front();
}

// ---- actions ---------------------------------------------------------------------------------

/// Ironic's normalize_path: "/a/b" and "a/b" split on '/', anything else on '.'.
std::vector<std::string> splitAttributePath(const std::string& path) {
  std::vector<std::string> parts;
  char sep = '.';
  std::string_view rest = path;
  if (path.find('/') != std::string::npos) {
    sep = '/';
    while (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
    while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  }
  for (const std::string_view part : split(rest, sep)) parts.emplace_back(part);
  return parts;
}

/// The plugin-data actions' paths are dotted (update_nested_dict): Python's path.split('.').
std::vector<std::string> splitDotted(const std::string& path) {
  const auto parts = split(path, '.');
  return {parts.begin(), parts.end()};
}

/// Walks dictionaries from `root` through parts[from, to), creating missing ones (setdefault).
/// Null when a step is not a dictionary; `why` says which.
Json* walkCreating(Json* root, const std::vector<std::string>& parts, size_t from, size_t to,
                   std::string& why) {
  Json* current = root;
  for (size_t i = from; i < to; ++i) {
    if (!current->is_object()) {
      why = "'" + (i > 0 ? parts[i - 1] : std::string("")) + "' is not a dictionary";
      return nullptr;
    }
    auto it = current->find(parts[i]);
    current = it == current->end() ? &((*current)[parts[i]] = Json::object()) : &*it;
  }
  if (!current->is_object()) {
    why = "'" + (to > 0 ? parts[to - 1] : std::string("")) + "' is not a dictionary";
    return nullptr;
  }
  return current;
}

/// What set/extend/del-attribute work on: the node or one port.
struct AttributeTarget {
  std::function<Json*(const std::string&)> field;  ///< a top-level field by name, or null
  std::string what;                                ///< " for port X" in messages, or ""
  bool* changed;
};

Result<void> setAttribute(AttributeTarget& target, const std::string& path, const Json& value) {
  const auto parts = splitAttributePath(path);
  auto failure = [&](const std::string& why) {
    return actionFailure("Failed to set attribute " + path + target.what + " with value " +
                         pyStr(value) + ": " + why);
  };
  Json* field = target.field(parts[0]);
  if (!field) return failure("there is no field '" + parts[0] + "' that rules may change");
  if (parts.size() == 1) {
    if (field->is_object() && !value.is_object()) {
      return failure("'" + parts[0] + "' must be a dictionary");
    }
    *field = value;
  } else {
    std::string why;
    Json* parent = walkCreating(field, parts, 1, parts.size() - 1, why);
    if (!parent) return failure(why.empty() ? "'" + parts[0] + "' is not a dictionary" : why);
    (*parent)[parts.back()] = value;
  }
  *target.changed = true;
  return {};
}

Result<void> extendAttribute(AttributeTarget& target, const std::string& path, const Json& value,
                             bool unique) {
  const auto parts = splitAttributePath(path);
  auto failure = [&](const std::string& why) {
    return actionFailure("Failed to extend attribute " + path + target.what + ": " + why);
  };
  Json* field = target.field(parts[0]);
  if (!field) return failure("there is no field '" + parts[0] + "' that rules may change");
  Json* list = field;
  if (parts.size() > 1) {
    std::string why;
    Json* parent = walkCreating(field, parts, 1, parts.size() - 1, why);
    if (!parent) return failure(why);
    auto it = parent->find(parts.back());
    list = it == parent->end() ? &((*parent)[parts.back()] = Json::array()) : &*it;
  }
  if (!list->is_array()) {
    return actionFailure("Cannot extend non-list attribute " + path + target.what +
                         " with value " + pyStr(value));
  }
  if (!unique || std::none_of(list->begin(), list->end(),
                              [&](const Json& e) { return pyEquals(e, value); })) {
    list->push_back(value);
  }
  *target.changed = true;
  return {};
}

Result<void> deleteAttribute(AttributeTarget& target, const std::string& path) {
  const auto parts = splitAttributePath(path);
  auto failure = [&](const std::string& why) {
    return actionFailure("Failed to delete attribute " +
                         std::string(target.what.empty() ? "at " : "") + path + target.what +
                         ": " + why);
  };
  Json* field = target.field(parts[0]);
  if (!field) return failure("there is no field '" + parts[0] + "' that rules may change");
  if (parts.size() == 1) {
    // A dictionary field empties; another field becomes null.
    *field = field->is_object() ? Json::object() : Json();
  } else {
    Json* current = field;
    for (size_t i = 1; i + 1 < parts.size(); ++i) {
      if (!current->is_object()) return failure("'" + parts[i - 1] + "' is not a dictionary");
      auto it = current->find(parts[i]);
      if (it == current->end()) return failure("'" + parts[i] + "'");
      current = &*it;
    }
    if (!current->is_object()) {
      return failure("'" + parts[parts.size() - 2] + "' is not a dictionary");
    }
    if (current->erase(parts.back()) == 0) return failure("'" + parts.back() + "'");
  }
  *target.changed = true;
  return {};
}

AttributeTarget nodeTarget(NodeView& node) {
  return {[&node](const std::string& name) { return nodeField(node, name); }, "", &node.changed};
}

Result<PortView*> findPort(NodeView& node, const std::string& portId) {
  const std::string wanted = asciiLower(portId);
  for (auto& port : node.ports) {
    if (port.uuid == portId || asciiLower(port.uuid) == wanted ||
        (!port.address.empty() && asciiLower(port.address) == wanted)) {
      return &port;
    }
  }
  return ironicError("Port " + portId + " could not be found.");
}

/// Carries what one action needs.
struct ActionContext {
  const Scope& scope;
  Json& pluginData;
  NodeView& node;
  RulesReport* report;
  const std::string& rule;

  void log(LogLevel level, std::string message) const {
    if (report) report->log.push_back({level, rule, std::move(message)});
  }
};

/// Ironic's update_nested_dict: sets the dotted path in the plugin data, creating dictionaries.
Result<Json*> setPluginPath(Json& pluginData, const std::string& path, Json value,
                            const char* verb) {
  const auto keys = splitDotted(path);
  std::string why;
  Json* parent = walkCreating(&pluginData, keys, 0, keys.size() - 1, why);
  if (!parent) {
    return actionFailure("Failed to " + std::string(verb) + " plugin data at " + path + ": " +
                         why);
  }
  Json& slot = (*parent)[keys.back()];
  slot = std::move(value);
  return &slot;
}

Result<void> runPluginDataAction(const std::string& op, const Json& args, ActionContext& ctx) {
  const std::string path = args["path"].get<std::string>();
  if (op == "set-plugin-data") {
    KILN_TRY(setPluginPath(ctx.pluginData, path, args["value"], "set"));
    return {};
  }
  if (op == "extend-plugin-data") {
    const auto keys = splitDotted(path);
    const Json* existing = &ctx.pluginData;
    for (const auto& key : keys) {
      if (!existing || !existing->is_object()) {
        existing = nullptr;
        break;
      }
      auto it = existing->find(key);
      existing = it == existing->end() ? nullptr : &*it;
    }
    Json current = existing && pyTruthy(*existing) ? *existing : Json::array();
    Json* list = KILN_TRY(setPluginPath(ctx.pluginData, path, std::move(current), "extend"));
    if (!list->is_array()) {
      return actionFailure("Failed to extend plugin data at " + path + ": '" +
                           pyTypeName(*list) + "' object has no attribute 'append'");
    }
    const Json& value = args["value"];
    const bool unique = pyTruthy(argOr(args, "unique", Json()));
    if (!unique || std::none_of(list->begin(), list->end(),
                                [&](const Json& e) { return pyEquals(e, value); })) {
      list->push_back(value);
    }
    return {};
  }
  // unset-plugin-data: the key goes, and so does its dictionary when that empties (as Ironic;
  // unlike Ironic, a top-level key goes too when it is the only one).
  const auto keys = splitDotted(path);
  Json* parent = nullptr;
  Json* current = &ctx.pluginData;
  for (size_t i = 0; i + 1 < keys.size(); ++i) {
    if (!current->is_object() || !current->contains(keys[i])) {
      ctx.log(LogLevel::Warning, "Path " + path + " not found");
      return {};
    }
    parent = current;
    current = &(*current)[keys[i]];
  }
  if (!current->is_object() || !current->contains(keys.back())) {
    ctx.log(LogLevel::Warning, "Path " + path + " not found");
    return {};
  }
  if (current->size() == 1 && parent) {
    parent->erase(keys[keys.size() - 2]);
  } else {
    current->erase(keys.back());
  }
  return {};
}

constexpr std::string_view kLogLevels[] = {"debug", "info", "warning", "error", "critical"};

/// One action, once (execute_action).
Result<void> runAction(const Json& action, ActionContext& ctx) {
  const std::string op = KILN_TRY(operationName(action));
  const RuleOpSpec* spec = findRuleAction(op);
  if (!spec) {
    std::string supported;
    for (const auto& s : ruleActions()) {
      supported += (supported.empty() ? "" : ", ") + std::string(s.name);
    }
    return pythonError("Unsupported action: '" + op + "'. Supported actions are: " + supported +
                       ".");
  }
  if (op == kApiCallAction) {
    return actionFailure(
        "the api-call action is not supported: Kiln's inspection rules make no outbound HTTP "
        "calls");
  }
  const Json args = KILN_TRY(processArgs(*spec, action, ctx.scope));
  static const Json kNull;
  const Json& value = argOr(args, "value", kNull);
  if (op == "fail") {
    return ironicError("Failed to inspect hardware. Reason: " + pyStr(args["msg"]));
  }
  if (op == "log") {
    const std::string level = asciiLower(pyStr(argOr(args, "level", Json("info"))));
    if (std::find(std::begin(kLogLevels), std::end(kLogLevels), level) == std::end(kLogLevels)) {
      return executionFailure("Invalid log level: " + level +
                              ". Choose from debug, info, warning, error, critical");
    }
    const LogLevel lvl = level == "debug"     ? LogLevel::Debug
                         : level == "info"    ? LogLevel::Info
                         : level == "warning" ? LogLevel::Warning
                                              : LogLevel::Error;
    ctx.log(lvl, pyStr(args["msg"]));
    return {};
  }
  if (op == "set-attribute" || op == "extend-attribute" || op == "del-attribute") {
    AttributeTarget target = nodeTarget(ctx.node);
    const std::string path = args["path"].get<std::string>();
    if (op == "set-attribute") return setAttribute(target, path, value);
    if (op == "extend-attribute") {
      return extendAttribute(target, path, value, pyTruthy(argOr(args, "unique", kNull)));
    }
    return deleteAttribute(target, path);
  }
  if (op == "set-port-attribute" || op == "extend-port-attribute" ||
      op == "del-port-attribute") {
    const std::string portId = args["port_id"].get<std::string>();
    PortView* port = KILN_TRY(findPort(ctx.node, portId));
    AttributeTarget target{[port](const std::string& name) -> Json* {
                             auto it = port->fields.find(name);
                             return it == port->fields.end() ? nullptr : &*it;
                           },
                           " for port " + portId, &port->changed};
    const std::string path = args["path"].get<std::string>();
    if (op == "set-port-attribute") return setAttribute(target, path, value);
    if (op == "extend-port-attribute") {
      return extendAttribute(target, path, value, pyTruthy(argOr(args, "unique", kNull)));
    }
    return deleteAttribute(target, path);
  }
  if (op == "set-capability" || op == "unset-capability") {
    const std::string name = args["name"].get<std::string>();
    Json& properties = ctx.node.properties;
    auto failure = [&](const std::string& why) {
      return actionFailure("Failed to " + std::string(op == "set-capability" ? "set" : "unset") +
                           " capability " + name + ": " + why);
    };
    if (!properties.is_object()) return failure("properties is not a dictionary");
    auto caps = properties.find("capabilities");
    if (op == "set-capability") {
      if (!value.is_string()) {
        return failure("the value must be a string, not " + pyTypeName(value));
      }
      std::string current;
      if (caps != properties.end() && pyTruthy(*caps)) {
        if (!caps->is_string()) return failure("capabilities is not a string");
        current = caps->get<std::string>();
      }
      properties["capabilities"] = addCapability(current, name, value.get<std::string>());
    } else {
      const Json current = caps == properties.end() ? Json("") : *caps;
      if (!current.is_string()) return failure("capabilities is not a string");
      properties["capabilities"] = unsetCapability(current.get<std::string>(), name);
    }
    ctx.node.changed = true;
    return {};
  }
  if (op == "add-trait") {
    const std::string name = args["name"].get<std::string>();
    if (auto valid = validateTrait(name); !valid) {
      return actionFailure("Failed to add new trait " + name + ": " + valid.error().message);
    }
    if (std::find(ctx.node.traits.begin(), ctx.node.traits.end(), name) == ctx.node.traits.end()) {
      ctx.node.traits.push_back(name);
      ctx.node.changed = true;
    }
    return {};
  }
  if (op == "remove-trait") {
    const std::string name = args["name"].get<std::string>();
    auto it = std::find(ctx.node.traits.begin(), ctx.node.traits.end(), name);
    if (it == ctx.node.traits.end()) {
      ctx.log(LogLevel::Warning, "Failed to remove trait " + name + ": the node " +
                                     ctx.node.uuid + " does not have it");
      return {};
    }
    ctx.node.traits.erase(it);
    ctx.node.changed = true;
    return {};
  }
  if (spec->pluginData) return runPluginDataAction(op, args, ctx);
  return pythonError("Unsupported action '" + op + "'.");
}

/// One action with its loop (execute_with_loop).
Result<void> runLoopedAction(const Json& action, ActionContext& ctx) {
  auto loop = action.is_object() ? action.find("loop") : action.end();
  if (loop == action.end() || !pyTruthy(*loop)) return runAction(action, ctx);
  // Ironic runs an action whose loop is neither a list nor a dictionary zero times.
  if (!loop->is_array() && !loop->is_object()) return {};
  Scope looped = ctx.scope;
  ActionContext inner{looped, ctx.pluginData, ctx.node, ctx.report, ctx.rule};
  if (loop->is_object()) {
    looped.item = &*loop;
    return runAction(action, inner);
  }
  for (const auto& item : *loop) {
    looped.item = &item;
    KILN_TRY_VOID(runAction(action, inner));
  }
  return {};
}

Result<Json> storedOperations(const Record& rule, size_t field) {
  const Value& stored = rule[field];
  if (stored.isNull() || stored.s.empty()) return Json::array();
  auto parsed = parseJson(stored.s, "the stored rule");
  if (!parsed) return malformedRule(parsed.error().message);
  if (!parsed->is_array()) return malformedRule("conditions and actions must be lists");
  return std::move(*parsed);
}

Result<void> applyRule(const Record& rule, const Json& inventory, Json& pluginData,
                       NodeView& node, const RulesOptions& options, RulesReport* report) {
  const std::string& uuid = rule.uuid();
  const Json conditions = KILN_TRY(storedOperations(rule, kIrConditions));
  const Json actions = KILN_TRY(storedOperations(rule, kIrActions));
  const bool mask = options.maskSecrets == MaskSecrets::Always ||
                    (options.maskSecrets == MaskSecrets::Sensitive && !rule.flag(kIrSensitive));
  Scope scope{inventory, pluginData, node, nullptr, mask, false};
  for (const auto& condition : conditions) {
    if (!KILN_TRY(checkLoopedCondition(condition, scope))) return {};
  }
  if (report) report->applied.push_back(uuid);
  ActionContext ctx{scope, pluginData, node, report, uuid};
  for (const auto& action : actions) KILN_TRY_VOID(runLoopedAction(action, ctx));
  return {};
}

}  // namespace

Result<void> applyInspectionRules(std::span<const Record> rules, const Json& inventory,
                                  Json& pluginData, NodeView& node, const RulesOptions& options,
                                  RulesReport* report) {
  if (pluginData.is_null()) pluginData = Json::object();
  std::vector<const Record*> order;
  order.reserve(rules.size());
  for (const auto& rule : rules) order.push_back(&rule);
  std::stable_sort(order.begin(), order.end(), [](const Record* a, const Record* b) {
    return (*a)[kIrPriority].i > (*b)[kIrPriority].i;
  });
  for (const Record* rule : order) {
    auto applied = applyRule(*rule, inventory, pluginData, node, options, report);
    if (applied) continue;
    Error error = applied.error();
    if (error.code == ErrorCode::Internal) {
      error.message = "Failed to apply rule " + rule->uuid() + " to node " + node.uuid + ": " +
                      error.message;
    }
    error.code = ErrorCode::InvalidArgument;
    return std::unexpected(std::move(error));
  }
  return {};
}

}  // namespace kiln::server
