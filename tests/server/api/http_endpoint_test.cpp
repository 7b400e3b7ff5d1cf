#include <catch2/catch.hpp>

#include <string>

#include "tests/support/raw_http_client.h"
#include "tests/support/test_api.h"

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
