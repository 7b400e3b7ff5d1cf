// File: server/storage/queries/bios_settings.h
//
// Cached BIOS settings (API 1.40): list and sync a node's rows.
// Storage-side queries of cached BIOS settings (server/model/bios_setting.h has the schema and the
// plain data): they take the caller's Transaction, so they run inside its atomic unit.
#pragma once

#include <string>
#include <vector>

#include "server/model/bios_setting.h"
#include "server/storage/storage.h"

namespace kiln::server {

/// The node's cached settings, sorted by name.
Result<std::vector<Record>> listBiosSettings(Transaction& tx, int64_t nodeId);

/// Makes the node's cached settings equal to `settings`: new names are created, changed ones
/// updated (updated_at = `now`), missing ones deleted; unchanged rows keep their timestamps.
Result<void> syncBiosSettings(Transaction& tx, int64_t nodeId,
                              const std::vector<BiosSetting>& settings, const std::string& now);

}  // namespace kiln::server
