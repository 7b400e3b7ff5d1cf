// File: shared/http/url.h
//
// The http(s) URLs the outbound client accepts, parsed without any networking library so that
// callers (driver_info validation, for instance) can check a URL without pulling in Beast.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

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

  bool https() const { return scheme == "https"; }
  /// host[:port] as the Host header carries it (IPv6 literals bracketed, default port omitted).
  std::string hostHeader() const;
  /// scheme://host[:port] (no path).
  std::string origin() const;
};

/// Parses an absolute http(s) URL. InvalidArgument (the message quotes the URL and says what is
/// wrong) for another scheme, an empty or malformed host, a bad port, user information
/// ("user:pass@host": pass credentials separately) or whitespace/control characters.
Result<HttpUrl> parseHttpUrl(std::string_view url);

}  // namespace kiln
