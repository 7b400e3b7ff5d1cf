#include "shared/disk/device_hints.h"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "shared/core/strings.h"

namespace kiln {
namespace {

constexpr std::string_view kNames[] = {"by_path", "model", "name",   "rotational",
                                       "serial",  "size",  "vendor", "wwn"};

/// Operators of text hints, longest first so that "s>=" wins over "s>".
constexpr std::string_view kTextOps[] = {"s==", "s!=", "s>=", "s<=", "<in>", "<or>", "s>", "s<"};
constexpr std::string_view kSizeOps[] = {">=", "<=", "!=", "==", ">", "<"};

/// Hints are trimmed of spaces and tabs only (Ironic's strip() would take more).
constexpr std::string_view kHintSpace = " \t";

/// How a hint's value is shown in messages: strings bare, the rest as JSON.
std::string shown(const Json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

std::string prefix(std::string_view label, const std::string& name) {
  return std::string(label) + " \"" + name + "\"";
}

/// An unknown operator: "<all-in> x", "s=~ x", "<foo> x" look like operators, not values.
bool looksLikeOperator(const std::string& text) {
  if (text.starts_with("<")) {
    const auto close = text.find('>');
    return close != std::string::npos && close > 1 &&
           std::all_of(text.begin() + 1, text.begin() + static_cast<long>(close), [](char c) {
             return std::isalpha(static_cast<unsigned char>(c)) || c == '-';
           });
  }
  return text.size() > 1 && text[0] == 's' &&
         (text[1] == '=' || text[1] == '<' || text[1] == '>' || text[1] == '!');
}

Result<DeviceHint> parseSize(std::string_view label, const Json& value) {
  DeviceHint hint;
  hint.name = "size";
  hint.kind = DeviceHint::Kind::Size;
  hint.op = "==";
  std::string number;
  if (value.is_number_integer()) {
    number = std::to_string(value.get<int64_t>());
  } else if (value.is_string()) {
    std::string text = trim(value.get<std::string>(), kHintSpace);
    for (std::string_view op : kSizeOps) {
      if (text.starts_with(op)) {
        hint.op = std::string(op);
        text = trim(std::string_view(text).substr(op.size()), kHintSpace);
        break;
      }
    }
    number = text;
  } else {
    return invalid(prefix(label, "size") +
                   " is not an integer value. Current value: " + shown(value));
  }
  const auto gib = parseInt<decltype(hint.gib)>(number);
  if (!gib) {
    return invalid(prefix(label, "size") +
                   " is not an integer value. Current value: " + shown(value));
  }
  hint.gib = *gib;
  if (hint.gib <= 0) {
    return invalid(prefix(label, "size") +
                   " should be a positive integer. Current value: " + shown(value));
  }
  return hint;
}

Result<DeviceHint> parseBoolean(std::string_view label, const std::string& name,
                                const Json& value) {
  DeviceHint hint;
  hint.name = name;
  hint.kind = DeviceHint::Kind::Boolean;
  bool known = false;
  if (value.is_boolean()) {
    hint.boolean = value.get<bool>();
    known = true;
  } else if (value.is_number_integer() &&
             (value.get<int64_t>() == 0 || value.get<int64_t>() == 1)) {
    hint.boolean = value.get<int64_t>() == 1;
    known = true;
  } else if (value.is_string()) {
    const std::string text = asciiLower(trim(value.get<std::string>(), kHintSpace));
    for (std::string_view t : {"true", "1", "yes", "on", "y", "t"}) {
      if (text == t) hint.boolean = known = true;
    }
    for (std::string_view f : {"false", "0", "no", "off", "n", "f"}) {
      if (text == f) known = true;
    }
  }
  if (!known) {
    return invalid(prefix(label, name) + " is not a Boolean value. Current value: " + shown(value));
  }
  return hint;
}

Result<DeviceHint> parseText(std::string_view label, const std::string& name, const Json& value) {
  if (!value.is_string()) {
    return invalid(prefix(label, name) +
                   " is not a string value. Hint expression: " + value.dump());
  }
  DeviceHint hint;
  hint.name = name;
  hint.kind = DeviceHint::Kind::Text;
  hint.op = "s==";
  std::string text = trim(value.get<std::string>(), kHintSpace);
  bool matched = false;
  for (std::string_view op : kTextOps) {
    if (text.starts_with(op)) {
      hint.op = std::string(op);
      text = trim(std::string_view(text).substr(op.size()), kHintSpace);
      matched = true;
      break;
    }
  }
  if (!matched && looksLikeOperator(text)) {
    return invalid(prefix(label, name) +
                   " uses an unsupported operator. Hint expression: " + value.get<std::string>() +
                   " (supported: s==, s!=, s>=, s<=, s>, s<, <in>, <or>)");
  }
  if (hint.op == "<or>") {
    std::string_view rest = text;
    while (true) {
      const auto next = rest.find("<or>");
      hint.values.push_back(trim(rest.substr(0, next), kHintSpace));
      if (next == std::string_view::npos) break;
      rest = rest.substr(next + 4);
    }
  } else {
    hint.values.push_back(text);
  }
  for (std::string& v : hint.values) {
    if (v.empty()) {
      return invalid(prefix(label, name) +
                     " has an operator but no value. Hint expression: " + value.get<std::string>());
    }
    if (name == "wwn" || name == "model" || name == "vendor") v = asciiLower(v);
    if (name == "name" && !v.starts_with("/")) v = "/dev/" + v;
  }
  return hint;
}

}  // namespace

std::span<const std::string_view> deviceHintNames() { return kNames; }

bool DeviceHint::matchesText(std::string_view device) const {
  std::string have = trim(device, kHintSpace);
  if (name == "wwn" || name == "model" || name == "vendor") have = asciiLower(have);
  const std::string& want = values.front();
  if (op == "s!=") return have != want;
  if (op == "s>=") return have >= want;
  if (op == "s<=") return have <= want;
  if (op == "s>") return have > want;
  if (op == "s<") return have < want;
  if (op == "<in>") return have.find(want) != std::string::npos;
  if (op == "<or>") return std::find(values.begin(), values.end(), have) != values.end();
  return have == want;
}

bool DeviceHint::matchesSize(uint64_t bytes) const {
  const auto have = static_cast<int64_t>(bytes >> 30);
  if (op == "!=") return have != gib;
  if (op == ">=") return have >= gib;
  if (op == "<=") return have <= gib;
  if (op == ">") return have > gib;
  if (op == "<") return have < gib;
  return have == gib;
}

Result<DeviceHints> parseDeviceHints(const Json& hints, std::string_view label) {
  DeviceHints out;
  if (hints.is_null()) return out;
  if (!hints.is_object()) {
    return invalid(std::string(label) + "s must be an object, got " + hints.dump());
  }
  std::string unknown;
  for (auto it = hints.begin(); it != hints.end(); ++it) {
    if (std::find(std::begin(kNames), std::end(kNames), it.key()) == std::end(kNames)) {
      unknown += (unknown.empty() ? "" : ", ") + it.key();
    }
  }
  if (!unknown.empty()) {
    std::string valid;
    for (std::string_view n : kNames) valid += (valid.empty() ? "" : ", ") + std::string(n);
    return invalid("The hints \"" + unknown + "\" are invalid. Valid hints are: \"" + valid + "\"");
  }
  for (auto it = hints.begin(); it != hints.end(); ++it) {
    const std::string& name = it.key();
    if (name == "size") {
      out.hints.push_back(KILN_TRY(parseSize(label, it.value())));
    } else if (name == "rotational") {
      out.hints.push_back(KILN_TRY(parseBoolean(label, name, it.value())));
    } else {
      out.hints.push_back(KILN_TRY(parseText(label, name, it.value())));
    }
  }
  return out;
}

}  // namespace kiln
