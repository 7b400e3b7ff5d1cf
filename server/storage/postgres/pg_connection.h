// File: server/storage/postgres/pg_connection.h
//
// RAII wrappers over one libpq connection (PGconn) and its results. Statements with parameters
// are prepared once per connection (keyed by SQL text) and always run with their values bound
// as $1..$n in text format, never spliced into the SQL. Errors become Kiln's codes the way the
// SQLite wrapper's do: a unique violation is AlreadyExists with the column name as the message.
// Every message that could quote the connection URL is scrubbed of its password.
// Not thread-safe: one thread uses a connection at a time (PostgresStorage's pool ensures it).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "server/schema/record.h"
#include "shared/core/error.h"

struct pg_conn;
struct pg_result;

namespace kiln::server::postgres {

/// A `[database] connection` URL made ready for libpq, with what messages may show of it.
struct PgUrl {
  std::string conninfo;  ///< the URL libpq parses (postgresql+psycopg2:// rewritten)
  std::string display;   ///< the URL with user, password and database hidden
  /// The password as written and percent-decoded (userinfo and ?password=): scrub() hides them.
  std::vector<std::string> secrets;

  /// `text` with the URL replaced by `display` and every secret by "******".
  std::string scrub(std::string_view text) const;
};

/// Parses `url` (postgresql:// or postgresql+psycopg2://) with libpq. InvalidArgument naming
/// the masked URL when libpq cannot parse it.
Result<PgUrl> parsePgUrl(const std::string& url);

/// One query result. Columns are read as text (libpq's text format).
class PgResult {
 public:
  PgResult() = default;
  explicit PgResult(pg_result* result) : result_(result) {}
  ~PgResult();
  PgResult(PgResult&& other) noexcept : result_(other.result_) { other.result_ = nullptr; }
  PgResult& operator=(PgResult&& other) noexcept;
  PgResult(const PgResult&) = delete;
  PgResult& operator=(const PgResult&) = delete;

  int rows() const;
  bool isNull(int row, int col) const;
  std::string_view text(int row, int col) const;
  int64_t integer(int row, int col) const;
  /// Rows changed by an INSERT, UPDATE or DELETE.
  int64_t affected() const;
  /// The command tag ("COMMIT", "ROLLBACK", "UPDATE 1", ...).
  std::string_view command() const;
  /// Reads the column as a value of the given field type into `out` (a text value reuses the
  /// string's capacity); BOOLEAN columns read as Bool, BIGINT as Int.
  void read(int row, int col, FieldType type, Value& out) const;

 private:
  pg_result* result_ = nullptr;
};

class PgConnection {
 public:
  /// Connects to the database `url` names. Unavailable (with libpq's reason, scrubbed) when the
  /// server cannot be reached or refuses the login.
  static Result<std::unique_ptr<PgConnection>> open(const PgUrl& url);
  ~PgConnection();
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  /// Runs SQL text without parameters: one statement or several separated by ';' (migrations,
  /// BEGIN, SAVEPOINT, COMMIT).
  Result<PgResult> exec(const std::string& sql);

  /// Runs one statement with `binds` as $1..$n, through this connection's prepared statements.
  /// Parameter types are inferred by PostgreSQL from where they appear. A text value holding a
  /// NUL byte is InvalidArgument (PostgreSQL text cannot hold one).
  Result<PgResult> query(const std::string& sql, std::span<const Value* const> binds);
  /// The same with the values themselves.
  Result<PgResult> query(const std::string& sql, std::span<const Value> binds);

  /// False once the connection is broken (the server went away, the network dropped it).
  bool healthy() const;
  /// True when no transaction is open on the connection.
  bool idle() const;
  /// Connects again with the same parameters; the prepared statements are forgotten. False if
  /// the server still cannot be reached.
  bool reconnect();

 private:
  PgConnection(pg_conn* conn, const PgUrl& url) : conn_(conn), url_(url) {}
  /// Turns a finished command into a result or an error.
  Result<PgResult> check(pg_result* raw);

  pg_conn* conn_;
  PgUrl url_;
  std::unordered_map<std::string, std::string> prepared_;  ///< SQL text -> statement name
  uint64_t nextStatement_ = 0;
};

/// "$1, $2, ..." for the `?` placeholders of `sql` (those outside quoted text and names).
std::string numberPlaceholders(std::string_view sql);

}  // namespace kiln::server::postgres
