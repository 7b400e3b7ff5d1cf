// File: server/model/trait.h
//
// Trait validation (node traits spec): a trait is an exact os-traits standard name or matches
// CUSTOM_[A-Z0-9_]+, and is 1-255 characters long. A node has at most kMaxTraitsPerNode.
// Deploy template names follow the same rule.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "shared/core/error.h"

namespace kiln::server {

inline constexpr size_t kMaxTraitsPerNode = 50;
inline constexpr size_t kMaxTraitLength = 255;

/// True if `trait` is in the compiled-in os-traits standard list.
bool isStandardTrait(std::string_view trait);

/// Checks one trait. `errorPrefix` starts the message ("Invalid trait"), as in Ironic.
Result<void> validateTrait(std::string_view trait, std::string_view errorPrefix = "Invalid trait");

/// Validates every trait and returns them sorted with duplicates collapsed. Fails with
/// InvalidArgument when more than kMaxTraitsPerNode distinct traits remain.
Result<std::vector<std::string>> normalizeTraits(const std::vector<std::string>& traits,
                                                 std::string_view nodeUuid);

/// Ironic's message for exceeding kMaxTraitsPerNode.
std::string tooManyTraitsMessage(std::string_view nodeUuid, size_t count);

}  // namespace kiln::server
