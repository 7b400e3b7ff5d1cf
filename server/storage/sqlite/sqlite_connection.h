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

#include "server/schema/record.h"
#include "shared/core/error.h"

struct sqlite3;
struct sqlite3_stmt;

namespace kiln::server::sqlite {

/// A prepared statement borrowed from a connection's cache. Binds are 1-based. The statement
/// is reset when the wrapper goes out of scope (every use binds all its parameters again).
class Statement {
 public:
  Statement(sqlite3_stmt* stmt, int* active) : stmt_(stmt), active_(active) { ++*active_; }
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  Statement(Statement&& other) noexcept : stmt_(other.stmt_), active_(other.active_) {
    other.stmt_ = nullptr;
  }

  void bind(int index, const Value& value);
  void bindText(int index, std::string_view text);
  void bindInt(int index, int64_t value);
  void bindNull(int index);

  /// Advances: true when a row is available, false when done. Errors carry SQLite's message;
  /// a unique-constraint violation gives AlreadyExists with the column name as the message.
  Result<bool> step();

  /// Reads column `col` as a value of the given field type into `out`; a text value reuses
  /// the string's capacity.
  void readColumn(int col, FieldType type, Value& out) const;
  int64_t columnInt(int col) const;
  std::string columnText(int col) const;

 private:
  sqlite3_stmt* stmt_;
  int* active_;  ///< the connection's count of live Statement wrappers
};

class Connection {
 public:
  /// Opens (creating if needed) the database at `path` (":memory:" allowed), sets WAL mode,
  /// foreign keys and a busy timeout. The first call also turns off SQLite's global memory
  /// statistics, whose mutex every allocation would otherwise take.
  static Result<std::unique_ptr<Connection>> open(const std::string& path);
  ~Connection();

  /// Runs one or more statements without results (compiled each time: migrations, pragmas).
  Result<void> exec(std::string_view sql);

  /// Runs one statement without results through the statement cache (BEGIN, COMMIT, ...).
  Result<void> run(const std::string& sql);

  /// A prepared statement for `sql`, from the cache or freshly compiled.
  Result<Statement> prepare(const std::string& sql);

  int64_t lastInsertId() const;
  int changes() const;

 private:
  explicit Connection(sqlite3* db) : db_(db) {}
  sqlite3* db_;
  std::unordered_map<std::string, sqlite3_stmt*> cache_;
  int active_ = 0;  ///< live Statement wrappers; the cache is only pruned when none is
};

}  // namespace kiln::server::sqlite
