// File: agent/disk/block_device.h
//
// A disk as the agent sees it (inventory, root device hints, step targets).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln::agent {

struct BlockDevice {
  std::string name;           ///< device path: "/dev/sda", or a file path given with --device
  uint64_t size = 0;          ///< bytes
  std::string model;
  std::string vendor;
  std::string serial;
  std::string wwn;
  std::string byPath;         ///< "/dev/disk/by-path/..." when known
  bool rotational = false;
  bool supportsDiscard = false;  ///< /sys/block/X/queue/discard_max_bytes > 0
  uint32_t logicalBlockSize = 512;

  /// {"name", "size", "model", "vendor", "serial", "wwn", "by_path", "rotational"} (Ironic's
  /// inventory disk fields).
  nlohmann::json toJson() const;
};

}  // namespace kiln::agent
