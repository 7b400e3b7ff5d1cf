// File: shared/http/http_client.h
//
// The one narrow outbound HTTP client (agent -> server, server -> Redfish BMCs, image
// downloads). Implemented once with Boost.Beast + Asio (http_client_impl.cpp); everything else
// sees only this interface, so tests can substitute a fake.
//
// Redirects (3xx):
//  - By default (HttpRequest::maxRedirects 0) the client follows none: a 3xx answer is returned
//    like any other status, body and all.
//  - With maxRedirects N > 0 it follows 301, 302, 303, 307 and 308 answers that carry a Location
//    (absolute or relative, resolved against the URL that answered), at most N times; one more
//    is an Unavailable error. A followed answer's body is not read. 303, and 301/302 to a
//    POST, continue as GET without a body (as browsers and python-requests do); 307 and 308
//    repeat the method and body. A 3xx without a Location is returned as it is. A Location the
//    client cannot follow (another scheme, user information, a malformed URL) is Unavailable.
//  - Credentials (basicAuth, and Authorization, Proxy-Authorization and Cookie headers) go only
//    to the origin (scheme, host and port) of HttpRequest::url. The first hop to any other
//    origin drops them for the rest of the chain, even if a later hop comes back: another host,
//    another port, and https -> http on the same host (a different scheme) all count. This is
//    python-requests' and urllib3's rule (CVE-2014-1829, CVE-2018-18074, CVE-2018-20060: sent to
//    the redirect's host, over https -> http, across origins), made stricter: requests keeps
//    them for an http -> https upgrade on the default ports, Kiln does not.
//  - The overall timeout covers the whole chain.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shared/core/error.h"
#include "shared/http/resolver.h"

namespace kiln {

/// User and password of HTTP Basic authentication (RFC 7617).
using BasicCredentials = std::pair<std::string, std::string>;

struct HttpRequest {
  std::string method = "GET";
  std::string url;  ///< http://host:port/path?query or https://...
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  /// The whole exchange when idleTimeout is 0; otherwise connect + response header only.
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
  /// 0 = off. Otherwise bounds each wait for response body bytes (and no longer the whole
  /// body), so a multi-GiB download never hits `timeout` but a stalled peer still fails with
  /// DeadlineExceeded.
  std::chrono::milliseconds idleTimeout{0};
  bool verifyTls = true;       ///< https only
  std::string caFile;          ///< https only: trust this CA bundle instead of the system's
  std::optional<BasicCredentials> basicAuth;  ///< user, password; only for url's origin
  /// Redirects followed (see the top of this file); 0 = a 3xx is returned as it is.
  int maxRedirects = 0;
};

struct HttpResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  ///< names lowercased
  std::string body;

  std::optional<std::string> header(std::string_view lowercaseName) const {
    for (const auto& [k, v] : headers) {
      if (k == lowercaseName) return v;
    }
    return std::nullopt;
  }
};

/// Receives a streamed response body chunk by chunk. Returning an error aborts the transfer.
using BodySink = std::function<Result<void>(std::string_view chunk)>;

/// Thread-safe. Errors: InvalidArgument for a malformed URL, Unavailable when the peer cannot
/// be reached or the connection breaks, DeadlineExceeded on timeout. An HTTP error status is
/// NOT an error: callers look at `status`.
class HttpClient {
 public:
  virtual ~HttpClient() = default;
  /// Sends the request and reads the whole response.
  virtual Result<HttpResponse> send(const HttpRequest& request) = 0;
  /// Sends the request and streams the response body to `sink` through a fixed-size buffer
  /// (constant memory whatever the size); the returned response has an empty body.
  virtual Result<HttpResponse> stream(const HttpRequest& request, const BodySink& sink) = 0;
};
using HttpClientPtr = std::shared_ptr<HttpClient>;

/// Redirects a download (downloadRequest) follows; python-requests allows 30.
inline constexpr int kDownloadMaxRedirects = 10;

/// A GET for downloading `url` (an image, a checksum file, a config drive). The URL's own user
/// information, percent-decoded, becomes basicAuth; without any, `fallback` (the configured
/// image server credentials) does. The request's url is `url` without the user information, so
/// it can be quoted in messages. Redirects are followed (kDownloadMaxRedirects), the
/// credentials going only to the URL's origin. InvalidArgument for a malformed URL (quoted
/// masked when it has user information).
Result<HttpRequest> downloadRequest(std::string_view url,
                                    const std::optional<BasicCredentials>& fallback);

/// The Boost.Beast implementation; host names go through the system's resolver (getaddrinfo).
HttpClientPtr makeHttpClient();
/// The same with host names resolved by `resolver` (kiln-agent: DNS through c-ares); IP
/// literals are never resolved. A null resolver means the system's.
HttpClientPtr makeHttpClient(ResolverPtr resolver);

}  // namespace kiln
