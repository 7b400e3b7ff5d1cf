// File: tests/support/test_api.h
//
// An in-process kiln-server for API tests: a ServerApp built from configuration text with an
// in-memory database (or a given file) and a FakeClock, called through ApiService::handle()
// without sockets. With KILN_TEST_DATABASE=postgresql in the environment the default database
// is instead a fresh, migrated PostgreSQL database of the run's test server
// (tests/support/postgres_test_server.h), dropped with the TestApi; when no PostgreSQL can run
// here, the process exits with kSkipExitCode, which ctest reports as skipped.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/server_app.h"
#include "tests/support/fake_clock.h"

namespace kiln::test {

using Json = nlohmann::json;

struct Response {
  int status = 0;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;

  std::string header(std::string_view name) const;
  /// The body parsed as JSON (null for an empty body).
  Json json() const;
  /// The faultstring of an Ironic error body (the double-encoded error_message).
  std::string fault() const;
};

class TestApi {
 public:
  /// `config` is INI text appended to defaults that enable every hardware type and use an
  /// in-memory database (or PostgreSQL, see above); a [database] connection in it wins.
  explicit TestApi(const std::string& config = "", server::InterfaceDeps deps = {});
  ~TestApi();

  /// Waits until the conductor has no queued or running work.
  void settle();
  /// Runs one pass of the conductor's periodic work (timers, timeouts, power sync), then
  /// settles.
  void runPeriodic();

  /// The microversion sent by default ("1.78"); "" sends no version header.
  std::string version = "1.78";
  std::vector<std::pair<std::string, std::string>> extraHeaders;

  Response call(const std::string& method, const std::string& pathAndQuery,
                const std::string& body = "",
                std::vector<std::pair<std::string, std::string>> headers = {});
  Response get(const std::string& path) { return call("GET", path); }
  Response post(const std::string& path, const Json& body) { return call("POST", path, body.dump()); }
  Response put(const std::string& path, const Json& body) { return call("PUT", path, body.dump()); }
  Response putRaw(const std::string& path, const std::string& body = "") { return call("PUT", path, body); }
  Response patch(const std::string& path, const Json& body) { return call("PATCH", path, body.dump()); }
  Response del(const std::string& path) { return call("DELETE", path); }

  /// Creates a fake-hardware node (plus `extra` fields) and returns its JSON; REQUIREs 201.
  Json createNode(Json extra = Json::object());
  /// createNode, then manage, provide and deploy it (settling after each); REQUIREs that it
  /// reaches "active" and returns its JSON then.
  Json createActiveNode(Json extra = Json::object());
  /// PUT /v1/nodes/{ident}/states/provision with {"target": target} (plus `extra`), then settles.
  Response provision(const std::string& ident, const std::string& target,
                     Json extra = Json::object());

  server::ServerApp& app() { return *app_; }
  FakeClock& clock() { return *clock_; }

 private:
  std::shared_ptr<FakeClock> clock_;
  std::unique_ptr<server::ServerApp> app_;
  std::string postgresDatabase_;  ///< dropped at the end (KILN_TEST_DATABASE=postgresql)
};

}  // namespace kiln::test
