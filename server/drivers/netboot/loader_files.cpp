#include "server/drivers/netboot/loader_files.h"

#include <sys/stat.h>

#include <filesystem>
#include <set>

#include "server/config.h"
#include "shared/core/file.h"
#include "shared/core/log.h"
#include "shared/core/strings.h"

namespace kiln::server {

namespace fs = std::filesystem;

namespace {

Result<void> copyOne(const std::string& source, const fs::path& target) {
  const auto content = readFile(source);
  if (!content) return invalid("cannot read the boot loader " + source);
  const fs::path tmp = target.string() + ".kiln-tmp";
  KILN_TRY_VOID(writeFile(tmp, *content));  // makes the missing directories too
  ::chmod(tmp.c_str(), 0644);
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) return internalError("cannot rename " + tmp.string() + " to " + target.string() + ": " + ec.message());
  return {};
}

}  // namespace

std::vector<std::string> loaderFileNames(const Config& config) {
  std::vector<std::string> out;
  if (config.loaderFilePathsSet) {
    for (const auto& [dest, source] : config.loaderFilePaths) out.push_back(dest);
  } else {
    for (const auto& [dest, source] : kDefaultLoaderFiles) out.emplace_back(dest);
  }
  return out;
}

Result<std::vector<std::string>> installLoaderFiles(const Config& config) {
  std::vector<std::pair<std::string, std::string>> files = config.loaderFilePaths;
  if (!config.loaderFilePathsSet) {
    files.clear();
    for (const auto& [dest, source] : kDefaultLoaderFiles) {
      if (fs::is_regular_file(source)) files.emplace_back(dest, source);
    }
  }
  std::vector<std::string> copied;
  for (const auto& [dest, source] : files) {
    if (!fs::is_regular_file(source)) {
      return invalid("[pxe] loader_file_paths: " + source + " (for " + dest + ") is not a file");
    }
    KILN_TRY_VOID(copyOne(source, fs::path(config.tftpRoot) / dest));
    copied.push_back(dest);
  }
  if (!copied.empty()) {
    Logger("netboot").info("boot loaders copied into tftp_root",
                           {{"tftp_root", config.tftpRoot}, {"files", std::to_string(copied.size())}});
  }
  return copied;
}

}  // namespace kiln::server
