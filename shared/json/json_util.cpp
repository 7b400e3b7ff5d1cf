#include "shared/json/json_util.h"

#include <nlohmann/json.hpp>

namespace kiln {

Result<Json> parseJson(std::string_view text) {
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    return invalid(std::string("Invalid JSON in request body: ") + e.what());
  } catch (const std::exception& e) {
    return invalid(std::string("Invalid JSON in request body: ") + e.what());
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
