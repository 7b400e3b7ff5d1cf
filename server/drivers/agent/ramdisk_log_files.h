// File: server/drivers/agent/ramdisk_log_files.h
//
// The ramdisk log bundles kiln-server stored (server/drivers/agent/ramdisk_logs.h writes them
// as <node uuid>[_<instance uuid>]_<YYYY-mm-dd-HH-MM-SS>.tar.gz under [agent]
// deploy_logs_local_path), found again by node for the API (GET /v1/nodes/{node}/ramdisk_logs).
// A name is a node's bundle only when it has exactly that shape, starting with the node's own
// UUID: nothing else in the directory (hidden temporary files, other nodes' bundles, links,
// sub-directories) is ever listed or read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/config.h"
#include "shared/core/error.h"

namespace kiln::server::agent {

struct StoredLogFile {
  std::string name;  ///< the file name (no directory)
  uint64_t size = 0;
  std::string time;  ///< when it was collected, from its name: "2026-12-06T14:02:31+00:00"
};

/// The collection time of `name` ("...T..+00:00") when it is a bundle of the node `nodeUuid`
/// (lowercase UUID), else nullopt.
std::optional<std::string> logFileTime(std::string_view name, std::string_view nodeUuid);

/// The node's bundles (regular files only), newest first; none when the directory is missing.
Result<std::vector<StoredLogFile>> listStoredLogs(const Config& config, const std::string& nodeUuid);

}  // namespace kiln::server::agent
