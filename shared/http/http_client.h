// File: shared/http/http_client.h
//
// The one narrow outbound HTTP client (agent -> server, server -> Redfish BMCs, image
// downloads). Implemented once with Boost.Beast + Asio (http_client_impl.cpp); everything else
// sees only this interface, so tests can substitute a fake.
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
  std::optional<std::pair<std::string, std::string>> basicAuth;  ///< user, password
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

/// The Boost.Beast implementation; host names go through the system's resolver (getaddrinfo).
HttpClientPtr makeHttpClient();
/// The same with host names resolved by `resolver` (kiln-agent: DNS through c-ares); IP
/// literals are never resolved. A null resolver means the system's.
HttpClientPtr makeHttpClient(ResolverPtr resolver);

}  // namespace kiln
