// Tests of kiln-agent's c-ares resolver (agent/dns_resolver.h) against a small DNS server
// written here (UDP on 127.0.0.1, port 0), and of the --dns / kiln.dns= options.
#include "agent/dns_resolver.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agent/agent_config.h"

using namespace kiln;
using namespace kiln::agent;

namespace {

constexpr uint16_t kTypeA = 1;
constexpr uint16_t kTypeAAAA = 28;

/// Answers A and AAAA queries from a table; NXDOMAIN for other names. `silent` drops every
/// query (a server that never answers). Records the (name, type) pairs it was asked.
class FakeDnsServer {
 public:
  struct Records {
    std::vector<std::string> a;
    std::vector<std::string> aaaa;
  };

  explicit FakeDnsServer(std::map<std::string, Records> zone, bool silent = false)
      : zone_(std::move(zone)), silent_(silent) {
    fd_ = ::socket(AF_INET, SOCK_DGRAM, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { loop(); });
  }
  ~FakeDnsServer() {
    stopping_ = true;
    thread_.join();
    ::close(fd_);
  }

  std::string server() const { return "127.0.0.1:" + std::to_string(port_); }
  std::vector<std::pair<std::string, uint16_t>> asked() {
    std::lock_guard lock(mutex_);
    return asked_;
  }

 private:
  void loop() {
    while (!stopping_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      unsigned char buf[512];
      sockaddr_in from{};
      socklen_t fromLen = sizeof from;
      const ssize_t n =
          ::recvfrom(fd_, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &fromLen);
      if (n < 12) continue;
      // The question: labels, then type and class.
      size_t at = 12;
      std::string name;
      while (at < static_cast<size_t>(n) && buf[at] != 0) {
        const size_t len = buf[at];
        if (!name.empty()) name += '.';
        name.append(reinterpret_cast<const char*>(buf + at + 1), len);
        at += len + 1;
      }
      at += 1;
      if (at + 4 > static_cast<size_t>(n)) continue;
      const uint16_t type = static_cast<uint16_t>(buf[at] << 8 | buf[at + 1]);
      const size_t questionEnd = at + 4;
      {
        std::lock_guard lock(mutex_);
        asked_.emplace_back(name, type);
      }
      if (silent_) continue;

      std::string reply(reinterpret_cast<const char*>(buf), questionEnd);
      reply[2] = static_cast<char>(0x81);  // QR, RD
      reply[3] = static_cast<char>(0x80);  // RA, NOERROR
      reply[6] = reply[7] = reply[8] = reply[9] = reply[10] = reply[11] = 0;
      auto it = zone_.find(name);
      if (it == zone_.end()) {
        reply[3] = static_cast<char>(0x83);  // NXDOMAIN
      } else {
        const auto& addresses = type == kTypeA ? it->second.a : it->second.aaaa;
        uint16_t count = 0;
        for (const auto& text : addresses) {
          unsigned char raw[16];
          const int family = type == kTypeA ? AF_INET : AF_INET6;
          REQUIRE(inet_pton(family, text.c_str(), raw) == 1);
          const uint16_t size = type == kTypeA ? 4 : 16;
          const unsigned char rr[] = {0xc0,
                                      0x0c,  // the question's name
                                      static_cast<unsigned char>(type >> 8),
                                      static_cast<unsigned char>(type & 0xff),
                                      0,
                                      1,  // IN
                                      0,
                                      0,
                                      0,
                                      60,  // TTL
                                      0,
                                      static_cast<unsigned char>(size)};
          reply.append(reinterpret_cast<const char*>(rr), sizeof rr);
          reply.append(reinterpret_cast<const char*>(raw), size);
          ++count;
        }
        reply[6] = static_cast<char>(count >> 8);
        reply[7] = static_cast<char>(count & 0xff);
      }
      ::sendto(fd_, reply.data(), reply.size(), 0, reinterpret_cast<sockaddr*>(&from), fromLen);
    }
  }

  std::map<std::string, Records> zone_;
  bool silent_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::vector<std::pair<std::string, uint16_t>> asked_;
  std::thread thread_;
};

std::vector<std::string> addresses(const std::vector<ResolvedEndpoint>& endpoints) {
  std::vector<std::string> out;
  for (const auto& e : endpoints) out.push_back(e.address);
  return out;
}

}  // namespace

TEST_CASE("DNS resolver asks the named server for A and AAAA records when given a host name",
          "[agent][dns]") {
  FakeDnsServer dns({{"kiln-api.test", {{"127.0.0.1", "127.0.0.2"}, {"fd00::5"}}}});
  auto resolver = makeDnsResolver(DnsOptions{{dns.server()}});
  auto result = resolver->resolve("kiln-api.test", 6385, std::chrono::seconds(5));
  REQUIRE(result);
  auto got = addresses(*result);
  std::sort(got.begin(), got.end());
  CHECK(got == std::vector<std::string>{"127.0.0.1", "127.0.0.2", "fd00::5"});
  for (const auto& e : *result) CHECK(e.port == 6385);
  auto asked = dns.asked();
  CHECK(std::count(asked.begin(), asked.end(),
                   std::pair<std::string, uint16_t>{"kiln-api.test", kTypeA}) == 1);
  CHECK(std::count(asked.begin(), asked.end(),
                   std::pair<std::string, uint16_t>{"kiln-api.test", kTypeAAAA}) == 1);
}

TEST_CASE("DNS resolver returns IPv6 addresses when a name has only AAAA records", "[agent][dns]") {
  FakeDnsServer dns({{"v6only.test", {{}, {"fd00::7"}}}});
  auto result = makeDnsResolver(DnsOptions{{dns.server()}})
                    ->resolve("v6only.test", 443, std::chrono::seconds(5));
  REQUIRE(result);
  CHECK(addresses(*result) == std::vector<std::string>{"fd00::7"});
}

TEST_CASE("DNS resolver does not ask DNS when the host is an IP literal", "[agent][dns]") {
  FakeDnsServer dns({});
  auto resolver = makeDnsResolver(DnsOptions{{dns.server()}});
  auto v4 = resolver->resolve("10.0.2.2", 6385, std::chrono::seconds(5));
  REQUIRE(v4);
  CHECK(*v4 == std::vector<ResolvedEndpoint>{{"10.0.2.2", 6385}});
  auto v6 = resolver->resolve("fd00::2", 80, std::chrono::seconds(5));
  REQUIRE(v6);
  CHECK(*v6 == std::vector<ResolvedEndpoint>{{"fd00::2", 80}});
  CHECK(dns.asked().empty());
}

TEST_CASE("DNS resolver reads /etc/hosts before asking DNS", "[agent][dns]") {
  // localhost is in every /etc/hosts (this machine's, the ramdisk's): no query goes out.
  FakeDnsServer dns({});
  auto result = makeDnsResolver(DnsOptions{{dns.server()}})
                    ->resolve("localhost", 6385, std::chrono::seconds(5));
  REQUIRE(result);
  REQUIRE_FALSE(result->empty());
  CHECK((result->front().address == "127.0.0.1" || result->front().address == "::1"));
  CHECK(dns.asked().empty());
}

TEST_CASE("DNS resolver names the host, c-ares' reason and the servers when a name is unknown",
          "[agent][dns]") {
  FakeDnsServer dns({});
  auto result = makeDnsResolver(DnsOptions{{dns.server()}})
                    ->resolve("missing.test", 6385, std::chrono::seconds(5));
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::Unavailable);
  CHECK(result.error().message ==
        "cannot resolve host name missing.test: Domain name not found "
        "(DNS servers: " +
            dns.server() + ")");
}

TEST_CASE("DNS resolver gives up with DeadlineExceeded when the server never answers",
          "[agent][dns]") {
  FakeDnsServer dns({}, /*silent=*/true);
  const auto started = std::chrono::steady_clock::now();
  auto result = makeDnsResolver(DnsOptions{{dns.server()}})
                    ->resolve("kiln-api.test", 6385, std::chrono::milliseconds(300));
  const auto took = std::chrono::steady_clock::now() - started;
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::DeadlineExceeded);
  CHECK(result.error().message ==
        "cannot resolve host name kiln-api.test: no answer within "
        "300 ms (DNS servers: " +
            dns.server() + ")");
  CHECK(took < std::chrono::seconds(3));
  CHECK_FALSE(dns.asked().empty());
}

TEST_CASE("DNS resolver tries the next server when the first one never answers", "[agent][dns]") {
  FakeDnsServer dead({}, /*silent=*/true);
  FakeDnsServer live({{"kiln-api.test", {{"127.0.0.9"}, {}}}});
  auto result =
      makeDnsResolver(DnsOptions{{dead.server(), live.server()}, std::chrono::milliseconds(200)})
          ->resolve("kiln-api.test", 6385, std::chrono::seconds(20));
  REQUIRE(result);
  CHECK(addresses(*result) == std::vector<std::string>{"127.0.0.9"});
}

TEST_CASE("parseDnsServers accepts IPv4 and IPv6 servers with optional ports", "[agent][dns]") {
  auto servers = parseDnsServers("kiln.dns", "10.0.2.3,127.0.0.1:5353,fd00::3,[fd00::4]:53,[::1]");
  REQUIRE(servers);
  CHECK(*servers ==
        std::vector<std::string>{"10.0.2.3", "127.0.0.1:5353", "fd00::3", "[fd00::4]:53", "[::1]"});
  CHECK(describeDns(DnsOptions{*servers}) == "10.0.2.3,127.0.0.1:5353,fd00::3,[fd00::4]:53,[::1]");
  CHECK(describeDns(DnsOptions{}) == "resolv.conf");
}

TEST_CASE("parseDnsServers refuses names, bad ports and empty items", "[agent][dns]") {
  for (const char* bad : {"dns.example", "10.0.2.3:0", "10.0.2.3:70000", "10.0.2.3:", "10.0.2",
                          "[fd00::3", "[fd00::3]x", "fd00::3]:53", "10.0.2.3,,10.0.2.4", ""}) {
    INFO(bad);
    auto servers = parseDnsServers("--dns", bad);
    REQUIRE_FALSE(servers);
    CHECK(servers.error().code == ErrorCode::InvalidArgument);
    CHECK_THAT(servers.error().message, Catch::StartsWith("--dns "));
  }
}

TEST_CASE("Agent arguments take DNS servers from --dns or kiln.dns=", "[agent][dns][config]") {
  SECTION("by hand") {
    std::vector<std::string> args = {"--api-url", "http://kiln-api.test:6385",
                                     "--device",  "/tmp/disk.img",
                                     "--dns",     "127.0.0.1:5353,[::1]:5353"};
    auto c = parseAgentArgs(args, "kiln.dns=10.9.9.9", "");
    REQUIRE(c);
    CHECK(c->apiUrl == "http://kiln-api.test:6385");
    CHECK(c->dnsServers == std::vector<std::string>{"127.0.0.1:5353", "[::1]:5353"});
  }
  SECTION("in the ramdisk") {
    auto c = parseAgentArgs({},
                            "quiet kiln.api_url=https://kiln.example.org:6385 "
                            "kiln.dns=10.0.2.3,10.0.2.4:53",
                            "");
    REQUIRE(c);
    CHECK(c->apiUrl == "https://kiln.example.org:6385");
    CHECK(c->dnsServers == std::vector<std::string>{"10.0.2.3", "10.0.2.4:53"});
  }
  SECTION("IPA's ipa-api-url with a host name and no kiln.dns=: resolv.conf") {
    auto c = parseAgentArgs({}, "ipa-api-url=http://ironic.example:6385 kiln.dns=", "");
    REQUIRE(c);
    CHECK(c->apiUrl == "http://ironic.example:6385");
    CHECK(c->dnsServers.empty());
  }
  SECTION("a bad kiln.dns=") {
    auto c = parseAgentArgs({}, "kiln.api_url=http://10.0.2.2:6385 kiln.dns=dns.example", "");
    REQUIRE_FALSE(c);
    CHECK_THAT(c.error().message, Catch::Contains("kiln.dns needs IP addresses"));
    CHECK_THAT(c.error().message, Catch::Contains("'dns.example'"));
  }
}
