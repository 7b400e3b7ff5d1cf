#include <arpa/inet.h>
#include <catch2/catch.hpp>

#include <set>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "tests/support/test_api.h"

namespace {

/// A blocking loopback client that reads one HTTP response (headers + Content-Length body).
class RawClient {
 public:
  explicit RawClient(uint16_t port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{5, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    REQUIRE(connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  }
  ~RawClient() { close(fd_); }

  std::string roundTrip(const std::string& request) {
    REQUIRE(send(fd_, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size()));
    std::string data;
    char buf[4096];
    while (true) {
      const auto headerEnd = data.find("\r\n\r\n");
      if (headerEnd != std::string::npos) {
        const auto cl = data.find("Content-Length: ");
        const size_t length = cl == std::string::npos ? 0 : std::stoul(data.substr(cl + 16));
        if (data.size() >= headerEnd + 4 + length) return data;
      }
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return data;
      data.append(buf, static_cast<size_t>(n));
    }
  }

 private:
  int fd_ = -1;
};

}  // namespace

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
  // An explicit close is answered with Connection: Close (the client then closes; Pistache
  // leaves that to the client).
  const std::string last = client.roundTrip("GET /v1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  CHECK_THAT(last, Catch::Contains("Connection: Close"));
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
