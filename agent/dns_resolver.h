// File: agent/dns_resolver.h
//
// kiln-agent's resolver (docs/protocol.md "Name resolution"). The agent is one static binary
// without glibc's NSS modules, so getaddrinfo cannot resolve names in the ramdisk; c-ares
// (linked in statically) asks DNS itself:
//
//   - IP literals are returned as they are (no DNS);
//   - otherwise /etc/hosts first, then DNS for A and AAAA records (IPv4 and IPv6), following
//     /etc/resolv.conf's nameserver, search and options lines (the ramdisk's DHCP hook writes
//     it from the leases) unless DNS servers are named explicitly (kiln.dns=, --dns);
//   - every lookup is bounded by the caller's timeout (DeadlineExceeded) and a failure reads
//     "cannot resolve host name NAME: <c-ares reason> (DNS servers: ...)".
//
// Each lookup reads /etc/resolv.conf and /etc/hosts afresh, so a lease that arrives (or
// changes) after the agent started is used by its next request.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "shared/core/error.h"
#include "shared/http/resolver.h"

namespace kiln::agent {

struct DnsOptions {
  /// "IP", "IP:PORT", "[IPv6]" or "[IPv6]:PORT"; empty = the nameservers of /etc/resolv.conf.
  std::vector<std::string> servers;
  /// How long to wait for one server before asking the next; 0 = resolv.conf's
  /// "options timeout:" or c-ares' default. The caller's timeout bounds the whole lookup.
  std::chrono::milliseconds attemptTimeout{0};
};

/// Parses a comma-separated DNS server list (kiln.dns=, --dns): each item an IPv4 address
/// with an optional ":PORT", a bare IPv6 address, or "[IPv6]" with an optional ":PORT".
/// InvalidArgument naming `option` and the bad item (host names are refused: the servers are
/// how names get resolved).
Result<std::vector<std::string>> parseDnsServers(std::string_view option, std::string_view list);

/// The c-ares resolver (thread-safe: each lookup uses its own c-ares channel).
ResolverPtr makeDnsResolver(DnsOptions options = {});

/// For the start-up line: "resolv.conf" or the servers, comma-separated.
std::string describeDns(const DnsOptions& options);

}  // namespace kiln::agent
