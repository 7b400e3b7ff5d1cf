// File: tests/support/temp_dir.h
//
// A temporary directory for one test (files standing in for disks, images, databases),
// removed with everything in it when the test ends.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace kiln::test {

struct TempDir {
  std::filesystem::path path;

  explicit TempDir(std::string_view prefix = "kiln-test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (std::string(prefix) + "-XXXXXX")).string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  /// A path inside the directory.
  std::string file(std::string_view name) const { return (path / name).string(); }
};

}  // namespace kiln::test
