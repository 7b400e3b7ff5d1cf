// File: server/storage/database_backup.h
//
// Online backups of the SQLite database ([database] backup_dir, backup_keep, backup_interval;
// docs/operations.md "Backing up"). kiln-server holds its SQLite file exclusively while it runs,
// so no other process can copy it consistently: kiln-server writes the copy itself
// (Storage::backupTo), every backup_interval seconds and whenever it gets SIGUSR1.
//
// A backup is <backup_dir>/kiln-<YYYYmmddTHHMMSSZ>.sqlite (UTC; a second backup within the same
// second gets -1, -2, ...), written under a hidden name and renamed, mode 0600 (it holds the
// BMC credentials in clear, as the database does). Then the oldest backups beyond backup_keep
// are deleted; files of other names are never touched.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "server/storage/storage.h"
#include "shared/core/error.h"

namespace kiln::server {

struct DatabaseBackup {
  std::string path;            ///< the backup written
  std::uintmax_t bytes = 0;    ///< its size
  std::vector<std::string> removed;  ///< older backups deleted (beyond backup_keep)
};

/// Whether `name` is a backup's file name (kiln-<stamp>[-N].sqlite). Pure.
bool isBackupName(const std::string& name);

/// Backs `storage` up into `dir` (made when missing, 0700) at time `now`, then keeps the
/// newest `keep` backups (0: all). Unavailable for PostgreSQL; Internal when the directory or
/// the file cannot be written (nothing half-written is left).
Result<DatabaseBackup> backupDatabase(Storage& storage, const std::string& dir, int keep,
                                      std::chrono::system_clock::time_point now);

}  // namespace kiln::server
