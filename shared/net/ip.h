// File: shared/net/ip.h
//
// IP addresses and networks as text, parsed with inet_pton and shown with inet_ntop: the one
// parser behind the inspection rules' ip-in-subnet (netaddr's forms), the agent's static
// network (network_data.json) and URL hosts.
//
//   address  dotted-quad IPv4 ("10.0.0.1") or IPv6 ("fd00::1", "::ffff:10.0.0.1") as
//            inet_pton takes it: no zone ("fe80::1%eth0"), no brackets, no leading or
//            trailing space, no NUL byte; IPv4 parts are decimal, 0-255, without leading zeros
//            beyond "0".
//   netmask  an address whose bits are ones then zeros ("255.255.255.0", "ffff:ffff::"):
//            its prefix length. A mask with a one after a zero is not a netmask.
//   network  "address/prefix" (prefix 0 to 32 or 128, at most three digits), "IPv4/netmask",
//            or a bare address (a network of one host), as netaddr.IPNetwork reads them. The
//            address keeps its host bits ("10.0.0.7/24" stays as written); contains() compares
//            only the first `prefix` bits.
// Pure functions; all of them are safe on any input.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::net {

/// An IPv4 or IPv6 address in network byte order (an IPv4 address uses bytes[0..3]).
struct IpAddress {
  int family = 4;  ///< 4 or 6
  std::array<uint8_t, 16> bytes{};

  /// 32 or 128.
  int bits() const { return family == 4 ? 32 : 128; }
  /// inet_ntop's text ("10.0.0.1", "fd00::1"): the canonical form of the address.
  std::string str() const;
  bool operator==(const IpAddress&) const = default;
};

/// An address and a prefix length (0 to bits()).
struct IpNetwork {
  IpAddress address;
  int prefix = 32;

  /// "address/prefix" with the address as written (host bits kept).
  std::string str() const;
  /// Whether `a` is of the same family and equal to `address` in the first `prefix` bits.
  bool contains(const IpAddress& a) const;
  bool operator==(const IpNetwork&) const = default;
};

/// The address `text` spells, IPv4 or IPv6; nullopt otherwise (see the file comment).
std::optional<IpAddress> parseIpAddress(std::string_view text);

/// Whether `text` is an IPv4 address (inet_pton AF_INET).
bool isIpv4(std::string_view text);

/// Whether `text` is an IPv6 address (inet_pton AF_INET6).
bool isIpv6(std::string_view text);

/// The prefix length of the netmask `text` (IPv4 or IPv6; only the given family when
/// `family` is 4 or 6); nullopt when it is not an address or its bits are not contiguous.
std::optional<int> netmaskPrefix(std::string_view text, int family = 0);

/// A network in netaddr's forms (see the file comment); nullopt otherwise.
std::optional<IpNetwork> parseIpNetwork(std::string_view text);

}  // namespace kiln::net
