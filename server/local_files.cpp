#include "server/local_files.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "shared/core/secrets.h"

namespace kiln::server {
namespace {

constexpr std::string_view kFileScheme = "file://";
constexpr std::string_view kOption = "[conductor] file_url_allowed_paths";

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

/// True when `path` is `dir` or lies below it (both absolute, `dir` without a trailing "/").
bool isInside(std::string_view path, std::string_view dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.substr(0, dir.size()) == dir &&
                         path[dir.size()] == '/');
}

/// The first "", "." or ".." component of an absolute path, or nullopt.
std::optional<std::string_view> badComponent(std::string_view path) {
  for (size_t at = 1;;) {
    const size_t end = path.find('/', at);
    const std::string_view part = path.substr(at, end == std::string_view::npos ? path.npos : end - at);
    if (part.empty() || part == "." || part == "..") return part;
    if (end == std::string_view::npos) return std::nullopt;
    at = end + 1;
  }
}

/// The path a location names: checks 1 of the rule (absolute, no traversal components).
Result<std::string> pathOf(std::string_view location) {
  std::string_view path = location;
  if (isFileUrl(location)) {
    path.remove_prefix(kFileScheme.size());
    if (path.rfind("localhost/", 0) == 0) path.remove_prefix(std::string_view("localhost").size());
    if (path.empty() || path.front() != '/') {
      return invalid(quoted(maskUrl(location)) + " is not a file:// URL of a local path (file:///path)");
    }
  }
  if (path.find('\0') != std::string_view::npos) return invalid(quoted(path) + " contains a NUL byte");
  if (path.empty() || path.front() != '/') return invalid(quoted(path) + " is not an absolute path");
  if (auto bad = badComponent(path)) {
    return invalid(quoted(location) + (bad->empty() ? " has an empty path component" : " has a '" +
                                       std::string(*bad) + "' component") +
                   " (paths that could traverse directories are refused)");
  }
  return std::string(path);
}

/// realpath(3); nullopt with errno set when it fails.
std::optional<std::string> realPath(const std::string& path) {
  std::unique_ptr<char, decltype(&::free)> resolved(::realpath(path.c_str(), nullptr), &::free);
  if (!resolved) return std::nullopt;
  return std::string(resolved.get());
}

std::string allowedList(const Config& config) {
  std::string list;
  for (const auto& dir : config.fileUrlAllowedPaths) list += (list.empty() ? "" : ", ") + dir;
  return list;
}

Result<void> checkForbidden(std::string_view shown, const std::string& path) {
  if (const auto dir = forbiddenDirectoryOf(path); !dir.empty()) {
    return invalid(std::string(shown) + " is in " + std::string(dir) +
                   ", a system directory kiln-server never reads files from (whatever " +
                   std::string(kOption) + " lists)");
  }
  return {};
}

/// kiln-server's own files that hold secrets: the database, the htpasswd file, the TLS key.
std::vector<std::string> ownFiles(const Config& config) {
  std::vector<std::string> files = {config.httpBasicAuthUserFile, config.sslKeyFile};
  constexpr std::string_view kSqlite = "sqlite:///";
  if (config.connection.rfind(kSqlite, 0) == 0) {
    const std::string db = config.connection.substr(kSqlite.size());
    if (!db.empty() && db != ":memory:") {
      for (const char* suffix : {"", "-wal", "-shm", "-journal"}) files.push_back(db + suffix);
    }
  }
  return files;
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

/// Opens the real path `checkLocalFile` returned and makes sure the descriptor is that file
/// (no link followed, no directory swapped since the check) and a regular file.
Result<void> openChecked(const std::string& real, Fd& out, struct stat& st) {
  out.fd = ::open(real.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (out.fd < 0) return invalid(quoted(real) + " cannot be opened: " + std::strerror(errno));
  if (::fstat(out.fd, &st) != 0 || !S_ISREG(st.st_mode)) return invalid(quoted(real) + " is not a regular file");
  char link[PATH_MAX + 1];
  const std::string self = "/proc/self/fd/" + std::to_string(out.fd);
  const ssize_t n = ::readlink(self.c_str(), link, PATH_MAX);
  if (n < 0 || std::string_view(link, static_cast<size_t>(n)) != real) {
    return invalid(quoted(real) + " changed while it was being opened");
  }
  return {};
}

/// Everything left to read from `file`; `shown` names it in errors.
Result<std::string> readAll(Fd& file, const std::string& shown, size_t sizeHint) {
  std::string out;
  out.reserve(sizeHint);
  char chunk[65536];
  for (;;) {
    const ssize_t n = ::read(file.fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return internalError("Cannot read " + shown + ": " + std::strerror(errno));
    if (n == 0) break;
    out.append(chunk, static_cast<size_t>(n));
  }
  return out;
}

}  // namespace

bool isFileUrl(std::string_view location) { return location.rfind(kFileScheme, 0) == 0; }

std::string_view forbiddenDirectoryOf(std::string_view path) {
  for (const auto dir : kForbiddenDirectories) {
    if (isInside(path, dir)) return dir;
  }
  return {};
}

Result<std::string> checkAllowedDirectory(std::string_view entry) {
  std::string dir(entry);
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (dir.empty() || dir.front() != '/') {
    return invalid(quoted(entry) + " is not an absolute path");
  }
  if (dir == "/") return invalid("'/' would allow every file; list the directories that hold images");
  if (dir.find('\0') != std::string::npos) return invalid(quoted(entry) + " contains a NUL byte");
  if (auto bad = badComponent(dir)) {
    return invalid(quoted(entry) + (bad->empty() ? " has an empty path component" : " has a '" +
                                    std::string(*bad) + "' component") +
                   " (entries must be explicit absolute paths)");
  }
  return dir;
}

Result<std::string> checkLocalFile(const Config& config, std::string_view location) {
  const std::string path = KILN_TRY(pathOf(location));
  const std::string shown = quoted(location);
  if (config.fileUrlAllowedPaths.empty()) {
    return invalid(shown + " is a local file, and local files are disabled (" + std::string(kOption) +
                   " is empty)");
  }
  // The path as given: refused without touching the file system.
  KILN_TRY_VOID(checkForbidden(shown, path));
  bool listed = false;
  for (const auto& dir : config.fileUrlAllowedPaths) listed = listed || isInside(path, dir);
  if (!listed) return invalid(shown + " is not in " + std::string(kOption) + " (" + allowedList(config) + ")");

  // The real path: links resolved, in a real allowed directory.
  const auto real = realPath(path);
  if (!real) {
    if (errno == ENOENT || errno == ENOTDIR) return notFound(shown + " does not exist");
    return invalid(shown + " cannot be resolved: " + std::strerror(errno));
  }
  const std::string resolved = *real == path ? shown : shown + " resolves to " + quoted(*real) + ", which";
  KILN_TRY_VOID(checkForbidden(resolved, *real));
  bool inside = false;
  for (const auto& dir : config.fileUrlAllowedPaths) {
    const auto realDir = realPath(dir);
    inside = inside || (realDir && isInside(*real, *realDir));
  }
  if (!inside) return invalid(resolved + " is not in " + std::string(kOption) + " (" + allowedList(config) + ")");
  for (const auto& own : ownFiles(config)) {
    if (own.empty()) continue;
    if (const auto ownReal = realPath(own); ownReal && *ownReal == *real) {
      return invalid(resolved + " is one of kiln-server's own files (database, htpasswd or TLS key), "
                     "never used as an image");
    }
  }
  struct stat st {};
  if (::stat(real->c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return invalid(resolved + " is not a regular file");
  }
  return *real;
}

Result<std::string> readLocalFile(const Config& config, std::string_view location) {
  const std::string real = KILN_TRY(checkLocalFile(config, location));
  Fd file;
  struct stat st {};
  KILN_TRY_VOID(openChecked(real, file, st));
  return readAll(file, quoted(real), static_cast<size_t>(st.st_size));
}

Result<std::string> readRegularFile(const std::string& path) {
  Fd file;
  file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (file.fd < 0) return notFound(quoted(path) + " cannot be opened: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(file.fd, &st) != 0 || !S_ISREG(st.st_mode)) return notFound(quoted(path) + " is not a regular file");
  return readAll(file, quoted(path), static_cast<size_t>(st.st_size));
}

Result<void> copyLocalFile(const Config& config, std::string_view location, const std::string& destination) {
  const std::string real = KILN_TRY(checkLocalFile(config, location));
  Fd in;
  struct stat st {};
  KILN_TRY_VOID(openChecked(real, in, st));
  Fd out;
  out.fd = ::open(destination.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (out.fd < 0) return internalError("Cannot create " + destination + ": " + std::strerror(errno));
  char chunk[1 << 16];
  for (;;) {
    ssize_t n = ::read(in.fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return internalError("Cannot read " + quoted(real) + ": " + std::strerror(errno));
    if (n == 0) break;
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(out.fd, chunk + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return internalError("Cannot write " + destination + ": " + std::strerror(errno));
      done += w;
    }
  }
  return {};
}

}  // namespace kiln::server
