// File: server/storage/postgres/postgres_storage.h
//
// The PostgreSQL store, for several kiln-servers on one database (issue 15). It behaves as the
// SQLite store does (the contract tests in tests/server/storage run against both), with these
// differences in how it gets there:
//  - Transactions: each is a real BEGIN ... COMMIT on a connection taken from a small pool
//    (connections are opened on demand; a broken pooled connection is reconnected once when its
//    BEGIN fails). Write transactions run concurrently at READ COMMITTED: nothing serialises
//    them in-process. A row a write transaction reads with findBy()/findInto() is locked
//    (SELECT ... FOR NO KEY UPDATE) until it ends, so a handler's read-check-update of a node
//    (its reservation, its state) cannot lose another server's update; update() stays a plain
//    UPDATE by id (storage.h says when it may be used). Read transactions
//    see one snapshot (REPEATABLE READ), as SQLite's do.
//  - Statement atomicity: every writing statement runs under a savepoint, so that one that
//    fails (a unique violation) changes nothing and leaves the transaction usable, as in SQLite.
//  - Schema: migrations/*.sql, the SQLite migrations one for one in PostgreSQL's dialect
//    (BIGINT identity ids, BOOLEAN for Bool fields, BIGINT for Int fields, TEXT for the rest),
//    recorded in the same schema_version table. Servers starting together on one database take
//    an advisory lock, so exactly one applies each pending migration.
//  - Text sorts in the database's collation: a database created with the C collation (the
//    documented setup, docs/configuration.md) orders names exactly as SQLite does; others log a
//    warning at start-up.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "server/storage/postgres/pg_connection.h"
#include "server/storage/storage.h"

namespace kiln::server::postgres {

/// True for the URLs openPostgresStorage() takes: postgresql:// and postgresql+psycopg2://.
bool isPostgresUrl(std::string_view connection);

/// Opens the PostgreSQL database the URL names and applies pending migrations.
/// InvalidArgument for a malformed URL, Unavailable when the server cannot be reached; no
/// message shows the password.
Result<StoragePtr> openPostgresStorage(const std::string& connection);

class PostgresStorage final : public Storage {
 public:
  static Result<std::unique_ptr<PostgresStorage>> open(const PgUrl& url);

  Result<TransactionPtr> begin(Mode mode) override;
  int schemaVersion() const override { return schemaVersion_; }

  // Used by the transactions.
  Result<std::unique_ptr<PgConnection>> acquire();
  void release(std::unique_ptr<PgConnection> conn);

 private:
  explicit PostgresStorage(PgUrl url) : url_(std::move(url)) {}
  Result<void> migrate(PgConnection& conn);
  Result<void> migrateLocked(PgConnection& conn);
  void checkCollation(PgConnection& conn);

  PgUrl url_;
  int schemaVersion_ = 0;
  std::mutex poolMutex_;
  std::vector<std::unique_ptr<PgConnection>> pool_;  ///< idle connections
};

}  // namespace kiln::server::postgres
