#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "tests/support/raw_http_client.h"
#include "tests/support/test_api.h"
#include "server/api/http_endpoint.h"
#include "shared/http/http_client.h"
#include "tests/support/replay_command_runner.h"

using kiln::test::RawClient;

TEST_CASE("the HTTP endpoint serves the API on an ephemeral port", "[server][http]") {
  kiln::test::TestApi api("[api]\nport = 0\n");
  REQUIRE(api.app().start());
  const uint16_t port = api.app().port();
  REQUIRE(port != 0);
  RawClient client(port);
  const std::string response = client.roundTrip(
      "GET /v1/nodes?fields=uuid HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "X-OpenStack-Ironic-API-Version: 1.78\r\n\r\n");
  CHECK(response.rfind("HTTP/1.1 200", 0) == 0);
  CHECK_THAT(response, Catch::Contains("X-OpenStack-Ironic-API-Version: 1.78"));
  CHECK_THAT(response, Catch::Contains("{\"nodes\":[]}"));
  api.app().stop();
}

TEST_CASE("HTTP/1.1 clients without a Connection header keep their connection", "[server][http]") {
  kiln::test::TestApi api("[api]\nport = 0\n");
  REQUIRE(api.app().start());
  RawClient client(api.app().port());
  for (int i = 0; i < 3; ++i) {
    const std::string r = client.roundTrip("GET /v1 HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(r.rfind("HTTP/1.1 200", 0) == 0);
    CHECK_THAT(r, Catch::Contains("Connection: Keep-Alive"));
  }
  // An explicit close is answered with Connection: Close, and the server ends the connection.
  const std::string last = client.roundTrip("GET /v1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  CHECK_THAT(last, Catch::Contains("Connection: Close"));
  CHECK(client.serverClosed());
  api.app().stop();
}

TEST_CASE("HTTP/1.0 connections end after the response unless the client asks to keep them",
          "[server][http]") {
  kiln::test::TestApi api("[api]\nport = 0\n");
  REQUIRE(api.app().start());
  {
    RawClient client(api.app().port());
    const std::string r = client.roundTrip("GET /v1 HTTP/1.0\r\n\r\n");
    CHECK(r.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
    CHECK_THAT(r, Catch::Contains("Connection: Close"));
    CHECK(client.serverClosed());
  }
  {
    RawClient client(api.app().port());
    for (int i = 0; i < 2; ++i) {
      const std::string r = client.roundTrip("GET /v1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
      CHECK_THAT(r, Catch::Contains("Connection: Keep-Alive"));
    }
  }
  api.app().stop();
}

TEST_CASE("a large page arrives whole, before the next response", "[server][http]") {
  kiln::test::TestApi api("[api]\nport = 0\n");
  for (int i = 0; i < 300; ++i) api.createNode();
  REQUIRE(api.app().start());
  RawClient client(api.app().port(), 4096);
  for (int round = 0; round < 2; ++round) {
    const std::string r = client.roundTrip(
        "GET /v1/nodes/detail?limit=300 HTTP/1.1\r\nHost: x\r\n"
        "X-OpenStack-Ironic-API-Version: 1.78\r\n\r\n");
    REQUIRE(r.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
    const auto headerEnd = r.find("\r\n\r\n");
    const auto cl = r.find("Content-Length: ");
    REQUIRE(cl < headerEnd);
    const size_t length = std::stoul(r.substr(cl + 16));
    CHECK(length > 300 * 1000);
    REQUIRE(r.size() == headerEnd + 4 + length);
    const auto body = kiln::test::Json::parse(r.substr(headerEnd + 4));
    CHECK(body["nodes"].size() == 300);
    const std::string small = client.roundTrip("GET /v1 HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(small.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  }
  api.app().stop();
}

TEST_CASE("responses carry their own content type, and a 204 no body headers",
          "[server][http]") {
  kiln::test::TestApi api("[api]\nport = 0\n");
  api.createNode({{"name", "n1"}});
  REQUIRE(api.app().start());
  RawClient client(api.app().port());
  const std::string body = R"({"traits": ["CUSTOM_A"]})";
  const std::string put = client.roundTrip(
      "PUT /v1/nodes/n1/traits HTTP/1.1\r\nHost: x\r\nX-OpenStack-Ironic-API-Version: 1.78\r\n"
      "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n\r\n" + body);
  CHECK(put.rfind("HTTP/1.1 204 No Content\r\n", 0) == 0);
  CHECK_THAT(put, !Catch::Contains("Content-Length") && !Catch::Contains("Content-Type"));
  const std::string get = client.roundTrip(
      "GET /v1/nodes/n1/traits HTTP/1.1\r\nHost: x\r\nX-OpenStack-Ironic-API-Version: 1.78\r\n\r\n");
  CHECK_THAT(get, Catch::Contains("Content-Type: application/json\r\n"));
  CHECK_THAT(get, Catch::Contains("CUSTOM_A"));
  api.app().stop();
}

TEST_CASE("percent-encoded paths and queries are decoded", "[server][http]") {
  kiln::test::TestApi api("[api]\nport = 0\n");
  api.createNode({{"name", "n~1"}, {"description", "rack one"}});
  REQUIRE(api.app().start());
  RawClient client(api.app().port());
  const std::string r = client.roundTrip(
      "GET /v1/nodes?description_contains=rack%20one&fields=name HTTP/1.1\r\nHost: x\r\n"
      "X-OpenStack-Ironic-API-Version: 1.78\r\n\r\n");
  CHECK_THAT(r, Catch::Contains("\"name\":\"n~1\""));
  const std::string byName = client.roundTrip(
      "GET /v1/nodes/n%7E1 HTTP/1.1\r\nHost: x\r\nX-OpenStack-Ironic-API-Version: 1.78\r\n\r\n");
  CHECK(byName.rfind("HTTP/1.1 200", 0) == 0);
  api.app().stop();
}

namespace {

const std::string kVersion = "X-OpenStack-Ironic-API-Version: 1.78\r\n";

/// True when `text` is well-formed UTF-8.
bool isUtf8(const std::string& text) {
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > text.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

/// The Ironic error body of a response: {"error_message": "<JSON with faultstring>"}.
std::string faultString(const std::string& response) {
  const auto body = kiln::test::Json::parse(response.substr(response.find("\r\n\r\n") + 4));
  return kiln::test::Json::parse(body.at("error_message").get<std::string>()).at("faultstring");
}

}  // namespace

TEST_CASE("requests pipelined in one segment are all answered, in order", "[server][http][hardening]") {
  kiln::test::TestApi api("[api]\nport = 0\n");
  api.createNode({{"name", "n1"}});
  REQUIRE(api.app().start());
  RawClient client(api.app().port());
  client.sendRaw("GET /v1 HTTP/1.1\r\nHost: x\r\n\r\n"
                 "GET /v1/nodes/n1?fields=name HTTP/1.1\r\nHost: x\r\n" + kVersion + "\r\n"
                 "GET /v1/nodes/missing HTTP/1.1\r\nHost: x\r\n" + kVersion + "\r\n");
  CHECK_THAT(client.readResponse(), Catch::StartsWith("HTTP/1.1 200") && Catch::Contains("\"id\":\"v1\""));
  CHECK_THAT(client.readResponse(), Catch::StartsWith("HTTP/1.1 200") && Catch::Contains("\"name\":\"n1\""));
  CHECK_THAT(client.readResponse(), Catch::StartsWith("HTTP/1.1 404"));
  api.app().stop();
}

TEST_CASE("a request inside a body sent later is never run (no smuggling)", "[server][http][hardening]") {
  kiln::test::TestApi api("[api]\nport = 0\n");
  api.createNode({{"name", "victim"}});
  REQUIRE(api.app().start());
  RawClient client(api.app().port());
  const std::string smuggled = "DELETE /v1/nodes/victim HTTP/1.1\r\nHost: x\r\n" + kVersion + "\r\n";
  client.sendRaw("POST /v1/nodes HTTP/1.1\r\nHost: x\r\n" + kVersion + "Content-Type: foo\r\n"
                 "Content-Length: " + std::to_string(smuggled.size()) + "\r\n\r\n");
  client.sendRaw(smuggled);  // a later segment
  const std::string answer = client.readResponse();
  CHECK_THAT(answer, Catch::StartsWith("HTTP/1.1 400"));
  // The connection stays in step: the next answer belongs to the next request.
  const std::string next = client.roundTrip("GET /v1/nodes/victim?fields=name HTTP/1.1\r\nHost: x\r\n" + kVersion + "\r\n");
  CHECK_THAT(next, Catch::StartsWith("HTTP/1.1 200") && Catch::Contains("victim"));
  CHECK(api.get("/v1/nodes/victim").status == 200);
  api.app().stop();
}

TEST_CASE("malformed HTTP gets a 4xx in Ironic's format and the connection closes",
          "[server][http][hardening]") {
  kiln::test::TestApi api("[api]\nport = 0\nmax_request_body_size = 1024\n");
  REQUIRE(api.app().start());
  struct Case {
    std::string wire;
    int status;
  };
  const std::vector<Case> cases = {
      {"POST /v1/nodes HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n", 400},
      {"POST /v1/nodes HTTP/1.1\r\nHost: x\r\nContent-Length: 18446744073709551615\r\n\r\n", 413},
      {"GE(T /v1 HTTP/1.1\r\nHost: x\r\n\r\n", 400},
      {"POST /v1/nodes HTTP/1.1\r\nHost: x\r\nContent-Length : 2\r\n\r\n{}", 400},
      {"GET /v1 HTTP/3.0\r\nHost: x\r\n\r\n", 400},
      {"POST /v1/nodes HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nnope\r\n", 400},
      {"POST /v1/nodes HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"POST /v1/nodes HTTP/1.1\r\nHost: x\r\nContent-Length: 2048\r\n\r\n", 413},
      {"GET /v1 HTTP/1.1\r\nHost: x\r\nX: " + std::string(100 * 1024, 'a') + "\r\n\r\n", 431},
  };
  for (const auto& c : cases) {
    INFO(c.wire.substr(0, 80));
    RawClient client(api.app().port());
    const std::string r = client.roundTrip(c.wire);
    CHECK_THAT(r, Catch::StartsWith("HTTP/1.1 " + std::to_string(c.status)));
    CHECK_THAT(r, Catch::Contains("Content-Type: application/json\r\n") && Catch::Contains("Connection: Close"));
    CHECK_FALSE(faultString(r).empty());
    CHECK(client.serverClosed());
  }
  CHECK(api.get("/v1/nodes").json()["nodes"].empty());
  api.app().stop();
}

TEST_CASE("error answers are valid UTF-8 JSON whatever bytes the request carried",
          "[server][http][hardening]") {
  kiln::test::TestApi api("[api]\nport = 0\n");
  REQUIRE(api.app().start());
  RawClient client(api.app().port());
  const std::string path = client.roundTrip("GET /v1/nodes/a\xff\xc0\xaf HTTP/1.1\r\nHost: x\r\n" + kVersion + "\r\n");
  CHECK_THAT(path, Catch::StartsWith("HTTP/1.1 404") || Catch::StartsWith("HTTP/1.1 400"));
  CHECK(isUtf8(path));
  CHECK_THAT(faultString(path), Catch::Contains("\xEF\xBF\xBD"));
  const std::string body = "{\"name\": \"\xff\xfe\"}";
  const std::string post = client.roundTrip("POST /v1/nodes HTTP/1.1\r\nHost: x\r\n" + kVersion +
                                            "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  CHECK_THAT(post, Catch::StartsWith("HTTP/1.1 400"));
  CHECK(isUtf8(post));
  CHECK_THAT(faultString(post), Catch::Contains("not valid UTF-8") && !Catch::Contains("json.exception"));
  api.app().stop();
}

TEST_CASE("Expect: 100-continue is answered before the body is sent", "[server][http][hardening]") {
  kiln::test::TestApi api("[api]\nport = 0\n");
  REQUIRE(api.app().start());
  RawClient client(api.app().port());
  const std::string body = R"({"driver": "fake-hardware", "name": "n1"})";
  client.sendRaw("POST /v1/nodes HTTP/1.1\r\nHost: x\r\n" + kVersion + "Expect: 100-continue\r\n"
                 "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n");
  CHECK(client.readResponse() == "HTTP/1.1 100 Continue\r\n\r\n");
  CHECK_THAT(client.roundTrip(body), Catch::StartsWith("HTTP/1.1 201"));
  api.app().stop();
}

TEST_CASE("past the connection limit the longest idle connection is shed",
          "[server][http][hardening]") {
  // One reactor thread, so every connection is this thread's to shed.
  kiln::test::TestApi api("[api]\nport = 0\napi_workers = 1\nmax_connections = 16\n");
  REQUIRE(api.app().start());
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < 16; ++i) {
    clients.push_back(std::make_unique<RawClient>(api.app().port()));
    REQUIRE_THAT(clients.back()->roundTrip("GET /v1 HTTP/1.1\r\nHost: x\r\n\r\n"), Catch::StartsWith("HTTP/1.1 200"));
  }
  RawClient extra(api.app().port());
  CHECK_THAT(extra.roundTrip("GET /v1 HTTP/1.1\r\nHost: x\r\n\r\n"), Catch::StartsWith("HTTP/1.1 200"));
  CHECK(clients.front()->serverClosed());  // the oldest idle one
  CHECK_THAT(clients.back()->roundTrip("GET /v1 HTTP/1.1\r\nHost: x\r\n\r\n"), Catch::StartsWith("HTTP/1.1 200"));
  api.app().stop();
}

TEST_CASE("past the connection limit with nobody idle, a new connection gets a 503",
          "[server][http][hardening]") {
  kiln::test::TestApi api("[api]\nport = 0\napi_workers = 1\nmax_connections = 16\n");
  REQUIRE(api.app().start());
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < 16; ++i) {
    clients.push_back(std::make_unique<RawClient>(api.app().port()));
    REQUIRE_THAT(clients.back()->roundTrip("GET /v1 HTTP/1.1\r\nHost: x\r\n\r\n"), Catch::StartsWith("HTTP/1.1 200"));
    clients.back()->sendRaw("GET /v1 HTTP/1.1\r\nHost:");  // mid-request: not idle
  }
  // The partial requests are read once the last of them has been answered: a full request on
  // the last connection proves that.
  clients.back()->sendRaw(" x\r\n\r\n");
  REQUIRE_THAT(clients.back()->readResponse(), Catch::StartsWith("HTTP/1.1 200"));
  clients.back()->sendRaw("GET /v1 HTTP/1.1\r\nHost:");
  RawClient extra(api.app().port());
  const std::string refused = extra.readResponse();
  CHECK_THAT(refused, Catch::StartsWith("HTTP/1.1 503"));
  CHECK_THAT(faultString(refused), Catch::Contains("limit"));
  CHECK(extra.serverClosed());
  api.app().stop();
}

TEST_CASE("a request that does not arrive whole in client_socket_timeout is dropped",
          "[server][http][hardening]") {
  kiln::test::TestApi api("[api]\nport = 0\nclient_socket_timeout = 1\n");
  REQUIRE(api.app().start());
  RawClient client(api.app().port());
  client.sendRaw("GET /v1 HTTP/1.1\r\nHost: x\r\n");  // never finished
  // The server closes within a second or two (Pistache's timer ticks every 500 ms) without a
  // plain-text 408; RawClient gives up after 5 s.
  CHECK(client.serverClosed());
  api.app().stop();
}

TEST_CASE("the connection cap leaves descriptors for the rest of the server", "[server][http][hardening]") {
  using kiln::server::connectionCap;
  CHECK(connectionCap(10000, 1024) == 896);
  CHECK(connectionCap(10000, 256) == 192);
  CHECK(connectionCap(500, 1 << 20) == 500);
  CHECK(connectionCap(10000, 1 << 20) == 10000);
}

namespace {

std::string tlsConfig() {
  using kiln::test::testDataPath;
  return "[api]\nport = 0\nenable_ssl_api = true\n[ssl]\ncert_file = " +
         testDataPath("tls/server.pem").string() + "\nkey_file = " + testDataPath("tls/server.key").string() + "\n";
}

kiln::HttpRequest tlsGet(uint16_t port, const std::string& path, const std::string& caFile) {
  kiln::HttpRequest r;
  r.url = "https://127.0.0.1:" + std::to_string(port) + path;
  r.headers = {{"X-OpenStack-Ironic-API-Version", "1.78"}};
  r.caFile = caFile;
  r.timeout = std::chrono::seconds(5);
  return r;
}

}  // namespace

TEST_CASE("the API is served over TLS with the configured certificate", "[server][http][tls]") {
  kiln::test::TestApi api(tlsConfig());
  api.createNode({{"name", "n1"}});
  REQUIRE(api.app().start());
  auto client = kiln::makeHttpClient();
  const std::string ca = kiln::test::testDataPath("tls/ca.pem").string();
  auto r = client->send(tlsGet(api.app().port(), "/v1/nodes/n1", ca));
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK_THAT(r->body, Catch::Contains("\"name\":\"n1\"") && Catch::Contains("https://"));
  // A client that trusts another CA refuses the server.
  auto wrong = client->send(tlsGet(api.app().port(), "/v1", kiln::test::testDataPath("tls/server.pem").string()));
  CHECK_FALSE(wrong);
  // Plain HTTP on the TLS port is not answered in clear.
  RawClient plain(api.app().port());
  plain.sendRaw("GET /v1 HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK_THAT(plain.readResponse(), !Catch::Contains("HTTP/1.1 200"));
  api.app().stop();
}

TEST_CASE("a client stalling its TLS handshake holds up nobody", "[server][http][tls]") {
  kiln::test::TestApi api(tlsConfig());
  REQUIRE(api.app().start());
  // Connected, never says hello (Pistache's own TLS would block its accept thread here).
  std::vector<std::unique_ptr<RawClient>> stalled;
  for (int i = 0; i < 3; ++i) stalled.push_back(std::make_unique<RawClient>(api.app().port()));
  auto client = kiln::makeHttpClient();
  auto request = tlsGet(api.app().port(), "/v1", kiln::test::testDataPath("tls/ca.pem").string());
  request.timeout = std::chrono::seconds(3);
  auto r = client->send(request);
  REQUIRE(r);
  CHECK(r->status == 200);
  api.app().stop();
}

TEST_CASE("TLS needs a certificate and a key that match", "[server][http][tls]") {
  using kiln::test::testDataPath;
  auto bad = kiln::server::parseConfig("[api]\nenable_ssl_api = true\n", "test");
  CHECK_FALSE(bad);
  kiln::test::TestApi api("[api]\nport = 0\nenable_ssl_api = true\n[ssl]\ncert_file = " +
                          testDataPath("tls/ca.pem").string() + "\nkey_file = " +
                          testDataPath("tls/server.key").string() + "\n");
  auto started = api.app().start();
  REQUIRE_FALSE(started);
  CHECK_THAT(started.error().message, Catch::Contains("does not match"));
}
