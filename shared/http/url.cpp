#include "shared/http/url.h"

#include <cctype>
#include <vector>

#include "shared/core/secrets.h"
#include "shared/core/strings.h"
#include "shared/net/ip.h"

namespace kiln {
namespace {

/// True when an '@' follows "://": the URL may carry a password, so messages mask it.
bool mayHaveUserInfo(std::string_view url) {
  const auto sep = url.find("://");
  return sep != std::string_view::npos && url.find('@', sep + 3) != std::string_view::npos;
}

std::unexpected<Error> badUrl(std::string_view url, std::string_view why) {
  const std::string shown = mayHaveUserInfo(url) ? maskUrl(url) : std::string(url);
  return invalid("Invalid URL \"" + shown + "\": " + std::string(why));
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// Python's unquote: "%XX" becomes the byte, anything else stays as it is.
std::string percentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hexValue(s[i + 1]) >= 0 && hexValue(s[i + 2]) >= 0) {
      out += static_cast<char>(hexValue(s[i + 1]) * 16 + hexValue(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

/// RFC 3986 section 5.2.4 on a path (no query).
std::string removeDotSegments(std::string_view path) {
  std::vector<std::string_view> segments;
  size_t pos = 0;
  // The path starts with '/': each segment follows one.
  while (pos < path.size()) {
    const size_t next = path.find('/', pos + 1);
    const std::string_view segment = path.substr(
        pos + 1, next == std::string_view::npos ? std::string_view::npos : next - pos - 1);
    const bool last = next == std::string_view::npos;
    if (segment == ".") {
      if (last) segments.emplace_back();
    } else if (segment == "..") {
      if (!segments.empty()) segments.pop_back();
      if (last) segments.emplace_back();
    } else {
      segments.push_back(segment);
    }
    if (last) break;
    pos = next;
  }
  std::string out;
  for (auto segment : segments) {
    out += '/';
    out += segment;
  }
  return out.empty() ? "/" : out;
}

/// removeDotSegments on the path of "path?query".
std::string normalizeTarget(std::string_view target) {
  const size_t q = target.find('?');
  std::string out = removeDotSegments(target.substr(0, q));
  if (q != std::string_view::npos) out += target.substr(q);
  return out;
}

bool isHostChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_' ||
         c == '~';
}

}  // namespace

std::string HttpUrl::hostHeader() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  if (explicitPort && port != (https() ? 443 : 80)) {
    h += ":" + std::to_string(port);
  }
  return h;
}

std::string HttpUrl::origin() const { return scheme + "://" + hostHeader(); }

std::string HttpUrl::str() const { return origin() + target; }

bool HttpUrl::sameOrigin(const HttpUrl& other) const {
  return scheme == other.scheme && port == other.port && equalsIgnoreCase(host, other.host);
}

Result<HttpUrl> parseHttpUrl(std::string_view url, UserInfo userInfo) {
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return badUrl(url, "it contains whitespace or control characters");
    }
  }
  const auto sep = url.find("://");
  if (sep == std::string_view::npos) {
    return badUrl(url, "an absolute http:// or https:// URL is required");
  }
  HttpUrl out;
  out.scheme = asciiLower(url.substr(0, sep));
  if (out.scheme != "http" && out.scheme != "https") {
    return badUrl(url, "the scheme must be http or https");
  }
  std::string_view rest = url.substr(sep + 3);
  if (const auto hash = rest.find('#'); hash != std::string_view::npos) {
    rest = rest.substr(0, hash);
  }
  const auto authorityEnd = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, authorityEnd);
  std::string_view target =
      authorityEnd == std::string_view::npos ? std::string_view() : rest.substr(authorityEnd);
  if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
    if (userInfo == UserInfo::Reject) {
      return badUrl(url, "user information in the URL is not supported");
    }
    const std::string_view info = authority.substr(0, at);
    authority = authority.substr(at + 1);
    if (!info.empty()) {
      const auto colon = info.find(':');
      out.credentials.emplace(
          percentDecode(info.substr(0, colon)),
          colon == std::string_view::npos ? std::string() : percentDecode(info.substr(colon + 1)));
    }
  }

  std::string_view portText;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) {
      return badUrl(url, "unterminated IPv6 literal");
    }
    out.host = std::string(authority.substr(1, close - 1));
    if (!net::isIpv6(out.host)) {
      return badUrl(url, "malformed IPv6 literal");
    }
    out.ipLiteral = true;
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        return badUrl(url, "unexpected text after the IPv6 literal");
      }
      portText = after.substr(1);
      out.explicitPort = true;
    }
  } else {
    const auto colon = authority.rfind(':');
    if (colon != std::string_view::npos) {
      portText = authority.substr(colon + 1);
      out.explicitPort = true;
      authority = authority.substr(0, colon);
    }
    out.host = std::string(authority);
    for (char c : out.host) {
      if (!isHostChar(c)) {
        return badUrl(url, "the host contains an invalid character");
      }
    }
    out.ipLiteral = net::isIpv4(out.host);
  }
  if (out.host.empty()) {
    return badUrl(url, "the host is missing");
  }
  if (out.explicitPort) {
    const auto port = parseInt<uint16_t>(portText, 1, 65535);
    if (!port || portText.size() > 5) {
      return badUrl(url, "the port must be a number from 1 to 65535");
    }
    out.port = *port;
  } else {
    out.port = out.https() ? 443 : 80;
  }
  if (target.empty()) {
    out.target = "/";
  } else if (target.front() == '?') {
    out.target = "/" + std::string(target);
  } else {
    out.target = std::string(target);
  }
  return out;
}

std::string resolveReference(const HttpUrl& base, std::string_view location) {
  const std::string trimmed = trim(location);
  location = trimmed;
  if (const auto hash = location.find('#'); hash != std::string_view::npos) {
    location = location.substr(0, hash);
  }
  // An absolute URL: a scheme (a letter, then letters, digits, '+', '-', '.') and ':'.
  if (!location.empty() && std::isalpha(static_cast<unsigned char>(location.front()))) {
    const auto colon = location.find(':');
    const auto schemeEnd = location.find_first_not_of(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.");
    if (colon != std::string_view::npos && schemeEnd == colon) return std::string(location);
  }
  if (location.starts_with("//")) return base.scheme + ":" + std::string(location);
  const std::string_view basePath = std::string_view(base.target).substr(0, base.target.find('?'));
  if (location.empty()) return base.str();
  if (location.front() == '/') return base.origin() + normalizeTarget(location);
  if (location.front() == '?') return base.origin() + std::string(basePath) + std::string(location);
  const std::string_view directory = basePath.substr(0, basePath.rfind('/') + 1);
  return base.origin() + normalizeTarget(std::string(directory) + std::string(location));
}

}  // namespace kiln
