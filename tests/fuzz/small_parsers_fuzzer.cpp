// Fuzz target small_parsers (docs/fuzzing.md): the small text parsers every component shares.
// The first byte chooses the parser (any other byte picks one by its value modulo 6), the
// rest is its input:
//   'm' a MAC address (shared/net/mac.h), both separator choices
//   'i' an IP address, network or netmask (shared/net/ip.h)
//   'c' a capabilities string (server/model/capabilities.h): a key line, a value line, then
//       the string
//   'n' an integer (parseInt, shared/core/strings.h) of several types and both syntaxes
//   's' a list (split and splitTrimmed): the next byte is the separator
//   'l' a ramdisk log bundle as an agent sends it (server/drivers/agent/ramdisk_logs.h,
//       decodeLogBundle): the input as the base64 text, and the input's bytes base64-encoded
//       (so gzip and tar are reached); the bytes as a tar archive (listTar, tarMemberContent)
//   'r' a BMC's Redfish sensor resource (server/drivers/redfish/redfish_sensors.h): the input
//       as JSON read as a Thermal, a Power, a Drive and a SimpleStorage resource and as a
//       System, and the samples made of it (server/drivers/sensor_metrics.h): valid names,
//       bounded label values and series, a rendering that lists each family once
//       (selected by 'r' only, so the other parsers' inputs keep their meaning)
//   'k' a ramdisk deployment's instance_info (server/drivers/ramdisk/ramdisk_deploy.h): the
//       input as JSON read by instanceBoot, its kernel command line and the iPXE, pxelinux and
//       GRUB texts made of what it accepts (no line more than the templates have), and
//       autodetect's choice (selected by 'k' only)
// None may crash, and what they accept must hold together: canonical forms parse back to
// themselves, parseInt agrees with a reference reading of the digits.
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <set>
#include <string>
#include <string_view>

#include "server/drivers/agent/ramdisk_logs.h"
#include "server/drivers/netboot/netboot.h"
#include "server/drivers/ramdisk/ramdisk_deploy.h"
#include "server/drivers/redfish/redfish_sensors.h"
#include "server/drivers/sensor_metrics.h"
#include "server/model/capabilities.h"
#include "shared/core/base64.h"
#include "shared/core/gzip.h"
#include "shared/core/strings.h"
#include "shared/core/tar.h"
#include "shared/metrics/metrics.h"
#include "shared/net/ip.h"
#include "shared/net/mac.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using namespace kiln;
using kiln::fuzz::fail;

bool isDigit(char c) { return c >= '0' && c <= '9'; }

void checkMac(std::string_view text) {
  const auto colon = net::parseMac(text, net::MacSeparators::Colon);
  const auto either = net::parseMac(text, net::MacSeparators::ColonOrDash);
  if (colon && colon != either) fail("parseMac: ':' form not read alike with '-' allowed", text);
  if (!either) return;
  const std::string& mac = *either;
  for (size_t i = 0; i < mac.size(); ++i) {
    const char c = mac[i];
    const bool ok = i % 3 == 2 ? c == ':' : (isDigit(c) || (c >= 'a' && c <= 'f'));
    if (mac.size() != 17 || !ok) fail("parseMac: not canonical: " + mac, text);
  }
  if (net::parseMac(mac) != mac) fail("parseMac: canonical form does not parse back", text);
  std::string dashed = mac;
  for (char& c : dashed) c = c == ':' ? '-' : c;
  if (net::pxeMac(mac) != "01-" + dashed) fail("pxeMac: " + net::pxeMac(mac), text);
  if (net::pxeMac(text) != "01-" + dashed) fail("pxeMac of the input differs", text);
}

void checkIp(std::string_view text) {
  if (const auto address = net::parseIpAddress(text)) {
    if (net::isIpv4(text) != (address->family == 4) ||
        net::isIpv6(text) != (address->family == 6)) {
      fail("isIpv4/isIpv6 disagree with parseIpAddress", text);
    }
    if (net::parseIpAddress(address->str()) != address)
      fail("address str() does not parse back", text);
  } else if (net::isIpv4(text) || net::isIpv6(text)) {
    fail("isIpv4/isIpv6 accept what parseIpAddress refuses", text);
  }
  if (const auto network = net::parseIpNetwork(text)) {
    if (network->prefix < 0 || network->prefix > network->address.bits()) {
      fail("parseIpNetwork: prefix " + std::to_string(network->prefix), text);
    }
    if (!network->contains(network->address)) fail("a network does not contain its address", text);
    if (net::parseIpNetwork(network->str()) != network)
      fail("network str() does not parse back", text);
  }
  for (int family : {0, 4, 6}) {
    if (const auto prefix = net::netmaskPrefix(text, family)) {
      const int bits = net::parseIpAddress(text)->bits();
      if (*prefix < 0 || *prefix > bits || (family != 0 && bits != (family == 4 ? 32 : 128))) {
        fail("netmaskPrefix: " + std::to_string(*prefix), text);
      }
    }
  }
}

void checkCapabilities(fuzz::InputReader& in) {
  const std::string key(in.until("\n"));
  const std::string value(in.until("\n"));
  const std::string_view caps = in.rest();
  const auto items = server::parseCapabilities(caps);
  for (const auto& item : items) {
    if (item.key.find_first_of(",:") != std::string::npos ||
        item.value.find_first_of(",:") != std::string::npos || item.key != trim(item.key) ||
        item.value != trim(item.value)) {
      fail("parseCapabilities: item " + item.key + ":" + item.value, caps);
    }
  }
  std::optional<std::string> first;
  for (const auto& item : items) {
    if (item.key == key) {
      first = item.value;
      break;
    }
  }
  if (server::getCapability(caps, key) != first) fail("getCapability disagrees with parse", caps);
  const std::string entry = key + ":" + value;
  const std::string added = server::addCapability(caps, key, value);
  if (!added.starts_with(caps) || !added.ends_with(entry)) fail("addCapability: " + added, caps);
  const std::string set = server::setCapability(caps, key, value);
  if (!set.ends_with(entry) || set.size() > caps.size() + entry.size() + 1) {
    fail("setCapability: " + set, caps);
  }
  const std::string unset = server::unsetCapability(caps, key);
  for (const std::string_view item : split(unset, ',')) {
    if (item.starts_with(key + ":")) fail("unsetCapability left an item: " + unset, caps);
  }
  if (unset.size() > caps.size()) fail("unsetCapability grew the string", caps);
}

/// What parseInt<T>(text, syntax) should give: the digits read in 128 bits, nullopt when the
/// text is not a number of that syntax or the value does not fit T.
template <typename T>
std::optional<T> reference(std::string_view text, IntSyntax syntax) {
  size_t i = 0;
  if (syntax == IntSyntax::Strtol) {
    while (i < text.size() && kAsciiSpace.find(text[i]) != std::string_view::npos) ++i;
    if (i < text.size() && text[i] == '+') {
      ++i;
      if (i == text.size() || !isDigit(text[i])) return std::nullopt;
    }
  }
  bool negative = false;
  if (i < text.size() && text[i] == '-' && std::numeric_limits<T>::is_signed) {
    negative = true;
    ++i;
  }
  if (i == text.size()) return std::nullopt;
  __int128 value = 0;
  for (; i < text.size(); ++i) {
    if (!isDigit(text[i])) return std::nullopt;
    value = value * 10 + (text[i] - '0');
    if (value > (static_cast<__int128>(1) << 70)) return std::nullopt;  // past any T
  }
  if (negative) value = -value;
  if (value < static_cast<__int128>(std::numeric_limits<T>::min()) ||
      value > static_cast<__int128>(std::numeric_limits<T>::max())) {
    return std::nullopt;
  }
  return static_cast<T>(value);
}

template <typename T>
void checkInt(std::string_view text, const char* type) {
  for (const IntSyntax syntax : {IntSyntax::Digits, IntSyntax::Strtol}) {
    const auto parsed =
        parseInt<T>(text, std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), syntax);
    const auto expected = reference<T>(text, syntax);
    if (parsed.has_value() != expected.has_value() || (parsed && *parsed != *expected)) {
      fail(std::string("parseInt<") + type + "> differs from the reference reading", text);
    }
    if (!parsed && parsed.error().message.empty()) fail("parseInt: an error without words", text);
    // A range only narrows what is accepted.
    const T low = static_cast<T>(std::numeric_limits<T>::is_signed ? -100 : 0);
    const auto ranged = parseInt<T>(text, low, static_cast<T>(100), syntax);
    if (ranged.has_value() != (parsed && *parsed >= low && *parsed <= 100)) {
      fail(std::string("parseInt<") + type + "> range check", text);
    }
  }
}

void checkLists(fuzz::InputReader& in) {
  const char sep = static_cast<char>(in.byte());
  const std::string_view text = in.rest();
  const auto parts = split(text, sep);
  std::string joined;
  for (size_t i = 0; i < parts.size(); ++i)
    joined += (i ? std::string(1, sep) : "") + std::string(parts[i]);
  if (joined != text) fail("split does not join back", text);
  const auto items = splitTrimmed(text, sep);
  if (items.size() > parts.size()) fail("splitTrimmed has more items than split", text);
  for (const auto& item : items) {
    if (item.empty() || item != trim(item) || item.find(sep) != std::string::npos) {
      fail("splitTrimmed: item '" + item + "'", text);
    }
  }
}

void checkLogBundle(std::string_view bytes) {
  // As the agent's text.
  if (auto decoded = server::agent::decodeLogBundle(bytes); decoded) {
    if (decoded->size() > server::agent::kMaxLogBundleBytes)
      fail("decodeLogBundle: too large", bytes);
  } else if (decoded.error().message.rfind("Invalid ramdisk log bundle: ", 0) != 0) {
    fail("decodeLogBundle: " + decoded.error().message, bytes);
  }
  // As its bytes: accepted only when they are gzip of a tar archive.
  if (auto decoded = server::agent::decodeLogBundle(base64Encode(bytes)); decoded) {
    if (*decoded != bytes) fail("decodeLogBundle changed the bytes", bytes);
    auto tar = gunzip(bytes, server::agent::kMaxLogBundleInflatedBytes);
    if (!tar || !listTar(*tar)) fail("decodeLogBundle accepted what is not a tar.gz", bytes);
  }
  // As a tar archive: every listed member can be read, with its size.
  if (auto members = listTar(bytes, 64)) {
    for (const auto& m : *members) {
      if (m.type != '0' && m.type != '\0') continue;
      auto content = tarMemberContent(bytes, m.name);
      if (!content || content->size() != m.size)
        fail("tarMemberContent disagrees with listTar", bytes);
    }
  }
}

void checkRedfishSensors(std::string_view text) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded()) return;
  server::SensorData data = server::parseRedfishSystemExtra(doc);
  for (auto& r : server::parseRedfishThermal(doc, "1")) data.sensors.push_back(std::move(r));
  for (auto& r : server::parseRedfishPower(doc, "1")) data.sensors.push_back(std::move(r));
  for (auto& r : server::parseRedfishSimpleStorage(doc, "1")) data.sensors.push_back(std::move(r));
  if (auto d = server::parseRedfishDrive(doc, "s", "1")) data.sensors.push_back(std::move(*d));
  if (data.sensors.size() > 3 * server::kMaxRedfishSensorMembers + 1) {
    fail("redfish sensors: more members than the bound", text);
  }
  const auto samples = server::sensorSamples({"u", "n", ""}, data);
  if (samples.size() > server::kMaxSensorSeriesPerNode) fail("sensor samples: unbounded", text);
  for (const auto& s : samples) {
    if (!metrics::isValidMetricName(s.metric)) fail("sensor samples: metric " + s.metric, text);
    if (s.labelNames.size() != s.labelValues.size()) fail("sensor samples: labels", text);
    for (const auto& name : s.labelNames) {
      if (!metrics::isValidLabelName(name)) fail("sensor samples: label " + name, text);
    }
    for (const auto& value : s.labelValues) {
      if (value.size() > server::kMaxSensorLabelValueBytes) fail("sensor samples: value", text);
    }
  }
  server::SensorMetrics store;
  store.publish("h", {"u", "n", ""}, data);
  std::string out;
  metrics::TextWriter writer(out);
  store.render(writer);
  std::set<std::string_view> families;
  for (const std::string_view line : split(out, '\n')) {
    if (!line.starts_with("# TYPE ")) continue;
    if (!families.insert(line).second) fail("sensor rendering: a family twice", text);
  }
}

size_t lineCount(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

void checkRamdiskInstanceInfo(std::string_view text) {
  namespace rd = server::ramdisk;
  namespace nb = server::netboot;
  const auto parsed = nlohmann::json::parse(text, nullptr, false);
  if (parsed.is_discarded()) return;
  const std::string choice = rd::detectDeployInterface({"ramdisk", "direct"}, parsed);
  if (choice != "ramdisk" && choice != "direct") fail("detectDeployInterface: " + choice, text);
  if (!parsed.is_object()) return;
  const auto boot = rd::instanceBoot(nullptr, parsed);
  if (!boot) return;
  if ((boot->bootIso.empty()) == (boot->kernel.empty() || boot->ramdisk.empty())) {
    fail("instanceBoot: neither boot_iso nor kernel and ramdisk", text);
  }
  server::Config config;
  server::TaskContext task;
  task.instanceInfo = parsed;
  const auto cmdline = rd::netbootCommandLine(config, task, *boot);
  const auto isoLine = rd::isoCommandLine(*boot);
  // Whatever is accepted stays on the templates' own lines.
  const std::string line = cmdline ? *cmdline : "x";
  if (lineCount(nb::ramdiskScript(boot->kernel, boot->ramdisk, line)) !=
          lineCount(nb::ramdiskScript("k", "r", "x")) ||
      lineCount(nb::isoScript(boot->bootIso)) != lineCount(nb::isoScript("i")) ||
      lineCount(nb::pxeRamdiskConfig(boot->kernel, boot->ramdisk, line)) !=
          lineCount(nb::pxeRamdiskConfig("k", "r", "x")) ||
      lineCount(nb::grubRamdiskConfig(boot->kernel, boot->ramdisk, line)) !=
          lineCount(nb::grubRamdiskConfig("k", "r", "x")) ||
      (isoLine && lineCount(*isoLine) != 0)) {
    fail("a ramdisk boot text has a line of the input's own", text);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::InputReader in(data, size);
  uint8_t which = in.byte();
  if (which != 'm' && which != 'i' && which != 'c' && which != 'n' && which != 's' &&
      which != 'l' && which != 'r' && which != 'k') {
    which = static_cast<uint8_t>("micnsl"[which % 6]);
  }
  switch (which) {
    case 'm':
      checkMac(in.rest());
      break;
    case 'i':
      checkIp(in.rest());
      break;
    case 'c':
      checkCapabilities(in);
      break;
    case 'n':
      checkInt<int>(in.rest(), "int");
      checkInt<unsigned>(in.rest(), "unsigned");
      checkInt<int64_t>(in.rest(), "int64_t");
      checkInt<uint64_t>(in.rest(), "uint64_t");
      checkInt<uint16_t>(in.rest(), "uint16_t");
      break;
    case 'l':
      checkLogBundle(in.rest());
      break;
    case 'r':
      checkRedfishSensors(in.rest());
      break;
    case 'k':
      checkRamdiskInstanceInfo(in.rest());
      break;
    default:
      checkLists(in);
      break;
  }
  return 0;
}
