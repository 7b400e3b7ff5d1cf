// GET /metrics (server/api/api_metrics.h): the scrape, its options ([metrics]) and the API's
// and agent endpoints' own metrics.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "server/api/api_metrics.h"
#include "shared/http/http_client.h"
#include "tests/support/basic_auth.h"
#include "tests/support/metrics_sample.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::processSample;
using kiln::test::Response;
using kiln::test::sampleValue;
using kiln::test::TestApi;

namespace {

constexpr const char* kMac = "52:54:00:aa:bb:01";

kiln::server::ApiResponse scrape(TestApi& api,
                                 std::vector<std::pair<std::string, std::string>> headers = {}) {
  kiln::server::ApiRequest req;
  req.method = "GET";
  req.path = "/metrics";
  req.headers = std::move(headers);
  return api.app().api().handle(req);
}

std::string nodesSeries(const Json& node) {
  auto text = [](const Json& v) {
    return v.is_null() ? std::string("none") : v.get<std::string>();
  };
  return "kiln_nodes{provision_state=\"" + text(node["provision_state"]) + "\",power_state=\"" +
         text(node["power_state"]) + "\",maintenance=\"" +
         (node["maintenance"].get<bool>() ? "true" : "false") + "\"}";
}

}  // namespace

TEST_CASE("GET /metrics counts the fleet's nodes by state when nodes are in several states",
          "[server][api][metrics]") {
  TestApi api;
  api.createNode({{"name", "a"}});
  api.createNode({{"name", "b"}});
  api.createNode({{"name", "c"}});
  REQUIRE(api.provision("b", "manage").status == 202);
  REQUIRE(api.put("/v1/nodes/c/maintenance", Json::object()).status == 202);
  api.settle();

  const auto r = scrape(api);
  REQUIRE(r.status == 200);
  CHECK(r.contentType == "text/plain; version=0.0.4; charset=utf-8");
  std::map<std::string, int> expected;
  const Json nodes = api.get("/v1/nodes/detail").json()["nodes"];
  for (const auto& node : nodes) ++expected[nodesSeries(node)];
  REQUIRE(expected.size() >= 2);
  for (const auto& [series, n] : expected) {
    INFO(series << "\n" << r.body);
    CHECK(sampleValue(r.body, series) == n);
  }
  CHECK(sampleValue(r.body, "kiln_database_up") == 1);
  CHECK_THAT(r.body, Catch::Contains("\nkiln_server_info{host=\"test-conductor\",version=\""));
  CHECK(sampleValue(r.body, "process_start_time_seconds").value_or(0) > 1.6e9);
  // Every family of every layer is listed from the first scrape on.
  for (const char* family :
       {"kiln_api_requests_total", "kiln_api_request_duration_seconds", "kiln_heartbeats_total",
        "kiln_agent_lookups_total", "kiln_bmc_requests_total", "kiln_bmc_request_duration_seconds",
        "kiln_image_bytes_written_total", "kiln_db_transaction_duration_seconds",
        "kiln_flow_duration_seconds", "kiln_step_duration_seconds", "kiln_nodes", "kiln_build_info",
        "process_cpu_seconds_total", "process_open_fds"}) {
    CHECK_THAT(r.body, Catch::Contains(std::string("# TYPE ") + family + " "));
  }
}

TEST_CASE("API requests are counted by method, route template and code when routes match or not",
          "[server][api][metrics]") {
  TestApi api;
  const Json node = api.createNode({{"name", "n1"}});
  const std::string uuid = node["uuid"];
  const std::string ok =
      R"(kiln_api_requests_total{method="GET",route="/v1/nodes/{node}",code="200"})";
  const std::string missing =
      R"(kiln_api_requests_total{method="GET",route="/v1/nodes/{node}",code="404"})";
  const std::string unmatched =
      R"(kiln_api_requests_total{method="GET",route="unmatched",code="404"})";
  const std::string odd = R"(kiln_api_requests_total{method="other",route="unmatched",code="404"})";
  const std::string duration =
      R"(kiln_api_request_duration_seconds_count{route="/v1/nodes/{node}"})";
  const double before[] = {processSample(ok), processSample(missing), processSample(unmatched),
                           processSample(odd), processSample(duration)};
  REQUIRE(api.get("/v1/nodes/" + uuid).status == 200);
  REQUIRE(api.get("/v1/nodes/n1").status == 200);
  REQUIRE(api.get("/v1/nodes/no-such-node").status == 404);
  REQUIRE(api.get("/v1/no/such/path/" + uuid).status == 404);
  REQUIRE(api.call("BREW", "/v1/" + uuid + "/x").status == 404);
  CHECK(processSample(ok) == before[0] + 2);
  CHECK(processSample(missing) == before[1] + 1);
  CHECK(processSample(unmatched) == before[2] + 1);
  CHECK(processSample(odd) == before[3] + 1);
  CHECK(processSample(duration) == before[4] + 3);
  // The raw path (a UUID, a name) never becomes a label.
  const std::string text = kiln::metrics::processRegistry().render();
  CHECK_THAT(text, !Catch::Contains(uuid));
  CHECK_THAT(text, !Catch::Contains("no-such-node"));
  CHECK_THAT(text, !Catch::Contains("BREW"));
}

TEST_CASE("Storage transactions are observed when the API reads and writes",
          "[server][api][metrics]") {
  TestApi api;
  const std::string reads = R"(kiln_db_transaction_duration_seconds_count{mode="read"})";
  const std::string writes = R"(kiln_db_transaction_duration_seconds_count{mode="write"})";
  const double r0 = processSample(reads);
  const double w0 = processSample(writes);
  api.createNode({{"name", "n1"}});
  REQUIRE(api.get("/v1/nodes/n1").status == 200);
  CHECK(processSample(reads) > r0);
  CHECK(processSample(writes) > w0);
}

TEST_CASE("GET /metrics needs the API's credentials only when require_auth is set",
          "[server][api][metrics][auth]") {
  char tmpl[] = "/tmp/kiln-htpasswd-XXXXXX";
  const int fd = mkstemp(tmpl);
  REQUIRE(fd >= 0);
  close(fd);
  std::ofstream(tmpl) << kiln::test::kTestHtpasswd;
  const std::string auth =
      "[DEFAULT]\nauth_strategy = http_basic\nhttp_basic_auth_user_file = " + std::string(tmpl) +
      "\n[http_basic_roles]\nviewer = observer\n";
  SECTION("open by default, as Ironic's exporters are") {
    TestApi api(auth);
    CHECK(scrape(api).status == 200);
    CHECK(api.get("/v1/nodes").status == 401);  // the API itself still needs them
  }
  SECTION("require_auth") {
    TestApi api(auth + "[metrics]\nrequire_auth = true\n");
    const auto refused = scrape(api);
    CHECK(refused.status == 401);
    CHECK_THAT(refused.body, !Catch::Contains("kiln_nodes"));
    CHECK(
        scrape(api, {{"authorization", kiln::test::basicAuthorization("admin", "wrong")}}).status ==
        401);
    const auto observer =
        scrape(api, {{"authorization", kiln::test::basicAuthorization("viewer", "watch")}});
    CHECK(observer.status == 200);
    CHECK_THAT(observer.body, Catch::Contains("kiln_nodes"));
  }
  std::filesystem::remove(tmpl);
}

TEST_CASE("GET /metrics is a 404 on the API port when metrics are disabled or listen elsewhere",
          "[server][api][metrics]") {
  SECTION("enabled = false") {
    TestApi api("[metrics]\nenabled = false\n");
    CHECK(scrape(api).status == 404);
  }
  SECTION("listen_address") {
    TestApi api("[metrics]\nlisten_address = 127.0.0.1\nport = 0\n");
    CHECK(scrape(api).status == 404);
  }
  SECTION("other methods") {
    TestApi api;
    const auto r = api.call("POST", "/metrics", "{}");
    CHECK(r.status == 405);
    CHECK(r.header("Allow") == "GET");
  }
}

TEST_CASE("[metrics] listen_address serves GET /metrics, and nothing else, on its own port",
          "[server][api][metrics]") {
  auto config = kiln::server::parseConfig(
      "[DEFAULT]\nenabled_hardware_types = fake-hardware\nhost = metrics-host\n"
      "[api]\nport = 0\n[database]\nconnection = sqlite://\n"
      "[metrics]\nlisten_address = 127.0.0.1\nport = 0\n",
      "test");
  REQUIRE(config);
  auto app = kiln::server::ServerApp::create(std::move(*config));
  REQUIRE(app);
  REQUIRE((*app)->start(/*http=*/true, /*periodic=*/false));
  const uint16_t port = (*app)->metricsPort();
  REQUIRE(port != 0);
  CHECK(port != (*app)->port());
  auto http = kiln::makeHttpClient();
  kiln::HttpRequest get;
  get.url = "http://127.0.0.1:" + std::to_string(port) + "/metrics";
  auto r = http->send(get);
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK_THAT(r->body, Catch::Contains("\nkiln_server_info{host=\"metrics-host\",version=\""));
  get.url = "http://127.0.0.1:" + std::to_string(port) + "/v1/nodes";
  r = http->send(get);
  REQUIRE(r);
  CHECK(r->status == 404);
  (*app)->stop();
}

namespace {

/// A fake-hardware node with the direct deploy and a port, available, then deploying.
std::string deployingAgentNode(TestApi& api) {
  Json body{{"name", "agent-node"},
            {"deploy_interface", "direct"},
            {"instance_info",
             {{"image_source", "http://127.0.0.1:8080/img.raw"},
              {"image_os_hash_algo", "sha256"},
              {"image_os_hash_value", std::string(64, 'a')}}}};
  const Json node = api.createNode(body);
  REQUIRE(api.post("/v1/ports", {{"address", kMac}, {"node_uuid", node["uuid"]}}).status == 201);
  REQUIRE(api.patch("/v1/nodes/agent-node",
                    Json::array({{{"op", "add"}, {"path", "/automated_clean"}, {"value", false}}}))
              .status == 200);
  REQUIRE(api.provision("agent-node", "manage").status == 202);
  REQUIRE(api.provision("agent-node", "provide").status == 202);
  REQUIRE(api.provision("agent-node", "active").status == 202);
  return node["uuid"];
}

Json beat(TestApi& api, const std::string& uuid, const std::string& token, Json results) {
  Json body{{"callback_url", ""},
            {"agent_version", "kiln-agent test"},
            {"agent_token", token},
            {"protocol_version", 1},
            {"steps",
             {{"deploy",
               {{"deploy", Json::array({{{"interface", "deploy"},
                                         {"step", "write_image"},
                                         {"priority", 0},
                                         {"abortable", false},
                                         {"reboot_requested", false},
                                         {"argsinfo", Json::object()}}})}}}}},
            {"results", std::move(results)},
            {"running", Json::array()}};
  auto r = api.post("/v1/heartbeat/" + uuid, body);
  api.settle();
  INFO(r.body);
  REQUIRE(r.status == 202);
  return r.json();
}

}  // namespace

TEST_CASE("Heartbeats, lookups and written image bytes are counted once when an agent deploys",
          "[server][api][metrics][agent]") {
  TestApi api;
  const std::string uuid = deployingAgentNode(api);
  const std::string found = R"(kiln_agent_lookups_total{result="found"})";
  const std::string notFound = R"(kiln_agent_lookups_total{result="not_found"})";
  const std::string invalid = R"(kiln_agent_lookups_total{result="invalid"})";
  const double lookups[] = {processSample(found), processSample(notFound), processSample(invalid)};
  const double beats = processSample("kiln_heartbeats_total");
  const double bytes = processSample("kiln_image_bytes_written_total");

  CHECK(api.get("/v1/lookup?addresses=52:54:00:00:00:99").status == 404);
  CHECK(api.get("/v1/lookup?addresses=not-a-mac").status == 400);
  auto looked = api.get("/v1/lookup?addresses=" + std::string(kMac));
  REQUIRE(looked.status == 200);
  const std::string token = looked.json()["config"]["agent_token"];
  CHECK(processSample(found) == lookups[0] + 1);
  CHECK(processSample(notFound) == lookups[1] + 1);
  CHECK(processSample(invalid) == lookups[2] + 1);

  const Json first = beat(api, uuid, token, Json::array());
  REQUIRE(first["commands"].size() == 1);
  const Json write = first["commands"][0];
  REQUIRE(write["params"]["step"]["step"] == "write_image");
  const Json result{{"id", write["id"]},
                    {"name", write["name"]},
                    {"status", "SUCCEEDED"},
                    {"result", {{"root_device", "/dev/vda"}, {"bytes_written", 123456789}}}};
  beat(api, uuid, token, Json::array({result}));
  // The agent resends the result until it is acknowledged: not counted again.
  beat(api, uuid, token, Json::array({result}));
  CHECK(processSample("kiln_heartbeats_total") == beats + 3);
  CHECK(processSample("kiln_image_bytes_written_total") == bytes + 123456789);
}
