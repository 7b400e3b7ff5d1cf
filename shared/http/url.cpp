#include "shared/http/url.h"

#include <arpa/inet.h>

#include <cctype>

#include "shared/core/strings.h"

namespace kiln {
namespace {

std::unexpected<Error> badUrl(std::string_view url, std::string_view why) {
  return invalid("Invalid URL \"" + std::string(url) + "\": " + std::string(why));
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

Result<HttpUrl> parseHttpUrl(std::string_view url) {
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
  if (authority.find('@') != std::string_view::npos) {
    return badUrl(url, "user information in the URL is not supported");
  }

  std::string_view portText;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) {
      return badUrl(url, "unterminated IPv6 literal");
    }
    out.host = std::string(authority.substr(1, close - 1));
    in6_addr addr6{};
    if (inet_pton(AF_INET6, out.host.c_str(), &addr6) != 1) {
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
    in_addr addr4{};
    out.ipLiteral = inet_pton(AF_INET, out.host.c_str(), &addr4) == 1;
  }
  if (out.host.empty()) {
    return badUrl(url, "the host is missing");
  }
  if (out.explicitPort) {
    if (portText.empty() || portText.size() > 5) {
      return badUrl(url, "the port must be a number from 1 to 65535");
    }
    unsigned value = 0;
    for (char c : portText) {
      if (!std::isdigit(static_cast<unsigned char>(c))) {
        return badUrl(url, "the port must be a number from 1 to 65535");
      }
      value = value * 10 + static_cast<unsigned>(c - '0');
    }
    if (value == 0 || value > 65535) {
      return badUrl(url, "the port must be a number from 1 to 65535");
    }
    out.port = static_cast<uint16_t>(value);
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

}  // namespace kiln
