#include "agent/disk/root_device_hints.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln::agent {
namespace {

using Matcher = std::function<bool(const BlockDevice&)>;

std::string trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return std::string(text.substr(first, text.find_last_not_of(" \t") - first + 1));
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

Result<Matcher> sizeMatcher(const nlohmann::json& value) {
  std::string op = "==";
  std::string number;
  if (value.is_number_integer()) {
    number = std::to_string(value.get<int64_t>());
  } else if (value.is_string()) {
    std::string text = trim(value.get<std::string>());
    for (std::string_view candidate : {">=", "<=", "!=", "==", ">", "<"}) {
      if (text.starts_with(candidate)) {
        op = std::string(candidate);
        text = trim(std::string_view(text).substr(candidate.size()));
        break;
      }
    }
    number = text;
  } else {
    return invalid("Root device hint 'size' must be an integer or a string, got " + value.dump());
  }
  int64_t gib = 0;
  auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), gib);
  if (ec != std::errc() || ptr != number.data() + number.size() || gib < 0) {
    return invalid("Root device hint 'size' is not a size in GiB: " + value.dump());
  }
  return Matcher([op, gib](const BlockDevice& d) {
    const auto have = static_cast<int64_t>(d.size >> 30);
    if (op == "==") return have == gib;
    if (op == "!=") return have != gib;
    if (op == ">=") return have >= gib;
    if (op == "<=") return have <= gib;
    if (op == ">") return have > gib;
    return have < gib;
  });
}

Result<Matcher> rotationalMatcher(const nlohmann::json& value) {
  std::optional<bool> wanted;
  if (value.is_boolean()) wanted = value.get<bool>();
  if (value.is_number_integer()) wanted = value.get<int64_t>() != 0;
  if (value.is_string()) {
    const std::string text = lower(trim(value.get<std::string>()));
    if (text == "true" || text == "1" || text == "yes" || text == "on") wanted = true;
    if (text == "false" || text == "0" || text == "no" || text == "off") wanted = false;
  }
  if (!wanted) return invalid("Root device hint 'rotational' is not a boolean: " + value.dump());
  return Matcher([w = *wanted](const BlockDevice& d) { return d.rotational == w; });
}

Result<Matcher> stringMatcher(const std::string& key, const nlohmann::json& value,
                              std::string BlockDevice::*field, bool caseless) {
  if (!value.is_string()) {
    return invalid("Root device hint '" + key + "' must be a string, got " + value.dump());
  }
  std::string text = trim(value.get<std::string>());
  std::string op = "s==";
  for (std::string_view candidate : {"s==", "s!=", "<in>"}) {
    if (text.starts_with(candidate)) {
      op = std::string(candidate);
      text = trim(std::string_view(text).substr(candidate.size()));
      break;
    }
  }
  if (caseless) text = lower(text);
  const bool isName = key == "name";
  return Matcher([=](const BlockDevice& d) {
    std::string have = trim(d.*field);
    if (caseless) have = lower(have);
    std::string want = text;
    if (isName && !want.starts_with("/")) want = "/dev/" + want;
    if (op == "s!=") return have != want;
    if (op == "<in>") return have.find(want) != std::string::npos;
    return have == want;
  });
}

Result<Matcher> hintMatcher(const std::string& key, const nlohmann::json& value) {
  if (key == "size") return sizeMatcher(value);
  if (key == "rotational") return rotationalMatcher(value);
  if (key == "name") return stringMatcher(key, value, &BlockDevice::name, false);
  if (key == "serial") return stringMatcher(key, value, &BlockDevice::serial, false);
  if (key == "by_path") return stringMatcher(key, value, &BlockDevice::byPath, false);
  if (key == "wwn") return stringMatcher(key, value, &BlockDevice::wwn, true);
  if (key == "model") return stringMatcher(key, value, &BlockDevice::model, true);
  if (key == "vendor") return stringMatcher(key, value, &BlockDevice::vendor, true);
  return invalid("Unsupported root device hint '" + key +
                 "' (supported: name, size, serial, wwn, model, vendor, by_path, rotational)");
}

std::string describe(std::span<const BlockDevice* const> devices) {
  std::string out;
  for (const BlockDevice* d : devices) {
    if (!out.empty()) out += ", ";
    out += d->name + " (" + std::to_string(d->size >> 30) + " GiB";
    if (!d->serial.empty()) out += ", serial " + d->serial;
    out += ")";
  }
  return out;
}

Result<BlockDevice> chooseWithoutHints(std::span<const BlockDevice> devices) {
  if (devices.size() == 1) return devices.front();
  const BlockDevice* best = nullptr;
  for (const BlockDevice& d : devices) {
    if (d.size >= kMinRootDeviceBytes && (!best || d.size < best->size)) best = &d;
  }
  if (!best) return notFound("No suitable root device: no disk of at least 4 GiB was found");
  return *best;
}

}  // namespace

Result<BlockDevice> chooseRootDevice(std::span<const BlockDevice> devices,
                                     const nlohmann::json& hints) {
  if (hints.is_null() || (hints.is_object() && hints.empty())) {
    return chooseWithoutHints(devices);
  }
  if (!hints.is_object()) return invalid("Root device hints must be an object: " + hints.dump());
  std::vector<Matcher> matchers;
  for (auto it = hints.begin(); it != hints.end(); ++it) {
    matchers.push_back(KILN_TRY(hintMatcher(it.key(), it.value())));
  }
  std::vector<const BlockDevice*> matches;
  for (const BlockDevice& d : devices) {
    if (std::all_of(matchers.begin(), matchers.end(), [&](const Matcher& m) { return m(d); })) {
      matches.push_back(&d);
    }
  }
  if (matches.empty()) {
    return notFound("No device matches the root device hints " + hints.dump());
  }
  if (matches.size() > 1) {
    return fail(ErrorCode::Conflict, "Root device hints " + hints.dump() +
                                         " are ambiguous: they match " + describe(matches));
  }
  return *matches.front();
}

}  // namespace kiln::agent
