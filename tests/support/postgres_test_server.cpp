#include "tests/support/postgres_test_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <thread>
#include <vector>

#include "server/storage/postgres/pg_connection.h"
#include "shared/exec/command_runner.h"

namespace kiln::test {
namespace {

namespace fs = std::filesystem;

/// The bin folder of the newest PostgreSQL Debian installed, or "".
std::string findBinDir() {
  std::error_code ec;
  std::string best;
  int bestVersion = -1;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() ||
        !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    if (!fs::exists(entry.path() / "bin" / "initdb") ||
        !fs::exists(entry.path() / "bin" / "pg_ctl")) {
      continue;
    }
    const int version = std::stoi(name);
    if (version > bestVersion) {
      bestVersion = version;
      best = (entry.path() / "bin").string();
    }
  }
  return best;
}

/// A TCP port on 127.0.0.1 that nothing listens on right now (bound to port 0, then closed).
int freePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

/// Runs a command; "" when it exited 0, else what went wrong.
std::string run(const std::vector<std::string>& argv, std::chrono::seconds timeout) {
  ProcessCommandRunner runner;
  Command command;
  command.argv = argv;
  command.timeout = timeout;
  auto out = runner.run(command);
  if (!out) return command.display() + ": " + out.error().message;
  if (out->exitCode != 0) return failureMessage(command, *out);
  return "";
}

class ScratchStorage final : public server::Storage {
 public:
  ScratchStorage(server::StoragePtr inner, PostgresTestServer& server, std::string database)
      : inner_(std::move(inner)), server_(server), database_(std::move(database)) {}
  ~ScratchStorage() override {
    inner_.reset();  // closes its connections
    server_.dropDatabase(database_);
  }
  Result<server::TransactionPtr> begin(Mode mode) override { return inner_->begin(mode); }
  int schemaVersion() const override { return inner_->schemaVersion(); }
  void setEventsListener(std::function<void()> listener) override {
    inner_->setEventsListener(std::move(listener));
  }

 private:
  server::StoragePtr inner_;
  PostgresTestServer& server_;
  std::string database_;
};

}  // namespace

bool postgresRequested() {
  const char* database = std::getenv("KILN_TEST_DATABASE");
  return database && std::string_view(database) == "postgresql";
}

PostgresTestServer* PostgresTestServer::forTest() {
  std::string why;
  PostgresTestServer* server = instance(&why);
  if (!server) {
    if (postgresRequested()) {
      std::fprintf(stderr, "KILN_TEST_DATABASE=postgresql, but no PostgreSQL can run here: %s\n",
                   why.c_str());
      std::exit(kSkipExitCode);
    }
    WARN("PostgreSQL test skipped: " << why);
  }
  return server;
}

PostgresTestServer* PostgresTestServer::instance(std::string* whyNot) {
  static std::once_flag once;
  static std::unique_ptr<PostgresTestServer> server;  // stopped and removed at exit
  static std::string reason;
  std::call_once(once, [] {
    std::unique_ptr<PostgresTestServer> candidate(new PostgresTestServer());
    reason = candidate->start();
    if (reason.empty()) {
      server = std::move(candidate);
    }
  });
  if (!server && whyNot) *whyNot = reason;
  return server.get();
}

std::string PostgresTestServer::start() {
  if (::geteuid() != 0) {
    return "not root: initdb has to run as the postgres user";
  }
  binDir_ = findBinDir();
  if (binDir_.empty()) {
    return "PostgreSQL is not installed (no /usr/lib/postgresql/<version>/bin/initdb; "
           "scripts/install-deps.sh installs Debian's postgresql)";
  }
  const passwd* pg = ::getpwnam("postgres");
  if (!pg) return "there is no postgres user";
  runuser_ = fs::exists("/usr/sbin/runuser") ? "/usr/sbin/runuser" : "runuser";

  std::string pattern = (fs::temp_directory_path() / "kiln-pg-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) return "mkdtemp failed";
  root_ = pattern;
  if (::chown(root_.c_str(), pg->pw_uid, pg->pw_gid) != 0) return "cannot chown " + root_;
  const std::string data = root_ + "/data";

  const auto asPostgres = [&](std::vector<std::string> argv) {
    argv.insert(argv.begin(), {runuser_, "-u", "postgres", "--"});
    return argv;
  };
  if (auto failed = run(asPostgres({binDir_ + "/initdb", "-D", data, "-U", "postgres", "-A",
                                    "trust", "-E", "UTF8", "--locale=C", "--no-sync"}),
                        std::chrono::seconds(180));
      !failed.empty()) {
    return "initdb failed: " + failed;
  }
  {
    // Trust, for TCP from 127.0.0.1 only (there is no Unix socket).
    std::ofstream hba(data + "/pg_hba.conf", std::ios::trunc);
    hba << "host all all 127.0.0.1/32 trust\n";
  }
  {
    std::ofstream conf(data + "/postgresql.conf", std::ios::app);
    conf << "\n# kiln tests (tests/support/postgres_test_server.cpp)\n"
            "listen_addresses = '127.0.0.1'\n"
            "unix_socket_directories = ''\n"
            "fsync = off\n"
            "synchronous_commit = off\n"
            "full_page_writes = off\n"
            "max_connections = 200\n";
  }
  std::string lastError;
  // A port found free may be taken before the server binds it: try a few.
  for (int attempt = 0; attempt < 3 && !running_; ++attempt) {
    port_ = freePort();
    if (port_ == 0) return "no free port on 127.0.0.1";
    lastError = run(asPostgres({binDir_ + "/pg_ctl", "-D", data, "-l", root_ + "/log", "-w", "-t",
                                "60", "-o", "-p " + std::to_string(port_), "start"}),
                    std::chrono::seconds(90));
    running_ = lastError.empty();
  }
  if (!running_) return "pg_ctl start failed: " + lastError;

  auto url = server::postgres::parsePgUrl(this->url("postgres"));
  if (!url) return url.error().message;
  auto admin = server::postgres::PgConnection::open(*url);
  if (!admin) return admin.error().message;
  admin_ = std::move(*admin);
  return "";
}

void PostgresTestServer::stop() {
  admin_.reset();
  if (running_) {
    (void)run({runuser_, "-u", "postgres", "--", binDir_ + "/pg_ctl", "-D", root_ + "/data", "-m",
               "immediate", "-w", "stop"},
              std::chrono::seconds(60));
    running_ = false;
  }
  if (!root_.empty()) {
    std::error_code ec;
    fs::remove_all(root_, ec);
    root_.clear();
  }
}

PostgresTestServer::~PostgresTestServer() { stop(); }

std::string PostgresTestServer::url(const std::string& database) const {
  return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/" + database;
}

std::string PostgresTestServer::runAdmin(const std::string& sql) {
  auto result = admin_->exec(sql);
  return result ? "" : result.error().message;
}

std::string PostgresTestServer::createDatabase() {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string name = "test_" + std::to_string(++next_);
  if (auto failed = runAdmin("CREATE DATABASE " + name); !failed.empty()) {
    FAIL("cannot create database " << name << ": " << failed);
  }
  return name;
}

std::string PostgresTestServer::createMigratedDatabase() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!templateReady_) {
    if (auto failed = runAdmin("CREATE DATABASE kiln_template"); !failed.empty()) {
      FAIL("cannot create the template database: " << failed);
    }
    auto migrated = server::openStorage(url("kiln_template"));
    if (!migrated) FAIL("cannot migrate the template database: " << migrated.error().message);
    // Destroying the store closes its connections: a template must have none.
    migrated->reset();
    templateReady_ = true;
  }
  const std::string name = "test_" + std::to_string(++next_);
  std::string failed;
  for (int attempt = 0; attempt < 50; ++attempt) {
    failed = runAdmin("CREATE DATABASE " + name + " TEMPLATE kiln_template");
    // A closed connection's server process may still be exiting.
    if (failed.find("being accessed by other users") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!failed.empty()) FAIL("cannot create database " << name << ": " << failed);
  return name;
}

void PostgresTestServer::dropDatabase(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  // FORCE ends connections still open to it (PostgreSQL 13 and later).
  (void)runAdmin("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
}

server::StoragePtr openScratchPostgresStorage() {
  PostgresTestServer* server = PostgresTestServer::forTest();
  if (!server) return nullptr;
  const std::string database = server->createDatabase();
  auto storage = server::openStorage(server->url(database));
  if (!storage) FAIL("cannot open " << database << ": " << storage.error().message);
  return std::make_unique<ScratchStorage>(std::move(*storage), *server, database);
}

}  // namespace kiln::test
