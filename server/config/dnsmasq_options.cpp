#include "server/config/dnsmasq_options.h"

#include <cctype>

#include "shared/core/strings.h"
#include "shared/net/ip.h"

namespace kiln::server {
namespace {

bool isLeaseTime(std::string_view text) {
  if (text == "infinite") return true;
  if (text.empty() || text.size() > 12) return false;
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0) return false;
  const std::string_view unit = text.substr(digits);
  if (unit.size() > 1 || (unit.size() == 1 && std::string_view("smhdw").find(unit[0]) == std::string_view::npos)) {
    return false;
  }
  const auto number = parseInt<uint64_t>(text.substr(0, digits));
  if (!number) return false;
  uint64_t seconds = *number;
  switch (unit.empty() ? 's' : unit[0]) {
    case 'm': seconds *= 60; break;
    case 'h': seconds *= 3600; break;
    case 'd': seconds *= 86400; break;
    case 'w': seconds *= 604800; break;
    default: break;
  }
  return seconds >= 120;
}

}  // namespace

std::string DhcpRange::dnsmasqValue() const {
  std::string out = start + "," + end;
  if (!netmask.empty()) out += "," + netmask;
  if (!leaseTime.empty()) out += "," + leaseTime;
  return out;
}

std::optional<uint32_t> ipv4Number(std::string_view text) {
  if (!net::isIpv4(text)) return std::nullopt;
  const auto address = net::parseIpAddress(text);
  if (!address || address->family != 4) return std::nullopt;
  return (uint32_t{address->bytes[0]} << 24) | (uint32_t{address->bytes[1]} << 16) |
         (uint32_t{address->bytes[2]} << 8) | uint32_t{address->bytes[3]};
}

Result<std::vector<DhcpRange>> parseDhcpRanges(std::string_view text) {
  std::vector<DhcpRange> out;
  size_t number = 0;
  for (const auto& item : splitTrimmed(text, ';')) {
    ++number;
    const std::string where = "range " + std::to_string(number) + " (\"" + item + "\")";
    if (item.size() > 200) return invalid(where + " is too long");
    const auto parts = split(item, ',');
    if (parts.size() < 2 || parts.size() > 4) {
      return invalid(where + ": expected START,END[,NETMASK][,LEASE]");
    }
    DhcpRange range;
    range.start = trim(parts[0]);
    range.end = trim(parts[1]);
    const auto start = ipv4Number(range.start);
    const auto end = ipv4Number(range.end);
    if (!start) return invalid(where + ": START is not an IPv4 address");
    if (!end) return invalid(where + ": END is not an IPv4 address");
    if (*start > *end) return invalid(where + ": START is after END");
    for (size_t i = 2; i < parts.size(); ++i) {
      const std::string part = trim(parts[i]);
      if (i == 2 && net::isIpv4(part)) {
        const auto prefix = net::netmaskPrefix(part, 4);
        if (!prefix || *prefix == 0) return invalid(where + ": " + part + " is not a netmask");
        const uint32_t mask = *prefix == 32 ? 0xffffffffu : ~(0xffffffffu >> *prefix);
        if ((*start & mask) != (*end & mask)) {
          return invalid(where + ": START and END are not in one subnet of netmask " + part);
        }
        range.netmask = part;
      } else if (i == parts.size() - 1 && isLeaseTime(part)) {
        range.leaseTime = part;
      } else {
        return invalid(where + ": \"" + part +
                       "\" is neither a netmask nor a lease time (digits with s, m, h, d or w, "
                       "at least 2 minutes, or infinite)");
      }
    }
    out.push_back(std::move(range));
  }
  return out;
}

std::optional<std::string> interfaceNameProblem(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name.size() > 15) return "is longer than 15 bytes";
  if (name == "." || name == "..") return "is not an interface name";
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') {
      return "may hold only letters, digits, '_', '.' and '-'";
    }
  }
  return std::nullopt;
}

bool dnsmasqSafeValue(std::string_view value) {
  if (value.empty() || value.size() > 1024) return false;
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) return false;
    if (c == ',' || c == '#' || c == '"' || c == '\'' || c == '\\') return false;
  }
  return true;
}

}  // namespace kiln::server
