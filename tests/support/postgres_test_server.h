// File: tests/support/postgres_test_server.h
//
// A throwaway PostgreSQL server for the tests that run Kiln on PostgreSQL (issue 15): Debian's
// postgresql, initdb into a temporary folder owned by the `postgres` user (run through runuser),
// listening on 127.0.0.1 only at a free port, no Unix socket, trust authentication for
// 127.0.0.1 alone, the C collation (so text sorts as in SQLite) and fsync off. One server per
// test binary run, started on first use and stopped and removed at exit; each test takes a
// database of its own.
//
// It needs root (to run initdb as `postgres`) and /usr/lib/postgresql/<version>/bin. The
// PostgreSQL test cases are tagged [.postgresql]: hidden from the default run, ctest runs them,
// and the API cases on PostgreSQL, as entries of their own (tests/CMakeLists.txt) with
// KILN_TEST_DATABASE=postgresql in the environment; on a machine without PostgreSQL those runs
// exit with kSkipExitCode, which ctest reports as skipped. Run by hand without that variable,
// the cases WARN and return instead.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "server/storage/storage.h"

namespace kiln::server::postgres {
class PgConnection;
}

namespace kiln::test {

/// The exit code of a test run that cannot run here (ctest's SKIP_RETURN_CODE).
inline constexpr int kSkipExitCode = 77;

/// True when the environment asks for PostgreSQL (KILN_TEST_DATABASE=postgresql).
bool postgresRequested();

class PostgresTestServer {
 public:
  /// The run's server, started on first use. Null when this machine cannot run one; `whyNot`
  /// then says why (not root, PostgreSQL not installed, initdb or start-up failed).
  static PostgresTestServer* instance(std::string* whyNot = nullptr);

  /// instance() for a test case. Without a server, a run that asked for PostgreSQL
  /// (postgresRequested()) exits with kSkipExitCode; any other WARNs and gets null.
  static PostgresTestServer* forTest();

  ~PostgresTestServer();
  PostgresTestServer(const PostgresTestServer&) = delete;
  PostgresTestServer& operator=(const PostgresTestServer&) = delete;

  /// A new, empty database (no Kiln tables yet); returns its name.
  std::string createDatabase();
  /// A new database with Kiln's schema already migrated: a copy of a template database that
  /// is migrated once per run (faster than migrating each test's database).
  std::string createMigratedDatabase();
  /// Drops a database made by the two above, ending any connection still open to it.
  void dropDatabase(const std::string& name);

  /// postgresql://postgres@127.0.0.1:<port>/<database>
  std::string url(const std::string& database) const;
  int port() const { return port_; }

 private:
  PostgresTestServer() = default;
  /// initdb, configuration, pg_ctl start; "" on success, else why not.
  std::string start();
  void stop();
  std::string runAdmin(const std::string& sql);

  std::string root_;     ///< the temporary folder (data/, log)
  std::string binDir_;   ///< /usr/lib/postgresql/<version>/bin
  std::string runuser_;  ///< runuser's path
  int port_ = 0;
  bool running_ = false;
  std::mutex mutex_;                                       ///< guards admin_, next_, templateReady_
  std::unique_ptr<server::postgres::PgConnection> admin_;  ///< to the postgres database
  int next_ = 0;
  bool templateReady_ = false;
};

/// A Storage on a fresh database of the run's server (migrated by openStorage, as a new
/// deployment's is) that drops its database when destroyed. Null when there is no server
/// (see forTest()).
server::StoragePtr openScratchPostgresStorage();

}  // namespace kiln::test
