// File: server/api/http.h
//
// Transport-independent HTTP request and response. The Pistache endpoint converts to and from
// these; tests call the API in-process with them, no sockets.
#pragma once

#include <memory>
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

/// Where a streamed response's bytes go: the HTTP endpoint's connection (or a test's buffer).
/// Thread-safe: any thread may write.
class StreamSink {
 public:
  virtual ~StreamSink() = default;
  /// Queues `bytes` for the client without blocking. False when the stream is over (the
  /// client went away, or stopped reading and its bounded buffer filled up: it is then
  /// closed): write nothing more.
  virtual bool write(std::string bytes) = 0;
  /// Ends the stream: the connection closes once what was written is sent.
  virtual void close() = 0;
};

/// A response body produced over time (Server-Sent Events): the endpoint writes the head, then
/// start()s the stream, and stop()s it when the connection ends.
class ResponseStream {
 public:
  virtual ~ResponseStream() = default;
  /// Begins writing into `sink` (once; may write before returning). Never blocks for long:
  /// it runs on a reactor thread.
  virtual void start(std::shared_ptr<StreamSink> sink) = 0;
  /// The connection ended or the server stops: write nothing more, let go of the sink.
  /// Idempotent, any thread.
  virtual void stop() = 0;
};

struct ApiResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string contentType = "application/json";
  /// Set for a streamed response: `body` is written first, then the stream's output until it
  /// ends; the response has no Content-Length and the connection closes after it.
  std::shared_ptr<ResponseStream> stream;
  /// The Content-Length a HEAD answer carries: the size GET's body would have (RFC 9110 §9.3.2;
  /// UEFI HTTP boot sizes its download from it). Unset: body's size.
  std::optional<size_t> contentLength;

  void setHeader(std::string name, std::string value);
  /// For a HEAD request: keeps the body's size as contentLength and drops the body.
  void dropBodyForHead();
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
