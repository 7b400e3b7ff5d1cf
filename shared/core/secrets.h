// File: shared/core/secrets.h
//
// The one place where Kiln decides what is a secret and how it is shown (docs/security.md).
// Secrets stay stored as given (the conductor and the agent need them); these functions make
// the copies that API answers, error messages and log lines show.
//
// The rules:
//  1. A key is password-like when it contains, case-insensitively, one of oslo.utils'
//     _SANITIZE_KEYS fragments (Ironic's list) or one of Kiln's additions ("image_url",
//     "encryption_key"). Every non-null value under such a key is shown as "******", whatever
//     its type; other objects and arrays are searched, however deep.
//  2. A URL is masked by showing only "scheme://host[:port]", followed by "/******" when
//     anything else was there (user:password@, path, query, fragment). Kiln masks this way
//     every image URL it quotes in a message, and every URL carrying user:password@ wherever it
//     appears (string values of shown documents, error messages, log lines).
#pragma once

#include <string>
#include <string_view>

#include "shared/json/json_fwd.h"

namespace kiln {

/// What a masked value is shown as.
inline constexpr std::string_view kMaskedValue = "******";

/// True when `key` is password-like (rule 1).
bool isSecretKey(std::string_view key);

/// Cheap pre-check on serialised text: false when no password-like key fragment and no URL
/// with userinfo can be in it, so the text can be shown without parsing.
bool mayContainSecret(std::string_view text);

/// Replaces every occurrence of `secret` in `text` by kMaskedValue (nothing when `secret` is
/// empty): a known secret (a BMC password, a token) quoted by a tool, a BMC or an agent.
void maskSecretIn(std::string& text, std::string_view secret);

/// Rule 2 for one URL. Text that is not an absolute URL ("scheme://...") gives "******".
std::string maskUrl(std::string_view url);

/// Which URLs inside free text maskUrlsInText masks.
enum class UrlScope {
  WithCredentials,  ///< those carrying user:password@ (log lines, any message)
  All,              ///< every URL (text that may quote an image URL, such as agent errors)
};

/// `text` with maskUrl applied to the URLs of `scope` in it. A URL runs from its scheme to the
/// next space, quote, backslash, '<' or '>'.
std::string maskUrlsInText(std::string_view text, UrlScope scope = UrlScope::WithCredentials);

/// Masks `value` in place by rule 1, and the URLs with userinfo in its string values by rule 2.
/// Iterative: hostile nesting cannot overflow the stack.
void maskJson(Json& value);

/// Rule 2 only: the URLs with userinfo in the string values of `value` (documents whose keys
/// Ironic shows as they are: properties, extra). Iterative.
void maskJsonUrls(Json& value);

/// A masked copy of `value`.
Json maskedJson(const Json& value);

/// pyRepr (Python's repr, as Ironic's messages quote values) of a masked copy of `value`.
std::string maskedRepr(const Json& value);

/// dumpJson (compact JSON) of a masked copy of `value`.
std::string maskedDump(const Json& value);

}  // namespace kiln
