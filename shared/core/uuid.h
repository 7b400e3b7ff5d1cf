// File: shared/core/uuid.h
//
// Random (version 4) UUIDs and the UUID-shape test Ironic applies to identifiers.
#pragma once

#include <string>
#include <string_view>

namespace kiln {

/// A new random RFC 4122 version-4 UUID in lowercase canonical form. Thread-safe.
std::string generateUuid();

/// True if `text` is a UUID in canonical 8-4-4-4-12 hex form (any case), the test Ironic uses
/// to decide whether an identifier is a UUID or a name.
bool isUuidLike(std::string_view text);

/// Lowercases a UUID-like string; other text is returned unchanged.
std::string normalizeUuid(std::string_view text);

}  // namespace kiln
