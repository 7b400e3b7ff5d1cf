// File: server/api/http_endpoint.h
//
// Serves an ApiService over HTTP/1.1 (or HTTPS) with Pistache's reactor, sockets, writer and
// timers. What Kiln adds at Pistache's boundary (docs/security.md):
//  - requests are framed by HttpRequestParser, not by Pistache's parser (which drops pipelined
//    requests and answers framing errors in plain text without consuming the body): requests
//    on a connection are answered in order, and after a framing error the client gets an
//    error in Ironic's format and the connection closes;
//  - HTTP/1.1 connections are persistent by default, HTTP/1.0 ones only on request;
//  - TLS ([api] enable_ssl_api) is a TlsSession per connection over memory BIOs, so
//    handshakes never block a thread (Pistache's own TLS blocks its accept thread);
//  - a client has [api] client_socket_timeout seconds to send a whole request from its first
//    byte, and an idle connection is closed after as long;
//  - open connections are capped below the open-file limit (whose soft value is raised to the
//    hard one at start): past the cap the oldest idle connection of the accepting thread is
//    shed, or, when none is idle, the new connection is refused with a 503.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "server/api/api_service.h"
#include "server/config.h"
#include "shared/core/error.h"

namespace kiln::server {

class HttpEndpoint {
 public:
  /// Listens on config.hostIp:config.port (0 = an ephemeral port, for tests) with
  /// config.apiWorkers reactor threads (0 = three per CPU), over TLS when enable_ssl_api.
  HttpEndpoint(ApiService& api, const Config& config);
  ~HttpEndpoint();

  /// Binds and starts serving on background threads.
  Result<void> start();
  /// The bound port (after start()).
  uint16_t port() const;
  /// The connection cap in force (after start()).
  int connectionLimit() const;
  /// Stops serving; idempotent.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Raises the soft RLIMIT_NOFILE to the hard limit and returns the soft limit in force.
long raiseOpenFileLimit();

/// The connection cap for an open-file limit: `configured`, but always leaving an eighth of
/// the descriptors (at least 64) to the database, BMC connections, tools and the reactor.
int connectionCap(int configured, long openFileLimit);

}  // namespace kiln::server
