// File: shared/http/url.h
//
// The http(s) URLs the outbound client accepts, parsed without any networking library so that
// callers (driver_info validation, for instance) can check a URL without pulling in Beast.
// User information ("user:password@host") is refused unless the caller asks for it
// (UserInfo::Accept, the image downloads): then it is split off, percent-decoded, and the URL
// itself (str()) no longer carries it, so it can be quoted in messages.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "shared/core/error.h"

namespace kiln {

/// An absolute http:// or https:// URL split into the parts a client needs.
struct HttpUrl {
  std::string scheme;         ///< "http" or "https" (lowercased)
  std::string host;           ///< a name, an IPv4 literal or an IPv6 literal without brackets
  uint16_t port = 0;          ///< the explicit port, or 80/443 from the scheme
  bool explicitPort = false;  ///< whether the URL named the port
  bool ipLiteral = false;     ///< whether host is an IP address (no name resolution, no SNI)
  std::string target;         ///< path and query ("/" when the URL has none); no fragment
  /// UserInfo::Accept only: the percent-decoded user and password of "user:password@host"
  /// ("user@host": an empty password). None when the URL has no user information.
  std::optional<std::pair<std::string, std::string>> credentials;

  bool https() const { return scheme == "https"; }
  /// host[:port] as the Host header carries it (IPv6 literals bracketed, default port omitted).
  std::string hostHeader() const;
  /// scheme://host[:port] (no path).
  std::string origin() const;
  /// scheme://host[:port]/target: the URL without user information and fragment.
  std::string str() const;
  /// Same scheme, host (case-insensitively) and port: the origin credentials belong to.
  bool sameOrigin(const HttpUrl& other) const;
};

/// Whether parseHttpUrl takes "user:password@" in the authority.
enum class UserInfo { Reject, Accept };

/// Parses an absolute http(s) URL. InvalidArgument (the message quotes the URL, masked when it
/// has user information, and says what is wrong) for another scheme, an empty or malformed host,
/// a bad port, whitespace/control characters, or user information under UserInfo::Reject
/// ("user:pass@host": pass credentials separately). Under UserInfo::Accept the authority's last
/// '@' ends the user information and its first ':' ends the user; percent escapes in both are
/// decoded (a '%' not followed by two hex digits stays as it is, as Python's unquote does).
Result<HttpUrl> parseHttpUrl(std::string_view url, UserInfo userInfo = UserInfo::Reject);

/// The absolute URL a redirect's Location names, resolved against the URL that answered
/// (RFC 3986 section 5.2): an absolute URL as it is, "//host/path" with the base's scheme,
/// "/path" on the base's origin, "?query" on the base's path, and a relative path beside the
/// base's last segment ("." and ".." segments are removed). The fragment is dropped. The
/// result carries no user information from the base.
std::string resolveReference(const HttpUrl& base, std::string_view location);

}  // namespace kiln
