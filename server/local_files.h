// File: server/local_files.h
//
// The rule for local files that a node or an API client names (Ironic's
// [conductor] file_url_allowed_paths, its fix for CVE-2024-44082). Today these are the agent
// kernel and initramfs: driver_info deploy_kernel / deploy_ramdisk and the [conductor]
// deploy_kernel / deploy_ramdisk fallbacks, given as absolute paths or file:// URLs
// (file:///path). kiln-server reads such a file only when
//
//   1. the location is an absolute path with no "", "." or ".." component;
//   2. [conductor] file_url_allowed_paths is not empty (empty disables local files);
//   3. the path as given, and its real path (every symbolic link resolved), are inside one of
//      the allowed directories (the real path against the directories' real paths): a link
//      cannot lead out of them;
//   4. neither is inside a system directory no setting allows (kForbiddenDirectories: /boot,
//      /dev, /etc, /proc, /root, /run, /sys, /var/run), even when one of them is listed;
//   5. the real path is none of kiln-server's own files (the SQLite database and its
//      -wal/-shm/-journal files, the htpasswd file, the TLS private key);
//   6. it is a regular file. The file is opened by its real path without following links and
//      the opened descriptor is checked to be that path, so a link swapped in after the check
//      is not followed either.
//
// Checks 2 to 4 run on the path as given before the file system is touched: a refused path
// tells nothing about whether it exists.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "server/config.h"
#include "shared/core/error.h"

namespace kiln::server {

/// The system directories local files never come from, whatever file_url_allowed_paths says.
inline constexpr std::array<std::string_view, 8> kForbiddenDirectories = {
    "/boot", "/dev", "/etc", "/proc", "/root", "/run", "/sys", "/var/run"};

/// True for "file://..." locations.
bool isFileUrl(std::string_view location);

/// Checks one [conductor] file_url_allowed_paths entry: absolute, no "", "." or ".." component,
/// not "/" itself. Returns it without a trailing "/"; InvalidArgument saying what is wrong.
Result<std::string> checkAllowedDirectory(std::string_view entry);

/// The directory of kForbiddenDirectories that contains `path` (lexically), or "" for none.
std::string_view forbiddenDirectoryOf(std::string_view path);

/// The real path of the regular file `location` (an absolute path or a file:// URL) names,
/// when the rule allows it. Otherwise InvalidArgument (NotFound when the file does not exist)
/// whose message starts with the location quoted and says which part of the rule refuses it,
/// naming [conductor] file_url_allowed_paths, e.g.
///   '/etc/kiln/htpasswd' is not in [conductor] file_url_allowed_paths (/var/lib/kiln/images)
Result<std::string> checkLocalFile(const Config& config, std::string_view location);

/// checkLocalFile, then the file's bytes (read from the checked descriptor).
Result<std::string> readLocalFile(const Config& config, std::string_view location);

/// The bytes of the regular file at `path`, opened without following a symbolic link (for
/// files kiln-server names itself, such as the ISOs in [deploy] http_root). NotFound when it
/// is missing, a link or not a regular file; Internal when reading fails.
Result<std::string> readRegularFile(const std::string& path);

/// checkLocalFile, then copies the file to `destination` (created or replaced).
Result<void> copyLocalFile(const Config& config, std::string_view location,
                           const std::string& destination);

}  // namespace kiln::server
