#include "server/api/web_security.h"

#include "server/api/errors.h"
#include "shared/core/strings.h"

namespace kiln::server {
bool isUrlAuthority(std::string_view host) {
  if (host.empty()) return false;
  for (char c : host) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    std::string_view("-._~:[]%").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

std::optional<std::string> normalizeOrigin(std::string_view text) {
  const std::string lower = asciiLower(trim(std::string(text)));
  std::string_view rest(lower);
  std::string scheme;
  for (const char* s : {"http", "https"}) {
    const std::string prefix = std::string(s) + "://";
    if (rest.starts_with(prefix)) {
      scheme = s;
      rest.remove_prefix(prefix.size());
    }
  }
  if (scheme.empty()) return std::nullopt;
  const size_t end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, end);
  if (!isUrlAuthority(authority)) return std::nullopt;
  const std::string_view defaultPort = scheme == "http" ? ":80" : ":443";
  // "[::1]:80" and "host:80" lose the default port; "[::1]" keeps its brackets.
  if (authority.ends_with(defaultPort) && authority.size() > defaultPort.size()) {
    authority.remove_suffix(defaultPort.size());
  }
  if (authority.empty() || authority.back() == ':') return std::nullopt;
  return scheme + "://" + std::string(authority);
}

bool isFormContentType(std::string_view contentType) {
  std::string type = asciiLower(std::string(contentType));
  if (const size_t semi = type.find(';'); semi != std::string::npos) type.resize(semi);
  type = trim(type);
  return type == "text/plain" || type == "application/x-www-form-urlencoded" ||
         type == "multipart/form-data";
}

std::vector<std::string> ownOrigins(std::string_view scheme, std::optional<std::string_view> host,
                                    std::string_view publicEndpoint) {
  std::vector<std::string> out;
  if (host) {
    if (auto o = normalizeOrigin(std::string(scheme) + "://" + std::string(*host))) {
      out.push_back(std::move(*o));
    }
  }
  if (!publicEndpoint.empty()) {
    if (auto o = normalizeOrigin(publicEndpoint)) out.push_back(std::move(*o));
  }
  return out;
}

std::optional<ApiResponse> refuseCrossSiteWrite(const ApiRequest& request, bool tls,
                                                std::string_view publicEndpoint) {
  if (request.method == "GET" || request.method == "HEAD" || request.method == "OPTIONS") {
    return std::nullopt;
  }
  if (auto origin = request.header("origin")) {
    const auto host = request.header("host");
    const auto own = ownOrigins(tls ? "https" : "http",
                                host ? std::optional<std::string_view>(*host) : std::nullopt,
                                publicEndpoint);
    const auto normalized = normalizeOrigin(*origin);
    bool same = false;
    for (const auto& o : own) same = same || (normalized && *normalized == o);
    if (!same) {
      return errorResponse({ErrorCode::PermissionDenied,
                            "Cross-origin write refused: the request's Origin is not this "
                            "server's origin (set [api] public_endpoint when Kiln is reached "
                            "through a proxy)"});
    }
  }
  if (auto type = request.header("content-type"); type && isFormContentType(*type)) {
    ApiResponse r = errorResponse(
        {ErrorCode::InvalidArgument,
         "Unsupported Content-Type: the API takes application/json (a form's content types are "
         "refused)"});
    r.status = 415;
    return r;
  }
  return std::nullopt;
}

}  // namespace kiln::server
