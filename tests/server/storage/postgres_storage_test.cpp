// The storage contract on PostgreSQL, and what only PostgreSQL has: write transactions that run
// side by side, row locks and compare-and-set between servers, migrations under concurrent
// starts, reconnecting, and URLs whose passwords stay out of messages.
//
// The cases that need a server are tagged [.postgresql]: hidden from the default run, ctest
// runs them as their own entry (tests/CMakeLists.txt) on a throwaway server
// (tests/support/postgres_test_server.h), and skips that entry without root or PostgreSQL.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <map>
#include <set>
#include <thread>

#define KILN_STORAGE_BACKEND "[.postgresql]"
#define KILN_STORAGE_NAME "postgresql"
#include "tests/server/storage/storage_contract.h"

#include "server/conductor/node_lock.h"
#include "server/storage/postgres/pg_connection.h"
#include "tests/support/fake_clock.h"
#include "server/storage/sqlite/sqlite_connection.h"
#include "tests/support/postgres_test_server.h"

namespace kiln::server {
// Generated from the migrations by CMake (kiln_embed_sql).
std::span<const std::string_view> sqliteMigrations();
std::span<const std::string_view> postgresMigrations();
}  // namespace kiln::server

kiln::server::StoragePtr makeContractStorage() { return kiln::test::openScratchPostgresStorage(); }

namespace {

using namespace std::chrono_literals;
using kiln::server::postgres::PgConnection;
using kiln::server::postgres::parsePgUrl;

/// A database of the run's test server for one test, dropped at its end. False when no server
/// can run here (PostgresTestServer::forTest()).
struct ScratchDatabase {
  kiln::test::PostgresTestServer* server = nullptr;
  std::string name;
  std::string url;

  ScratchDatabase() {
    server = kiln::test::PostgresTestServer::forTest();
    if (!server) return;
    name = server->createDatabase();
    url = server->url(name);
  }
  ~ScratchDatabase() {
    if (server) server->dropDatabase(name);
  }
  explicit operator bool() const { return server != nullptr; }

  /// A connection of the test's own, for looking at the database directly.
  std::unique_ptr<PgConnection> connect() const {
    auto parsed = parsePgUrl(url);
    REQUIRE(parsed);
    auto conn = PgConnection::open(*parsed);
    REQUIRE(conn);
    return std::move(*conn);
  }
};

kiln::server::StoragePtr openUrl(const std::string& url) {
  auto storage = kiln::server::openStorage(url);
  if (!storage) FAIL("cannot open " << url << ": " << storage.error().message);
  return std::move(*storage);
}

/// A TCP port on 127.0.0.1 that refuses connections while the object lives: bound, never
/// listening.
struct RefusingPort {
  int fd = -1;
  int port = 0;
  RefusingPort() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port = ntohs(addr.sin_port);
  }
  ~RefusingPort() { ::close(fd); }
};

constexpr const char* kSecret = "Sup3r-S3cret";

}  // namespace

// ---- Without a server: URLs and their passwords -------------------------------------------------

TEST_CASE("openStorage rejects a malformed PostgreSQL URL without showing its password",
          "[server][storage][postgresql-url]") {
  for (const std::string& url : {
           std::string("postgresql://kiln:") + kSecret + "@[::1/kiln",
           std::string("postgresql://kiln@127.0.0.1/kiln?password=") + kSecret +
               "&no_such_option=1",
           std::string("postgresql+psycopg2://kiln:") + kSecret + "@[::1",
       }) {
    INFO(url);
    auto opened = kiln::server::openStorage(url);
    REQUIRE_FALSE(opened);
    CHECK(opened.error().code == kiln::ErrorCode::InvalidArgument);
    CHECK_THAT(opened.error().message, Catch::Contains("[database] connection"));
    CHECK_THAT(opened.error().message, !Catch::Contains(kSecret));
  }
  // Percent-encoded, the password is hidden as written and as decoded.
  auto encoded = kiln::server::openStorage("postgresql://kiln:Sup3r%2DS3cret@[::1");
  REQUIRE_FALSE(encoded);
  CHECK_THAT(encoded.error().message, !Catch::Contains("Sup3r%2DS3cret"));
  CHECK_THAT(encoded.error().message, !Catch::Contains(kSecret));
}

TEST_CASE("openStorage reports an unreachable PostgreSQL server without the password",
          "[server][storage][postgresql-url]") {
  RefusingPort closed;
  const std::string url = std::string("postgresql://kiln:") + kSecret + "@127.0.0.1:" +
                          std::to_string(closed.port) + "/kiln?connect_timeout=5";
  auto opened = kiln::server::openStorage(url);
  REQUIRE_FALSE(opened);
  CHECK(opened.error().code == kiln::ErrorCode::Unavailable);
  CHECK_THAT(opened.error().message, Catch::Contains("127.0.0.1"));
  CHECK_THAT(opened.error().message, !Catch::Contains(kSecret));
  // Not a URL libpq would take at all either.
  auto odd = kiln::server::openStorage(std::string("postgresql://kiln:") + kSecret +
                                       "@127.0.0.1:notaport/kiln");
  REQUIRE_FALSE(odd);
  CHECK_THAT(odd.error().message, !Catch::Contains(kSecret));
}

TEST_CASE("displayConnection hides PostgreSQL credentials and shows SQLite paths",
          "[server][storage][postgresql-url]") {
  CHECK(kiln::server::displayConnection("postgresql://kiln:pw-123@db.example:5432/kiln") ==
        "postgresql://db.example:5432/******");
  CHECK(kiln::server::displayConnection("postgresql://db.example/kiln?password=pw-123")
            .find("pw-123") == std::string::npos);
  CHECK(kiln::server::displayConnection("sqlite:////var/lib/kiln/kiln.sqlite") ==
        "sqlite:////var/lib/kiln/kiln.sqlite");
}

TEST_CASE("numberPlaceholders numbers the question marks outside quotes",
          "[server][storage][postgresql-url]") {
  using kiln::server::postgres::numberPlaceholders;
  CHECK(numberPlaceholders("a = ? AND b LIKE ? ESCAPE '\\' AND c IN (?,?)") ==
        "a = $1 AND b LIKE $2 ESCAPE '\\' AND c IN ($3,$4)");
  CHECK(numberPlaceholders("x = '?' AND \"?\" = ? AND y = 'it''s ?'") ==
        "x = '?' AND \"?\" = $1 AND y = 'it''s ?'");
}

// ---- On a server ------------------------------------------------------------------------------

TEST_CASE("postgresql storage: two write transactions on different nodes commit while both are open",
          "[server][storage][.postgresql]") {
  using namespace contract;
  ScratchDatabase db;
  if (!db) return;
  auto storage = openUrl(db.url);
  Record a, b;
  {
    auto tx = storage->begin(Mode::Write).value();
    a = insertNode(*tx, makeNode("a"));
    b = insertNode(*tx, makeNode("b"));
    REQUIRE(tx->commit());
  }
  std::future<std::string> second;  // declared first: destroyed after t1 has rolled back
  auto t1 = storage->begin(Mode::Write).value();
  Record a1 = t1->nodes().findBy(kNodeId, Value::integer(a.id())).value().value();
  a1.setText(kNodeDescription, "one");
  REQUIRE(t1->nodes().update(a1));

  second = std::async(std::launch::async, [&]() -> std::string {
    auto t2 = storage->begin(Mode::Write);
    if (!t2) return "begin: " + t2.error().message;
    auto found = (*t2)->nodes().findBy(kNodeId, Value::integer(b.id()));
    if (!found || !*found) return "findBy failed";
    Record b2 = **found;
    b2.setText(kNodeDescription, "two");
    if (auto u = (*t2)->nodes().update(b2); !u) return "update: " + u.error().message;
    if (auto c = (*t2)->commit(); !c) return "commit: " + c.error().message;
    return "committed";
  });
  // A process-wide write lock would hold the second transaction until the first ends.
  REQUIRE(second.wait_for(10s) == std::future_status::ready);
  CHECK(second.get() == "committed");
  REQUIRE(t1->commit());

  auto rtx = storage->begin(Mode::Read).value();
  CHECK(rtx->nodes().findBy(kNodeId, Value::integer(a.id())).value()->str(kNodeDescription) ==
        "one");
  CHECK(rtx->nodes().findBy(kNodeId, Value::integer(b.id())).value()->str(kNodeDescription) ==
        "two");
}

TEST_CASE("postgresql storage: a write transaction reading a row another one holds waits and sees its commit",
          "[server][storage][.postgresql]") {
  using namespace contract;
  ScratchDatabase db;
  if (!db) return;
  auto storage = openUrl(db.url);
  Record a;
  {
    auto tx = storage->begin(Mode::Write).value();
    a = insertNode(*tx, makeNode("a"));
    REQUIRE(tx->commit());
  }
  std::future<std::string> reader;  // declared first: destroyed after t1 has rolled back
  auto t1 = storage->begin(Mode::Write).value();
  Record a1 = t1->nodes().findBy(kNodeId, Value::integer(a.id())).value().value();
  a1.setText(kNodeDescription, "one");
  REQUIRE(t1->nodes().update(a1));

  reader = std::async(std::launch::async, [&]() -> std::string {
    auto t2 = storage->begin(Mode::Write);
    if (!t2) return "begin: " + t2.error().message;
    auto found = (*t2)->nodes().findBy(kNodeId, Value::integer(a.id()));
    if (!found || !*found) return "findBy failed";
    return (*found)->optStr(kNodeDescription).value_or("<null>");
  });
  // The read-check-update of one row cannot interleave with another writer's.
  CHECK(reader.wait_for(300ms) == std::future_status::timeout);
  REQUIRE(t1->commit());
  REQUIRE(reader.wait_for(10s) == std::future_status::ready);
  CHECK(reader.get() == "one");
  // A read transaction does not wait: it sees the last commit.
  auto rtx = storage->begin(Mode::Read).value();
  CHECK(rtx->nodes().findBy(kNodeId, Value::integer(a.id())).value()->str(kNodeDescription) ==
        "one");
}

TEST_CASE("postgresql storage: of two servers locking one node at once exactly one wins",
          "[server][storage][.postgresql]") {
  using namespace contract;
  ScratchDatabase db;
  if (!db) return;
  auto server1 = openUrl(db.url);
  auto server2 = openUrl(db.url);
  Record node;
  {
    auto tx = server1->begin(Mode::Write).value();
    node = insertNode(*tx, makeNode("shared"));
    REQUIRE(tx->commit());
  }
  kiln::test::FakeClock clock;
  // Server 1 is inside NodeLock::acquire's transaction when server 2 tries: its precondition
  // runs under the row lock, and server 2 starts then.
  std::future<std::string> second;
  auto first = kiln::server::NodeLock::acquire(
      *server1, clock, node.uuid(), "server-1", "test", [&](const Record&) -> kiln::Result<void> {
        second = std::async(std::launch::async, [&]() -> std::string {
          auto lock = kiln::server::NodeLock::acquire(*server2, clock, node.uuid(), "server-2", "test");
          if (lock) return "won";
          return lock.error().is(kiln::Reason::NodeLocked) ? "locked" : lock.error().message;
        });
        // The second acquire waits for the first transaction's row lock...
        CHECK(second.wait_for(300ms) == std::future_status::timeout);
        return {};
      });
  REQUIRE(first);
  // ...then sees the reservation the first one committed.
  REQUIRE(second.wait_for(10s) == std::future_status::ready);
  CHECK(second.get() == "locked");
  auto rtx = server2->begin(Mode::Read).value();
  CHECK(rtx->nodes().findBy(kNodeId, Value::integer(node.id())).value()->str(kNodeReservation) ==
        "server-1");
  rtx.reset();
  first->release();
}

TEST_CASE("postgresql storage: an insert clashing with a concurrent one reports AlreadyExists and undoes only itself",
          "[server][storage][.postgresql]") {
  using namespace contract;
  ScratchDatabase db;
  if (!db) return;
  auto storage = openUrl(db.url);
  std::future<std::string> second;  // declared first: destroyed after t1 has rolled back
  auto t1 = storage->begin(Mode::Write).value();
  insertNode(*t1, makeNode("dup"));
  second = std::async(std::launch::async, [&]() -> std::string {
    auto t2 = storage->begin(Mode::Write);
    if (!t2) return "begin: " + t2.error().message;
    auto dup = (*t2)->nodes().insert(makeNode("dup"));
    if (dup) return "inserted";
    const std::string outcome =
        std::string(kiln::toString(dup.error().code)) + ":" + dup.error().subject;
    if (!(*t2)->nodes().insert(makeNode("after"))) return outcome + ", then the insert failed";
    if (!(*t2)->commit()) return outcome + ", then the commit failed";
    return outcome;
  });
  // The unique check waits to see whether the first insert commits.
  CHECK(second.wait_for(300ms) == std::future_status::timeout);
  REQUIRE(t1->commit());
  REQUIRE(second.wait_for(10s) == std::future_status::ready);
  CHECK(second.get() == "AlreadyExists:name");
  auto rtx = storage->begin(Mode::Read).value();
  CHECK(rtx->nodes().count({}).value() == 2);
}

TEST_CASE("postgresql storage: servers starting together on an empty database migrate it once",
          "[server][storage][.postgresql]") {
  ScratchDatabase db;
  if (!db) return;
  const auto migrations = static_cast<int64_t>(kiln::server::postgresMigrations().size());
  std::vector<std::future<std::string>> starts;
  for (int i = 0; i < 4; ++i) {
    starts.push_back(std::async(std::launch::async, [&]() -> std::string {
      auto storage = kiln::server::openStorage(db.url);
      if (!storage) return storage.error().message;
      return std::to_string((*storage)->schemaVersion());
    }));
  }
  for (auto& s : starts) CHECK(s.get() == std::to_string(migrations));
  auto conn = db.connect();
  auto versions =
      conn->exec("SELECT COUNT(*), COUNT(DISTINCT version), MAX(version) FROM schema_version");
  REQUIRE(versions);
  CHECK(versions->integer(0, 0) == migrations);
  CHECK(versions->integer(0, 1) == migrations);
  CHECK(versions->integer(0, 2) == migrations);
  // And a later start finds nothing to do.
  CHECK(openUrl(db.url)->schemaVersion() == migrations);
  CHECK(conn->exec("SELECT COUNT(*) FROM schema_version")->integer(0, 0) == migrations);
}

TEST_CASE("postgresql storage: a pooled connection the server dropped is reconnected",
          "[server][storage][.postgresql]") {
  using namespace contract;
  ScratchDatabase db;
  if (!db) return;
  auto storage = openUrl(db.url);
  {
    auto tx = storage->begin(Mode::Write).value();
    insertNode(*tx, makeNode("survivor"));
    REQUIRE(tx->commit());  // its connection goes back to the pool
  }
  auto admin = db.connect();
  const Value name = Value::text(db.name);
  const std::span<const Value> byName(&name, 1);
  REQUIRE(admin->query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                       "WHERE datname = $1 AND pid <> pg_backend_pid()",
                       byName));
  for (int i = 0; i < 100; ++i) {
    auto left = admin->query("SELECT COUNT(*) FROM pg_stat_activity "
                             "WHERE datname = $1 AND pid <> pg_backend_pid()",
                             byName);
    REQUIRE(left);
    if (left->integer(0, 0) == 0) break;
    std::this_thread::sleep_for(50ms);
  }
  auto tx = storage->begin(Mode::Read);
  REQUIRE(tx);
  CHECK((*tx)->nodes().count({}).value() == 1);
}

TEST_CASE("postgresql storage: openStorage takes the postgresql+psycopg2 spelling and hides passwords the server rejects",
          "[server][storage][.postgresql]") {
  ScratchDatabase db;
  if (!db) return;
  const std::string alchemy = "postgresql+psycopg2://postgres@127.0.0.1:" +
                              std::to_string(db.server->port()) + "/" + db.name;
  CHECK(openUrl(alchemy)->schemaVersion() ==
        static_cast<int>(kiln::server::postgresMigrations().size()));

  auto missing = kiln::server::openStorage(std::string("postgresql://postgres:") + kSecret +
                                           "@127.0.0.1:" + std::to_string(db.server->port()) +
                                           "/no_such_database");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == kiln::ErrorCode::Unavailable);
  CHECK_THAT(missing.error().message, Catch::Contains("does not exist"));
  CHECK_THAT(missing.error().message, !Catch::Contains(kSecret));
}

TEST_CASE("postgresql storage: the schema mirrors SQLite's and each column has its field's type",
          "[server][storage][.postgresql]") {
  ScratchDatabase db;
  if (!db) return;
  auto storage = openUrl(db.url);
  auto pg = db.connect();
  auto sqlite = kiln::server::sqlite::Connection::open(":memory:");
  REQUIRE(sqlite);
  for (const auto migration : kiln::server::sqliteMigrations()) {
    REQUIRE((*sqlite)->exec(migration));
  }
  const auto sqliteRows = [&](const std::string& sql) {
    std::set<std::string> out;
    auto stmt = (*sqlite)->prepare(sql);
    REQUIRE(stmt);
    while (stmt->step().value()) out.insert(stmt->columnText(0));
    return out;
  };
  const auto pgRows = [&](const std::string& sql) {
    std::set<std::string> out;
    auto result = pg->exec(sql);
    REQUIRE(result);
    for (int row = 0; row < result->rows(); ++row) out.insert(std::string(result->text(row, 0)));
    return out;
  };

  // Tables and columns.
  CHECK(sqliteRows("SELECT m.name || '.' || p.name FROM sqlite_master m "
                   "JOIN pragma_table_info(m.name) p "
                   "WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'") ==
        pgRows("SELECT table_name || '.' || column_name FROM information_schema.columns "
               "WHERE table_schema = 'public' AND table_name <> 'schema_version'"));
  // Unique constraints and unique indexes, as table:columns (sorted), the primary keys aside.
  CHECK(sqliteRows("SELECT m.name || ':' || (SELECT group_concat(name) FROM "
                   "(SELECT ii.name FROM pragma_index_info(il.name) ii ORDER BY ii.name)) "
                   "FROM sqlite_master m JOIN pragma_index_list(m.name) il "
                   "WHERE m.type = 'table' AND il.[unique] = 1 AND il.origin <> 'pk'") ==
        pgRows("SELECT t.relname || ':' || (SELECT string_agg(a.attname, ',' ORDER BY a.attname) "
               "FROM pg_attribute a WHERE a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)) "
               "FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid "
               "JOIN pg_namespace n ON n.oid = t.relnamespace "
               "WHERE n.nspname = 'public' AND i.indisunique AND NOT i.indisprimary"));
  // The indexes the migrations name.
  const auto pgIndexes = pgRows("SELECT indexname FROM pg_indexes WHERE schemaname = 'public'");
  for (const auto& index :
       sqliteRows("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")) {
    INFO(index);
    CHECK(pgIndexes.count(index) == 1);
  }

  // Every stored field of every resource has a column of its type.
  std::map<std::string, std::string> types;
  auto columns = pg->exec("SELECT table_name, column_name, data_type FROM "
                          "information_schema.columns WHERE table_schema = 'public'");
  REQUIRE(columns);
  for (int row = 0; row < columns->rows(); ++row) {
    types[std::string(columns->text(row, 0)) + "." + std::string(columns->text(row, 1))] =
        std::string(columns->text(row, 2));
  }
  for (size_t r = 0; r < kiln::server::kResourceCount; ++r) {
    const auto& schema = kiln::server::schemaOf(static_cast<kiln::server::Resource>(r));
    for (size_t i = 0; i < schema.size(); ++i) {
      if (schema[i].has(kiln::server::kComputed)) continue;
      const std::string column = std::string(schema.table) + "." + std::string(schema[i].name);
      INFO(column);
      const auto type = schema[i].type;
      const char* expected = type == kiln::server::FieldType::Bool  ? "boolean"
                             : type == kiln::server::FieldType::Int ? "bigint"
                                                                    : "text";
      CHECK(types[column] == expected);
    }
  }
}
