#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#define KILN_STORAGE_BACKEND "[sqlite]"
#define KILN_STORAGE_NAME "sqlite"
#include "tests/server/storage/storage_contract.h"

#include "server/storage/database_backup.h"

kiln::server::StoragePtr makeContractStorage() {
  auto s = kiln::server::openStorage("sqlite://");
  REQUIRE(s);
  return std::move(*s);
}

namespace {
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char tmpl[] = "/tmp/kiln-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};
}  // namespace

TEST_CASE("a file database keeps everything across a restart", "[server][storage][sqlite]") {
  using namespace contract;
  TempDir dir;
  const std::string url = "sqlite:///" + (dir.path / "kiln.sqlite").string();
  std::string uuid;
  {
    auto storage = openStorage(url).value();
    CHECK(storage->schemaVersion() >= 1);
    auto tx = storage->begin(Mode::Write).value();
    Record n = insertNode(*tx, makeNode("persist"));
    uuid = n.uuid();
    REQUIRE(tx->traits().add(n.id(), "CUSTOM_KEEP"));
    REQUIRE(tx->commit());
  }
  auto storage = openStorage(url).value();
  auto tx = storage->begin(Mode::Read).value();
  auto n = tx->nodes().findBy(kNodeUuid, Value::text(uuid)).value();
  REQUIRE(n);
  CHECK(n->str(kNodeName) == "persist");
  CHECK(tx->traits().get(n->id()).value() == std::vector<std::string>{"CUSTOM_KEEP"});
}

TEST_CASE("openStorage understands SQLAlchemy-style sqlite URLs only", "[server][storage][sqlite]") {
  CHECK(kiln::server::openStorage("sqlite://"));
  auto bad = kiln::server::openStorage("mysql://x/y");
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("[database] connection"));
  CHECK_FALSE(kiln::server::openStorage("sqlite:/relative"));
}

TEST_CASE("concurrent write transactions serialise instead of failing", "[server][storage][sqlite]") {
  using namespace contract;
  TempDir dir;
  auto storage = openStorage("sqlite:///" + (dir.path / "c.sqlite").string()).value();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        auto tx = storage->begin(Mode::Write);
        if (!tx) { ++failures; continue; }
        if (!(*tx)->nodes().insert(makeNode("t" + std::to_string(t) + "-" + std::to_string(i)))) ++failures;
        if (!(*tx)->commit()) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failures == 0);
  CHECK(storage->begin(Mode::Read).value()->nodes().count({}).value() == 100);
}

// --- Online backups (server/storage/database_backup.h) ---------------------------------------

TEST_CASE("backup file names", "[server][storage][sqlite][backup]") {
  using kiln::server::isBackupName;
  CHECK(isBackupName("kiln-20261207T031400Z.sqlite"));
  CHECK(isBackupName("kiln-20261207T031400Z-12.sqlite"));
  CHECK_FALSE(isBackupName("kiln.sqlite"));
  CHECK_FALSE(isBackupName("kiln-20261207T031400Z.sqlite-wal"));
  CHECK_FALSE(isBackupName("kiln-20261207T031400.sqlite"));
  CHECK_FALSE(isBackupName("kiln-20261207T031400Z-.sqlite"));
  CHECK_FALSE(isBackupName("kiln-20261207T031400Z-1a.sqlite"));
  CHECK_FALSE(isBackupName(".kiln-20261207T031400Z.sqlite.partial"));
  CHECK_FALSE(isBackupName("kiln-2026120xT031400Z.sqlite"));
}

TEST_CASE("a backup is a consistent, private copy taken while the server holds the database",
          "[server][storage][sqlite][backup]") {
  using namespace contract;
  namespace fs = std::filesystem;
  TempDir dir;
  const std::string url = "sqlite:///" + (dir.path / "kiln.sqlite").string();
  auto storage = openStorage(url).value();
  {
    auto tx = storage->begin(Mode::Write).value();
    insertNode(*tx, makeNode("in-backup"));
    REQUIRE(tx->commit());
  }
  // A write transaction under way is not in the copy (one snapshot) and is not blocked by it.
  auto open = storage->begin(Mode::Write).value();
  insertNode(*open, makeNode("not-yet-committed"));

  const auto backups = dir.path / "backups";
  const auto t0 = std::chrono::sys_days{std::chrono::year{2026} / 12 / 7} + std::chrono::hours{3};
  auto first = kiln::server::backupDatabase(*storage, backups.string(), 2, t0);
  REQUIRE(first);
  REQUIRE(open->commit());
  CHECK(first->path == (backups / "kiln-20261207T030000Z.sqlite").string());
  CHECK(first->bytes == fs::file_size(first->path));
  CHECK((fs::status(first->path).permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write));
  CHECK((fs::status(backups).permissions() & fs::perms::all) == fs::perms::owner_all);
  CHECK_FALSE(fs::exists(backups / ".kiln-20261207T030000Z.sqlite.partial"));
  {
    // The copy opens as a database of its own, at the same schema, with the committed node only.
    auto copy = openStorage("sqlite:///" + first->path).value();
    CHECK(copy->schemaVersion() == storage->schemaVersion());
    auto tx = copy->begin(Mode::Read).value();
    CHECK(tx->nodes().findBy(kNodeName, Value::text("in-backup")).value());
    CHECK_FALSE(tx->nodes().findBy(kNodeName, Value::text("not-yet-committed")).value());
  }

  // Same second: a -1 name. Then keep = 2 deletes the oldest backup and nothing else.
  std::ofstream(backups / "notes.txt") << "mine";
  std::ofstream(backups / "kiln-manual.sqlite") << "mine";
  auto second = kiln::server::backupDatabase(*storage, backups.string(), 2, t0);
  REQUIRE(second);
  CHECK(fs::path(second->path).filename() == "kiln-20261207T030000Z-1.sqlite");
  CHECK(second->removed.empty());
  auto third = kiln::server::backupDatabase(*storage, backups.string(), 2, t0 + std::chrono::hours{24});
  REQUIRE(third);
  CHECK(fs::path(third->path).filename() == "kiln-20261208T030000Z.sqlite");
  CHECK(third->removed == std::vector<std::string>{"kiln-20261207T030000Z.sqlite"});
  CHECK(fs::exists(backups / "notes.txt"));
  CHECK(fs::exists(backups / "kiln-manual.sqlite"));
  CHECK(fs::exists(second->path));
}

TEST_CASE("a backup that cannot be written leaves nothing and says why", "[server][storage][sqlite][backup]") {
  using namespace contract;
  TempDir dir;
  auto storage = openStorage("sqlite://").value();  // in memory: VACUUM INTO works as well
  const auto now = std::chrono::system_clock::now();
  auto ok = kiln::server::backupDatabase(*storage, (dir.path / "b").string(), 0, now);
  REQUIRE(ok);
  std::ofstream(dir.path / "file") << "x";
  auto bad = kiln::server::backupDatabase(*storage, (dir.path / "file" / "sub").string(), 0, now);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == kiln::ErrorCode::Internal);
  CHECK_THAT(bad.error().message, Catch::Contains("backup directory"));
}

TEST_CASE("PostgreSQL and other back ends are not backed up by kiln-server", "[server][storage][backup]") {
  struct NoBackup final : kiln::server::Storage {
    kiln::Result<kiln::server::TransactionPtr> begin(Mode) override {
      return std::unexpected(kiln::Error{kiln::ErrorCode::Internal, "unused"});
    }
    int schemaVersion() const override { return 1; }
  } storage;
  TempDir dir;
  auto result = kiln::server::backupDatabase(storage, (dir.path / "b").string(), 0, std::chrono::system_clock::now());
  REQUIRE_FALSE(result);
  CHECK(result.error().code == kiln::ErrorCode::Unavailable);
  CHECK_THAT(result.error().message, Catch::Contains("pg_dump"));
  CHECK(std::filesystem::is_empty(dir.path / "b"));
}
