// File: tests/support/http_file_server.h
//
// An in-process HTTP/1.1 file server for image-download tests: plain POSIX sockets on
// 127.0.0.1 (or another loopback address, to play a second host; ephemeral port), one thread
// per connection, GET and HEAD of registered paths served from memory or from a file with a
// Content-Length. Knobs make it misbehave the way a real image server can: an error status, a
// stall after N body bytes (held until the client gives up or the server stops), or a
// connection closed after N body bytes. A path can also demand HTTP Basic authentication or
// answer with a redirect, and the server records the method and Authorization header of every
// request. Unknown paths get 404.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shared/core/error.h"

namespace kiln::test {

/// How one path is served.
struct ServedPath {
  std::string data;                    ///< the body, when `file` is empty
  std::string file;                    ///< serve this file's contents instead
  int status = 200;                    ///< any other status is answered with a short text body
  std::optional<uint64_t> stallAfter;  ///< stop sending after this many body bytes
  std::optional<uint64_t> closeAfter;  ///< close the connection after this many body bytes
  bool contentLength = true;  ///< false: no Content-Length, the body ends with the connection
  /// Set: a request whose Authorization header is not exactly this gets 401 with
  /// WWW-Authenticate: Basic (tests/support/basic_auth.h makes the value).
  std::optional<std::string> authorization;
  /// Set: the answer is `status` (make it a 3xx) with this Location and a short body.
  std::string location;
};

/// The server. Thread-safe.
class HttpFileServer {
 public:
  HttpFileServer();
  ~HttpFileServer();
  HttpFileServer(const HttpFileServer&) = delete;
  HttpFileServer& operator=(const HttpFileServer&) = delete;

  /// Binds `address` (an IPv4 loopback address) on an ephemeral port and serves on a
  /// background thread.
  Result<void> start(const std::string& address = "127.0.0.1");
  /// Stops serving and ends every connection (stalled ones too); idempotent.
  void stop();
  /// The bound port (after start()).
  uint16_t port() const;
  /// "http://<address>:<port><path>".
  std::string url(std::string_view path) const;

  /// Serves `path` as described (replacing an earlier registration).
  void serve(std::string path, ServedPath served);
  /// Serves `path` with `data` and status 200.
  void serveData(std::string path, std::string data);
  /// Serves `path` from `file` with status 200.
  void serveFile(std::string path, std::string file);
  /// GET requests received for `path` so far.
  int getCount(std::string_view path) const;
  /// HEAD requests received for `path` so far.
  int headCount(std::string_view path) const;
  /// The Authorization header of every request (GET and HEAD) for `path` so far, in order;
  /// "" for a request without one.
  std::vector<std::string> authorizations(std::string_view path) const;
  /// The method of every request for `path` so far, in order.
  std::vector<std::string> methods(std::string_view path) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace kiln::test
