// File: server/storage/sqlite/sqlite_storage.h
//
// The embedded SQLite store: one database file in WAL mode, a pool of connections (one per
// concurrently running request), write transactions serialised in-process and started with
// BEGIN IMMEDIATE. ":memory:" databases use a single connection and serialise every
// transaction.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/storage/sqlite/sqlite_connection.h"
#include "server/storage/storage.h"

namespace kiln::server::sqlite {

class SqliteStorage final : public Storage {
 public:
  /// Opens the database at `path` (":memory:" for a private in-memory database) and applies
  /// pending migrations.
  static Result<std::unique_ptr<SqliteStorage>> open(const std::string& path);

  Result<TransactionPtr> begin(Mode mode) override;
  int schemaVersion() const override { return schemaVersion_; }
  Result<void> backupTo(const std::string& path) override;

  // Used by SqliteTransaction.
  std::unique_ptr<Connection> acquire();
  void release(std::unique_ptr<Connection> conn);
  std::mutex& writeMutex() { return writeMutex_; }
  std::mutex& memoryMutex() { return memoryMutex_; }
  bool inMemory() const { return memory_; }

 private:
  SqliteStorage(std::string path, bool memory) : path_(std::move(path)), memory_(memory) {}
  Result<void> migrate(Connection& conn);

  std::string path_;
  bool memory_;
  int schemaVersion_ = 0;
  std::mutex poolMutex_;
  std::vector<std::unique_ptr<Connection>> pool_;
  std::mutex writeMutex_;
  std::mutex memoryMutex_;
};

}  // namespace kiln::server::sqlite
