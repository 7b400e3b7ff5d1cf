#include "tests/support/test_api.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>

#include "server/api/http.h"
#include "tests/fuzz/corpus_dump.h"
#include "tests/support/postgres_test_server.h"

namespace kiln::test {

std::string Response::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k.size() == name.size() &&
        std::equal(k.begin(), k.end(), name.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
        })) {
      return v;
    }
  }
  return "";
}

Json Response::json() const {
  if (body.empty()) return Json();
  return Json::parse(body);
}

std::string Response::fault() const {
  const Json outer = json();
  if (!outer.contains("error_message") || !outer["error_message"].is_string()) return "";
  const Json inner = Json::parse(outer["error_message"].get<std::string>());
  return inner.value("faultstring", "");
}

TestApi::TestApi(const std::string& config, server::InterfaceDeps deps)
    : clock_(std::make_shared<FakeClock>()) {
  // Keep test output readable; KILN_TEST_LOG=debug (or info) shows the server's log lines.
  const char* level = std::getenv("KILN_TEST_LOG");
  Logger::setLevel(parseLogLevel(level ? level : "error").value_or(LogLevel::Info));
  std::string connection = "sqlite://";
  if (postgresRequested()) {
    PostgresTestServer* pg = PostgresTestServer::forTest();  // exits (skipped) without one
    postgresDatabase_ = pg->createMigratedDatabase();
    connection = pg->url(postgresDatabase_);
  }
  const std::string text =
      "[DEFAULT]\nenabled_hardware_types = fake-hardware, ipmi, redfish, manual-management\n"
      "host = test-conductor\n"
      "[database]\nconnection = " + connection + "\n"
      // Tests keep their agent images in TempDirs (the default allows /var/lib/kiln/images).
      "[conductor]\nfile_url_allowed_paths = " + std::filesystem::temp_directory_path().string() + "\n" +
      config;
  fuzz::dumpConfig(text);  // KILN_FUZZ_DUMP: seeds for the fuzzers
  auto parsed = server::parseConfig(text, "test");
  REQUIRE(parsed.has_value());
  auto app = server::ServerApp::create(std::move(*parsed), clock_, std::move(deps));
  if (!app) FAIL("cannot create server: " << app.error().message);
  app_ = std::move(*app);
  // The conductor's workers run; its periodic work is driven by tests (runPeriodic()).
  auto started = app_->start(/*http=*/false, /*periodic=*/false);
  if (!started) FAIL("cannot start conductor: " << started.error().message);
}

TestApi::~TestApi() {
  if (app_) app_->stop();
  app_.reset();  // closes the database connections
  if (!postgresDatabase_.empty()) {
    if (PostgresTestServer* pg = PostgresTestServer::instance()) pg->dropDatabase(postgresDatabase_);
  }
}

void TestApi::settle() { app_->conductor().waitIdle(); }

void TestApi::runPeriodic() {
  app_->conductor().runPeriodicTasks();
  settle();
}

Response TestApi::call(const std::string& method, const std::string& pathAndQuery,
                       const std::string& body,
                       std::vector<std::pair<std::string, std::string>> headers) {
  server::ApiRequest req;
  req.method = method;
  const auto q = pathAndQuery.find('?');
  req.path = pathAndQuery.substr(0, q);
  if (q != std::string::npos) req.query = server::parseQueryString(pathAndQuery.substr(q + 1));
  req.headers.emplace_back("host", "kiln.test:6385");
  if (!version.empty()) req.headers.emplace_back("x-openstack-ironic-api-version", version);
  for (auto& h : extraHeaders) req.headers.push_back(h);
  for (auto& h : headers) {
    for (auto& c : h.first) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    req.headers.push_back(std::move(h));
  }
  req.body = body;
  server::ApiResponse r = app_->api().handle(req);
  fuzz::dumpExchange(req, r);
  return Response{r.status, std::move(r.body), std::move(r.headers)};
}

Json TestApi::createNode(Json extra) {
  Json body = {{"driver", "fake-hardware"}};
  for (auto it = extra.begin(); it != extra.end(); ++it) body[it.key()] = it.value();
  Response r = post("/v1/nodes", body);
  INFO(r.body);
  REQUIRE(r.status == 201);
  return r.json();
}

Response TestApi::provision(const std::string& ident, const std::string& target, Json extra) {
  extra["target"] = target;
  Response r = put("/v1/nodes/" + ident + "/states/provision", extra);
  settle();
  return r;
}

Json TestApi::createActiveNode(Json extra) {
  const std::string uuid = createNode(std::move(extra))["uuid"];
  for (const char* target : {"manage", "provide", "active"}) {
    Response r = provision(uuid, target);
    INFO(target << ": " << r.body);
    REQUIRE(r.status == 202);
  }
  Json node = get("/v1/nodes/" + uuid).json();
  REQUIRE(node["provision_state"] == "active");
  return node;
}

}  // namespace kiln::test
