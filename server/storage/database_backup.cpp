#include "server/storage/database_backup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <tuple>

namespace kiln::server {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kPrefix = "kiln-";
constexpr std::string_view kSuffix = ".sqlite";

std::string stamp(std::chrono::system_clock::time_point now) {
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

bool allDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

bool isBackupName(const std::string& name) {
  // kiln-YYYYmmddTHHMMSSZ[-N].sqlite
  if (name.size() < kPrefix.size() + 16 + kSuffix.size()) return false;
  if (name.compare(0, kPrefix.size(), kPrefix) != 0) return false;
  if (name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) return false;
  const std::string_view s(name.data() + kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  if (s.size() < 16 || !allDigits(s.substr(0, 8)) || s[8] != 'T' || !allDigits(s.substr(9, 6)) || s[15] != 'Z') {
    return false;
  }
  const std::string_view rest = s.substr(16);
  return rest.empty() || (rest[0] == '-' && allDigits(rest.substr(1)));
}

Result<DatabaseBackup> backupDatabase(Storage& storage, const std::string& dir, int keep,
                                      std::chrono::system_clock::time_point now) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return internalError("cannot create the backup directory " + dir + ": " + ec.message());
  ::chmod(dir.c_str(), 0700);

  const std::string base = std::string(kPrefix) + stamp(now);
  std::string name = base + std::string(kSuffix);
  for (int n = 1; fs::exists(fs::path(dir) / name, ec); ++n) {
    name = base + "-" + std::to_string(n) + std::string(kSuffix);
  }
  const std::string path = (fs::path(dir) / name).string();
  const std::string partial = (fs::path(dir) / ("." + name + ".partial")).string();
  fs::remove(partial, ec);
  // Made empty with mode 0600 first (VACUUM INTO writes into an empty file and keeps its
  // mode): no moment where another user could open the copy.
  const int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return internalError("cannot create " + partial + ": " + std::strerror(errno));
  ::close(fd);
  auto written = storage.backupTo(partial);
  if (!written) {
    fs::remove(partial, ec);
    if (written.error().code == ErrorCode::Unavailable) return std::unexpected(written.error());
    return internalError("cannot write the backup " + path + ": " + written.error().message);
  }
  fs::rename(partial, path, ec);
  if (ec) {
    fs::remove(partial, ec);
    return internalError("cannot rename the backup to " + path + ": " + ec.message());
  }
  DatabaseBackup result;
  result.path = path;
  result.bytes = fs::file_size(path, ec);

  if (keep > 0) {
    std::vector<std::string> backups;
    // Iterated with error codes only: nothing here may throw on the main thread.
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string entryName = it->path().filename().string();
      std::error_code typeEc;
      if (isBackupName(entryName) && it->is_regular_file(typeEc)) backups.push_back(entryName);
    }
    // The stamp sorts by time; -N suffixes come after the plain name of the same second.
    std::sort(backups.begin(), backups.end(), [](const std::string& a, const std::string& b) {
      // (stamp, sequence number compared as digits: shorter is smaller).
      const auto key = [](const std::string& n) {
        const std::string core = n.substr(0, n.size() - kSuffix.size());
        const auto dash = core.find('-', kPrefix.size());
        const std::string seq = dash == std::string::npos ? "" : core.substr(dash + 1);
        return std::tuple{core.substr(0, dash), seq.size(), seq};
      };
      return key(a) < key(b);
    });
    const size_t limit = static_cast<size_t>(keep);
    for (size_t i = 0; i + limit < backups.size(); ++i) {
      if (fs::remove(fs::path(dir) / backups[i], ec)) result.removed.push_back(backups[i]);
    }
  }
  return result;
}

}  // namespace kiln::server
