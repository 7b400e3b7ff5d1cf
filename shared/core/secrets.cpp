#include "shared/core/secrets.h"

#include <nlohmann/json.hpp>

#include <vector>

#include "shared/core/strings.h"
#include "shared/json/json_util.h"

namespace kiln {
namespace {

/// Key fragments whose values are secrets: oslo.utils' strutils._SANITIZE_KEYS (checked
/// against python3-oslo.utils 6.0.1), then Kiln's additions. All lower case; a key matches
/// when its lower-cased text contains one of them.
// clang-format off
constexpr std::string_view kSecretKeyFragments[] = {
    // oslo.utils _SANITIZE_KEYS
    "adminpass", "admin_pass", "password", "admin_password", "auth_token", "new_pass",
    "auth_password", "secret_uuid", "secret", "sys_pswd", "token", "configdrive", "chappassword",
    "encrypted_key", "private_key", "fernetkey", "sslkey", "passphrase", "cephclusterfsid",
    "octaviaheartbeatkey", "rabbitcookie", "cephmanilaclientkey", "pacemakerremoteauthkey",
    "designaterndckey", "cephadminkey", "heatauthencryptionkey", "cephclientkey",
    "keystonecredential", "barbicansimplecryptokek", "cephrgwkey", "swifthashsuffix",
    "migrationsshkey", "cephmdskey", "cephmonkey",
    // Kiln: image_url may carry temporary-URL signatures or credentials (Ironic masks
    // instance_info.image_url; Kiln masks it at any depth, as copies of instance_info travel
    // in driver_internal_info); encryption_key was on Kiln's list before the check against oslo.
    "image_url", "encryption_key",
};
// clang-format on

bool containsFragment(const std::string& foldedText) {
  for (auto fragment : kSecretKeyFragments) {
    if (foldedText.find(fragment) != std::string::npos) return true;
  }
  return false;
}

bool isAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isSchemeChar(char c) { return isAlpha(c) || isDigit(c) || c == '+' || c == '-' || c == '.'; }

/// RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
bool isScheme(std::string_view s) {
  if (s.empty() || !isAlpha(s[0])) return false;
  for (char c : s) {
    if (!isSchemeChar(c)) return false;
  }
  return true;
}

/// Where a URL quoted in free text ends.
bool endsUrl(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u <= 0x20 || u == 0x7f || c == '\'' || c == '"' || c == '`' || c == '<' || c == '>' ||
         c == '\\';
}

/// True when the URL may carry userinfo: an '@' anywhere after "://" (a password may hold an
/// unencoded '/', '?' or '#', so where the authority ends cannot be trusted).
bool hasUserinfo(std::string_view url) {
  const size_t sep = url.find("://");
  return sep != std::string_view::npos && url.find('@', sep + 3) != std::string_view::npos;
}

void maskString(Json& value) {
  const auto& s = value.get_ref<const std::string&>();
  if (s.find("://") == std::string::npos || s.find('@') == std::string::npos) return;
  std::string masked = maskUrlsInText(s, UrlScope::WithCredentials);
  if (masked != s) value = std::move(masked);
}

}  // namespace

bool isSecretKey(std::string_view key) { return containsFragment(asciiLower(key)); }

bool mayContainSecret(std::string_view text) {
  if (text.find("://") != std::string_view::npos && text.find('@') != std::string_view::npos) {
    return true;
  }
  return containsFragment(asciiLower(text));  // any fragment anywhere in the text
}

void maskSecretIn(std::string& text, std::string_view secret) {
  if (secret.empty()) return;
  for (size_t at = text.find(secret); at != std::string::npos;
       at = text.find(secret, at + kMaskedValue.size())) {
    text.replace(at, secret.size(), kMaskedValue);
  }
}

std::string maskUrl(std::string_view url) {
  const size_t sep = url.find("://");
  if (sep == std::string_view::npos || !isScheme(url.substr(0, sep))) {
    return std::string(kMaskedValue);
  }
  const std::string_view scheme = url.substr(0, sep);
  const std::string_view rest = url.substr(sep + 3);
  const std::string_view beforeQuery = rest.substr(0, rest.find_first_of("?#"));
  const size_t slash = beforeQuery.find('/');
  std::string_view authority = beforeQuery.substr(0, slash);
  size_t authorityEnd = authority.size();
  bool hidden = false;
  if (const size_t at = authority.rfind('@'); at != std::string_view::npos) {
    authority.remove_prefix(at + 1);
    hidden = true;
  } else if (rest.find('@') != std::string_view::npos) {
    // "user:pa/ss@host", "user:pa?ss@host" or an '@' in the path or query: where the host
    // starts cannot be told; show no part of it.
    return std::string(scheme) + "://" + std::string(kMaskedValue);
  }
  const std::string_view remainder = rest.substr(authorityEnd);
  if (!remainder.empty() && remainder != "/") hidden = true;
  std::string out(scheme);
  out += "://";
  out += authority;
  if (hidden) {
    out += '/';
    out += kMaskedValue;
  } else {
    out += remainder;
  }
  return out;
}

std::string maskUrlsInText(std::string_view text, UrlScope scope) {
  std::string out;
  size_t copied = 0;  // text[0, copied) is in `out`
  size_t pos = 0;
  while ((pos = text.find("://", pos)) != std::string_view::npos) {
    size_t start = pos;
    while (start > copied && isSchemeChar(text[start - 1])) --start;
    while (start < pos && !isAlpha(text[start])) ++start;  // a scheme starts with a letter
    size_t end = pos + 3;
    while (end < text.size() && !endsUrl(text[end])) ++end;
    // Punctuation closing a sentence or a bracket is not part of the URL.
    size_t urlEnd = end;
    while (urlEnd > pos + 3 &&
           std::string_view(".,;:)]}").find(text[urlEnd - 1]) != std::string_view::npos) {
      --urlEnd;
    }
    const std::string_view url = text.substr(start, urlEnd - start);
    const bool mask = scope == UrlScope::All || hasUserinfo(url);
    if (mask) {
      out.append(text.substr(copied, start - copied));
      out += maskUrl(url);
      copied = urlEnd;
    }
    pos = end;
  }
  if (copied == 0) return std::string(text);
  out.append(text.substr(copied));
  return out;
}

namespace {

/// Walks `value` without recursion: strings get their URLs with userinfo masked; with
/// `keys`, values under password-like keys become "******" and are not walked.
void maskTree(Json& value, bool keys) {
  std::vector<Json*> pending{&value};
  auto visit = [&pending](Json& v) {
    if (v.is_object() || v.is_array()) {
      pending.push_back(&v);
    } else if (v.is_string()) {
      maskString(v);
    }
  };
  while (!pending.empty()) {
    Json& v = *pending.back();
    pending.pop_back();
    if (v.is_object()) {
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (keys && isSecretKey(it.key())) {
          if (!it.value().is_null()) it.value() = std::string(kMaskedValue);
        } else {
          visit(it.value());
        }
      }
    } else if (v.is_array()) {
      for (auto& item : v) visit(item);
    } else if (v.is_string()) {
      maskString(v);
    }
  }
}

}  // namespace

void maskJson(Json& value) { maskTree(value, true); }

void maskJsonUrls(Json& value) { maskTree(value, false); }

Json maskedJson(const Json& value) {
  Json copy = value;
  maskJson(copy);
  return copy;
}

std::string maskedRepr(const Json& value) { return pyRepr(maskedJson(value)); }

std::string maskedDump(const Json& value) { return dumpJson(maskedJson(value)); }

}  // namespace kiln
