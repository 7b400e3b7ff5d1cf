// File: server/api/http_endpoint.h
//
// Serves an ApiService over HTTP with Pistache. Notes on Debian's Pistache 0.0.5:
//  - it answers an HTTP/1.1 request without a Connection header with "Connection: Close";
//    HTTP/1.1 connections are persistent by default, so the endpoint restores keep-alive for
//    them (wrk and Go clients send no Connection header);
//  - it neither decodes the path nor the query, and keeps one value per query key.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "server/api/api_service.h"
#include "shared/core/error.h"

namespace kiln::server {

class HttpEndpoint {
 public:
  /// `port` 0 binds an ephemeral port (tests). `threads` 0 = two per CPU.
  HttpEndpoint(ApiService& api, std::string hostIp, uint16_t port, int threads);
  ~HttpEndpoint();

  /// Binds and starts serving on background threads.
  Result<void> start();
  /// The bound port (after start()).
  uint16_t port() const;
  /// Stops serving; idempotent.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::server
