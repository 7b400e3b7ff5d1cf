#include "server/model/capabilities.h"

#include "shared/core/strings.h"

namespace kiln::server {
namespace {

/// `item` as get_node_capability reads it: exactly one ':' with something on both sides,
/// then key and value trimmed. nullopt for anything else.
std::optional<Capability> wellFormed(std::string_view item) {
  const size_t colon = item.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == item.size() ||
      item.find(':', colon + 1) != std::string_view::npos) {
    return std::nullopt;
  }
  return Capability{trim(item.substr(0, colon)), trim(item.substr(colon + 1))};
}

bool isItemOf(std::string_view item, std::string_view key) {
  return item.size() > key.size() && item.starts_with(key) && item[key.size()] == ':';
}

void append(std::string& out, std::string_view item) {
  if (!out.empty()) out += ',';
  out += item;
}

}  // namespace

std::vector<Capability> parseCapabilities(std::string_view capabilities) {
  std::vector<Capability> out;
  for (const std::string_view item : split(capabilities, ',')) {
    if (auto capability = wellFormed(item)) out.push_back(std::move(*capability));
  }
  return out;
}

std::string renderCapabilities(const std::vector<Capability>& items) {
  std::string out;
  for (const auto& item : items) append(out, item.key + ":" + item.value);
  return out;
}

std::optional<std::string> getCapability(std::string_view capabilities, std::string_view key) {
  for (const std::string_view item : split(capabilities, ',')) {
    if (auto capability = wellFormed(item); capability && capability->key == key) {
      return std::move(capability->value);
    }
  }
  return std::nullopt;
}

std::string addCapability(std::string_view capabilities, std::string_view key,
                          std::string_view value) {
  std::string out(capabilities);
  append(out, std::string(key) + ":" + std::string(value));
  return out;
}

std::string setCapability(std::string_view capabilities, std::string_view key,
                          std::string_view value) {
  std::string out;
  for (const std::string_view item : split(capabilities, ',')) {
    if (!item.empty() && !isItemOf(item, key)) append(out, item);
  }
  append(out, std::string(key) + ":" + std::string(value));
  return out;
}

std::string unsetCapability(std::string_view capabilities, std::string_view key) {
  std::string out;
  bool first = true;
  for (const std::string_view item : split(capabilities, ',')) {
    if (isItemOf(item, key)) continue;
    if (!first) out += ',';
    out += item;
    first = false;
  }
  return out;
}

}  // namespace kiln::server
