#include "server/schema/record.h"

#include <nlohmann/json.hpp>

#include "shared/core/secrets.h"
#include "shared/core/strings.h"
#include "shared/json/json_util.h"

namespace kiln::server {

int Schema::indexOf(std::string_view name) const {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].name == name) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

Json valueToJson(const Value& value, FieldType type) {
  switch (value.kind) {
    case Value::Kind::Null: return nullptr;
    case Value::Kind::Bool: return value.b;
    case Value::Kind::Int: return value.i;
    case Value::Kind::Text:
      if (type == FieldType::Object || type == FieldType::Array) {
        auto parsed = parseJson(value.s);
        if (parsed) {
          return std::move(*parsed);
        }
        return type == FieldType::Object ? Json::object() : Json::array();
      }
      return value.s;
  }
  return nullptr;
}

Result<Value> valueFromJson(const Json& json, const FieldSpec& field) {
  const std::string name(field.name);
  if (json.is_null()) {
    if (field.has(kNullable)) {
      return Value::null();
    }
    switch (field.type) {
      case FieldType::Object: return Value::text("{}");
      case FieldType::Array: return Value::text("[]");
      default: return invalid("Invalid input for field/attribute " + name +
                              ". Value: None. None is not a valid value.");
    }
  }
  auto typeError = [&](std::string_view expected) {
    return invalid("Invalid input for field/attribute " + name + ". Value: " + maskedDump(json) +
                   ". Expected a " + std::string(expected) + ", got " + jsonTypeName(json) + ".");
  };
  switch (field.type) {
    case FieldType::String:
    case FieldType::Time: {
      if (!json.is_string()) {
        return typeError("string");
      }
      const auto& s = json.get_ref<const std::string&>();
      if (field.max_length > 0 && static_cast<int>(s.size()) > field.max_length) {
        return invalid("Invalid input for field/attribute " + name + ". Value: '" +
                       maskUrlsInText(s) +
                       "'. Value should have a maximum character requirement of " +
                       std::to_string(field.max_length));
      }
      return Value::text(s);
    }
    case FieldType::Bool:
      if (json.is_boolean()) {
        return Value::boolean(json.get<bool>());
      }
      if (json.is_string()) {
        const std::string lower = asciiLower(json.get_ref<const std::string&>());
        if (lower == "true" || lower == "1" || lower == "yes" || lower == "on" || lower == "y" ||
            lower == "t") {
          return Value::boolean(true);
        }
        if (lower == "false" || lower == "0" || lower == "no" || lower == "off" || lower == "n" ||
            lower == "f") {
          return Value::boolean(false);
        }
      }
      return typeError("boolean");
    case FieldType::Int:
      if (json.is_number_integer()) {
        return Value::integer(json.get<int64_t>());
      }
      return typeError("integer");
    case FieldType::Object:
      if (!json.is_object()) {
        return typeError("object");
      }
      return Value::text(dumpJson(json));
    case FieldType::Array:
      if (!json.is_array()) {
        return typeError("array");
      }
      return Value::text(dumpJson(json));
  }
  return typeError("value");
}

Error nullRefusedError(const FieldSpec& field) {
  return Error{ErrorCode::InvalidArgument,
               "Field `" + std::string(field.name) + "' cannot be None"};
}

Record defaultRecord(const Schema& schema) {
  Record r(schema.size());
  for (size_t i = 0; i < schema.size(); ++i) {
    const auto& f = schema[i];
    if (f.has(kNullable) || f.has(kComputed)) {
      continue;
    }
    switch (f.type) {
      case FieldType::Object: r[i] = Value::text("{}"); break;
      case FieldType::Array: r[i] = Value::text("[]"); break;
      case FieldType::Bool: r[i] = Value::boolean(false); break;
      default: break;
    }
  }
  return r;
}

FieldMask visibleFields(const Schema& schema, int minor) {
  FieldMask mask;
  for (size_t i = 0; i < schema.size(); ++i) {
    const auto& f = schema[i];
    if (!f.has(kInternal) && (f.since <= minor || f.has(kShownBeforeSince))) {
      mask.set(i);
    }
  }
  return mask;
}

Result<FieldMask> selectFields(const Schema& schema, int minor,
                               const std::vector<std::string>& names) {
  FieldMask mask;
  std::string unknown;
  bool tooNew = false;
  std::string tooNewNames;
  for (const auto& n : names) {
    const int idx = schema.indexOf(n);
    if (idx < 0 || schema[idx].has(kInternal) || schema[idx].has(kNoSelect)) {
      unknown += unknown.empty() ? n : ", " + n;
      continue;
    }
    if (schema[idx].since > minor) {
      if (schema[idx].has(kWritableBeforeSince)) continue;  // left out, as Ironic
      tooNew = true;
      tooNewNames += tooNewNames.empty() ? n : ", " + n;
      continue;
    }
    mask.set(static_cast<size_t>(idx));
  }
  if (!unknown.empty()) {
    return invalid("Field(s) \"" + unknown + "\" are not valid");
  }
  if (tooNew) {
    return fail(ErrorCode::NotAcceptable,
                "Field(s) \"" + tooNewNames + "\" are not available at the requested API version");
  }
  return mask;
}

}  // namespace kiln::server
