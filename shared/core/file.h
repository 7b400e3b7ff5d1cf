// File: shared/core/file.h
//
// Reading and writing whole files; temporary directories.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "shared/core/error.h"

namespace kiln {

/// The bytes of the file at `path`, or nullopt when it cannot be opened. The file is read
/// straight into the string (one copy), whatever its size.
std::optional<std::string> readFile(const std::string& path);

/// Writes `content` to `path` (created or truncated; missing parent directories are made).
/// Internal "cannot write PATH" when that fails.
Result<void> writeFile(const std::filesystem::path& path, std::string_view content);

/// A new directory under the system's temporary directory (TMPDIR, else /tmp), removed with
/// everything in it when this goes out of scope. Movable, not copyable.
class ScopedTempDir {
 public:
  /// mkdtemp of "<tmp>/<prefix>-XXXXXX". Internal naming `prefix` when it fails.
  static Result<ScopedTempDir> create(std::string_view prefix);
  ScopedTempDir(ScopedTempDir&& other) noexcept;
  ScopedTempDir& operator=(ScopedTempDir&&) = delete;
  ScopedTempDir(const ScopedTempDir&) = delete;
  ~ScopedTempDir();
  const std::filesystem::path& path() const { return path_; }

 private:
  explicit ScopedTempDir(std::filesystem::path path) : path_(std::move(path)) {}
  std::filesystem::path path_;
};

}  // namespace kiln
