#include "shared/json/json_util.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace kiln {

namespace {

/// The deepest nesting of arrays and objects in `text` (strings skipped), counted up to
/// `limit + 1`: a cheap pass that keeps hostile input away from the recursive parts of the
/// JSON library (serialisation, comparison, destruction).
int nestingDepth(std::string_view text, int limit) {
  int depth = 0;
  int deepest = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (inString) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        inString = false;
      }
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

/// Kiln's words for what the JSON library found wrong (its own messages quote the input).
std::string describeParseError(const std::string& what) {
  if (what.find("UTF-8") != std::string::npos) return "text that is not valid UTF-8";
  if (what.find("control character") != std::string::npos) {
    return "an unescaped control character in a string";
  }
  if (what.find("unexpected end of input") != std::string::npos) return "an unexpected end";
  if (what.find("number overflow") != std::string::npos) return "a number out of range";
  if (what.find("surrogate") != std::string::npos || what.find("\\u") != std::string::npos) {
    return "an invalid \\u escape";
  }
  return "a syntax error";
}

}  // namespace

Result<Json> parseJson(std::string_view text, std::string_view source) {
  const std::string prefix = "Invalid JSON in " + std::string(source) + ": ";
  if (nestingDepth(text, kMaxJsonDepth) > kMaxJsonDepth) {
    return invalid(prefix + "arrays and objects are nested deeper than " +
                   std::to_string(kMaxJsonDepth) + " levels");
  }
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    return invalid(prefix + describeParseError(e.what()) + " at byte " +
                   std::to_string(e.byte));
  } catch (const std::exception& e) {
    return invalid(prefix + describeParseError(e.what()));
  }
}

std::string dumpJson(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

namespace {

void reprString(std::string& out, const std::string& s) {
  const bool useDouble = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char q = useDouble ? '"' : '\'';
  out.push_back(q);
  for (char c : s) {
    if (c == q || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out.push_back(c);
    }
  }
  out.push_back(q);
}

void reprTo(std::string& out, const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: out += "None"; break;
    case Json::value_t::boolean: out += v.get<bool>() ? "True" : "False"; break;
    case Json::value_t::string: reprString(out, v.get_ref<const std::string&>()); break;
    case Json::value_t::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& x : v) {
        if (!first) out += ", ";
        first = false;
        reprTo(out, x);
      }
      out.push_back(']');
      break;
    }
    case Json::value_t::object: {
      out.push_back('{');
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) out += ", ";
        first = false;
        reprString(out, it.key());
        out += ": ";
        reprTo(out, it.value());
      }
      out.push_back('}');
      break;
    }
    default: out += v.dump(); break;
  }
}

}  // namespace

std::string pyTypeName(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "NoneType";
    case Json::value_t::boolean: return "bool";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "int";
    case Json::value_t::number_float: return "float";
    case Json::value_t::string: return "str";
    case Json::value_t::array: return "list";
    case Json::value_t::object: return "dict";
    default: return "object";
  }
}

std::string pyRepr(const Json& value) {
  std::string out;
  reprTo(out, value);
  return out;
}

std::string jsonTypeName(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "integer";
    case Json::value_t::number_float: return "number";
    case Json::value_t::string: return "string";
    case Json::value_t::array: return "array";
    case Json::value_t::object: return "object";
    default: return "value";
  }
}

}  // namespace kiln
