#include "server/drivers/netboot/netboot.h"

#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "server/model/resources.h"

namespace kiln::server::netboot {

namespace fs = std::filesystem;
using nlohmann::json;

bool isUrl(std::string_view location) {
  return location.rfind("http://", 0) == 0 || location.rfind("https://", 0) == 0;
}

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

std::optional<std::string> parseMac(std::string_view text) {
  if (text.size() != 17) return std::nullopt;
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (i % 3 == 2) {
      if (c != ':' && c != '-') return std::nullopt;
      out += ':';
    } else {
      if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
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

std::string pxeLocalConfig() { return "default local\n\nlabel local\n  localboot 0\n"; }

std::string pxeConfigName(std::string_view mac) {
  std::string name = "01-";
  for (char c : mac) name += c == ':' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

std::string configuredApiUrl(const Config& config) {
  return config.apiUrl.empty() ? config.publicEndpoint : config.apiUrl;
}

namespace {

/// What both boot interfaces share: the boot device and boot_target bookkeeping.
class NetbootBase : public BootInterface {
 public:
  std::optional<std::string> validate(const TaskContext& task) const override {
    if (!task.config) return std::nullopt;
    auto images = deployImages(*task.config, task.driverInfo);
    if (!images) return images.error().message;
    if (task.ports.empty()) return "Node " + task.uuid() + " does not have any port associated with it.";
    return validateImages(task, *images);
  }
  Result<void> prepareRamdisk(TaskContext& task) override {
    KILN_TRY_VOID(writeAgentConfig(task));
    KILN_TRY_VOID(task.driver->management->setBootDevice(task, "pxe", false));
    task.internalInfo["boot_target"] = "agent";
    return {};
  }
  Result<void> cleanUpRamdisk(TaskContext& task) override {
    if (task.internalInfo.value("boot_target", "") == "agent") task.internalInfo.erase("boot_target");
    return removeConfig(task);
  }
  Result<void> prepareInstance(TaskContext& task) override {
    KILN_TRY_VOID(writeLocalConfig(task));
    KILN_TRY_VOID(task.driver->management->setBootDevice(task, "disk", true));
    task.internalInfo["boot_target"] = "disk";
    return {};
  }
  Result<void> cleanUpInstance(TaskContext& task) override {
    task.internalInfo.erase("boot_target");
    return removeConfig(task);
  }

 protected:
  virtual std::optional<std::string> validateImages(const TaskContext&, const DeployImages&) const {
    return std::nullopt;
  }
  virtual Result<void> writeAgentConfig(TaskContext&) { return {}; }
  virtual Result<void> writeLocalConfig(TaskContext&) { return {}; }
  virtual Result<void> removeConfig(TaskContext&) { return {}; }
};

/// iPXE: the scripts are rendered per request by the API (server/api/boot_handlers.cpp).
class IpxeBoot final : public NetbootBase {
 public:
  std::string_view name() const override { return "ipxe"; }

 protected:
  std::optional<std::string> validateImages(const TaskContext&, const DeployImages& images) const override {
    for (const auto& location : {images.kernel, images.ramdisk}) {
      if (!isUrl(location) && !fs::is_regular_file(location)) {
        return "The agent image " + location + " is neither an http(s) URL nor a readable file.";
      }
    }
    return std::nullopt;
  }
};

/// pxelinux: files under [pxe] tftp_root.
class PxeBoot final : public NetbootBase {
 public:
  std::string_view name() const override { return "pxe"; }

 protected:
  std::optional<std::string> validateImages(const TaskContext& task, const DeployImages& images) const override {
    for (const auto& location : {images.kernel, images.ramdisk}) {
      if (isUrl(location) || !fs::is_regular_file(location)) {
        return "The pxe boot interface serves the agent by TFTP: " + location +
               " must be a local file (use the ipxe boot interface for URLs).";
      }
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
    const fs::path root = task.config->tftpRoot;
    const fs::path nodeDir = root / task.uuid();
    std::error_code ec;
    fs::create_directories(nodeDir, ec);
    if (ec) return internalError("Cannot create " + nodeDir.string() + ": " + ec.message());
    fs::copy_file(images.kernel, nodeDir / "deploy_kernel", fs::copy_options::overwrite_existing, ec);
    if (!ec) fs::copy_file(images.ramdisk, nodeDir / "deploy_ramdisk", fs::copy_options::overwrite_existing, ec);
    if (ec) return internalError("Cannot copy the agent images into " + nodeDir.string() + ": " + ec.message());
    return writeConfigs(task, pxeAgentConfig(task.uuid() + "/deploy_kernel", task.uuid() + "/deploy_ramdisk",
                                             configuredApiUrl(*task.config),
                                             kernelAppendParams(*task.config, task.driverInfo)));
  }
  Result<void> writeLocalConfig(TaskContext& task) override { return writeConfigs(task, pxeLocalConfig()); }
  Result<void> removeConfig(TaskContext& task) override {
    std::error_code ec;
    const fs::path root = task.config->tftpRoot;
    for (const auto& port : task.ports) fs::remove(root / "pxelinux.cfg" / pxeConfigName(port.str(kPortAddress)), ec);
    fs::remove_all(root / task.uuid(), ec);
    return {};
  }

 private:
  Result<void> writeConfigs(TaskContext& task, const std::string& content) {
    const fs::path dir = fs::path(task.config->tftpRoot) / "pxelinux.cfg";
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return internalError("Cannot create " + dir.string() + ": " + ec.message());
    for (const auto& port : task.ports) {
      const fs::path file = dir / pxeConfigName(port.str(kPortAddress));
      std::ofstream out(file, std::ios::trunc);
      out << content;
      if (!out.flush()) return internalError("Cannot write " + file.string());
    }
    return {};
  }
};

}  // namespace

std::vector<std::unique_ptr<HardwareInterface>> makeNetbootInterfaces() {
  std::vector<std::unique_ptr<HardwareInterface>> out;
  out.push_back(std::make_unique<IpxeBoot>());
  out.push_back(std::make_unique<PxeBoot>());
  return out;
}

}  // namespace kiln::server::netboot
