// File: agent/hardware/sysfs.h
//
// The agent's seam to /sys and /proc (house-style rule 16): the few read-only operations the
// disk lister, the inventory and software RAID need. Production reads the real tree
// (RootedSysfsReader("/")); tests point a RootedSysfsReader at a fake tree under
// tests/data/sysfs/<scenario>/.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::agent {

/// Read-only access to /sys, /proc and /dev/disk. Paths are absolute ("/sys/block/sda/size").
/// Implementations are thread-safe.
class SysfsReader {
 public:
  virtual ~SysfsReader() = default;
  /// The whole content of a file; nullopt when it does not exist or cannot be read.
  virtual std::optional<std::string> read(std::string_view path) = 0;
  /// The names (not paths) of a directory's entries, sorted; empty when it does not exist.
  virtual std::vector<std::string> list(std::string_view dir) = 0;
  /// True when something (file, directory, symlink) exists at `path`.
  virtual bool exists(std::string_view path) = 0;
  /// The target of a symbolic link as stored ("../../sda"); nullopt when not a symlink.
  virtual std::optional<std::string> readLink(std::string_view path) = 0;
};

/// A SysfsReader over the file system below `root` ("/" = the real system; a fake tree in
/// tests): read("/sys/block/sda/size") reads `root`/sys/block/sda/size.
class RootedSysfsReader final : public SysfsReader {
 public:
  explicit RootedSysfsReader(std::string root = "/");
  std::optional<std::string> read(std::string_view path) override;
  std::vector<std::string> list(std::string_view dir) override;
  bool exists(std::string_view path) override;
  std::optional<std::string> readLink(std::string_view path) override;

 private:
  std::string resolve(std::string_view path) const;
  std::string root_;
};

/// `text` without leading and trailing whitespace (sysfs values end with a newline): kiln::trim. Pure.
std::string trimSysfsValue(std::string_view text);

/// Whether this machine booted the agent through UEFI firmware (/sys/firmware/efi exists).
inline bool bootedThroughUefi(SysfsReader& sysfs) { return sysfs.exists("/sys/firmware/efi"); }

/// The trimmed content of a sysfs (or /proc) file; "" when it cannot be read.
std::string readSysfsValue(SysfsReader& sysfs, const std::string& path);

}  // namespace kiln::agent
