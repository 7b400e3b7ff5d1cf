#include "server/storage/sqlite/sqlite_storage.h"

#include <algorithm>
#include <array>
#include <utility>
#include <span>
#include <string_view>

#include "server/storage/postgres/postgres_storage.h"
#include "server/storage/sql_builder.h"
#include "server/storage/storage_metrics.h"

namespace kiln::server {
// Generated from migrations/*.sql by CMake (kiln_embed_sql).
std::span<const std::string_view> sqliteMigrations();
}  // namespace kiln::server

namespace kiln::server::sqlite {
namespace {

const SqlDialect kDialect{};

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

/// A schema-driven store over one table.
class SqliteRecordStore final : public RecordStore {
 public:
  SqliteRecordStore(Connection& conn, Resource resource)
      : conn_(conn), schema_(schemaOf(resource)), sql_(schemaSql(resource)), stored_(sql_.stored) {}

  const Schema& schema() const override { return schema_; }

  Result<bool> findInto(int field, const Value& value, Record& out) override {
    auto stmt = KILN_TRY(conn_.prepare(sql_.findBy[static_cast<size_t>(field)]));
    stmt.bind(1, value);
    if (!KILN_TRY(stmt.step())) return false;
    if (out.size() != schema_.size()) out = Record(schema_.size());
    readRowInto(stmt, out);
    return true;
  }

  Result<void> listInto(const ListQuery& query, std::vector<Record>& out) override {
    const SqlQuery q = buildListQuery(schema_, query, kDialect);
    auto stmt = KILN_TRY(conn_.prepare(q.sql));
    for (size_t i = 0; i < q.binds.size(); ++i) {
      stmt.bind(static_cast<int>(i + 1), q.binds[i]);
    }
    size_t rows = 0;
    while (KILN_TRY(stmt.step())) {
      if (rows == out.size()) out.emplace_back(schema_.size());
      Record& r = out[rows++];
      if (r.size() != schema_.size()) r = Record(schema_.size());
      readRowInto(stmt, r);
    }
    out.resize(rows);
    return {};
  }

  Result<int64_t> count(const std::vector<ListFilter>& filters) override {
    const SqlQuery q = buildCountQuery(schema_, filters, kDialect);
    auto stmt = KILN_TRY(conn_.prepare(q.sql));
    for (size_t i = 0; i < q.binds.size(); ++i) {
      stmt.bind(static_cast<int>(i + 1), q.binds[i]);
    }
    KILN_TRY(stmt.step());
    return stmt.columnInt(0);
  }

  Result<std::vector<std::pair<Value, int64_t>>> countByValue(int field) override {
    const std::string column(schema_[static_cast<size_t>(field)].name);
    auto stmt = KILN_TRY(conn_.prepare("SELECT " + column + ", COUNT(*) AS n FROM " +
                                       std::string(schema_.table) + " GROUP BY " + column +
                                       " ORDER BY n DESC, " + column));
    std::vector<std::pair<Value, int64_t>> out;
    while (KILN_TRY(stmt.step())) {
      Value v;
      stmt.readColumn(0, schema_[static_cast<size_t>(field)].type, v);
      out.emplace_back(std::move(v), stmt.columnInt(1));
    }
    return out;
  }

  Result<std::vector<std::pair<std::vector<Value>, int64_t>>> countGrouped(
      std::span<const int> fields) override {
    std::string columns;
    for (int field : fields) {
      if (!columns.empty()) columns += ", ";
      columns += schema_[static_cast<size_t>(field)].name;
    }
    auto stmt = KILN_TRY(conn_.prepare("SELECT " + columns + ", COUNT(*) FROM " +
                                       std::string(schema_.table) + " GROUP BY " + columns +
                                       " ORDER BY " + columns));
    std::vector<std::pair<std::vector<Value>, int64_t>> out;
    const int n = static_cast<int>(fields.size());
    while (KILN_TRY(stmt.step())) {
      std::vector<Value> values(fields.size());
      for (int i = 0; i < n; ++i) {
        stmt.readColumn(i, schema_[static_cast<size_t>(fields[static_cast<size_t>(i)])].type,
                        values[static_cast<size_t>(i)]);
      }
      out.emplace_back(std::move(values), stmt.columnInt(n));
    }
    return out;
  }

  Result<Record> insert(const Record& record) override {
    auto stmt = KILN_TRY(conn_.prepare(sql_.insert));
    for (size_t k = 1; k < stored_.size(); ++k) {
      stmt.bind(static_cast<int>(k), record[stored_[k]]);
    }
    KILN_TRY(stmt.step());
    Record out = record;
    out[0] = Value::integer(conn_.lastInsertId());
    return out;
  }

  Result<void> update(const Record& record) override {
    auto stmt = KILN_TRY(conn_.prepare(sql_.update));
    for (size_t k = 1; k < stored_.size(); ++k) {
      stmt.bind(static_cast<int>(k), record[stored_[k]]);
    }
    stmt.bindInt(static_cast<int>(stored_.size()), record.id());
    KILN_TRY(stmt.step());
    if (conn_.changes() == 0) {
      return notFound(std::string(schema_.resource) + " " + record.uuid() +
                      " could not be found.");
    }
    return {};
  }

  Result<void> updateFields(const Record& record, const FieldMask& fields) override {
    std::vector<int> set;
    const std::string sql = buildUpdateFieldsSql(schema_, stored_, fields, kDialect, set);
    if (set.empty()) {
      Record current;
      if (KILN_TRY(findInto(0, Value::integer(record.id()), current))) return {};
      return notFound(std::string(schema_.resource) + " " + record.uuid() + " could not be found.");
    }
    auto stmt = KILN_TRY(conn_.prepare(sql));  // cached per distinct set of columns
    for (size_t k = 0; k < set.size(); ++k) stmt.bind(static_cast<int>(k + 1), record[set[k]]);
    stmt.bindInt(static_cast<int>(set.size() + 1), record.id());
    KILN_TRY(stmt.step());
    if (conn_.changes() == 0) {
      return notFound(std::string(schema_.resource) + " " + record.uuid() +
                      " could not be found.");
    }
    return {};
  }

  Result<void> remove(int64_t id) override {
    auto stmt = KILN_TRY(conn_.prepare(sql_.remove));
    stmt.bindInt(1, id);
    KILN_TRY(stmt.step());
    if (conn_.changes() == 0) {
      return notFound(std::string(schema_.resource) + " could not be found.");
    }
    return {};
  }

  Result<int64_t> removeWhere(int field, const Value& value) override {
    auto stmt = KILN_TRY(conn_.prepare("DELETE FROM " + std::string(schema_.table) + " WHERE " +
                                       std::string(schema_[field].name) + " = ?"));
    stmt.bind(1, value);
    KILN_TRY(stmt.step());
    return conn_.changes();
  }

 private:
  /// Overwrites the stored fields of `r` (computed fields are never read from the table).
  void readRowInto(const Statement& stmt, Record& r) const {
    for (size_t k = 0; k < stored_.size(); ++k) {
      stmt.readColumn(static_cast<int>(k), schema_[stored_[k]].type, r[stored_[k]]);
    }
  }

  Connection& conn_;
  const Schema& schema_;
  const StoreStatements& sql_;
  const std::vector<int>& stored_;
};

class SqliteTraitStore final : public TraitStore {
 public:
  explicit SqliteTraitStore(Connection& conn) : conn_(conn) {}

  Result<std::vector<std::pair<std::string, int64_t>>> countAll() override {
    auto stmt = KILN_TRY(conn_.prepare(
        "SELECT trait, COUNT(*) FROM node_traits GROUP BY trait ORDER BY trait"));
    std::vector<std::pair<std::string, int64_t>> out;
    while (KILN_TRY(stmt.step())) out.emplace_back(stmt.columnText(0), stmt.columnInt(1));
    return out;
  }

  Result<std::vector<std::string>> get(int64_t nodeId) override {
    auto stmt =
        KILN_TRY(conn_.prepare("SELECT trait FROM node_traits WHERE node_id = ? ORDER BY trait"));
    stmt.bindInt(1, nodeId);
    std::vector<std::string> out;
    while (KILN_TRY(stmt.step())) {
      out.push_back(stmt.columnText(0));
    }
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
    auto stmt = KILN_TRY(conn_.prepare(
        "SELECT node_id, trait FROM node_traits WHERE node_id BETWEEN ? AND ? "
        "ORDER BY node_id, trait"));
    stmt.bindInt(1, *lo);
    stmt.bindInt(2, *hi);
    for (int64_t id : nodeIds) {
      out[id];
    }
    while (KILN_TRY(stmt.step())) {
      auto it = out.find(stmt.columnInt(0));
      if (it != out.end()) {
        it->second.push_back(stmt.columnText(1));
      }
    }
    return out;
  }

  Result<void> set(int64_t nodeId, std::span<const std::string> traits) override {
    KILN_TRY_VOID(clear(nodeId));
    for (const auto& t : traits) {
      KILN_TRY_VOID(add(nodeId, t));
    }
    return {};
  }

  Result<void> add(int64_t nodeId, const std::string& trait) override {
    auto stmt = KILN_TRY(
        conn_.prepare("INSERT OR IGNORE INTO node_traits (node_id, trait) VALUES (?, ?)"));
    stmt.bindInt(1, nodeId);
    stmt.bindText(2, trait);
    KILN_TRY(stmt.step());
    return {};
  }

  Result<bool> remove(int64_t nodeId, const std::string& trait) override {
    auto stmt = KILN_TRY(conn_.prepare("DELETE FROM node_traits WHERE node_id = ? AND trait = ?"));
    stmt.bindInt(1, nodeId);
    stmt.bindText(2, trait);
    KILN_TRY(stmt.step());
    return conn_.changes() > 0;
  }

  Result<void> clear(int64_t nodeId) override {
    auto stmt = KILN_TRY(conn_.prepare("DELETE FROM node_traits WHERE node_id = ?"));
    stmt.bindInt(1, nodeId);
    KILN_TRY(stmt.step());
    return {};
  }

 private:
  Connection& conn_;
};

/// The node event journal (table node_events, migration 0010).
class SqliteNodeEventStore final : public NodeEventStore {
 public:
  explicit SqliteNodeEventStore(Connection& conn) : conn_(conn) {}

  Result<int64_t> append(const NodeEvent& e) override {
    auto stmt = KILN_TRY(conn_.prepare(
        "INSERT INTO node_events (node_id, node_uuid, created_at, kind, fields, conductor) "
        "VALUES (?, ?, ?, ?, ?, ?)"));
    stmt.bindInt(1, e.nodeId);
    stmt.bindText(2, e.nodeUuid);
    stmt.bindText(3, e.time);
    stmt.bindText(4, e.kind);
    stmt.bindText(5, e.fields);
    stmt.bindText(6, e.conductor);
    KILN_TRY(stmt.step());
    return conn_.lastInsertId();
  }

  Result<std::vector<NodeEvent>> list(const NodeEventQuery& q) override {
    std::string sql =
        "SELECT id, node_id, node_uuid, created_at, kind, fields, conductor FROM node_events "
        "WHERE id > ?";
    if (q.nodeId) sql += " AND node_id = ?";
    if (!q.kinds.empty()) {
      sql += " AND kind IN (";
      for (size_t i = 0; i < q.kinds.size(); ++i) sql += i ? ", ?" : "?";
      sql += ")";
    }
    sql += " ORDER BY id LIMIT ?";
    auto stmt = KILN_TRY(conn_.prepare(sql));
    int k = 1;
    stmt.bindInt(k++, q.afterId);
    if (q.nodeId) stmt.bindInt(k++, *q.nodeId);
    for (const auto& kind : q.kinds) stmt.bindText(k++, kind);
    stmt.bindInt(k, q.limit);
    std::vector<NodeEvent> out;
    while (KILN_TRY(stmt.step())) {
      NodeEvent& e = out.emplace_back();
      e.id = stmt.columnInt(0);
      e.nodeId = stmt.columnInt(1);
      e.nodeUuid = stmt.columnText(2);
      e.time = stmt.columnText(3);
      e.kind = stmt.columnText(4);
      e.fields = stmt.columnText(5);
      e.conductor = stmt.columnText(6);
    }
    return out;
  }

  Result<int64_t> newestId() override {
    auto stmt = KILN_TRY(conn_.prepare("SELECT COALESCE(MAX(id), 0) FROM node_events"));
    KILN_TRY(stmt.step());
    return stmt.columnInt(0);
  }

  Result<int64_t> removeOlderThan(const std::string& time) override {
    auto stmt = KILN_TRY(conn_.prepare("DELETE FROM node_events WHERE created_at < ?"));
    stmt.bindText(1, time);
    KILN_TRY(stmt.step());
    return conn_.changes();
  }

  Result<int64_t> removeBeyond(int64_t nodeId, int64_t keep) override {
    if (keep <= 0) return removeNode(nodeId);
    auto stmt = KILN_TRY(conn_.prepare(
        "DELETE FROM node_events WHERE node_id = ? AND id < (SELECT COALESCE(MIN(id), 0) FROM "
        "(SELECT id FROM node_events WHERE node_id = ? ORDER BY id DESC LIMIT ?))"));
    stmt.bindInt(1, nodeId);
    stmt.bindInt(2, nodeId);
    stmt.bindInt(3, keep);
    KILN_TRY(stmt.step());
    return conn_.changes();
  }

  Result<std::vector<int64_t>> nodesWithMoreThan(int64_t count) override {
    auto stmt = KILN_TRY(conn_.prepare(
        "SELECT node_id FROM node_events GROUP BY node_id HAVING COUNT(*) > ? ORDER BY node_id"));
    stmt.bindInt(1, count);
    std::vector<int64_t> out;
    while (KILN_TRY(stmt.step())) out.push_back(stmt.columnInt(0));
    return out;
  }

  Result<int64_t> removeNode(int64_t nodeId) override {
    auto stmt = KILN_TRY(conn_.prepare("DELETE FROM node_events WHERE node_id = ?"));
    stmt.bindInt(1, nodeId);
    KILN_TRY(stmt.step());
    return conn_.changes();
  }

 private:
  Connection& conn_;
};

/// One store per Resource, in the enum's order.
template <size_t... I>
std::array<SqliteRecordStore, kResourceCount> makeStores(Connection& conn,
                                                         std::index_sequence<I...>) {
  return {SqliteRecordStore(conn, static_cast<Resource>(I))...};
}

class SqliteTransaction final : public Transaction {
 public:
  SqliteTransaction(SqliteStorage& storage, std::unique_ptr<Connection> conn,
                    std::unique_lock<std::mutex> memoryLock, std::unique_lock<std::mutex> writeLock)
      : storage_(storage),
        conn_(std::move(conn)),
        memoryLock_(std::move(memoryLock)),
        writeLock_(std::move(writeLock)),
        stores_(makeStores(*conn_, std::make_index_sequence<kResourceCount>())),
        traits_(*conn_),
        events_(*conn_),
        timer_(writeLock_.owns_lock()) {}

  ~SqliteTransaction() override {
    if (!done_) {
      (void)conn_->run("ROLLBACK");
      finish();
    }
  }

  RecordStore& records(Resource resource) override {
    return stores_[static_cast<size_t>(resource)];
  }
  TraitStore& traits() override { return traits_; }
  NodeEventStore& nodeEvents() override { return events_; }

  Result<void> commit() override {
    KILN_TRY_VOID(conn_->run("COMMIT"));
    done_ = true;
    // Hand the connection and the locks back now: a committed transaction object may outlive
    // its use, and another transaction on the same thread must not wait for it.
    finish();
    if (appendedEvents) storage_.eventsCommitted();
    return {};
  }

 private:
  void finish() {
    timer_.finish();
    storage_.release(std::move(conn_));
    writeLock_ = {};
    memoryLock_ = {};
  }

  SqliteStorage& storage_;
  std::unique_ptr<Connection> conn_;
  std::unique_lock<std::mutex> memoryLock_;
  std::unique_lock<std::mutex> writeLock_;
  std::array<SqliteRecordStore, kResourceCount> stores_;
  SqliteTraitStore traits_;
  SqliteNodeEventStore events_;
  TransactionTimer timer_;
  bool done_ = false;
};

}  // namespace

Result<std::unique_ptr<SqliteStorage>> SqliteStorage::open(const std::string& path) {
  const bool memory = path == ":memory:" || path.empty();
  std::unique_ptr<SqliteStorage> storage(new SqliteStorage(memory ? ":memory:" : path, memory));
  auto conn = KILN_TRY(Connection::open(storage->path_));
  KILN_TRY_VOID(storage->migrate(*conn));
  storage->release(std::move(conn));
  return storage;
}

Result<void> SqliteStorage::migrate(Connection& conn) {
  KILN_TRY_VOID(conn.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"));
  int current = 0;
  {
    auto stmt = KILN_TRY(conn.prepare("SELECT COALESCE(MAX(version), 0) FROM schema_version"));
    KILN_TRY(stmt.step());
    current = static_cast<int>(stmt.columnInt(0));
  }
  const auto migrations = sqliteMigrations();
  for (size_t i = static_cast<size_t>(current); i < migrations.size(); ++i) {
    KILN_TRY_VOID(conn.exec("BEGIN IMMEDIATE"));
    auto applied = conn.exec(migrations[i]);
    if (applied) {
      applied = conn.exec("INSERT INTO schema_version (version) VALUES (" +
                          std::to_string(i + 1) + ")");
    }
    if (!applied) {
      (void)conn.exec("ROLLBACK");
      return internalError("migration " + std::to_string(i + 1) +
                           " failed: " + applied.error().message);
    }
    KILN_TRY_VOID(conn.exec("COMMIT"));
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

Result<void> SqliteStorage::backupTo(const std::string& path) {
  // An in-memory database has one connection, which a transaction may hold.
  std::unique_lock<std::mutex> memoryLock;
  if (memory_) memoryLock = std::unique_lock<std::mutex>(memoryMutex_);
  auto conn = acquire();
  if (!conn) return fail(ErrorCode::Unavailable, "cannot open a database connection");
  // VACUUM INTO reads one snapshot (WAL: writers go on) and writes a compacted copy into a
  // new or empty file (it refuses one with content).
  Result<void> done;
  {
    auto stmt = conn->prepare("VACUUM INTO ?1");
    if (!stmt) {
      done = std::unexpected(stmt.error());
    } else {
      stmt->bindText(1, path);
      if (auto stepped = stmt->step(); !stepped) done = std::unexpected(stepped.error());
    }
  }
  release(std::move(conn));
  return done;
}

std::unique_ptr<Connection> SqliteStorage::acquire() {
  {
    std::lock_guard<std::mutex> lock(poolMutex_);
    if (!pool_.empty()) {
      auto conn = std::move(pool_.back());
      pool_.pop_back();
      return conn;
    }
  }
  auto conn = Connection::open(path_);
  return conn ? std::move(*conn) : nullptr;
}

void SqliteStorage::release(std::unique_ptr<Connection> conn) {
  if (!conn) {
    return;
  }
  std::lock_guard<std::mutex> lock(poolMutex_);
  pool_.push_back(std::move(conn));
}

Result<TransactionPtr> SqliteStorage::begin(Mode mode) {
  std::unique_lock<std::mutex> memoryLock;
  std::unique_lock<std::mutex> writeLock;
  if (memory_) {
    memoryLock = std::unique_lock<std::mutex>(memoryMutex_);
  }
  if (mode == Mode::Write) {
    writeLock = std::unique_lock<std::mutex>(writeMutex_);
  }
  auto conn = acquire();
  if (!conn) {
    return fail(ErrorCode::Unavailable, "cannot open a database connection");
  }
  auto begun = conn->run(mode == Mode::Write ? "BEGIN IMMEDIATE" : "BEGIN");
  if (!begun) {
    release(std::move(conn));
    return std::unexpected(begun.error());
  }
  return TransactionPtr(
      new SqliteTransaction(*this, std::move(conn), std::move(memoryLock), std::move(writeLock)));
}

}  // namespace kiln::server::sqlite

namespace kiln::server {

Result<StoragePtr> openStorage(const std::string& connection) {
  if (postgres::isPostgresUrl(connection)) {
    return postgres::openPostgresStorage(connection);
  }
  constexpr std::string_view kPrefix = "sqlite://";
  if (connection.rfind(kPrefix, 0) == 0) {
    std::string rest = connection.substr(kPrefix.size());
    // SQLAlchemy URL rules: "sqlite://" is in-memory, "sqlite:///rel" relative,
    // "sqlite:////abs" absolute.
    if (rest.empty() || rest == "/" || rest == "/:memory:") {
      return StoragePtr(KILN_TRY(sqlite::SqliteStorage::open(":memory:")));
    }
    if (rest[0] != '/') {
      return invalid("[database] connection: expected sqlite:///PATH, got " + connection);
    }
    return StoragePtr(KILN_TRY(sqlite::SqliteStorage::open(rest.substr(1))));
  }
  return invalid("[database] connection: unsupported database URL " +
                 displayConnection(connection) +
                 " (this build supports sqlite:///PATH and postgresql://...)");
}

}  // namespace kiln::server
