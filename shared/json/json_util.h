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

/// The deepest nesting of arrays and objects parseJson accepts.
inline constexpr int kMaxJsonDepth = 64;

/// Parses `text` as JSON. Malformed input, and input nested deeper than kMaxJsonDepth, gives
/// InvalidArgument with a message in Kiln's words naming the byte, never an exception:
/// "Invalid JSON in <source>: an unexpected end at byte 22".
Result<Json> parseJson(std::string_view text, std::string_view source = "request body");

/// The compact serialisation Kiln stores and splices into responses (no spaces, UTF-8 kept).
std::string dumpJson(const Json& value);

/// The JSON type name of a value as users know it: "string", "integer", "object", ...
std::string jsonTypeName(const Json& value);

/// Python's repr() of a JSON value ({'a': 1, 'b': True, 'c': None}). Ironic's messages quote
/// values this way, and clients match on them.
std::string pyRepr(const Json& value);

/// Python's type name of a JSON value ("NoneType", "bool", "int", "float", "str", "list",
/// "dict"), as Ironic's and jsonschema's messages say it.
std::string pyTypeName(const Json& value);

}  // namespace kiln
