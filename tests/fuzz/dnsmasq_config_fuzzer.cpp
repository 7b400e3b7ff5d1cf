// Fuzz target dnsmasq_config (docs/fuzzing.md): everything that becomes a line of dnsmasq's
// files (docs/provisioning-network.md). The first byte chooses:
//   'r' the rest is a [dnsmasq] dhcp_range value: parseDhcpRanges;
//   'i' the rest is an interface name: interfaceNameProblem;
//   'c' the rest is a whole kiln.conf: parseConfig, then (dnsmasq with manage) dnsmasqConfig;
//   any other: a node, '\n'-separated: provision state, boot interface, boot target, the http
//       ISO, then MACs: dhcpAnswerFor under a fixed configuration, and the host lines.
// Never a crash, and nothing accepted can carry a second line, a comment or an option of its
// own: an accepted range's value holds only digits, dots, commas and a lease unit and parses
// back to the same ranges; an accepted interface name only [A-Za-z0-9_.-]; the generated
// configuration has exactly the lines the option table allows (every line is a comment or one
// of dnsmasq's keys Kiln writes); a node's option lines and MACs have no control character,
// space or '#', each MAC is canonical and each option line starts with its tag.
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "server/config.h"
#include "server/config/dnsmasq_options.h"
#include "server/drivers/dhcp/dhcp_provider.h"
#include "server/drivers/dhcp/dnsmasq_process.h"
#include "shared/core/strings.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using namespace kiln;
using kiln::fuzz::fail;

bool plainLine(std::string_view text) {
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f || c == '#') return false;
  }
  return true;
}

void ranges(std::string_view text) {
  auto parsed = server::parseDhcpRanges(text);
  if (!parsed) return;
  std::string again;
  for (const auto& r : *parsed) {
    const std::string value = r.dnsmasqValue();
    for (char c : value) {
      if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != ',' &&
          std::string_view("smhdwinfte").find(c) == std::string_view::npos) {
        fail("dnsmasq_config: an accepted range holds an unexpected character", value);
      }
    }
    again += value + ";";
  }
  auto reparsed = server::parseDhcpRanges(again);
  if (!reparsed || *reparsed != *parsed) fail("dnsmasq_config: a range does not parse back", again);
}

void config(std::string_view text) {
  auto c = server::parseConfig(std::string(text), "fuzz.conf");
  if (!c || c->dhcpProvider != "dnsmasq") return;
  static const std::set<std::string> kKeys = {
      "port", "no-resolv", "no-hosts", "interface", "bind-interfaces", "dhcp-range", "dhcp-option",
      "dhcp-hostsdir", "dhcp-optsdir", "dhcp-leasefile", "dhcp-match", "dhcp-userclass",
      "dhcp-vendorclass", "dhcp-option-force", "dhcp-ignore", "enable-tftp", "tftp-root", "log-dhcp"};
  c->dnsmasqManage = true;
  if (c->dnsmasqInterface.empty()) c->dnsmasqInterface = "prov0";
  auto generated = server::dnsmasqConfig(*c);
  if (!generated) return;
  for (const auto& line : split(*generated, '\n')) {
    if (line.empty() || line.front() == '#') continue;
    const std::string key(line.substr(0, line.find('=')));
    if (!kKeys.count(key)) fail("dnsmasq_config: a generated line with an unexpected key", line);
    if (!plainLine(line)) fail("dnsmasq_config: a generated line with space or '#'", line);
  }
}

void node(kiln::fuzz::InputReader& in) {
  static const server::Config config = [] {
    auto c = server::parseConfig(
        "[dhcp]\ndhcp_provider = dnsmasq\n[conductor]\napi_url = http://192.0.2.1:6385\n", "fuzz");
    if (!c) fail("dnsmasq_config: the fixed configuration does not parse");
    return *c;
  }();
  server::DhcpNode n;
  n.uuid = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123";
  n.provisionState = std::string(in.until("\n"));
  n.bootInterface = std::string(in.until("\n"));
  n.bootTarget = std::string(in.until("\n"));
  n.httpBootIso = std::string(in.until("\n"));
  while (!in.empty()) n.macs.emplace_back(in.until("\n"));
  const auto answer = server::dhcpAnswerFor(n, config);
  if (!answer) return;
  for (const auto& mac : answer->macs) {
    if (mac.size() != 17 || !plainLine(mac) || asciiLower(mac) != mac) {
      fail("dnsmasq_config: a MAC that is not canonical", mac);
    }
    if (server::dhcpHostFileName(mac).find('/') != std::string::npos) fail("dnsmasq_config: a host file name with '/'", mac);
  }
  for (const auto& line : answer->options) {
    if (!plainLine(line)) fail("dnsmasq_config: an option line with space, control or '#'", line);
    if (!line.starts_with("tag:" + answer->tag + ",")) fail("dnsmasq_config: an option line without its tag", line);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::fuzz::InputReader in(data, size);
  switch (in.byte()) {
    case 'r':
      ranges(in.rest());
      break;
    case 'i':
      if (!kiln::server::interfaceNameProblem(in.rest())) {
        for (char c : in.rest()) {
          if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') {
            fail("dnsmasq_config: an accepted interface name with a stray character", in.rest());
          }
        }
      }
      break;
    case 'c':
      config(in.rest());
      break;
    default:
      node(in);
      break;
  }
  return 0;
}
