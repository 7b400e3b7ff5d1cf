// File: agent/server_client.h
//
// The agent's calls to kiln-server (docs/protocol.md): lookup and heartbeat. An interface so
// the agent loop can be tested against a scripted server; HttpServerClient is the real one.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "shared/core/error.h"
#include "shared/http/http_client.h"
#include "shared/protocol/messages.h"

namespace kiln::agent {

/// Errors: NotFound (no such node, or not expecting an agent), Unauthenticated (token refused:
/// look up again), Conflict (node busy: retry soon), InvalidArgument (the server refused the
/// message; its faultstring is the message), Unavailable/DeadlineExceeded (unreachable).
class ServerClient {
 public:
  virtual ~ServerClient() = default;
  virtual Result<protocol::LookupResponse> lookup(const std::vector<std::string>& macs,
                                                  const std::string& nodeUuid) = 0;
  virtual Result<protocol::HeartbeatResponse> heartbeat(const std::string& nodeUuid,
                                                        const protocol::HeartbeatRequest& beat) = 0;
};

/// Lookup and heartbeat over HTTP(S) with Ironic's microversion headers.
class HttpServerClient final : public ServerClient {
 public:
  HttpServerClient(HttpClient& http, std::string apiUrl) : http_(http), apiUrl_(std::move(apiUrl)) {}

  Result<protocol::LookupResponse> lookup(const std::vector<std::string>& macs,
                                          const std::string& nodeUuid) override;
  Result<protocol::HeartbeatResponse> heartbeat(const std::string& nodeUuid,
                                                const protocol::HeartbeatRequest& beat) override;

 private:
  Result<nlohmann::json> exchange(HttpRequest request, int expectedStatus);

  HttpClient& http_;
  std::string apiUrl_;
};

/// The faultstring of an Ironic error body (double-encoded error_message), or the body itself.
std::string faultOf(const std::string& body);

}  // namespace kiln::agent
