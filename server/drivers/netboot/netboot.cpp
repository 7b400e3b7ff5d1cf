#include "server/drivers/netboot/netboot.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <system_error>

#include "server/drivers/boot_mode.h"
#include "server/drivers/dhcp/dhcp_provider.h"
#include "server/drivers/ramdisk/ramdisk_deploy.h"
#include "server/local_files.h"
#include "server/model/resources.h"
#include "shared/core/base64.h"
#include "shared/core/file.h"
#include "shared/core/secrets.h"
#include "shared/core/strings.h"
#include "shared/net/mac.h"

namespace kiln::server::netboot {

namespace fs = std::filesystem;
using nlohmann::json;

bool isUrl(std::string_view location) {
  return location.rfind("http://", 0) == 0 || location.rfind("https://", 0) == 0;
}

namespace {

/// An agent image location as messages quote it: URLs masked (shared/core/secrets.h), local
/// paths as they are.
std::string quoteLocation(const std::string& location) {
  return location.find("://") == std::string::npos ? location : maskUrl(location);
}

}  // namespace

Result<DeployImages> deployImages(const Config& config, const json& driverInfo) {
  auto pick = [&](const char* key, const std::string& fallback) {
    auto it = driverInfo.find(key);
    if (it != driverInfo.end() && it->is_string() && !it->get<std::string>().empty()) {
      return it->get<std::string>();
    }
    return fallback;
  };
  DeployImages images{pick("deploy_kernel", config.deployKernel), pick("deploy_ramdisk", config.deployRamdisk)};
  std::vector<std::string> missing;
  if (images.kernel.empty()) missing.push_back("'deploy_kernel'");
  if (images.ramdisk.empty()) missing.push_back("'deploy_ramdisk'");
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    return invalid("Some parameters were missing in node's driver_info. Missing are: [" + list +
                   "] (or set [conductor] deploy_kernel / deploy_ramdisk)");
  }
  return images;
}

std::string kernelAppendParams(const Config& config, const json& driverInfo) {
  auto it = driverInfo.find("kernel_append_params");
  if (it == driverInfo.end() || !it->is_string()) return config.kernelAppendParams;
  std::string params = it->get<std::string>();
  static constexpr std::string_view kDefault = "%default%";
  for (size_t at = params.find(kDefault); at != std::string::npos;
       at = params.find(kDefault, at + config.kernelAppendParams.size())) {
    params.replace(at, kDefault.size(), config.kernelAppendParams);
  }
  return params;
}

Result<std::string> agentCaParam(const Config& config) {
  if (config.agentApiCaFile.empty()) return std::string();
  auto pem = readFile(config.agentApiCaFile);
  if (!pem) return invalid("Cannot read [agent] api_ca_file " + config.agentApiCaFile);
  static constexpr std::string_view kBegin = "-----BEGIN CERTIFICATE-----";
  static constexpr std::string_view kEnd = "-----END CERTIFICATE-----";
  const auto bad = [&](size_t index, std::string_view why) {
    return invalid("[agent] api_ca_file " + config.agentApiCaFile + ": CERTIFICATE block " +
                   std::to_string(index) + " " + std::string(why));
  };
  // The DER's first bytes from its base64: a certificate is one SEQUENCE whose length covers
  // exactly the decoded bytes, so a cut or padded block is caught here rather than by the agent
  // at boot (which would refuse it and exit).
  const auto wholeSequence = [](const std::string& b64) {
    const auto der = base64Decode(b64);
    if (!der || der->size() < 6) return false;
    const size_t bytes = der->size();
    const auto* head = reinterpret_cast<const unsigned char*>(der->data());
    if (head[0] != 0x30) return false;
    size_t length = 0;
    size_t headerBytes = 2;
    if (head[1] < 0x80) {
      length = head[1];
    } else {
      const size_t n = head[1] & 0x7f;
      if (n == 0 || n > 4) return false;
      for (size_t i = 0; i < n; ++i) length = (length << 8) | head[2 + i];
      headerBytes += n;
    }
    return headerBytes + length == bytes;
  };
  std::string param = "kiln.api_ca=";
  size_t count = 0;
  for (size_t at = pem->find(kBegin); at != std::string::npos; at = pem->find(kBegin, at)) {
    const size_t index = count + 1;
    const size_t body = at + kBegin.size();
    const size_t end = pem->find(kEnd, body);
    if (end == std::string::npos) return bad(index, "has no END line");
    std::string der;  // the PEM body is the DER in base64, broken into lines
    for (size_t i = body; i < end; ++i) {
      const char c = (*pem)[i];
      if (std::isspace(static_cast<unsigned char>(c))) continue;
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '/' && c != '=') {
        return bad(index, "is not base64 (PEM headers are not supported)");
      }
      der += c;
    }
    if (!wholeSequence(der)) return bad(index, "is not the DER of a certificate (cut short?)");
    param += (count++ == 0 ? "" : ",") + der;
    at = end + kEnd.size();
  }
  if (count == 0) {
    return invalid("[agent] api_ca_file " + config.agentApiCaFile + " holds no PEM certificate");
  }
  return param;
}

Result<std::string> agentAppendParams(const Config& config, const json& driverInfo) {
  std::string params = kernelAppendParams(config, driverInfo);
  // The parameters become one line of an iPXE script, a pxelinux entry and a GRUB menu: a
  // newline (or any control character) would add lines of its own to those files.
  for (char c : params) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      return invalid("The kernel_append_params must not contain control characters");
    }
  }
  const std::string ca = KILN_TRY(agentCaParam(config));
  if (!ca.empty()) params += (params.empty() ? "" : " ") + ca;
  return params;
}

std::optional<std::string> agentCmdlineTooLong(const std::string& apiUrl,
                                               const std::string& appendParams) {
  // initrd=<uuid>/deploy_ramdisk (53) or initrd=kiln-agent.initramfs, BOOTIF=01-<mac> (30), and
  // pxelinux's ipappend 3 "ip=<client>:<server>:<gateway>:<netmask>" (up to 67), spaces.
  static constexpr size_t kBootLoaderShare = 160;
  // Unset, the ipxe script names the address the machine reached the API at.
  const size_t urlBytes =
      std::max<size_t>(apiUrl.size(), std::string_view("https://255.255.255.255:65535").size());
  const size_t estimate =
      std::string_view("kiln.api_url= ").size() + urlBytes + appendParams.size() + kBootLoaderShare;
  if (estimate <= kMaxKernelCmdline) return std::nullopt;
  return "The agent's kernel command line would take about " + std::to_string(estimate) +
         " bytes, more than the " + std::to_string(kMaxKernelCmdline + 1) +
         " an x86 kernel accepts: shorten kernel_append_params, or use a smaller CA in [agent] "
         "api_ca_file (an EC P-256 CA takes 540 to 780 bytes) or embed it in the ramdisk "
         "(image-build/build-ramdisk.sh --ca-file) and unset the option.";
}

std::string chainScript(const std::string& baseUrl) {
  return "#!ipxe\n"
         "# kiln-server: hand over to this machine's own script.\n"
         "chain " + baseUrl + "/boot/${mac:hexhyp}.ipxe || goto failed\n"
         ":failed\n"
         "echo kiln: could not fetch the boot script for ${mac}; booting the next device\n"
         "exit\n";
}

std::string agentScript(const std::string& kernelUrl, const std::string& ramdiskUrl,
                        const std::string& apiUrl, const std::string& appendParams) {
  return "#!ipxe\n"
         "# kiln-server: boot the kiln-agent ramdisk.\n"
         "kernel " + kernelUrl + " initrd=kiln-agent.initramfs kiln.api_url=" + apiUrl +
         " BOOTIF=01-${mac:hexhyp} " + appendParams + " || goto failed\n"
         "initrd --name kiln-agent.initramfs " + ramdiskUrl + " || goto failed\n"
         "boot || goto failed\n"
         ":failed\n"
         "echo kiln: could not load the agent ramdisk\n"
         "exit\n";
}

std::string localBootScript(std::string_view why) {
  return "#!ipxe\n"
         "# kiln-server: " + std::string(why) + "\n"
         "sanboot --no-describe --drive 0x80 || exit\n";
}

std::string pxeAgentConfig(const std::string& kernel, const std::string& ramdisk,
                           const std::string& apiUrl, const std::string& appendParams) {
  return "default deploy\n\n"
         "label deploy\n"
         "  kernel " + kernel + "\n"
         "  append initrd=" + ramdisk + " kiln.api_url=" + apiUrl + " " + appendParams +
         "\n  ipappend 3\n";
}

std::string ramdiskScript(const std::string& kernelUrl, const std::string& ramdiskUrl,
                          const std::string& cmdline) {
  return "#!ipxe\n"
         "# kiln-server: boot the instance's ramdisk (ramdisk deploy).\n"
         "imgfree\n"
         "kernel " + kernelUrl + " " + cmdline + " initrd=ramdisk || goto failed\n"
         "initrd --name ramdisk " + ramdiskUrl + " || goto failed\n"
         "boot || goto failed\n"
         ":failed\n"
         "echo kiln: could not load the instance ramdisk\n"
         "exit\n";
}

std::string isoScript(const std::string& isoUrl) {
  return "#!ipxe\n"
         "# kiln-server: boot the instance's ISO (ramdisk deploy).\n"
         "imgfree\n"
         "sanboot " + isoUrl + " || goto failed\n"
         ":failed\n"
         "echo kiln: could not boot the instance ISO\n"
         "exit\n";
}

std::string pxeRamdiskConfig(const std::string& kernel, const std::string& ramdisk,
                             const std::string& cmdline) {
  return "default boot_ramdisk\n\n"
         "label boot_ramdisk\n"
         "  kernel " + kernel + "\n"
         "  append initrd=" + ramdisk + " " + cmdline + "\n";
}

std::string grubRamdiskConfig(const std::string& kernel, const std::string& ramdisk,
                              const std::string& cmdline) {
  return "set default=boot_ramdisk\n"
         "set timeout=5\n"
         "set hidden_timeout_quiet=false\n\n"
         "menuentry \"boot_ramdisk\" {\n"
         "    linux " + kernel + " " + cmdline + "\n"
         "    initrd " + ramdisk + "\n"
         "}\n";
}

std::string pxeLocalConfig() { return "default local\n\nlabel local\n  localboot 0\n"; }

std::string grubAgentConfig(const std::string& kernel, const std::string& ramdisk,
                            const std::string& apiUrl, const std::string& appendParams,
                            const std::string& mac) {
  const std::string bootif = net::pxeMac(mac);
  return "set default=deploy\n"
         "set timeout=5\n"
         "set hidden_timeout_quiet=false\n\n"
         "menuentry \"deploy\" {\n"
         "    linux " + kernel + " kiln.api_url=" + apiUrl + " BOOTIF=" + bootif + " " +
         appendParams + "\n"
         "    initrd " + ramdisk + "\n"
         "}\n";
}

std::string grubLocalConfig() {
  return "set default=local\n"
         "set timeout=0\n\n"
         "# kiln-server: the node boots its disk; back to the firmware's next boot option.\n"
         "menuentry \"local\" {\n"
         "    exit\n"
         "}\n";
}

std::string grubMasterConfig() {
  return "# Written by kiln-server: GRUB builds that do not look up grub.cfg-01-<mac> by\n"
         "# themselves load the booting MAC's configuration from the TFTP root.\n"
         "set default=master\n"
         "set timeout=1\n"
         "set hidden_timeout_quiet=false\n\n"
         "menuentry \"master\" {\n"
         "    configfile /$net_default_mac.conf\n"
         "}\n";
}

std::vector<std::string> grubConfigNames(std::string_view mac) {
  return {"grub.cfg-" + net::pxeMac(mac), asciiLower(mac) + ".conf"};
}

std::string pxeConfigName(std::string_view mac) { return net::pxeMac(mac); }

std::string configuredApiUrl(const Config& config) {
  return config.apiUrl.empty() ? config.publicEndpoint : config.apiUrl;
}

namespace {

/// Why the agent image `location` cannot be used, or nullopt: http(s) URLs are handed on, local
/// files (absolute paths, file:// URLs) must pass server/local_files.h's rule.
std::optional<std::string> imageProblem(const Config& config, const std::string& location) {
  if (isUrl(location)) return std::nullopt;
  if (!isFileUrl(location) && location.find("://") != std::string::npos) {
    return "The agent image " + quoteLocation(location) +
           " is neither an http(s) URL nor a local file (an absolute path or a file:// URL).";
  }
  if (auto file = checkLocalFile(config, location); !file) return "The agent image " + file.error().message + ".";
  return std::nullopt;
}

/// What both boot interfaces share: the boot device and boot_target bookkeeping.
class NetbootBase : public BootInterface {
 public:
  std::optional<std::string> validate(const TaskContext& task) const override {
    if (!task.config) return std::nullopt;
    auto images = deployImages(*task.config, task.driverInfo);
    if (!images) return images.error().message;
    if (task.ports.empty()) return "Node " + task.uuid() + " does not have any port associated with it.";
    auto params = agentAppendParams(*task.config, task.driverInfo);
    if (!params) return params.error().message;
    if (auto tooLong = agentCmdlineTooLong(configuredApiUrl(*task.config), *params)) return tooLong;
    return validateImages(task, *images);
  }
  Result<void> prepareRamdisk(TaskContext& task) override {
    if (task.config) {
      // A CA that cannot reach the agent fails here, before the machine boots.
      const std::string params = KILN_TRY(agentAppendParams(*task.config, task.driverInfo));
      if (auto tooLong = agentCmdlineTooLong(configuredApiUrl(*task.config), params)) {
        return invalid(*tooLong);
      }
    }
    KILN_TRY_VOID(syncBootMode(task));
    KILN_TRY_VOID(writeAgentConfig(task));
    task.internalInfo["boot_target"] = "agent";
    // The DHCP entry before the boot device: the machine may power on right after.
    KILN_TRY_VOID(syncDhcp(task));
    const std::string device = KILN_TRY(bootDevice(task));
    KILN_TRY_VOID(task.driver->management->setBootDevice(task, device, false));
    return {};
  }
  Result<void> cleanUpRamdisk(TaskContext& task) override {
    if (task.internalInfo.value("boot_target", "") == "agent") task.internalInfo.erase("boot_target");
    KILN_TRY_VOID(syncDhcp(task));
    return removeConfig(task);
  }
  Result<void> prepareInstance(TaskContext& task) override {
    KILN_TRY_VOID(syncBootMode(task));
    if (ramdisk::isRamdiskDeploy(task.node)) {
      // A ramdisk deployment: the instance's kernel and initramfs from the network, every boot.
      if (auto problem = validateRamdiskBoot(task)) return invalid(*problem);
      KILN_TRY_VOID(writeRamdiskConfig(task));
      task.internalInfo["boot_target"] = ramdisk::kBootTarget;
      KILN_TRY_VOID(syncDhcp(task));  // it network-boots at every start
      return task.driver->management->setBootDevice(task, "pxe", true);
    }
    KILN_TRY_VOID(writeLocalConfig(task));
    task.internalInfo["boot_target"] = "disk";
    KILN_TRY_VOID(syncDhcp(task));
    KILN_TRY_VOID(task.driver->management->setBootDevice(task, "disk", true));
    return {};
  }
  Result<void> cleanUpInstance(TaskContext& task) override {
    task.internalInfo.erase("boot_target");
    KILN_TRY_VOID(syncDhcp(task));
    return removeConfig(task);
  }
  bool ramdiskBoot() const override { return true; }
  std::optional<std::string> validateRamdiskBoot(const TaskContext& task) const override {
    auto boot = ramdisk::instanceBoot(task.config, task.instanceInfo);
    if (!boot) return boot.error().message;
    if (task.config && boot->bootIso.empty()) {
      if (auto line = ramdisk::netbootCommandLine(*task.config, task, *boot); !line) {
        return line.error().message;
      }
    }
    return validateRamdiskImages(task, *boot);
  }

 protected:
  virtual std::optional<std::string> validateRamdiskImages(const TaskContext&,
                                                           const ramdisk::InstanceBoot&) const {
    return std::nullopt;
  }
  virtual Result<void> writeRamdiskConfig(TaskContext&) { return {}; }
  virtual std::optional<std::string> validateImages(const TaskContext&, const DeployImages&) const {
    return std::nullopt;
  }
  /// The device the agent's network boot starts from.
  virtual Result<std::string> bootDevice(TaskContext&) { return std::string("pxe"); }
  virtual Result<void> writeAgentConfig(TaskContext&) { return {}; }
  virtual Result<void> writeLocalConfig(TaskContext&) { return {}; }
  virtual Result<void> removeConfig(TaskContext&) { return {}; }
};

/// iPXE: the scripts are rendered per request by the API (server/api/boot_handlers.cpp);
/// `http` = http-ipxe, iPXE reached through UEFI HTTP boot.
class IpxeBoot final : public NetbootBase {
 public:
  explicit IpxeBoot(bool http = false) : http_(http) {}
  std::string_view name() const override { return http_ ? "http-ipxe" : "ipxe"; }

 protected:
  Result<std::string> bootDevice(TaskContext& task) override { return networkBootDevice(task, http_); }

 private:
  bool http_;

 protected:
  std::optional<std::string> validateImages(const TaskContext& task, const DeployImages& images) const override {
    for (const auto& location : {images.kernel, images.ramdisk}) {
      if (auto problem = imageProblem(*task.config, location)) return problem;
    }
    return std::nullopt;
  }
  /// iPXE boots an ISO with sanboot, which reads it by HTTP range requests from its URL.
  std::optional<std::string> validateRamdiskImages(
      const TaskContext&, const ramdisk::InstanceBoot& boot) const override {
    if (!boot.bootIso.empty() && !isUrl(boot.bootIso)) {
      return "The ipxe boot interface boots instance_info.boot_iso from its URL (iPXE's "
             "sanboot): " + quoteLocation(boot.bootIso) + " must be an http(s) URL.";
    }
    return std::nullopt;
  }
  /// Nothing to write (the API renders the script per request), but an image the rule refuses
  /// fails the flow here, saying why, rather than the booting machine getting 404s.
  Result<void> writeAgentConfig(TaskContext& task) override {
    const auto images = KILN_TRY(deployImages(*task.config, task.driverInfo));
    for (const auto& location : {images.kernel, images.ramdisk}) {
      if (auto problem = imageProblem(*task.config, location)) return invalid(*problem);
    }
    return {};
  }
};

/// pxelinux: files under [pxe] tftp_root.
class PxeBoot final : public NetbootBase {
 public:
  std::string_view name() const override { return "pxe"; }

 protected:
  std::optional<std::string> validateImages(const TaskContext& task, const DeployImages& images) const override {
    for (const auto& location : {images.kernel, images.ramdisk}) {
      if (isUrl(location)) {
        return "The pxe boot interface serves the agent by TFTP: " + quoteLocation(location) +
               " must be a local file (use the ipxe boot interface for URLs).";
      }
      if (auto problem = imageProblem(*task.config, location)) return problem;
    }
    if (configuredApiUrl(*task.config).empty()) {
      return "The pxe boot interface needs [conductor] api_url (or [api] public_endpoint): the "
             "URL the agent reaches kiln-server at.";
    }
    if (::access(task.config->tftpRoot.c_str(), W_OK) != 0) {
      return "[pxe] tftp_root " + task.config->tftpRoot + " is not a writable directory.";
    }
    return std::nullopt;
  }

  Result<void> writeAgentConfig(TaskContext& task) override {
    const auto images = KILN_TRY(deployImages(*task.config, task.driverInfo));
    for (const auto& location : {images.kernel, images.ramdisk}) {
      if (isUrl(location)) return invalid("The pxe boot interface needs local agent images, got " + quoteLocation(location));
      if (auto problem = imageProblem(*task.config, location)) return invalid(*problem);
    }
    const fs::path root = task.config->tftpRoot;
    const fs::path nodeDir = root / task.uuid();
    std::error_code ec;
    fs::create_directories(nodeDir, ec);
    if (ec) return internalError("Cannot create " + nodeDir.string() + ": " + ec.message());
    for (const auto& [location, name] : {std::pair{images.kernel, "deploy_kernel"}, std::pair{images.ramdisk, "deploy_ramdisk"}}) {
      // copyLocalFile checks the rule again, on the descriptor it reads.
      if (auto copied = copyLocalFile(*task.config, location, (nodeDir / name).string()); !copied) {
        return internalError("Cannot copy the agent images into " + nodeDir.string() + ": " + copied.error().message);
      }
    }
    const std::string apiUrl = configuredApiUrl(*task.config);
    const std::string params = KILN_TRY(agentAppendParams(*task.config, task.driverInfo));
    if (KILN_TRY(effectiveBootMode(task)) == kBootModeUefi) {
      return writeGrubConfigs(task, [&](const std::string& mac) {
        return grubAgentConfig("/" + task.uuid() + "/deploy_kernel",
                               "/" + task.uuid() + "/deploy_ramdisk", apiUrl, params, mac);
      });
    }
    return writeConfigs(task, pxeAgentConfig(task.uuid() + "/deploy_kernel",
                                             task.uuid() + "/deploy_ramdisk", apiUrl, params));
  }
  std::optional<std::string> validateRamdiskImages(
      const TaskContext& task, const ramdisk::InstanceBoot& boot) const override {
    if (!boot.bootIso.empty()) {
      return "The pxe boot interface cannot boot instance_info.boot_iso: use the ipxe or "
             "redfish-virtual-media boot interface, or instance_info kernel and ramdisk.";
    }
    for (const auto& location : {boot.kernel, boot.ramdisk}) {
      if (isUrl(location)) {
        return "The pxe boot interface serves the instance's kernel and ramdisk by TFTP: " +
               quoteLocation(location) + " must be a local file (use the ipxe boot interface for "
               "URLs).";
      }
    }
    if (task.config && ::access(task.config->tftpRoot.c_str(), W_OK) != 0) {
      return "[pxe] tftp_root " + task.config->tftpRoot + " is not a writable directory.";
    }
    return std::nullopt;
  }

  /// The instance's kernel and initramfs as tftp_root/<uuid>/kernel and /ramdisk, and the
  /// per-MAC configurations that boot them.
  Result<void> writeRamdiskConfig(TaskContext& task) override {
    const auto boot = KILN_TRY(ramdisk::instanceBoot(task.config, task.instanceInfo));
    const std::string cmdline = KILN_TRY(ramdisk::netbootCommandLine(*task.config, task, boot));
    const fs::path nodeDir = fs::path(task.config->tftpRoot) / task.uuid();
    std::error_code ec;
    fs::create_directories(nodeDir, ec);
    if (ec) return internalError("Cannot create " + nodeDir.string() + ": " + ec.message());
    for (const auto& [location, name] : {std::pair{boot.kernel, "kernel"}, std::pair{boot.ramdisk, "ramdisk"}}) {
      if (auto copied = copyLocalFile(*task.config, location, (nodeDir / name).string()); !copied) {
        return invalid("Cannot copy the instance's " + std::string(name) + " into " +
                       nodeDir.string() + ": " + copied.error().message);
      }
    }
    if (KILN_TRY(effectiveBootMode(task)) == kBootModeUefi) {
      return writeGrubConfigs(task, [&](const std::string&) {
        return grubRamdiskConfig("/" + task.uuid() + "/kernel", "/" + task.uuid() + "/ramdisk", cmdline);
      });
    }
    return writeConfigs(task, pxeRamdiskConfig(task.uuid() + "/kernel", task.uuid() + "/ramdisk", cmdline));
  }

  Result<void> writeLocalConfig(TaskContext& task) override {
    if (KILN_TRY(effectiveBootMode(task)) == kBootModeUefi) {
      return writeGrubConfigs(task, [](const std::string&) { return grubLocalConfig(); });
    }
    return writeConfigs(task, pxeLocalConfig());
  }
  Result<void> removeConfig(TaskContext& task) override {
    std::error_code ec;
    const fs::path root = task.config->tftpRoot;
    for (const auto& port : task.ports) {
      const std::string mac = port.str(kPortAddress);
      fs::remove(root / "pxelinux.cfg" / pxeConfigName(mac), ec);
      for (const auto& name : grubConfigNames(mac)) fs::remove(root / name, ec);
    }
    fs::remove_all(root / task.uuid(), ec);
    return {};
  }

 private:
  static Result<void> writeText(const fs::path& file, const std::string& content) {
    std::ofstream out(file, std::ios::trunc);
    out << content;
    if (!out.flush()) return internalError("Cannot write " + file.string());
    return {};
  }

  Result<void> writeConfigs(TaskContext& task, const std::string& content) {
    const fs::path dir = fs::path(task.config->tftpRoot) / "pxelinux.cfg";
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return internalError("Cannot create " + dir.string() + ": " + ec.message());
    for (const auto& port : task.ports) {
      KILN_TRY_VOID(writeText(dir / pxeConfigName(port.str(kPortAddress)), content));
    }
    return {};
  }

  /// GRUB (UEFI): each port's configuration under both of Ironic's names, and the master
  /// grub/grub.cfg that sends a GRUB without per-MAC lookup to <mac>.conf.
  Result<void> writeGrubConfigs(TaskContext& task,
                                const std::function<std::string(const std::string&)>& content) {
    const fs::path root = task.config->tftpRoot;
    std::error_code ec;
    fs::create_directories(root / "grub", ec);
    if (ec) return internalError("Cannot create " + (root / "grub").string() + ": " + ec.message());
    const fs::path master = root / "grub" / "grub.cfg";
    if (!fs::exists(master, ec)) KILN_TRY_VOID(writeText(master, grubMasterConfig()));
    for (const auto& port : task.ports) {
      const std::string mac = port.str(kPortAddress);
      for (const auto& name : grubConfigNames(mac)) KILN_TRY_VOID(writeText(root / name, content(mac)));
    }
    return {};
  }
};

}  // namespace

Result<std::string> networkBootDevice(TaskContext& task, bool preferHttp) {
  if (preferHttp && KILN_TRY(effectiveBootMode(task)) == kBootModeUefi) {
    const auto devices = task.driver->management->supportedBootDevices(task);
    if (std::find(devices.begin(), devices.end(), "uefi http") != devices.end()) return std::string("uefi http");
  }
  return std::string("pxe");
}

std::vector<std::unique_ptr<HardwareInterface>> makeNetbootInterfaces() {
  std::vector<std::unique_ptr<HardwareInterface>> out;
  out.push_back(std::make_unique<IpxeBoot>());
  out.push_back(std::make_unique<IpxeBoot>(/*http=*/true));
  out.push_back(std::make_unique<PxeBoot>());
  return out;
}

}  // namespace kiln::server::netboot
