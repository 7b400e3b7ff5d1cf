#include "server/storage/postgres/postgres_storage.h"

#include <algorithm>
#include <array>
#include <span>
#include <utility>

#include "server/storage/sql_builder.h"
#include "server/storage/storage_metrics.h"
#include "shared/core/log.h"
#include "shared/core/secrets.h"

namespace kiln::server {
// Generated from migrations/*.sql by CMake (kiln_embed_sql).
std::span<const std::string_view> postgresMigrations();
}  // namespace kiln::server

namespace kiln::server::postgres {
namespace {

const SqlDialect kDialect{.explicitNullsOrder = true,
                          .likeOperator = "ILIKE",
                          .quoteIdentifiers = true,
                          .numberedPlaceholders = true,
                          .insertSuffix = " RETURNING id",
                          .lockSuffix = " FOR NO KEY UPDATE"};

/// Idle connections kept for reuse; more are closed when their transaction ends.
constexpr size_t kMaxIdleConnections = 16;

/// The advisory lock key that serialises migrations across servers ("kilnmigr").
constexpr int64_t kMigrationLock = 0x6B696C6E6D696772;

/// Names the savepoint that makes each writing statement atomic.
const std::string kSavepoint = "SAVEPOINT kiln_statement";
const std::string kReleaseAndSavepoint =
    "RELEASE SAVEPOINT kiln_statement; SAVEPOINT kiln_statement";
const std::string kRollbackToSavepoint = "ROLLBACK TO SAVEPOINT kiln_statement";

std::string q(std::string_view name) { return columnName(name, kDialect); }

/// The fixed statements of each resource's store, built once per process.
const StoreStatements& schemaSql(Resource resource) {
  static const std::array<StoreStatements, kResourceCount> all = [] {
    std::array<StoreStatements, kResourceCount> out;
    for (size_t i = 0; i < kResourceCount; ++i) {
      out[i] = buildStoreStatements(schemaOf(static_cast<Resource>(i)), kDialect);
    }
    return out;
  }();
  return all[static_cast<size_t>(resource)];
}

/// What the stores of one transaction share: its connection and whether it writes.
struct Session {
  PgConnection* conn;
  bool write;
  bool savepoint = false;  ///< kiln_statement exists in this transaction

  /// Runs `body` (writing statements) so that if it fails it changes nothing and the
  /// transaction goes on, as a failed statement does in SQLite; in PostgreSQL a failed
  /// statement would otherwise abort the whole transaction. One savepoint, released and set
  /// again before each guarded call.
  template <typename F>
  auto guarded(F&& body) -> decltype(body()) {
    KILN_TRY(conn->exec(savepoint ? kReleaseAndSavepoint : kSavepoint));
    savepoint = true;
    auto result = body();
    if (!result && conn->healthy()) {
      (void)conn->exec(kRollbackToSavepoint);
    }
    return result;
  }
};

/// A schema-driven store over one table.
class PgRecordStore final : public RecordStore {
 public:
  PgRecordStore(Session& session, Resource resource)
      : session_(session),
        schema_(schemaOf(resource)),
        sql_(schemaSql(resource)),
        stored_(sql_.stored) {}

  const Schema& schema() const override { return schema_; }

  Result<bool> findInto(int field, const Value& value, Record& out) override {
    const auto f = static_cast<size_t>(field);
    const std::string& sql = session_.write ? sql_.findByLocked[f] : sql_.findBy[f];
    auto result = KILN_TRY(conn().query(sql, std::span<const Value>(&value, 1)));
    if (result.rows() == 0) return false;
    if (out.size() != schema_.size()) out = Record(schema_.size());
    readRow(result, 0, out);
    return true;
  }

  Result<void> listInto(const ListQuery& query, std::vector<Record>& out) override {
    const SqlQuery sq = buildListQuery(schema_, query, kDialect);
    auto result = KILN_TRY(conn().query(numberPlaceholders(sq.sql), sq.binds));
    const auto rows = static_cast<size_t>(result.rows());
    if (out.size() > rows) out.resize(rows);
    while (out.size() < rows) out.emplace_back(schema_.size());
    for (size_t row = 0; row < rows; ++row) {
      Record& r = out[row];
      if (r.size() != schema_.size()) r = Record(schema_.size());
      readRow(result, static_cast<int>(row), r);
    }
    return {};
  }

  Result<int64_t> count(const std::vector<ListFilter>& filters) override {
    const SqlQuery sq = buildCountQuery(schema_, filters, kDialect);
    auto result = KILN_TRY(conn().query(numberPlaceholders(sq.sql), sq.binds));
    return result.integer(0, 0);
  }

  Result<std::vector<std::pair<Value, int64_t>>> countByValue(int field) override {
    const FieldSpec& spec = schema_[static_cast<size_t>(field)];
    const std::string column = q(spec.name);
    // NULLS FIRST: where SQLite puts them.
    auto result = KILN_TRY(conn().query("SELECT " + column + ", COUNT(*) AS n FROM " +
                                            std::string(schema_.table) + " GROUP BY " + column +
                                            " ORDER BY n DESC, " + column + " NULLS FIRST",
                                        std::span<const Value>()));
    std::vector<std::pair<Value, int64_t>> out;
    for (int row = 0; row < result.rows(); ++row) {
      Value v;
      result.read(row, 0, spec.type, v);
      out.emplace_back(std::move(v), result.integer(row, 1));
    }
    return out;
  }

  Result<std::vector<std::pair<std::vector<Value>, int64_t>>> countGrouped(
      std::span<const int> fields) override {
    std::string columns;
    std::string order;
    for (int field : fields) {
      const std::string column = q(schema_[static_cast<size_t>(field)].name);
      columns += (columns.empty() ? "" : ", ") + column;
      // NULLS FIRST: where SQLite puts them.
      order += (order.empty() ? "" : ", ") + column + " NULLS FIRST";
    }
    auto result = KILN_TRY(conn().query("SELECT " + columns + ", COUNT(*) FROM " +
                                            std::string(schema_.table) + " GROUP BY " + columns +
                                            " ORDER BY " + order,
                                        std::span<const Value>()));
    std::vector<std::pair<std::vector<Value>, int64_t>> out;
    const int n = static_cast<int>(fields.size());
    for (int row = 0; row < result.rows(); ++row) {
      std::vector<Value> values(fields.size());
      for (int i = 0; i < n; ++i) {
        result.read(row, i, schema_[static_cast<size_t>(fields[static_cast<size_t>(i)])].type,
                    values[static_cast<size_t>(i)]);
      }
      out.emplace_back(std::move(values), result.integer(row, n));
    }
    return out;
  }

  Result<Record> insert(const Record& record) override {
    return session_.guarded([&]() -> Result<Record> {
      std::vector<const Value*> binds;
      binds.reserve(stored_.size());
      for (size_t k = 1; k < stored_.size(); ++k) binds.push_back(&record[stored_[k]]);
      auto result = KILN_TRY(conn().query(sql_.insert, binds));
      Record out = record;
      out[0] = Value::integer(result.integer(0, 0));
      return out;
    });
  }

  Result<void> update(const Record& record) override {
    return session_.guarded([&]() -> Result<void> {
      const Value id = Value::integer(record.id());
      auto result = KILN_TRY(conn().query(sql_.update, rowBinds(record, id)));
      if (result.affected() == 0) return notFoundError(record);
      return {};
    });
  }

  Result<void> updateFields(const Record& record, const FieldMask& fields) override {
    return session_.guarded([&]() -> Result<void> {
      const Value id = Value::integer(record.id());
      std::vector<int> set;
      const std::string sql = buildUpdateFieldsSql(schema_, stored_, fields, kDialect, set);
      if (set.empty()) {
        auto exists = KILN_TRY(conn().query(sql_.exists, std::span<const Value>(&id, 1)));
        if (exists.rows() == 0) return notFoundError(record);
        return {};
      }
      std::vector<const Value*> binds;
      for (int f : set) binds.push_back(&record[static_cast<size_t>(f)]);
      binds.push_back(&id);
      auto result = KILN_TRY(conn().query(sql, binds));
      if (result.affected() == 0) return notFoundError(record);
      return {};
    });
  }

  Result<void> remove(int64_t id) override {
    return session_.guarded([&]() -> Result<void> {
      const Value v = Value::integer(id);
      auto result = KILN_TRY(conn().query(sql_.remove, std::span<const Value>(&v, 1)));
      if (result.affected() == 0) {
        return notFound(std::string(schema_.resource) + " could not be found.");
      }
      return {};
    });
  }

  Result<int64_t> removeWhere(int field, const Value& value) override {
    return session_.guarded([&]() -> Result<int64_t> {
      auto result = KILN_TRY(conn().query("DELETE FROM " + std::string(schema_.table) + " WHERE " +
                                              q(schema_[static_cast<size_t>(field)].name) + " = $1",
                                          std::span<const Value>(&value, 1)));
      return result.affected();
    });
  }

 private:
  PgConnection& conn() { return *session_.conn; }

  /// The stored fields after id, then the id: the parameters of sql_.update.
  std::vector<const Value*> rowBinds(const Record& record, const Value& id) const {
    std::vector<const Value*> binds;
    binds.reserve(stored_.size() + 1);
    for (size_t k = 1; k < stored_.size(); ++k) binds.push_back(&record[stored_[k]]);
    binds.push_back(&id);
    return binds;
  }

  std::unexpected<Error> notFoundError(const Record& record) const {
    return notFound(std::string(schema_.resource) + " " + record.uuid() + " could not be found.");
  }

  /// Overwrites the stored fields of `r` (computed fields are never read from the table).
  void readRow(const PgResult& result, int row, Record& r) const {
    for (size_t k = 0; k < stored_.size(); ++k) {
      result.read(row, static_cast<int>(k), schema_[stored_[k]].type, r[stored_[k]]);
    }
  }

  Session& session_;
  const Schema& schema_;
  const StoreStatements& sql_;
  const std::vector<int>& stored_;
};

class PgTraitStore final : public TraitStore {
 public:
  explicit PgTraitStore(Session& session) : session_(session) {}

  Result<std::vector<std::pair<std::string, int64_t>>> countAll() override {
    // COLLATE "C": the byte order SQLite sorts by.
    auto result = KILN_TRY(conn().query(
        "SELECT trait, COUNT(*) FROM node_traits GROUP BY trait ORDER BY trait COLLATE \"C\"",
        std::span<const Value>()));
    std::vector<std::pair<std::string, int64_t>> out;
    out.reserve(static_cast<size_t>(result.rows()));
    for (int row = 0; row < result.rows(); ++row) {
      out.emplace_back(result.text(row, 0), result.integer(row, 1));
    }
    return out;
  }

  Result<std::vector<std::string>> get(int64_t nodeId) override {
    const Value id = Value::integer(nodeId);
    auto result =
        KILN_TRY(conn().query("SELECT trait FROM node_traits WHERE node_id = $1 ORDER BY trait",
                              std::span<const Value>(&id, 1)));
    std::vector<std::string> out;
    out.reserve(static_cast<size_t>(result.rows()));
    for (int row = 0; row < result.rows(); ++row) out.emplace_back(result.text(row, 0));
    return out;
  }

  Result<std::unordered_map<int64_t, std::vector<std::string>>> getMany(
      std::span<const int64_t> nodeIds) override {
    std::unordered_map<int64_t, std::vector<std::string>> out;
    if (nodeIds.empty()) {
      return out;
    }
    // Ids of one page are contiguous in most listings: a range scan beats a long IN list.
    const auto [lo, hi] = std::minmax_element(nodeIds.begin(), nodeIds.end());
    const std::array<Value, 2> range = {Value::integer(*lo), Value::integer(*hi)};
    auto result = KILN_TRY(
        conn().query("SELECT node_id, trait FROM node_traits WHERE node_id BETWEEN $1 AND $2 "
                     "ORDER BY node_id, trait",
                     range));
    for (int64_t id : nodeIds) {
      out[id];
    }
    for (int row = 0; row < result.rows(); ++row) {
      auto it = out.find(result.integer(row, 0));
      if (it != out.end()) {
        it->second.emplace_back(result.text(row, 1));
      }
    }
    return out;
  }

  Result<void> set(int64_t nodeId, std::span<const std::string> traits) override {
    // One savepoint for the whole replacement.
    return session_.guarded([&]() -> Result<void> {
      KILN_TRY_VOID(clearNow(nodeId));
      for (const auto& t : traits) {
        KILN_TRY_VOID(addNow(nodeId, t));
      }
      return {};
    });
  }

  Result<void> add(int64_t nodeId, const std::string& trait) override {
    return session_.guarded([&] { return addNow(nodeId, trait); });
  }

  Result<bool> remove(int64_t nodeId, const std::string& trait) override {
    return session_.guarded([&]() -> Result<bool> {
      const std::array<Value, 2> binds = {Value::integer(nodeId), Value::text(trait)};
      auto result = KILN_TRY(
          conn().query("DELETE FROM node_traits WHERE node_id = $1 AND trait = $2", binds));
      return result.affected() > 0;
    });
  }

  Result<void> clear(int64_t nodeId) override {
    return session_.guarded([&] { return clearNow(nodeId); });
  }

 private:
  PgConnection& conn() { return *session_.conn; }

  Result<void> addNow(int64_t nodeId, const std::string& trait) {
    const std::array<Value, 2> binds = {Value::integer(nodeId), Value::text(trait)};
    KILN_TRY(conn().query(
        "INSERT INTO node_traits (node_id, trait) VALUES ($1, $2) ON CONFLICT DO NOTHING", binds));
    return {};
  }

  Result<void> clearNow(int64_t nodeId) {
    const Value id = Value::integer(nodeId);
    KILN_TRY(
        conn().query("DELETE FROM node_traits WHERE node_id = $1", std::span<const Value>(&id, 1)));
    return {};
  }

  Session& session_;
};

/// The node event journal (table node_events, migration 0010).
class PgNodeEventStore final : public NodeEventStore {
 public:
  explicit PgNodeEventStore(Session& session) : session_(session) {}

  Result<int64_t> append(const NodeEvent& e) override {
    return session_.guarded([&]() -> Result<int64_t> {
      const std::array<Value, 6> binds = {Value::integer(e.nodeId), Value::text(e.nodeUuid),
                                          Value::text(e.time),      Value::text(e.kind),
                                          Value::text(e.fields),    Value::text(e.conductor)};
      auto result = KILN_TRY(conn().query(
          "INSERT INTO node_events (node_id, node_uuid, created_at, kind, fields, conductor) "
          "VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
          binds));
      return result.integer(0, 0);
    });
  }

  Result<std::vector<NodeEvent>> list(const NodeEventQuery& q) override {
    std::vector<Value> binds;
    std::string sql =
        "SELECT id, node_id, node_uuid, created_at, kind, fields, conductor FROM node_events "
        "WHERE id > $1";
    binds.push_back(Value::integer(q.afterId));
    if (q.nodeId) {
      binds.push_back(Value::integer(*q.nodeId));
      sql += " AND node_id = $" + std::to_string(binds.size());
    }
    if (!q.kinds.empty()) {
      sql += " AND kind IN (";
      for (size_t i = 0; i < q.kinds.size(); ++i) {
        binds.push_back(Value::text(q.kinds[i]));
        sql += (i ? ", $" : "$") + std::to_string(binds.size());
      }
      sql += ")";
    }
    binds.push_back(Value::integer(q.limit));
    sql += " ORDER BY id LIMIT $" + std::to_string(binds.size());
    auto result = KILN_TRY(conn().query(sql, std::span<const Value>(binds)));
    std::vector<NodeEvent> out;
    out.reserve(static_cast<size_t>(result.rows()));
    for (int row = 0; row < result.rows(); ++row) {
      NodeEvent& e = out.emplace_back();
      e.id = result.integer(row, 0);
      e.nodeId = result.integer(row, 1);
      e.nodeUuid = result.text(row, 2);
      e.time = result.text(row, 3);
      e.kind = result.text(row, 4);
      e.fields = result.text(row, 5);
      e.conductor = result.isNull(row, 6) ? std::string() : std::string(result.text(row, 6));
    }
    return out;
  }

  Result<int64_t> newestId() override {
    auto result = KILN_TRY(
        conn().query("SELECT COALESCE(MAX(id), 0) FROM node_events", std::span<const Value>()));
    return result.integer(0, 0);
  }

  Result<int64_t> removeOlderThan(const std::string& time) override {
    return session_.guarded([&]() -> Result<int64_t> {
      const Value t = Value::text(time);
      auto result = KILN_TRY(conn().query("DELETE FROM node_events WHERE created_at < $1",
                                          std::span<const Value>(&t, 1)));
      return result.affected();
    });
  }

  Result<int64_t> removeBeyond(int64_t nodeId, int64_t keep) override {
    if (keep <= 0) return removeNode(nodeId);
    return session_.guarded([&]() -> Result<int64_t> {
      const std::array<Value, 2> binds = {Value::integer(nodeId), Value::integer(keep)};
      auto result = KILN_TRY(conn().query(
          "DELETE FROM node_events WHERE node_id = $1 AND id < (SELECT COALESCE(MIN(id), 0) "
          "FROM (SELECT id FROM node_events WHERE node_id = $1 ORDER BY id DESC LIMIT $2) AS k)",
          binds));
      return result.affected();
    });
  }

  Result<std::vector<int64_t>> nodesWithMoreThan(int64_t count) override {
    const Value c = Value::integer(count);
    auto result = KILN_TRY(conn().query(
        "SELECT node_id FROM node_events GROUP BY node_id HAVING COUNT(*) > $1 ORDER BY node_id",
        std::span<const Value>(&c, 1)));
    std::vector<int64_t> out;
    for (int row = 0; row < result.rows(); ++row) out.push_back(result.integer(row, 0));
    return out;
  }

  Result<int64_t> removeNode(int64_t nodeId) override {
    return session_.guarded([&]() -> Result<int64_t> {
      const Value id = Value::integer(nodeId);
      auto result = KILN_TRY(conn().query("DELETE FROM node_events WHERE node_id = $1",
                                          std::span<const Value>(&id, 1)));
      return result.affected();
    });
  }

 private:
  PgConnection& conn() { return *session_.conn; }
  Session& session_;
};

/// One store per Resource, in the enum's order.
template <size_t... I>
std::array<PgRecordStore, kResourceCount> makeStores(Session& session, std::index_sequence<I...>) {
  return {PgRecordStore(session, static_cast<Resource>(I))...};
}

class PgTransaction final : public Transaction {
 public:
  PgTransaction(PostgresStorage& storage, std::unique_ptr<PgConnection> conn, bool write)
      : storage_(storage),
        conn_(std::move(conn)),
        session_{conn_.get(), write},
        stores_(makeStores(session_, std::make_index_sequence<kResourceCount>())),
        traits_(session_),
        events_(session_),
        timer_(write) {}

  ~PgTransaction() override {
    if (!done_) {
      (void)conn_->exec("ROLLBACK");
      timer_.finish();
      storage_.release(std::move(conn_));
    }
  }

  RecordStore& records(Resource resource) override {
    return stores_[static_cast<size_t>(resource)];
  }
  TraitStore& traits() override { return traits_; }
  NodeEventStore& nodeEvents() override { return events_; }

  Result<void> commit() override {
    if (done_) {
      return internalError("database error: the transaction has already ended");
    }
    auto committed = conn_->exec("COMMIT");
    done_ = true;
    timer_.finish();
    // A transaction in which a statement failed outside a savepoint (a read) can only roll
    // back: PostgreSQL answers COMMIT with ROLLBACK.
    const bool rolledBack = committed && committed->command() == "ROLLBACK";
    // Hand the connection back now: a committed transaction object may outlive its use.
    storage_.release(std::move(conn_));
    if (!committed) return std::unexpected(committed.error());
    if (rolledBack) {
      return internalError(
          "database error: the transaction was rolled back after a failed "
          "statement");
    }
    if (appendedEvents) storage_.eventsCommitted();
    return {};
  }

 private:
  PostgresStorage& storage_;
  std::unique_ptr<PgConnection> conn_;
  Session session_;
  std::array<PgRecordStore, kResourceCount> stores_;
  PgTraitStore traits_;
  PgNodeEventStore events_;
  TransactionTimer timer_;
  bool done_ = false;
};

}  // namespace

bool isPostgresUrl(std::string_view connection) {
  return connection.starts_with("postgresql://") ||
         connection.starts_with("postgresql+psycopg2://");
}

Result<StoragePtr> openPostgresStorage(const std::string& connection) {
  const PgUrl url = KILN_TRY(parsePgUrl(connection));
  return StoragePtr(KILN_TRY(PostgresStorage::open(url)));
}

Result<std::unique_ptr<PostgresStorage>> PostgresStorage::open(const PgUrl& url) {
  std::unique_ptr<PostgresStorage> storage(new PostgresStorage(url));
  auto conn = KILN_TRY(PgConnection::open(storage->url_));
  KILN_TRY_VOID(storage->migrate(*conn));
  storage->checkCollation(*conn);
  storage->release(std::move(conn));
  return storage;
}

Result<void> PostgresStorage::migrate(PgConnection& conn) {
  // Servers starting together on one database: one migrates, the others wait here and then
  // find nothing left to do. The lock belongs to this session and ends with it.
  const Value key = Value::integer(kMigrationLock);
  KILN_TRY(conn.query("SELECT pg_advisory_lock($1::bigint)", std::span<const Value>(&key, 1)));
  auto migrated = migrateLocked(conn);
  auto unlocked =
      conn.query("SELECT pg_advisory_unlock($1::bigint)", std::span<const Value>(&key, 1));
  KILN_TRY_VOID(migrated);
  KILN_TRY(unlocked);
  return {};
}

Result<void> PostgresStorage::migrateLocked(PgConnection& conn) {
  KILN_TRY(conn.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"));
  int current = 0;
  {
    auto result = KILN_TRY(conn.exec("SELECT COALESCE(MAX(version), 0) FROM schema_version"));
    current = static_cast<int>(result.integer(0, 0));
  }
  const auto migrations = postgresMigrations();
  for (size_t i = static_cast<size_t>(current); i < migrations.size(); ++i) {
    KILN_TRY(conn.exec("BEGIN"));
    const Value version = Value::integer(static_cast<int64_t>(i + 1));
    auto applied = conn.exec(std::string(migrations[i]));
    if (applied) {
      applied = conn.query("INSERT INTO schema_version (version) VALUES ($1)",
                           std::span<const Value>(&version, 1));
    }
    if (applied) {
      applied = conn.exec("COMMIT");
      if (applied && applied->command() == "ROLLBACK") {
        applied = internalError("the migration's transaction was rolled back");
      }
    }
    if (!applied) {
      (void)conn.exec("ROLLBACK");
      return internalError("migration " + std::to_string(i + 1) +
                           " failed: " + applied.error().message);
    }
    current = static_cast<int>(i + 1);
  }
  if (static_cast<size_t>(current) > migrations.size()) {
    return internalError("database schema version " + std::to_string(current) +
                         " is newer than this kiln-server understands (" +
                         std::to_string(migrations.size()) + ")");
  }
  schemaVersion_ = current;
  return {};
}

void PostgresStorage::checkCollation(PgConnection& conn) {
  auto result = conn.exec("SELECT datcollate FROM pg_database WHERE datname = current_database()");
  if (!result || result->rows() == 0) return;
  const std::string collation(result->text(0, 0));
  if (collation == "C" || collation == "POSIX" || collation.starts_with("C.")) return;
  Logger("storage").warning(
      "the database sorts text by its collation, not byte by byte as SQLite does: lists "
      "sorted by a text field may come in another order (create the database with "
      "LC_COLLATE 'C', docs/configuration.md)",
      {{"database", url_.display}, {"collation", collation}});
}

Result<std::unique_ptr<PgConnection>> PostgresStorage::acquire() {
  {
    std::lock_guard<std::mutex> lock(poolMutex_);
    if (!pool_.empty()) {
      auto conn = std::move(pool_.back());
      pool_.pop_back();
      return conn;
    }
  }
  return PgConnection::open(url_);
}

void PostgresStorage::release(std::unique_ptr<PgConnection> conn) {
  // A broken connection, or one still inside a transaction (its ROLLBACK failed), is closed.
  if (!conn || !conn->healthy() || !conn->idle()) {
    return;
  }
  std::lock_guard<std::mutex> lock(poolMutex_);
  if (pool_.size() < kMaxIdleConnections) {
    pool_.push_back(std::move(conn));
  }
}

Result<TransactionPtr> PostgresStorage::begin(Mode mode) {
  auto conn = KILN_TRY(acquire());
  const std::string sql = mode == Mode::Write ? "BEGIN ISOLATION LEVEL READ COMMITTED"
                                              : "BEGIN ISOLATION LEVEL REPEATABLE READ";
  auto begun = conn->exec(sql);
  if (!begun && (!conn->healthy() || begun.error().code == ErrorCode::Unavailable) &&
      conn->reconnect()) {
    // The pooled connection broke while idle (the server restarted, an administrator or a
    // proxy ended the session): reconnect once.
    begun = conn->exec(sql);
  }
  if (!begun) {
    release(std::move(conn));
    return std::unexpected(begun.error());
  }
  return TransactionPtr(new PgTransaction(*this, std::move(conn), mode == Mode::Write));
}

}  // namespace kiln::server::postgres

namespace kiln::server {

std::string displayConnection(const std::string& connection) {
  if (connection.starts_with("sqlite:")) return connection;
  return maskUrl(connection);
}

}  // namespace kiln::server
