#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#define KILN_STORAGE_BACKEND "[sqlite]"
#define KILN_STORAGE_NAME "sqlite"
#include "tests/server/storage/storage_contract.h"

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
