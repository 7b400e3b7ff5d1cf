// Fuzz target agent_tool_output (docs/fuzzing.md): what kiln-agent reads from the machine it
// runs on. The first byte chooses the reader ('0' to '9', or any other byte modulo 10), the
// rest is its input:
//   '0' mdadm --detail          '1' mdadm --examine        '2' /proc/mdstat
//   '3' sgdisk -p               '4' a disk's first sector (MBR)
//   '5' a /sys + /proc tree: records "path\ncontent" separated by NUL bytes ("@path\ntarget"
//       is a symbolic link), read by the disk lister and the inventory as the agent does
//       before its heartbeat
//   '6' the kernel command line (/proc/cmdline)
//   '7' kernel block device and partition names
//   '8' efibootmgr's listing of the firmware's boot entries
//   '9' an EFI system partition of the image being deployed, as a tree of records like '5'
//       (the BOOTX64.CSV files and loader names come from the image)
//   'n' a network_data.json from a virtual media ISO (`kiln-agent network-config`); 'n' is
//       taken out of the modulo choice

// Parsers must not crash, and what they accept must hold together.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/agent_config.h"
#include "agent/disk/block_device_lister.h"
#include "agent/disk/mbr.h"
#include "agent/disk/partition_naming.h"
#include "agent/disk/root_device_hints.h"
#include "agent/disk/sgdisk.h"
#include "agent/disk/uefi_boot.h"
#include "agent/hardware/inventory.h"
#include "agent/hardware/sysfs.h"
#include "agent/network/network_data.h"
#include "agent/raid/mdadm.h"
#include "agent/server_client.h"
#include "shared/core/log.h"
#include "shared/http/http_client.h"
#include "shared/json/json_util.h"
#include "shared/protocol/messages.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using namespace kiln;
using namespace kiln::agent;

/// A /sys and /proc tree held in memory (the fuzz input's records).
class MemorySysfs final : public SysfsReader {
 public:
  explicit MemorySysfs(std::string_view records) {
    while (!records.empty()) {
      const size_t end = records.find('\0');
      const std::string_view record = records.substr(0, end);
      records = end == std::string_view::npos ? std::string_view() : records.substr(end + 1);
      const size_t eol = record.find('\n');
      std::string path(record.substr(0, eol));
      const std::string content(eol == std::string_view::npos ? "" : record.substr(eol + 1));
      if (path.starts_with("@")) {
        links_[path.substr(1)] = content;
      } else {
        files_[path] = content;
      }
    }
  }

  std::optional<std::string> read(std::string_view path) override {
    auto it = files_.find(std::string(path));
    if (it == files_.end()) return std::nullopt;
    return it->second;
  }
  std::vector<std::string> list(std::string_view dir) override {
    std::vector<std::string> names;
    const std::string prefix = dir.ends_with('/') ? std::string(dir) : std::string(dir) + "/";
    auto collect = [&](const auto& entries) {
      for (auto it = entries.lower_bound(prefix); it != entries.end(); ++it) {
        if (!it->first.starts_with(prefix)) break;
        const std::string rest = it->first.substr(prefix.size());
        const std::string name = rest.substr(0, rest.find('/'));
        if (!name.empty()) names.push_back(name);
      }
    };
    collect(files_);
    collect(links_);
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
  }
  bool exists(std::string_view path) override {
    const std::string p(path);
    if (files_.count(p) || links_.count(p)) return true;
    return !list(path).empty();
  }
  std::optional<std::string> readLink(std::string_view path) override {
    auto it = links_.find(std::string(path));
    if (it == links_.end()) return std::nullopt;
    return it->second;
  }

 private:
  std::map<std::string, std::string> files_;
  std::map<std::string, std::string> links_;
};

/// Keeps the last request's body; the server is unreachable.
class RecordingHttpClient final : public HttpClient {
 public:
  Result<HttpResponse> send(const HttpRequest& request) override {
    body = request.body;
    return std::unexpected(Error{ErrorCode::Unavailable, "no server (fuzzing)"});
  }
  Result<HttpResponse> stream(const HttpRequest& request, const BodySink&) override {
    return send(request);
  }
  std::string body;
};

void mdadmDetail(std::string_view text) {
  auto detail = parseMdadmDetail(text);
  if (!detail) return;
  (void)detail->memberDevices();
}

void sgdiskPrint(std::string_view text) {
  auto table = parseSgdiskPrint(text);
  if (!table) return;
  for (const GptPartition& p : table->partitions) {
    // GptPartition::sizeSectors() and the config-drive placement rely on it.
    if (p.endSector < p.startSector) {
      fuzz::fail("parseSgdiskPrint accepted a partition that ends before it starts", text);
    }
  }
}

void mbr(std::string_view bytes) {
  std::string sector(bytes.substr(0, 512));
  sector.resize(512, '\0');
  auto entries = parseMbr(std::span(reinterpret_cast<const uint8_t*>(sector.data()), sector.size()));
  if (!entries) return;
  const uint64_t diskSectors = 1ULL << 32;
  (void)planMbrPartitionAtEnd(*entries, diskSectors, 64ULL << 20);
}

/// What the agent does with the machine's tree before it heartbeats: list the disks, pick a
/// root device, collect the inventory and serialise the heartbeat that carries it.
void sysfsTree(std::string_view records) {
  MemorySysfs sysfs(records);
  const std::vector<BlockDevice> disks = listDisks(sysfs);
  (void)nicMacAddresses(sysfs);
  (void)chooseRootDevice(disks, nlohmann::json::object());
  protocol::HeartbeatRequest beat;
  beat.agentVersion = "kiln-agent fuzz";
  beat.inventory = collectInventory(sysfs, disks, "x86_64");
  // The heartbeat that carries it, as the agent sends it.
  RecordingHttpClient http;
  HttpServerClient server(http, "http://192.0.2.1:6385");
  (void)server.heartbeat("11111111-1111-4111-8111-111111111111", beat);
  fuzz::checkJsonText(http.body, "the heartbeat carrying the inventory");
}

void kernelCommandLine(std::string_view cmdline) {
  auto config = parseAgentArgs({}, cmdline, "");
  if (!config) return;
  if (config->apiUrl.empty()) fuzz::fail("parseAgentArgs accepted a command line without an API URL", cmdline);
}

void deviceNames(std::string_view name) {
  (void)isVirtualBlockDeviceName(name);
  (void)isMdDevice(name);
  (void)holderDisk(name);
  for (int number : {1, 9, 10, 128}) (void)partitionPath(name, number);
}

void efibootmgrListing(std::string_view text) {
  for (const EfiBootEntry& entry : parseEfibootmgrList(text)) {
    // The number goes back to efibootmgr as -b NUMBER.
    if (entry.number.size() != 4) fuzz::fail("parseEfibootmgrList returned a bad entry number", text);
  }
}

void espTree(std::string_view records) {
  MemorySysfs esp(records);
  const EspContent content = readEspContent(esp);
  for (const EfiLoader& loader : content.loaders) {
    // A loader path is handed to efibootmgr -l: \EFI\<dir>\<file>, each part printable ASCII
    // and neither "." nor ".."; its label goes to -L and is printable ASCII.
    const std::string_view prefix = "\\EFI\\";
    bool ok = loader.path.starts_with(prefix) && !loader.label.empty();
    std::string_view rest = std::string_view(loader.path).substr(ok ? prefix.size() : 0);
    int parts = 0;
    while (ok) {
      const size_t end = rest.find('\\');
      const std::string_view part = rest.substr(0, end);
      ok = !part.empty() && part != "." && part != ".." &&
           std::all_of(part.begin(), part.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '/'; });
      ++parts;
      if (end == std::string_view::npos) break;
      rest.remove_prefix(end + 1);
    }
    ok = ok && parts == 2 &&
         std::all_of(loader.label.begin(), loader.label.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
    if (!ok) fuzz::fail("readEspContent returned a loader efibootmgr must not get", records);
  }
}

/// network_data: the plan may only name the machine's NICs or interfaces it makes (bondN,
/// NIC.VID, vlanN), run `ip`, write bonding files under class/net, and never put input text
/// with spaces or control characters into a command or a sysfs file.
void networkData(std::string_view text) {
  (void)kiln::agent::prefixLength(std::string(text.substr(0, 64)));
  auto parsed = parseJson(text);
  if (!parsed) return;
  static const std::vector<kiln::agent::Nic> nics = {
      {"eth0", "52:54:00:00:00:01"}, {"eth1", "52:54:00:00:00:02"}, {"enp129s0f1np1", "52:54:00:00:00:03"}};
  auto plan = kiln::agent::planNetwork(*parsed, nics);
  if (!plan) return;
  auto plain = [](const std::string& word) {
    return !word.empty() && word.size() <= 64 &&
           std::all_of(word.begin(), word.end(), [](char c) { return c > 0x20 && c < 0x7f; });
  };
  for (const auto& a : plan->actions) {
    if (a.argv.empty()) {
      if (!a.path.starts_with("class/net/") || a.path.find("..") != std::string::npos || !plain(a.value)) {
        fuzz::fail("network_data planned a sysfs write it must not", a.path + " < " + a.value);
      }
      continue;
    }
    if (a.argv.front() != "ip" || !std::all_of(a.argv.begin(), a.argv.end(), plain)) {
      fuzz::fail("network_data planned a command it must not", dumpJson(nlohmann::json(a.argv)));
    }
  }
  for (const auto* list : {&plan->staticInterfaces, &plan->dhcpInterfaces, &plan->enslaved}) {
    for (const auto& name : *list) {
      if (name.empty() || name.size() > 15 || !plain(name)) fuzz::fail("network_data named an interface badly", name);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = [] {
    Logger::setSink([](std::string_view) {});
    return true;
  }();
  (void)quiet;
  fuzz::InputReader input(data, size);
  const uint8_t first = input.byte();
  const std::string_view text = input.rest();
  if (first == 'n') {
    networkData(text);
    return 0;
  }
  const uint8_t mode = first >= '0' && first <= '9' ? first - '0' : first % 10;
  switch (mode) {
    case 0: mdadmDetail(text); break;
    case 1: (void)parseMdadmExamine(text); break;
    case 2: (void)parseMdstat(text); break;
    case 3: sgdiskPrint(text); break;
    case 4: mbr(text); break;
    case 5: sysfsTree(text); break;
    case 6: kernelCommandLine(text); break;
    case 7: deviceNames(text); break;
    case 8: efibootmgrListing(text); break;
    case 9: espTree(text); break;
  }
  return 0;
}
