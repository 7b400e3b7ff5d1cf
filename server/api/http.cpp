#include "server/api/http.h"

#include <cctype>

#include "shared/core/strings.h"
#include "shared/core/uuid.h"

namespace kiln::server {
namespace {

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::optional<std::string> ApiRequest::header(std::string_view lowercaseName) const {
  for (const auto& [k, v] : headers) {
    if (k == lowercaseName) return v;
  }
  return std::nullopt;
}

std::optional<std::string> ApiRequest::param(std::string_view name) const {
  std::optional<std::string> out;
  for (const auto& [k, v] : query) {
    if (k == name) out = v;
  }
  return out;
}

void ApiResponse::dropBodyForHead() {
  if (!stream) contentLength = body.size();
  body.clear();
}

void ApiResponse::setHeader(std::string name, std::string value) {
  for (auto& [k, v] : headers) {
    if (equalsIgnoreCase(k, name)) {
      v = std::move(value);
      return;
    }
  }
  headers.emplace_back(std::move(name), std::move(value));
}

std::optional<std::string> ApiResponse::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (equalsIgnoreCase(k, name)) return v;
  }
  return std::nullopt;
}

std::string urlDecode(std::string_view text, bool plusIsSpace) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%' && i + 2 < text.size()) {
      const int hi = hexValue(text[i + 1]);
      const int lo = hexValue(text[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(plusIsSpace && c == '+' ? ' ' : c);
  }
  return out;
}

std::string urlEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == ',') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> parseQueryString(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t pos = 0;
  while (pos <= query.size()) {
    size_t amp = query.find('&', pos);
    if (amp == std::string_view::npos) amp = query.size();
    std::string_view part = query.substr(pos, amp - pos);
    if (!part.empty()) {
      const size_t eq = part.find('=');
      if (eq == std::string_view::npos) {
        out.emplace_back(urlDecode(part, true), "");
      } else {
        out.emplace_back(urlDecode(part.substr(0, eq), true), urlDecode(part.substr(eq + 1), true));
      }
    }
    pos = amp + 1;
  }
  return out;
}

std::string_view reasonPhrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Request Entity Too Large";
    case 415: return "Unsupported Media Type";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Unknown";
  }
}

void stampRequestId(ApiResponse& response) {
  const std::string requestId = "req-" + generateUuid();
  response.setHeader("Openstack-Request-Id", requestId);
  response.setHeader("X-Openstack-Request-Id", requestId);
}

}  // namespace kiln::server
