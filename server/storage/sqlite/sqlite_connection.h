// File: server/storage/sqlite/sqlite_connection.h
//
// RAII wrappers over one sqlite3 connection and its prepared statements. A connection caches
// every statement it has prepared (keyed by SQL text), so hot queries are compiled once.
// Not thread-safe: one thread uses a connection at a time (the pool in SqliteStorage ensures it).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "server/model/record.h"
#include "shared/core/error.h"

struct sqlite3;
struct sqlite3_stmt;

namespace kiln::server::sqlite {

/// A prepared statement borrowed from a connection's cache. Binds are 1-based. The statement
/// is reset (bindings cleared) when the wrapper goes out of scope.
class Statement {
 public:
  explicit Statement(sqlite3_stmt* stmt) : stmt_(stmt) {}
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  void bind(int index, const Value& value);
  void bindText(int index, std::string_view text);
  void bindInt(int index, int64_t value);
  void bindNull(int index);

  /// Advances: true when a row is available, false when done. Errors carry SQLite's message;
  /// a unique-constraint violation gives AlreadyExists with the column name as the message.
  Result<bool> step();

  /// Reads column `col` as a value of the given field type.
  Value column(int col, FieldType type) const;
  int64_t columnInt(int col) const;
  std::string columnText(int col) const;

 private:
  sqlite3_stmt* stmt_;
};

class Connection {
 public:
  /// Opens (creating if needed) the database at `path` (":memory:" allowed), sets WAL mode,
  /// foreign keys and a busy timeout.
  static Result<std::unique_ptr<Connection>> open(const std::string& path);
  ~Connection();

  /// Runs one or more statements without results.
  Result<void> exec(std::string_view sql);

  /// A prepared statement for `sql`, from the cache or freshly compiled.
  Result<std::unique_ptr<Statement>> prepare(const std::string& sql);

  int64_t lastInsertId() const;
  int changes() const;

 private:
  explicit Connection(sqlite3* db) : db_(db) {}
  sqlite3* db_;
  std::unordered_map<std::string, sqlite3_stmt*> cache_;
};

}  // namespace kiln::server::sqlite
