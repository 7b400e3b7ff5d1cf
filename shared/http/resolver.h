// File: shared/http/resolver.h
//
// How HttpClient turns a URL's host name into addresses: a seam, so that kiln-server keeps the
// system's resolver (getaddrinfo, NSS) while the static kiln-agent, which has no NSS, asks DNS
// itself (agent/dns_resolver.h, c-ares). URLs with IP literals never reach a Resolver.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shared/core/error.h"

namespace kiln {

/// One address to connect to: an IPv4 or IPv6 literal (no brackets) and a port.
struct ResolvedEndpoint {
  std::string address;
  uint16_t port = 0;

  bool operator==(const ResolvedEndpoint&) const = default;
};

/// Thread-safe. `resolve` returns at least one endpoint, in the order to try them, or
/// Unavailable (the message says which name could not be resolved and why) or
/// DeadlineExceeded when no answer came within `timeout`.
class Resolver {
 public:
  virtual ~Resolver() = default;
  virtual Result<std::vector<ResolvedEndpoint>> resolve(std::string_view host, uint16_t port,
                                                        std::chrono::milliseconds timeout) = 0;
};
using ResolverPtr = std::shared_ptr<Resolver>;

/// getaddrinfo through Asio (the system's resolver: /etc/nsswitch.conf, NSS modules). Errors:
/// Unavailable "cannot resolve host \"NAME\": REASON"; DeadlineExceeded.
ResolverPtr makeSystemResolver();

/// Whether `host` is an IPv4 or IPv6 literal (IPv6 without brackets).
bool isIpLiteral(std::string_view host);

}  // namespace kiln
