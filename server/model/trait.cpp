#include "server/model/trait.h"

#include <algorithm>
#include <array>

namespace kiln::server {
namespace {

constexpr std::string_view kStandardTraits[] = {
#include "server/model/standard_traits.inc"
};

bool isCustomTrait(std::string_view trait) {
  constexpr std::string_view kPrefix = "CUSTOM_";
  if (trait.size() <= kPrefix.size() || trait.substr(0, kPrefix.size()) != kPrefix) {
    return false;
  }
  for (char c : trait.substr(kPrefix.size())) {
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string tooManyTraitsMessage(std::string_view nodeUuid, size_t count) {
  return "Could not modify traits for node " + std::string(nodeUuid) +
         " as it would exceed the maximum number of traits per node (" + std::to_string(count) +
         " vs. " + std::to_string(kMaxTraitsPerNode) + ")";
}

bool isStandardTrait(std::string_view trait) {
  // The generated list is sorted (scripts/generate-standard-traits.sh sorts it).
  return std::binary_search(std::begin(kStandardTraits), std::end(kStandardTraits), trait);
}

Result<void> validateTrait(std::string_view trait, std::string_view errorPrefix) {
  if (!trait.empty() && trait.size() <= kMaxTraitLength &&
      (isStandardTrait(trait) || isCustomTrait(trait))) {
    return {};
  }
  return invalid(std::string(errorPrefix) +
                 ". A valid trait must be no longer than 255 characters. Standard traits are "
                 "defined in the os_traits library. A custom trait must start with the prefix "
                 "CUSTOM_ and use the following characters: A-Z, 0-9 and _");
}

Result<std::vector<std::string>> normalizeTraits(const std::vector<std::string>& traits,
                                                 std::string_view nodeUuid) {
  for (const auto& t : traits) {
    KILN_TRY_VOID(validateTrait(t));
  }
  std::vector<std::string> out = traits;
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (out.size() > kMaxTraitsPerNode) {
    return invalid(tooManyTraitsMessage(nodeUuid, out.size()));
  }
  return out;
}

}  // namespace kiln::server
