#include "server/drivers/agent/ramdisk_log_files.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

namespace kiln::server::agent {
namespace {

bool isLowerUuid(std::string_view s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  return true;
}

bool digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::optional<std::string> logFileTime(std::string_view name, std::string_view nodeUuid) {
  constexpr std::string_view kSuffix = ".tar.gz";
  constexpr size_t kStamp = 19;  // YYYY-mm-dd-HH-MM-SS
  if (!isLowerUuid(nodeUuid) || !name.starts_with(nodeUuid) || !name.ends_with(kSuffix)) {
    return std::nullopt;
  }
  std::string_view rest = name.substr(nodeUuid.size(), name.size() - nodeUuid.size() - kSuffix.size());
  // rest: "_<stamp>" or "_<instance uuid>_<stamp>"
  if (rest.size() == 1 + 36 + 1 + kStamp) {
    if (rest[0] != '_' || !isLowerUuid(rest.substr(1, 36))) return std::nullopt;
    rest.remove_prefix(1 + 36);
  }
  if (rest.size() != 1 + kStamp || rest[0] != '_') return std::nullopt;
  const std::string_view stamp = rest.substr(1);
  for (size_t dash : {4u, 7u, 10u, 13u, 16u}) {
    if (stamp[dash] != '-') return std::nullopt;
  }
  if (!digits(stamp.substr(0, 4)) || !digits(stamp.substr(5, 2)) || !digits(stamp.substr(8, 2)) ||
      !digits(stamp.substr(11, 2)) || !digits(stamp.substr(14, 2)) || !digits(stamp.substr(17, 2))) {
    return std::nullopt;
  }
  return std::string(stamp.substr(0, 10)) + "T" + std::string(stamp.substr(11, 2)) + ":" +
         std::string(stamp.substr(14, 2)) + ":" + std::string(stamp.substr(17, 2)) + "+00:00";
}

Result<std::vector<StoredLogFile>> listStoredLogs(const Config& config, const std::string& nodeUuid) {
  namespace fs = std::filesystem;
  std::vector<StoredLogFile> out;
  if (config.deployLogsLocalPath.empty()) return out;
  std::error_code ec;
  fs::directory_iterator it(config.deployLogsLocalPath, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return out;
    return fail(ErrorCode::Internal, "cannot read [agent] deploy_logs_local_path: " + ec.message());
  }
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const std::string name = it->path().filename().string();
    auto time = logFileTime(name, nodeUuid);
    if (!time) continue;
    struct stat st {};
    if (lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    out.push_back({name, static_cast<uint64_t>(st.st_size), std::move(*time)});
  }
  // Newest first; the same second: by name.
  std::sort(out.begin(), out.end(), [](const StoredLogFile& a, const StoredLogFile& b) {
    return a.time != b.time ? a.time > b.time : a.name > b.name;
  });
  return out;
}

}  // namespace kiln::server::agent
