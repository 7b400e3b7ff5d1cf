// File: server/api/http.h
//
// Transport-independent HTTP request and response. The Pistache endpoint converts to and from
// these; tests call the API in-process with them, no sockets.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::server {

struct ApiRequest {
  std::string method;  ///< "GET", "POST", ...
  std::string path;    ///< raw path, without the query string
  /// Decoded query parameters in order ("a=1&b" gives {"a","1"},{"b",""}).
  std::vector<std::pair<std::string, std::string>> query;
  /// Headers with lowercase names.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  /// The first header with this (lowercase) name.
  std::optional<std::string> header(std::string_view lowercaseName) const;
  /// The last value of a query parameter.
  std::optional<std::string> param(std::string_view name) const;
};

struct ApiResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string contentType = "application/json";

  void setHeader(std::string name, std::string value);
  std::optional<std::string> header(std::string_view name) const;
};

/// Percent-decodes a URL component ("+" stays "+", as in a path; `plusIsSpace` for queries).
std::string urlDecode(std::string_view text, bool plusIsSpace);

/// Percent-encodes a query value.
std::string urlEncode(std::string_view text);

/// Parses "a=1&b=2" into decoded pairs.
std::vector<std::pair<std::string, std::string>> parseQueryString(std::string_view query);

/// The reason phrase for a status code ("Not Found").
std::string_view reasonPhrase(int status);

/// Gives `response` a new request ID ("req-<uuid>") in Openstack-Request-Id and
/// X-Openstack-Request-Id, as Ironic answers every request.
void stampRequestId(ApiResponse& response);

}  // namespace kiln::server
