#include "agent/hardware/sysfs.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "shared/core/file.h"
#include "shared/core/strings.h"

namespace kiln::agent {

namespace fs = std::filesystem;

RootedSysfsReader::RootedSysfsReader(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

std::string RootedSysfsReader::resolve(std::string_view path) const {
  if (root_ == "/") return std::string(path);
  return root_ + std::string(path);
}

std::optional<std::string> RootedSysfsReader::read(std::string_view path) {
  const std::string full = resolve(path);
  std::error_code ec;
  // NOTE(kiln): a directory opens fine as a file; treat it as "no such file".
  if (fs::is_directory(full, ec)) return std::nullopt;
  return readFile(full);
}

std::vector<std::string> RootedSysfsReader::list(std::string_view dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(resolve(dir), ec), end; !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool RootedSysfsReader::exists(std::string_view path) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(resolve(path), ec));
}

std::optional<std::string> RootedSysfsReader::readLink(std::string_view path) {
  std::error_code ec;
  fs::path target = fs::read_symlink(resolve(path), ec);
  if (ec) return std::nullopt;
  return target.string();
}

std::string trimSysfsValue(std::string_view text) { return trim(text); }

std::string readSysfsValue(SysfsReader& sysfs, const std::string& path) {
  return trimSysfsValue(sysfs.read(path).value_or(""));
}

}  // namespace kiln::agent
