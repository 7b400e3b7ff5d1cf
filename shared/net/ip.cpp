#include "shared/net/ip.h"

#include <arpa/inet.h>

#include <bit>

#include "shared/core/strings.h"

namespace kiln::net {
namespace {

/// inet_pton of one family; false for text inet_pton would read only part of (a NUL byte).
bool toBytes(int af, std::string_view text, uint8_t* out) {
  if (text.find('\0') != std::string_view::npos) return false;
  const std::string copy(text);  // inet_pton needs a terminated string
  return ::inet_pton(af, copy.c_str(), out) == 1;
}

/// The number of leading one bits of `bytes`; nullopt when a one follows a zero.
std::optional<int> contiguousOnes(const uint8_t* bytes, size_t n) {
  int ones = 0;
  bool ended = false;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t b = bytes[i];
    if (ended && b != 0) return std::nullopt;
    const int lead = std::countl_one(b);
    if (static_cast<uint8_t>(b << lead) != 0) return std::nullopt;
    ones += lead;
    if (lead < 8) ended = true;
  }
  return ones;
}

}  // namespace

std::string IpAddress::str() const {
  char text[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(family == 4 ? AF_INET : AF_INET6, bytes.data(), text, sizeof text);
  return text;
}

std::string IpNetwork::str() const { return address.str() + "/" + std::to_string(prefix); }

bool IpNetwork::contains(const IpAddress& a) const {
  if (a.family != address.family) return false;
  for (int bit = 0; bit < prefix; ++bit) {
    const auto mask = static_cast<uint8_t>(0x80 >> (bit % 8));
    if ((a.bytes[bit / 8] & mask) != (address.bytes[bit / 8] & mask)) return false;
  }
  return true;
}

std::optional<IpAddress> parseIpAddress(std::string_view text) {
  IpAddress a;
  if (toBytes(AF_INET, text, a.bytes.data())) {
    a.family = 4;
    return a;
  }
  if (toBytes(AF_INET6, text, a.bytes.data())) {
    a.family = 6;
    return a;
  }
  return std::nullopt;
}

bool isIpv4(std::string_view text) {
  uint8_t bytes[4];
  return toBytes(AF_INET, text, bytes);
}

bool isIpv6(std::string_view text) {
  uint8_t bytes[16];
  return toBytes(AF_INET6, text, bytes);
}

std::optional<int> netmaskPrefix(std::string_view text, int family) {
  const auto mask = parseIpAddress(text);
  if (!mask || (family != 0 && mask->family != family)) return std::nullopt;
  return contiguousOnes(mask->bytes.data(), mask->family == 4 ? 4 : 16);
}

std::optional<IpNetwork> parseIpNetwork(std::string_view text) {
  const size_t slash = text.find('/');
  const auto address = parseIpAddress(text.substr(0, slash));
  if (!address) return std::nullopt;
  IpNetwork net{*address, address->bits()};
  if (slash == std::string_view::npos) return net;
  const std::string_view suffix = text.substr(slash + 1);
  if (const auto prefix = parseInt<unsigned>(suffix); prefix && suffix.size() <= 3) {
    if (*prefix > static_cast<unsigned>(net.address.bits())) return std::nullopt;
    net.prefix = static_cast<int>(*prefix);
    return net;
  }
  const auto prefix = address->family == 4 ? netmaskPrefix(suffix, 4) : std::nullopt;
  if (!prefix) return std::nullopt;
  net.prefix = *prefix;
  return net;
}

}  // namespace kiln::net
