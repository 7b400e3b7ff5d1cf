#include "server/drivers/agent/config_drive.h"

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include <nlohmann/json.hpp>

#include "shared/core/base64.h"
#include "shared/core/file.h"
#include "shared/core/gzip.h"

namespace kiln::server {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The metadata versions openstacksdk writes by default (configdrive.populate_directory).
constexpr const char* kVersions[] = {"2012-08-10", "latest"};

Result<void> formatError(const std::string& what) {
  return invalid("Invalid configdrive format: " + what);
}

bool isBase64Text(const std::string& text) {
  for (const unsigned char c : text) {
    if (!std::isalnum(c) && c != '+' && c != '/' && c != '=' && c != '\n' && c != '\r' &&
        c != '\t' && c != ' ') {
      return false;
    }
  }
  return true;
}

bool present(const json& cd, const char* key) {
  auto it = cd.find(key);
  return it != cd.end() && !it->is_null() && !it->empty();
}

}  // namespace

bool isEmptyConfigDrive(const json& configdrive) {
  return configdrive.is_null() || (configdrive.is_string() && configdrive.get_ref<const std::string&>().empty()) ||
         (configdrive.is_object() && configdrive.empty());
}

Result<void> validateConfigDrive(const json& configdrive) {
  if (configdrive.is_null()) return {};
  if (configdrive.is_string()) {
    const auto& text = configdrive.get_ref<const std::string&>();
    // ':' is not base64, so "://" tells a URL apart (as Ironic checks it).
    if (text.find("://") != std::string::npos) return {};
    if (!isBase64Text(text)) {
      return formatError("it is neither a JSON, nor a URL, nor a base64 string");
    }
    return {};
  }
  if (!configdrive.is_object()) {
    return formatError(configdrive.dump() + " is not of type 'object', 'string'");
  }
  for (auto it = configdrive.begin(); it != configdrive.end(); ++it) {
    const std::string& key = it.key();
    if (key == "meta_data" || key == "network_data" || key == "vendor_data") {
      if (!it->is_object()) {
        return formatError(key + ": " + it->dump() + " is not of type 'object'");
      }
    } else if (key == "user_data") {
      if (!it->is_object() && !it->is_array() && !it->is_string() && !it->is_null()) {
        return formatError("user_data: " + it->dump() +
                           " is not of type 'object', 'array', 'string', 'null'");
      }
    } else {
      return formatError("Additional properties are not allowed ('" + key + "' was unexpected)");
    }
  }
  return {};
}

std::vector<std::pair<std::string, std::string>> configDriveFiles(const json& configdrive,
                                                                  const std::string& nodeUuid,
                                                                  const std::string& nodeName) {
  json meta = configdrive.contains("meta_data") ? configdrive["meta_data"] : json::object();
  if (!meta.contains("uuid")) meta["uuid"] = nodeUuid;
  if (!nodeName.empty() && !meta.contains("name")) meta["name"] = nodeName;
  std::string userData;
  if (auto it = configdrive.find("user_data"); it != configdrive.end()) {
    if (it->is_string()) {
      userData = it->get<std::string>();
    } else if (it->is_object() || it->is_array()) {
      userData = it->dump();
    }
  }
  std::vector<std::pair<std::string, std::string>> files;
  for (const char* version : kVersions) {
    const std::string dir = std::string("openstack/") + version + "/";
    files.emplace_back(dir + "meta_data.json", meta.dump());
    if (present(configdrive, "network_data")) {
      files.emplace_back(dir + "network_data.json", configdrive["network_data"].dump());
    }
    if (present(configdrive, "vendor_data")) {
      files.emplace_back(dir + "vendor_data2.json", configdrive["vendor_data"].dump());
    }
    if (!userData.empty()) files.emplace_back(dir + "user_data", userData);
  }
  return files;
}

Result<std::string> buildConfigDrive(CommandRunner& runner, const json& configdrive,
                                     const std::string& nodeUuid, const std::string& nodeName) {
  KILN_TRY_VOID(validateConfigDrive(configdrive));
  if (!configdrive.is_object()) return invalid("Only a JSON configdrive is built by the conductor");
  auto dir = KILN_TRY(ScopedTempDir::create("kiln-configdrive"));
  const fs::path root = dir.path() / "root";
  size_t total = 0;
  for (const auto& [path, content] : configDriveFiles(configdrive, nodeUuid, nodeName)) {
    total += content.size();
    if (total > kMaxConfigDriveImageBytes) {
      return invalid("The config drive of node " + nodeUuid + " is larger than " +
                     std::to_string(kMaxConfigDriveImageBytes / (1024 * 1024)) + " MiB");
    }
    KILN_TRY_VOID(writeFile(root / path, content));
  }
  const fs::path iso = dir.path() / "configdrive.iso";
  Command cmd{.argv = {"xorrisofs", "-o", iso.string(), "-ldots", "-allow-lowercase",
                       "-allow-multidot", "-l", "-publisher", "kiln", "-quiet", "-J", "-r", "-V",
                       "config-2", root.string()},
              .timeout = std::chrono::seconds(120)};
  auto output = runner.run(cmd);
  if (!output) {
    return fail(ErrorCode::Unavailable, "cannot build the config drive: " + output.error().message +
                       " (kiln-server needs xorrisofs, Debian package xorriso)");
  }
  if (output->exitCode != 0) {
    return internalError("cannot build the config drive: " + failureMessage(cmd, *output));
  }
  std::ifstream in(iso, std::ios::binary);
  std::string image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) return internalError("cannot read the config drive image built");
  if (image.empty()) return internalError("xorrisofs wrote an empty config drive image");
  if (image.size() > kMaxConfigDriveImageBytes) {
    return invalid("The config drive of node " + nodeUuid + " is larger than " +
                   std::to_string(kMaxConfigDriveImageBytes / (1024 * 1024)) + " MiB");
  }
  return base64Encode(KILN_TRY(gzipCompress(image, 9)));
}

}  // namespace kiln::server
