// File: server/config/dnsmasq_options.h
//
// The [dnsmasq] values that reach dnsmasq's generated configuration, parsed and checked before
// a line is written (docs/provisioning-network.md). Nothing an operator or a client writes gets
// into dnsmasq's files unchecked: a value is accepted only in the narrow forms below, so that no
// option, comment or second line can be smuggled in.
//
//   interface   a Linux interface name: 1 to 15 bytes of [A-Za-z0-9_.-], not "." or "..";
//   dhcp_range  ';'-separated items "START,END[,NETMASK][,LEASE]": IPv4 addresses, START <= END,
//               the mask a contiguous netmask that puts both in one subnet, LEASE "infinite" or
//               digits with an optional unit s, m, h, d or w (at least 2 minutes, as dnsmasq
//               requires); spaces around items and parts are trimmed, anything else refused;
//   values      text written as an option's value (URLs, file names): printable ASCII without
//               space, ',', '#', quotes or '\\' (dnsmasqSafeValue), at most 1024 bytes.
// Pure functions, safe on any input (fuzzed: tests/fuzz, target dnsmasq_config).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shared/core/error.h"

namespace kiln::server {

/// One item of [dnsmasq] dhcp_range, as given (trimmed).
struct DhcpRange {
  std::string start;
  std::string end;
  std::string netmask;    ///< "" = the interface's (a local subnet)
  std::string leaseTime;  ///< "" = dnsmasq's default (1h)

  /// dnsmasq's dhcp-range value: "START,END[,NETMASK][,LEASE]".
  std::string dnsmasqValue() const;
  bool operator==(const DhcpRange&) const = default;
};

/// The items of a dhcp_range value; InvalidArgument saying which item and why. An empty text
/// gives no range.
Result<std::vector<DhcpRange>> parseDhcpRanges(std::string_view text);

/// nullopt when `name` is a valid interface name (see above), else why not.
std::optional<std::string> interfaceNameProblem(std::string_view name);

/// True when `value` may be written into a dnsmasq option (see above).
bool dnsmasqSafeValue(std::string_view value);

/// An IPv4 address as a host-order number; nullopt when `text` is not one.
std::optional<uint32_t> ipv4Number(std::string_view text);

}  // namespace kiln::server
