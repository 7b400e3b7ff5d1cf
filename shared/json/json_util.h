// File: shared/json/json_util.h
//
// Non-throwing JSON parsing and small helpers (house-style rule 12: nlohmann exceptions stop
// here).
#pragma once

#include <string>
#include <string_view>

#include "shared/core/error.h"
#include "shared/json/json_fwd.h"

namespace kiln {

/// Parses `text` as JSON. Malformed input gives InvalidArgument with a message naming the
/// position, never an exception.
Result<Json> parseJson(std::string_view text);

/// The compact serialisation Kiln stores and splices into responses (no spaces, UTF-8 kept).
std::string dumpJson(const Json& value);

/// The JSON type name of a value as users know it: "string", "integer", "object", ...
std::string jsonTypeName(const Json& value);

/// Python's repr() of a JSON value ({'a': 1, 'b': True, 'c': None}). Ironic's messages quote
/// values this way, and clients match on them.
std::string pyRepr(const Json& value);

}  // namespace kiln
