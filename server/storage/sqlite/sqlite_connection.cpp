#include "server/storage/sqlite/sqlite_connection.h"

#include <sqlite3.h>

#include <mutex>
#include "server/storage/storage.h"

namespace kiln::server::sqlite {

Statement::~Statement() {
  if (stmt_) {
    sqlite3_reset(stmt_);
    --*active_;
  }
}

void Statement::bind(int index, const Value& value) {
  switch (value.kind) {
    case Value::Kind::Null: sqlite3_bind_null(stmt_, index); break;
    case Value::Kind::Bool: sqlite3_bind_int64(stmt_, index, value.b ? 1 : 0); break;
    case Value::Kind::Int: sqlite3_bind_int64(stmt_, index, value.i); break;
    case Value::Kind::Text: bindText(index, value.s); break;
  }
}

void Statement::bindText(int index, std::string_view text) {
  sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
}
void Statement::bindInt(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }
void Statement::bindNull(int index) { sqlite3_bind_null(stmt_, index); }

Result<bool> Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) {
    return true;
  }
  if (rc == SQLITE_DONE) {
    return false;
  }
  sqlite3* db = sqlite3_db_handle(stmt_);
  std::string message = sqlite3_errmsg(db);
  if (sqlite3_extended_errcode(db) == SQLITE_CONSTRAINT_UNIQUE ||
      sqlite3_extended_errcode(db) == SQLITE_CONSTRAINT_PRIMARYKEY) {
    // "UNIQUE constraint failed: nodes.name" -> "name"
    auto dot = message.rfind('.');
    return uniqueViolationError(dot == std::string::npos ? message : message.substr(dot + 1));
  }
  if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
    return fail(ErrorCode::Unavailable, Reason::DatabaseBusy, "database is busy: " + message);
  }
  return internalError("database error: " + message);
}

void Statement::readColumn(int col, FieldType type, Value& out) const {
  out.b = false;
  out.i = 0;
  if (type == FieldType::Bool || type == FieldType::Int) {
    out.s.clear();
    if (sqlite3_column_type(stmt_, col) == SQLITE_NULL) {
      out.kind = Value::Kind::Null;
    } else if (type == FieldType::Bool) {
      out.kind = Value::Kind::Bool;
      out.b = sqlite3_column_int64(stmt_, col) != 0;
    } else {
      out.kind = Value::Kind::Int;
      out.i = sqlite3_column_int64(stmt_, col);
    }
    return;
  }
  // sqlite3_column_text is NULL exactly for SQL NULL (an empty text is "").
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
  if (!text) {
    out.kind = Value::Kind::Null;
    out.s.clear();
    return;
  }
  out.kind = Value::Kind::Text;
  out.s.assign(text, static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
}

int64_t Statement::columnInt(int col) const { return sqlite3_column_int64(stmt_, col); }

std::string Statement::columnText(int col) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
  const int size = sqlite3_column_bytes(stmt_, col);
  return text ? std::string(text, static_cast<size_t>(size)) : std::string();
}

Result<std::unique_ptr<Connection>> Connection::open(const std::string& path) {
  static std::once_flag configured;
  std::call_once(configured, [] { sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); });
  sqlite3* db = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  // "unix-excl": the first connection takes an exclusive lock on the file for the life of the
  // process, and the WAL index lives in this process's memory instead of a shared -shm file.
  // Beginning a read transaction then needs no fcntl() lock and no shared-memory mutex held
  // across a system call, which the HTTP threads otherwise contend on (docs/benchmarks.md).
  // Connections of this process still share the database; other processes cannot open it.
  if (sqlite3_open_v2(path.c_str(), &db, flags, "unix-excl") != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return fail(ErrorCode::Unavailable, "cannot open database " + path + ": " + msg);
  }
  std::unique_ptr<Connection> conn(new Connection(db));
  sqlite3_busy_timeout(db, 10000);
  auto pragmas = conn->exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                            "PRAGMA foreign_keys=ON; PRAGMA cache_size=-1024;");
  if (!pragmas && pragmas.error().code == ErrorCode::Unavailable) {
    return fail(ErrorCode::Unavailable,
                "database " + path + " is in use by another process (kiln-server keeps its "
                "SQLite database to itself while it runs): " + pragmas.error().message);
  }
  KILN_TRY_VOID(pragmas);
  return conn;
}

Connection::~Connection() {
  for (auto& [sql, stmt] : cache_) {
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db_);
}

Result<void> Connection::exec(std::string_view sql) {
  char* err = nullptr;
  std::string text(sql);
  if (sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    if (sqlite3_errcode(db_) == SQLITE_BUSY) {
      return fail(ErrorCode::Unavailable, "database is busy: " + msg);
    }
    return internalError("database error: " + msg);
  }
  return {};
}

Result<void> Connection::run(const std::string& sql) {
  auto stmt = KILN_TRY(prepare(sql));
  KILN_TRY(stmt.step());
  return {};
}

Result<Statement> Connection::prepare(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                           SQLITE_PREPARE_PERSISTENT, &stmt, nullptr) != SQLITE_OK) {
      return internalError(std::string("cannot prepare statement: ") + sqlite3_errmsg(db_) +
                           " [" + sql + "]");
    }
    // Bound the cache: list queries with many filter combinations compile distinct SQL. Only
    // prune when no Statement wrapper holds a cached statement.
    if (cache_.size() > 512 && active_ == 0) {
      for (auto& [s, st] : cache_) {
        sqlite3_finalize(st);
      }
      cache_.clear();
    }
    it = cache_.emplace(sql, stmt).first;
  }
  return Statement(it->second, &active_);
}

int64_t Connection::lastInsertId() const { return sqlite3_last_insert_rowid(db_); }
int Connection::changes() const { return sqlite3_changes(db_); }

}  // namespace kiln::server::sqlite
