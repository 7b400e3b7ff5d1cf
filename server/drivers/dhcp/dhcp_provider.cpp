#include "server/drivers/dhcp/dhcp_provider.h"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include <nlohmann/json.hpp>

#include "server/config/dnsmasq_options.h"
#include "server/drivers/interfaces.h"
#include "server/drivers/netboot/netboot.h"
#include "server/drivers/vmedia/vmedia_boot.h"
#include "server/model/node.h"
#include "server/model/provision_state.h"
#include "server/model/resources.h"
#include "shared/core/file.h"
#include "shared/core/log.h"
#include "shared/core/strings.h"
#include "shared/net/mac.h"

namespace kiln::server {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::string_view kFilePrefix = "kiln-";

std::string stringField(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

/// FNV-1a, 64 bits: the same on every server and every build (std::hash is neither).
uint64_t fnv1a(std::string_view text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

/// States in which a node with boot_target agent or ramdisk boots it from the network.
bool bootsInState(std::string_view s, std::string_view target) {
  namespace st = state;
  for (auto x : {st::kCleaning, st::kCleanWait, st::kCleanHold, st::kDeploying, st::kDeployWait,
                 st::kDeployHold, st::kInspecting, st::kInspectWait, st::kRescuing,
                 st::kRescueWait, st::kRescue, st::kServicing, st::kServiceWait,
                 st::kServiceHold}) {
    if (x == s) return true;
  }
  if (s == st::kActive) return target == "ramdisk";  // the ramdisk deploy's instance
  if (s == st::kManageable || s == st::kAvailable) return target == "agent";  // fast track
  return false;
}

}  // namespace

DhcpNode dhcpNodeOf(const Record& node, const json& internalInfo, const std::vector<Record>& ports) {
  DhcpNode out;
  out.uuid = node.uuid();
  out.provisionState = node.str(kNodeProvisionState);
  out.maintenance = node.flag(kNodeMaintenance);
  out.bootInterface = node.str(kNodeBootInterface);
  out.bootTarget = stringField(internalInfo, "boot_target");
  out.httpBootIso = stringField(internalInfo, "http_boot_iso");
  for (const auto& port : ports) {
    // Ironic's rule: only ports with pxe_enabled (true unless set false) network-boot.
    if (!port[kPortPxeEnabled].isNull() && !port.flag(kPortPxeEnabled)) continue;
    out.macs.push_back(port.str(kPortAddress));
  }
  return out;
}

DhcpNode dhcpNodeOf(const TaskContext& task) {
  return dhcpNodeOf(task.node, task.internalInfo, task.ports);
}

Result<void> syncDhcp(const TaskContext& task) {
  if (!task.dhcp) return {};
  return task.dhcp->syncNode(dhcpNodeOf(task));
}

bool dhcpWanted(const DhcpNode& node) {
  if (node.maintenance) return false;
  if (node.bootTarget != "agent" && node.bootTarget != "ramdisk") return false;
  return bootsInState(node.provisionState, node.bootTarget);
}

std::optional<DhcpAnswer> dhcpAnswerFor(const DhcpNode& node, const Config& config) {
  if (!dhcpWanted(node)) return std::nullopt;
  DhcpAnswer answer;
  for (const auto& mac : node.macs) {
    // Stored MACs were checked by the API; a row changed behind its back is not written out.
    if (auto canonical = net::parseMac(mac)) answer.macs.push_back(*canonical);
  }
  if (answer.macs.empty()) return std::nullopt;

  const std::string api = netboot::configuredApiUrl(config);
  // The options without their tag: the firmware classes (tags set by the main configuration,
  // dnsmasq_process.h): "ipxe" (user class iPXE or option 175), "efi64" (client architecture 7
  // or 9), "httpclient" (vendor class HTTPClient: UEFI HTTP boot); then the boot file.
  std::vector<std::string> body;
  bool unsafe = false;
  auto add = [&](std::string_view classes, const std::string& bootFile) {
    // The URL parts were checked at start-up (config finish()), ISO names are Kiln's own; a
    // value that could end the option or the line anyway (a row changed behind the API's back)
    // is not written.
    if (!dnsmasqSafeValue(bootFile)) unsafe = true;
    body.push_back(std::string(classes) + ",option:bootfile-name," + bootFile);
  };
  auto ipxeChain = [&] {
    add("tag:!ipxe,tag:!efi64,tag:!httpclient", "undionly.kpxe");
    add("tag:!ipxe,tag:efi64,tag:!httpclient", "snponly.efi");
    add("tag:ipxe", api + "/boot.ipxe");
  };
  const std::string& boot = node.bootInterface;
  if (boot == "ipxe" || boot == "http-ipxe") {
    ipxeChain();
    add("tag:!ipxe,tag:httpclient", api + "/boot/loaders/snponly.efi");
  } else if (boot == "http") {
    ipxeChain();  // firmware without HTTP boot falls back to PXE and iPXE
    const std::string iso = node.httpBootIso.empty()                ? ""
                            : netboot::isUrl(node.httpBootIso) ? node.httpBootIso  // deploy_iso
                                                               : vmedia::bootIsoUrl(config, node.httpBootIso);
    add("tag:!ipxe,tag:httpclient", iso.empty() ? api + "/boot/loaders/snponly.efi" : iso);
  } else if (boot == "pxe") {
    add("tag:!efi64,tag:!httpclient", "pxelinux.0");
    add("tag:efi64,tag:!httpclient", "bootx64.efi");
  }
  // Other boot interfaces (virtual media, fake) boot from elsewhere: their ramdisk gets an
  // address only.
  if (unsafe) {
    Logger("dhcp").error("refused to write an unsafe DHCP option value", {{"node", node.uuid}});
    return std::nullopt;
  }
  if (!body.empty()) {
    std::string all = node.uuid;
    for (const auto& line : body) all += "\n" + line;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016" PRIx64, fnv1a(all));
    answer.tag = std::string(kFilePrefix) + hex;
    for (const auto& line : body) answer.options.push_back("tag:" + answer.tag + "," + line);
  }
  return answer;
}

std::string dhcpHostFileName(std::string_view mac) {
  std::string name(kFilePrefix);
  for (char c : mac) name += c == ':' ? '-' : asciiLower(c);
  return name;
}

std::string dhcpOptsFileName(std::string_view tag) {
  return std::string(tag);  // tags already start with "kiln-"
}

namespace {

class NoDhcp final : public DhcpProvider {
 public:
  std::string_view name() const override { return "none"; }
  Result<void> syncNode(const DhcpNode&) override { return {}; }
  Result<void> syncAll(const std::vector<DhcpNode>&) override { return {}; }
};

/// Writes dnsmasq's host and options files (see the header). Thread-safe.
class DnsmasqDhcp final : public DhcpProvider {
 public:
  DnsmasqDhcp(const Config& config, std::function<void()> onForgotten)
      : config_(config), onForgotten_(std::move(onForgotten)) {}

  std::string_view name() const override { return "dnsmasq"; }

  /// Makes the directories and reads what an earlier run left there.
  Result<void> open() {
    for (const auto& dir : {config_.dnsmasqHostsDir, config_.dnsmasqOptsDir}) {
      std::error_code ec;
      fs::create_directories(dir, ec);
      if (ec) return internalError("Cannot create " + dir + ": " + ec.message());
    }
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(config_.dnsmasqHostsDir, ec)) {
      const std::string file = entry.path().filename().string();
      if (file.rfind(kFilePrefix, 0) != 0) continue;
      if (auto content = readFile(entry.path().string())) hostFiles_[file] = *content;
    }
    for (const auto& entry : fs::directory_iterator(config_.dnsmasqOptsDir, ec)) {
      const std::string file = entry.path().filename().string();
      if (file.rfind(kFilePrefix, 0) == 0) optsFiles_.insert(file);
    }
    return {};
  }

  Result<void> syncNode(const DhcpNode& node) override {
    std::lock_guard lock(mutex_);
    const auto answer = dhcpAnswerFor(node, config_);
    KILN_TRY_VOID(apply(node.uuid, answer));
    return {};
  }

  Result<void> syncAll(const std::vector<DhcpNode>& nodes) override {
    std::lock_guard lock(mutex_);
    std::set<std::string> wantedHosts;  // host files that keep a positive entry
    std::set<std::string> wantedOpts;
    std::set<std::string> seen;
    for (const auto& node : nodes) {
      seen.insert(node.uuid);
      const auto answer = dhcpAnswerFor(node, config_);
      KILN_TRY_VOID(apply(node.uuid, answer));
      if (!answer) continue;
      for (const auto& mac : answer->macs) wantedHosts.insert(dhcpHostFileName(mac));
      if (!answer->tag.empty()) wantedOpts.insert(dhcpOptsFileName(answer->tag));
    }
    // Entries of nodes that are gone, and of MACs no node boots with.
    for (auto it = nodeMacs_.begin(); it != nodeMacs_.end();) {
      it = seen.count(it->first) ? std::next(it) : nodeMacs_.erase(it);
    }
    for (const auto& [file, content] : std::map(hostFiles_)) {
      if (wantedHosts.count(file) || isIgnore(content)) continue;
      KILN_TRY_VOID(writeHost(file, ignoreLine(content)));
    }
    bool forgot = false;
    for (const auto& file : std::set(optsFiles_)) {
      if (wantedOpts.count(file)) continue;
      std::error_code ec;
      fs::remove(fs::path(config_.dnsmasqOptsDir) / file, ec);
      optsFiles_.erase(file);
      forgot = true;
    }
    if (forgot && onForgotten_) onForgotten_();
    return {};
  }

 private:
  static bool isIgnore(const std::string& content) {
    return content.find(",ignore") != std::string::npos;
  }
  /// The ignore line for the MAC a host file names (its first field).
  static std::string ignoreLine(const std::string& content) {
    return content.substr(0, content.find(',')) + ",ignore\n";
  }

  /// Writes `content` into `dir`/`file` through a dot-file dnsmasq skips, then a rename.
  static Result<void> writeAtomically(const std::string& dir, const std::string& file,
                                      const std::string& content) {
    const fs::path target = fs::path(dir) / file;
    const fs::path temp = fs::path(dir) / ("." + file + ".tmp");
    KILN_TRY_VOID(writeFile(temp, content));
    std::error_code ec;
    fs::rename(temp, target, ec);
    if (ec) return internalError("Cannot write " + target.string() + ": " + ec.message());
    return {};
  }

  Result<void> writeHost(const std::string& file, const std::string& content) {
    auto it = hostFiles_.find(file);
    if (it != hostFiles_.end() && it->second == content) return {};
    KILN_TRY_VOID(writeAtomically(config_.dnsmasqHostsDir, file, content));
    hostFiles_[file] = content;
    log_.info("dhcp host entry written", {{"file", file}, {"entry", trim(content)}});
    return {};
  }

  /// The node's files for `answer` (nullopt: its MACs are ignored). Options first, so that a
  /// host entry never names a tag dnsmasq has no options for yet.
  Result<void> apply(const std::string& uuid, const std::optional<DhcpAnswer>& answer) {
    std::set<std::string> now;
    if (answer) {
      if (!answer->tag.empty()) {
        const std::string file = dhcpOptsFileName(answer->tag);
        if (!optsFiles_.count(file)) {
          std::string content;
          for (const auto& line : answer->options) content += line + "\n";
          KILN_TRY_VOID(writeAtomically(config_.dnsmasqOptsDir, file, content));
          optsFiles_.insert(file);
        }
      }
      for (const auto& mac : answer->macs) {
        std::string line = mac + ",set:kiln";
        if (!answer->tag.empty()) line += ",set:" + answer->tag;
        KILN_TRY_VOID(writeHost(dhcpHostFileName(mac), line + "\n"));
        owner_[mac] = uuid;
        now.insert(mac);
      }
    }
    // MACs the node had and no longer boots with (ports removed, boot over).
    auto& before = nodeMacs_[uuid];
    for (const auto& mac : before) {
      if (now.count(mac)) continue;
      // A port moved to a node that boots with it now: that node's entry stays.
      if (auto it = owner_.find(mac); it != owner_.end() && it->second != uuid) continue;
      const std::string file = dhcpHostFileName(mac);
      if (auto it = hostFiles_.find(file); it != hostFiles_.end() && !isIgnore(it->second)) {
        KILN_TRY_VOID(writeHost(file, mac + ",ignore\n"));
      }
    }
    before = std::move(now);
    return {};
  }

  const Config& config_;
  std::function<void()> onForgotten_;
  Logger log_{"dhcp"};
  std::mutex mutex_;
  std::map<std::string, std::string> hostFiles_;  ///< host file name -> what it holds
  std::set<std::string> optsFiles_;
  std::map<std::string, std::set<std::string>> nodeMacs_;  ///< node -> MACs with an entry
  std::map<std::string, std::string> owner_;  ///< MAC -> the node whose positive entry it has
};

}  // namespace

Result<std::unique_ptr<DhcpProvider>> makeDhcpProvider(const Config& config,
                                                        std::function<void()> onForgotten) {
  if (config.dhcpProvider != "dnsmasq") return std::unique_ptr<DhcpProvider>(new NoDhcp());
  auto provider = std::make_unique<DnsmasqDhcp>(config, std::move(onForgotten));
  KILN_TRY_VOID(provider->open());
  return std::unique_ptr<DhcpProvider>(std::move(provider));
}

}  // namespace kiln::server
