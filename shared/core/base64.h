// File: shared/core/base64.h
//
// Base64 (RFC 4648) over OpenSSL's EVP_EncodeBlock / EVP_DecodeBlock: the one implementation
// used by the server (HTTP Basic credentials, agent tokens, CA certificates) and the agent
// (config drives, kernel command line certificates).
#pragma once

#include <string>
#include <string_view>

#include "shared/core/error.h"

namespace kiln {

/// Standard alphabet ("+/"), padded with '='.
std::string base64Encode(std::string_view bytes);

/// URL-safe alphabet ("-_"), without padding (RFC 4648 section 5, as JWTs and tokens use it).
std::string base64UrlEncode(std::string_view bytes);

enum class Base64Mode {
  /// Standard alphabet, padded, nothing else (no whitespace).
  Strict,
  /// Whitespace ignored; '-' and '_' accepted for '+' and '/'; padding required (what Ironic's
  /// config drives and PEM-ish text need).
  Lenient,
  /// URL-safe alphabet, padding optional.
  UrlSafe,
};

/// Decodes base64 text. InvalidArgument "Invalid base64 text: <why>" for characters outside
/// the alphabet, misplaced or missing padding, or a length that is not a whole number of
/// groups. Empty text decodes to empty bytes.
Result<std::string> base64Decode(std::string_view text, Base64Mode mode = Base64Mode::Strict);

}  // namespace kiln
