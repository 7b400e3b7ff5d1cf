// Tests of the Boost.Beast HttpClient against real local sockets: the Redfish test BMC (Pistache)
// and a scripted raw TCP/TLS server written here, which can misbehave in ways a real server
// will not (never answer, close early, chunk oddly). TLS uses a self-signed certificate made at
// test time with OpenSSL.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "shared/http/http_client.h"
#include "shared/http/url.h"
#include "tests/support/http_file_server.h"
#include "tests/support/redfish_test_server.h"

using namespace kiln;

namespace {

/// One accepted connection, plain or TLS.
class Conn {
 public:
  Conn(int fd, SSL* ssl) : fd_(fd), ssl_(ssl) {}
  /// Reads up to n bytes; 0 on EOF or error.
  size_t read(char* buf, size_t n) {
    if (ssl_) {
      const int r = SSL_read(ssl_, buf, static_cast<int>(n));
      return r > 0 ? static_cast<size_t>(r) : 0;
    }
    const ssize_t r = ::recv(fd_, buf, n, 0);
    return r > 0 ? static_cast<size_t>(r) : 0;
  }
  /// Writes everything; false when the peer went away.
  bool write(std::string_view data) {
    while (!data.empty()) {
      ssize_t w;
      if (ssl_) {
        w = SSL_write(ssl_, data.data(), static_cast<int>(data.size()));
      } else {
        w = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      }
      if (w <= 0) return false;
      data.remove_prefix(static_cast<size_t>(w));
    }
    return true;
  }
  /// Reads one request: the header block and a Content-Length body.
  std::string readRequest() {
    std::string text;
    char buf[4096];
    size_t headerEnd = std::string::npos;
    while ((headerEnd = text.find("\r\n\r\n")) == std::string::npos) {
      const size_t n = read(buf, sizeof buf);
      if (n == 0) return text;
      text.append(buf, n);
    }
    size_t length = 0;
    std::string lower = text.substr(0, headerEnd);
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (const auto p = lower.find("content-length:"); p != std::string::npos) {
      length = std::stoul(lower.substr(p + 15));
    }
    while (text.size() < headerEnd + 4 + length) {
      const size_t n = read(buf, sizeof buf);
      if (n == 0) break;
      text.append(buf, n);
    }
    return text;
  }
  /// Waits until the client closes the connection.
  void drain() {
    char buf[4096];
    while (read(buf, sizeof buf) > 0) {
    }
  }
  SSL* ssl() const { return ssl_; }

 private:
  int fd_;
  SSL* ssl_;
};

/// A TCP server on 127.0.0.1 (ephemeral port) running `script` for each connection in turn on
/// one background thread; TLS when given an SSL_CTX. The last request text is kept.
class RawServer {
 public:
  using Script = std::function<void(Conn&)>;

  explicit RawServer(Script script, SSL_CTX* tls = nullptr)
      : script_(std::move(script)), tls_(tls) {
    listen_ = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(listen_ >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    REQUIRE(::bind(listen_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(listen_, 8) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(::getsockname(listen_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { loop(); });
  }

  ~RawServer() {
    stopping_ = true;
    ::shutdown(listen_, SHUT_RDWR);
    {
      std::lock_guard lock(mutex_);
      if (current_ >= 0) ::shutdown(current_, SHUT_RDWR);
    }
    thread_.join();
    ::close(listen_);
  }

  uint16_t port() const { return port_; }
  std::string url(std::string_view path = "/") const {
    return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
  }

 private:
  void loop() {
    while (!stopping_) {
      const int fd = ::accept(listen_, nullptr, nullptr);
      if (fd < 0) return;
      {
        std::lock_guard lock(mutex_);
        current_ = fd;
      }
      SSL* ssl = nullptr;
      bool ok = true;
      if (tls_) {
        ssl = SSL_new(tls_);
        SSL_set_fd(ssl, fd);
        ok = SSL_accept(ssl) == 1;
      }
      if (ok) {
        Conn conn(fd, ssl);
        script_(conn);
        if (ssl) SSL_shutdown(ssl);
      }
      if (ssl) SSL_free(ssl);
      {
        std::lock_guard lock(mutex_);
        current_ = -1;
      }
      ::close(fd);
    }
  }

  Script script_;
  SSL_CTX* tls_;
  int listen_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  int current_ = -1;
  std::thread thread_;
};

/// A script answering every request with `response` and keeping the request text.
RawServer::Script answer(std::string response, std::string* request = nullptr,
                         std::mutex* mutex = nullptr) {
  return [response = std::move(response), request, mutex](Conn& conn) {
    const std::string text = conn.readRequest();
    if (request) {
      std::lock_guard lock(*mutex);
      *request = text;
    }
    conn.write(response);
  };
}

HttpRequest get(std::string url) {
  HttpRequest r;
  r.url = std::move(url);
  r.timeout = std::chrono::seconds(10);
  return r;
}

long maxRssKiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

/// A self-signed EC certificate for DNS:localhost only, its key, and the PEM file of the
/// certificate (the CA bundle clients trust).
struct TestCertificate {
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
  SSL_CTX* ctx = nullptr;
  std::filesystem::path pemFile;

  TestCertificate() {
    // SSL_write to a client that hung up must not kill the test binary.
    std::signal(SIGPIPE, SIG_IGN);
    key = EVP_EC_gen("P-256");
    REQUIRE(key);
    cert = X509_new();
    X509_set_version(cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
    X509_set_pubkey(cert, key);
    X509_NAME* name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
    X509_set_issuer_name(cert, name);
    X509V3_CTX v3{};
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, cert, cert, nullptr, nullptr, 0);
    for (auto [nid, value] : {std::pair{NID_subject_alt_name, "DNS:localhost"},
                              std::pair{NID_basic_constraints, "critical,CA:TRUE"}}) {
      X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &v3, nid, value);
      REQUIRE(ext);
      X509_add_ext(cert, ext, -1);
      X509_EXTENSION_free(ext);
    }
    REQUIRE(X509_sign(cert, key, EVP_sha256()) > 0);

    pemFile = std::filesystem::temp_directory_path() /
              ("kiln-test-ca-" + std::to_string(::getpid()) + ".pem");
    FILE* f = std::fopen(pemFile.c_str(), "w");
    REQUIRE(f);
    PEM_write_X509(f, cert);
    std::fclose(f);

    ctx = SSL_CTX_new(TLS_server_method());
    REQUIRE(SSL_CTX_use_certificate(ctx, cert) == 1);
    REQUIRE(SSL_CTX_use_PrivateKey(ctx, key) == 1);
  }
  ~TestCertificate() {
    SSL_CTX_free(ctx);
    X509_free(cert);
    EVP_PKEY_free(key);
    std::error_code ec;
    std::filesystem::remove(pemFile, ec);
  }
};

}  // namespace

TEST_CASE("parseHttpUrl splits http and https URLs", "[shared][http]") {
  auto u = parseHttpUrl("HTTP://Example.com:8080/a/b?x=1#frag");
  REQUIRE(u);
  CHECK(u->scheme == "http");
  CHECK(u->host == "Example.com");
  CHECK(u->port == 8080);
  CHECK(u->target == "/a/b?x=1");
  CHECK_FALSE(u->ipLiteral);
  CHECK(u->hostHeader() == "Example.com:8080");

  u = parseHttpUrl("https://10.0.0.1");
  REQUIRE(u);
  CHECK(u->port == 443);
  CHECK(u->target == "/");
  CHECK(u->ipLiteral);
  CHECK(u->origin() == "https://10.0.0.1");

  u = parseHttpUrl("http://[fd00::1]:623?q");
  REQUIRE(u);
  CHECK(u->host == "fd00::1");
  CHECK(u->ipLiteral);
  CHECK(u->target == "/?q");
  CHECK(u->hostHeader() == "[fd00::1]:623");
}

TEST_CASE("HttpClient rejects malformed URLs with InvalidArgument", "[shared][http]") {
  auto client = makeHttpClient();
  for (const char* url :
       {"", "not a url", "example.com/path", "ftp://example.com/", "http://", "http://:80/",
        "http://host:0/", "http://host:70000/", "http://host:8x/", "http://user:pw@host/",
        "http://ho st/", "http://[::1/", "http://[nonsense]/", "http://bad_host!/"}) {
    INFO(url);
    auto r = client->send(get(url));
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::InvalidArgument);
  }
}

TEST_CASE("HttpClient sends method, headers, basic auth and a Content-Length body",
          "[shared][http]") {
  std::string request;
  std::mutex mutex;
  RawServer server(
      answer("HTTP/1.1 201 Created\r\nContent-Length: 5\r\nX-Custom-Thing: Yes\r\n"
             "Content-Type: text/plain\r\n\r\nhello",
             &request, &mutex));
  HttpRequest r = get(server.url("/v1/things?x=1"));
  r.method = "POST";
  r.headers = {{"Content-Type", "application/json"}, {"X-Trace", "abc"}};
  r.body = R"({"a":1})";
  r.basicAuth = std::make_pair("admin", "s3cret:x");
  auto response = makeHttpClient()->send(r);
  REQUIRE(response);
  CHECK(response->status == 201);
  CHECK(response->body == "hello");
  CHECK(response->header("x-custom-thing") == "Yes");
  CHECK(response->header("content-type") == "text/plain");
  for (const auto& [name, value] : response->headers) {
    CHECK(name == Catch::toLower(name));
  }

  std::lock_guard lock(mutex);
  CHECK_THAT(request, Catch::StartsWith("POST /v1/things?x=1 HTTP/1.1\r\n"));
  CHECK_THAT(request, Catch::Contains("Host: 127.0.0.1:" + std::to_string(server.port())));
  CHECK_THAT(request, Catch::Contains("X-Trace: abc\r\n"));
  CHECK_THAT(request, Catch::Contains("Content-Length: 7\r\n"));
  // base64("admin:s3cret:x")
  CHECK_THAT(request, Catch::Contains("Authorization: Basic YWRtaW46czNjcmV0Ong=\r\n"));
  CHECK_THAT(request, Catch::EndsWith("\r\n\r\n{\"a\":1}"));
}

TEST_CASE("HttpClient reads chunked responses", "[shared][http]") {
  RawServer server(answer(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n1;ext=1\r\n,\r\nA\r\n chunked b\r\n3\r\node\r\n0\r\nX-Trailer: t\r\n\r\n"));
  auto client = makeHttpClient();
  auto response = client->send(get(server.url()));
  REQUIRE(response);
  CHECK(response->status == 200);
  CHECK(response->body == "hello, chunked bode");

  std::vector<std::string> chunks;
  auto streamed = client->stream(get(server.url()), [&](std::string_view c) -> Result<void> {
    chunks.emplace_back(c);
    return {};
  });
  REQUIRE(streamed);
  CHECK(streamed->body.empty());
  std::string joined;
  for (const auto& c : chunks) joined += c;
  CHECK(joined == "hello, chunked bode");
}

TEST_CASE("HttpClient reads a body delimited by the end of the connection", "[shared][http]") {
  RawServer server(answer("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end"));
  auto response = makeHttpClient()->send(get(server.url()));
  REQUIRE(response);
  CHECK(response->body == "until the end");
}

TEST_CASE("HttpClient answers HEAD without waiting for a body", "[shared][http]") {
  RawServer server(answer("HTTP/1.1 200 OK\r\nContent-Length: 123456\r\n\r\n"));
  HttpRequest r = get(server.url());
  r.method = "HEAD";
  auto response = makeHttpClient()->send(r);
  REQUIRE(response);
  CHECK(response->status == 200);
  CHECK(response->header("content-length") == "123456");
  CHECK(response->body.empty());
}

TEST_CASE("HttpClient returns HTTP error statuses as responses, not errors", "[shared][http]") {
  RawServer server(answer("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy"));
  auto response = makeHttpClient()->send(get(server.url()));
  REQUIRE(response);
  CHECK(response->status == 503);
  CHECK(response->body == "busy");
}

TEST_CASE("HttpClient streams a large body through a bounded buffer", "[shared][http]") {
  constexpr size_t kTotal = 128u * 1024 * 1024;
  RawServer server([](Conn& conn) {
    conn.readRequest();
    if (!conn.write("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(kTotal) + "\r\n\r\n")) {
      return;
    }
    std::string block(256 * 1024, '\0');
    for (size_t i = 0; i < block.size(); ++i) block[i] = static_cast<char>(i * 7 + 3);
    for (size_t sent = 0; sent < kTotal; sent += block.size()) {
      if (!conn.write(block)) return;
    }
  });
  const long rssBefore = maxRssKiB();
  size_t total = 0;
  size_t largest = 0;
  uint64_t sum = 0;
  auto response =
      makeHttpClient()->stream(get(server.url()), [&](std::string_view chunk) -> Result<void> {
        largest = std::max(largest, chunk.size());
        for (unsigned char c : chunk) sum += c;
        total += chunk.size();
        return {};
      });
  REQUIRE(response);
  CHECK(response->status == 200);
  CHECK(total == kTotal);
  CHECK(largest <= 64 * 1024);
  uint64_t expected = 0;
  for (size_t i = 0; i < 256 * 1024; ++i) expected += static_cast<unsigned char>(i * 7 + 3);
  CHECK(sum == expected * (kTotal / (256 * 1024)));
  // Buffering the body would raise the high-water mark by about 128 MiB.
  CHECK(maxRssKiB() - rssBefore < 32 * 1024);
}

TEST_CASE("HttpClient stops streaming when the sink fails", "[shared][http]") {
  RawServer server([](Conn& conn) {
    conn.readRequest();
    conn.write("HTTP/1.1 200 OK\r\nContent-Length: 10000000\r\n\r\n");
    conn.write(std::string(1000000, 'x'));
  });
  size_t calls = 0;
  auto response =
      makeHttpClient()->stream(get(server.url()), [&](std::string_view) -> Result<void> {
        ++calls;
        return fail(ErrorCode::Internal, "disk full");
      });
  REQUIRE_FALSE(response);
  CHECK(response.error().message == "disk full");
  CHECK(calls == 1);
}

TEST_CASE("HttpClient times out with DeadlineExceeded when the server never answers",
          "[shared][http]") {
  RawServer server([](Conn& conn) {
    conn.readRequest();
    conn.drain();  // holds the connection until the client gives up
  });
  HttpRequest r = get(server.url());
  r.timeout = std::chrono::milliseconds(200);
  const auto start = std::chrono::steady_clock::now();
  auto response = makeHttpClient()->send(r);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  REQUIRE_FALSE(response);
  CHECK(response.error().code == ErrorCode::DeadlineExceeded);
  CHECK_THAT(response.error().message, Catch::Contains("timed out after 200 ms"));
  CHECK(elapsed < std::chrono::seconds(5));
}

TEST_CASE("HttpClient times out in the middle of a body", "[shared][http]") {
  RawServer server([](Conn& conn) {
    conn.readRequest();
    conn.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial");
    conn.drain();
  });
  HttpRequest r = get(server.url());
  r.timeout = std::chrono::milliseconds(200);
  auto response = makeHttpClient()->stream(r, [](std::string_view) -> Result<void> { return {}; });
  REQUIRE_FALSE(response);
  CHECK(response.error().code == ErrorCode::DeadlineExceeded);
}

TEST_CASE("HttpClient fails a stalled body after the idle timeout", "[shared][http]") {
  RawServer server([](Conn& conn) {
    conn.readRequest();
    conn.write("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + std::string(1000, 'x'));
    conn.drain();  // stalls until the client gives up
  });
  HttpRequest r = get(server.url());
  r.timeout = std::chrono::seconds(60);
  r.idleTimeout = std::chrono::milliseconds(200);
  size_t received = 0;
  const auto start = std::chrono::steady_clock::now();
  auto response = makeHttpClient()->stream(r, [&](std::string_view chunk) -> Result<void> {
    received += chunk.size();
    return {};
  });
  REQUIRE_FALSE(response);
  CHECK(response.error().code == ErrorCode::DeadlineExceeded);
  CHECK_THAT(response.error().message, Catch::Contains("no data for 200 ms"));
  CHECK(received == 1000);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
}

TEST_CASE("HttpClient with an idle timeout lets a steady body outlast the overall timeout",
          "[shared][http]") {
  // The server paces the body (a timed wait between pieces, not synchronisation) so that the
  // whole exchange takes longer than `timeout` while no gap reaches `idleTimeout`.
  RawServer server([](Conn& conn) {
    conn.readRequest();
    if (!conn.write("HTTP/1.1 200 OK\r\nContent-Length: 4000\r\n\r\n")) return;
    std::mutex m;
    std::condition_variable never;
    for (int i = 0; i < 4; ++i) {
      std::unique_lock lock(m);
      never.wait_for(lock, std::chrono::milliseconds(100));
      if (!conn.write(std::string(1000, 'y'))) return;
    }
  });
  HttpRequest r = get(server.url());
  r.timeout = std::chrono::milliseconds(250);
  r.idleTimeout = std::chrono::seconds(5);
  size_t received = 0;
  auto response = makeHttpClient()->stream(r, [&](std::string_view chunk) -> Result<void> {
    received += chunk.size();
    return {};
  });
  REQUIRE(response);
  CHECK(response->status == 200);
  CHECK(received == 4000);
}

TEST_CASE("HttpClient reports a refused connection as Unavailable", "[shared][http]") {
  // A port that was just free: bind, read the port, close.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  ::close(fd);
  auto response =
      makeHttpClient()->send(get("http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/"));
  REQUIRE_FALSE(response);
  CHECK(response.error().code == ErrorCode::Unavailable);
  CHECK_THAT(response.error().message, Catch::Contains("refused"));
}

TEST_CASE("HttpClient reports a connection closed mid-body as Unavailable", "[shared][http]") {
  RawServer server(answer("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly a part"));
  auto response = makeHttpClient()->send(get(server.url()));
  REQUIRE_FALSE(response);
  CHECK(response.error().code == ErrorCode::Unavailable);
}

TEST_CASE("HttpClient resolves host names", "[shared][http]") {
  RawServer server(answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"));
  auto response =
      makeHttpClient()->send(get("http://localhost:" + std::to_string(server.port()) + "/"));
  REQUIRE(response);
  CHECK(response->body == "ok");
}

/// Answers every name from a table and records what it was asked.
class TableResolver final : public Resolver {
 public:
  std::map<std::string, Result<std::vector<ResolvedEndpoint>>> table;
  std::vector<std::string> asked;
  std::chrono::milliseconds lastTimeout{0};

  Result<std::vector<ResolvedEndpoint>> resolve(std::string_view host, uint16_t port,
                                                std::chrono::milliseconds timeout) override {
    asked.emplace_back(host);
    lastTimeout = timeout;
    auto it = table.find(std::string(host));
    if (it == table.end()) {
      return fail(ErrorCode::Unavailable,
                  "cannot resolve host name " + std::string(host) + ": Domain name not found");
    }
    return it->second;
  }
};

TEST_CASE("HttpClient connects to the addresses its resolver gives when the URL has a host name",
          "[shared][http][resolver]") {
  std::string request;
  std::mutex mutex;
  RawServer server(answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", &request, &mutex));
  auto resolver = std::make_shared<TableResolver>();
  // A dead address first: the client moves on to the next one.
  resolver->table.emplace("kiln-api.test", std::vector<ResolvedEndpoint>{
                                               {"127.0.0.1", 9}, {"127.0.0.1", server.port()}});
  auto response = makeHttpClient(resolver)->send(
      get("http://kiln-api.test:" + std::to_string(server.port()) + "/v1/lookup"));
  REQUIRE(response);
  CHECK(response->body == "ok");
  CHECK(resolver->asked == std::vector<std::string>{"kiln-api.test"});
  CHECK(resolver->lastTimeout > std::chrono::milliseconds(0));
  CHECK(resolver->lastTimeout <= std::chrono::seconds(10));
  std::lock_guard lock(mutex);
  CHECK_THAT(request, Catch::Contains("Host: kiln-api.test:" + std::to_string(server.port())));
}

TEST_CASE("HttpClient never asks its resolver when the URL has an IP literal",
          "[shared][http][resolver]") {
  RawServer server(answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"));
  auto resolver = std::make_shared<TableResolver>();
  auto response = makeHttpClient(resolver)->send(get(server.url()));
  REQUIRE(response);
  CHECK(resolver->asked.empty());
}

TEST_CASE("HttpClient reports its resolver's error with the request when a name does not resolve",
          "[shared][http][resolver]") {
  auto resolver = std::make_shared<TableResolver>();
  resolver->table.emplace("slow.test", fail(ErrorCode::DeadlineExceeded, "no answer"));
  auto client = makeHttpClient(resolver);

  auto missing = client->send(get("http://nowhere.test:6385/v1/lookup"));
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::Unavailable);
  CHECK(missing.error().message ==
        "HTTP GET http://nowhere.test:6385/v1/lookup failed: cannot resolve host name "
        "nowhere.test: Domain name not found");

  auto slow = client->send(get("http://slow.test/"));
  REQUIRE_FALSE(slow);
  CHECK(slow.error().code == ErrorCode::DeadlineExceeded);
  CHECK_THAT(slow.error().message, Catch::Contains("(resolving slow.test)"));
}

TEST_CASE("System resolver finds localhost and reports an unknown name as Unavailable",
          "[shared][http][resolver]") {
  auto resolver = makeSystemResolver();
  auto local = resolver->resolve("localhost", 6385, std::chrono::seconds(10));
  REQUIRE(local);
  REQUIRE_FALSE(local->empty());
  CHECK(local->front().port == 6385);
  CHECK(isIpLiteral(local->front().address));

  // RFC 6761: .invalid never resolves.
  auto bad = resolver->resolve("kiln-test.invalid", 80, std::chrono::seconds(10));
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::StartsWith("cannot resolve host \"kiln-test.invalid\""));
}

TEST_CASE("isIpLiteral tells IPv4 and IPv6 literals from names", "[shared][http][resolver]") {
  CHECK(isIpLiteral("10.0.2.2"));
  CHECK(isIpLiteral("::1"));
  CHECK(isIpLiteral("fd00::3"));
  CHECK_FALSE(isIpLiteral("kiln-api.test"));
  CHECK_FALSE(isIpLiteral("10.0.2"));
  CHECK_FALSE(isIpLiteral(""));
}

TEST_CASE("HttpClient talks to the Pistache-based Redfish test server", "[shared][http]") {
  test::RedfishTestServer bmc;
  REQUIRE(bmc.start());
  auto client = makeHttpClient();
  auto root = client->send(get(bmc.address() + "/redfish/v1/"));
  REQUIRE(root);
  CHECK(root->status == 200);
  CHECK_THAT(root->body, Catch::Contains("\"/redfish/v1/Systems\""));

  HttpRequest session = get(bmc.address() + "/redfish/v1/SessionService/Sessions");
  session.method = "POST";
  session.headers = {{"Content-Type", "application/json"}};
  session.body = R"({"UserName": "u", "Password": "p"})";
  auto created = client->send(session);
  REQUIRE(created);
  CHECK(created->status == 201);
  CHECK(created->header("x-auth-token").has_value());
  CHECK(created->header("location") == "/redfish/v1/SessionService/Sessions/1");

  const auto recorded = bmc.requests("POST", "/redfish/v1/SessionService/Sessions");
  REQUIRE(recorded.size() == 1);
  CHECK(recorded[0].body == session.body);
  CHECK(recorded[0].header("content-type") == "application/json");
}

TEST_CASE("HttpClient speaks TLS with SNI and verifies the certificate", "[shared][http][tls]") {
  TestCertificate cert;
  std::mutex mutex;
  std::string sni = "(none)";
  RawServer server(
      [&](Conn& conn) {
        conn.readRequest();
        {
          std::lock_guard lock(mutex);
          const char* name = SSL_get_servername(conn.ssl(), TLSEXT_NAMETYPE_host_name);
          sni = name ? name : "(none)";
        }
        conn.write("HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecret");
      },
      cert.ctx);
  const std::string port = std::to_string(server.port());
  auto client = makeHttpClient();

  SECTION("a trusted CA bundle and a matching host name") {
    HttpRequest r = get("https://localhost:" + port + "/");
    r.caFile = cert.pemFile.string();
    auto response = client->send(r);
    REQUIRE(response);
    CHECK(response->body == "secret");
    std::lock_guard lock(mutex);
    CHECK(sni == "localhost");
  }
  SECTION("verification off accepts the self-signed certificate, and IPs send no SNI") {
    HttpRequest r = get("https://127.0.0.1:" + port + "/");
    r.verifyTls = false;
    auto response = client->send(r);
    REQUIRE(response);
    CHECK(response->body == "secret");
    std::lock_guard lock(mutex);
    CHECK(sni == "(none)");
  }
  SECTION("the system CA store does not trust a self-signed certificate") {
    auto response = client->send(get("https://localhost:" + port + "/"));
    REQUIRE_FALSE(response);
    CHECK(response.error().code == ErrorCode::Unavailable);
    CHECK_THAT(response.error().message, Catch::Contains("certificate"));
  }
  SECTION("a certificate for another name is refused") {
    HttpRequest r = get("https://127.0.0.1:" + port + "/");
    r.caFile = cert.pemFile.string();
    auto response = client->send(r);
    REQUIRE_FALSE(response);
    CHECK(response.error().code == ErrorCode::Unavailable);
    CHECK_THAT(response.error().message, Catch::Contains("mismatch"));
  }
  SECTION("a CA bundle that does not exist is a caller error") {
    HttpRequest r = get("https://localhost:" + port + "/");
    r.caFile = "/nonexistent/ca.pem";
    auto response = client->send(r);
    REQUIRE_FALSE(response);
    CHECK(response.error().code == ErrorCode::InvalidArgument);
    CHECK_THAT(response.error().message, Catch::Contains("/nonexistent/ca.pem"));
  }
}

TEST_CASE("HttpClient sends no credentials over a redirect from https to http",
          "[shared][http][tls][redirect][credentials]") {
  TestCertificate cert;
  test::HttpFileServer plain;
  REQUIRE(plain.start());
  plain.serveData("/image.raw", "PLAIN");
  std::mutex mutex;
  std::string firstRequest;
  RawServer tls(
      [&](Conn& conn) {
        const std::string text = conn.readRequest();
        {
          std::lock_guard lock(mutex);
          firstRequest = text;
        }
        conn.write("HTTP/1.1 302 Found\r\nLocation: http://localhost:" +
                   std::to_string(plain.port()) + "/image.raw\r\nContent-Length: 0\r\n\r\n");
      },
      cert.ctx);
  HttpRequest r = get("https://localhost:" + std::to_string(tls.port()) + "/image.raw");
  r.caFile = cert.pemFile.string();
  r.basicAuth = BasicCredentials{"alice", "s3cret"};
  r.maxRedirects = 3;
  auto response = makeHttpClient()->send(r);
  REQUIRE(response);
  CHECK(response->body == "PLAIN");
  {
    std::lock_guard lock(mutex);
    CHECK_THAT(firstRequest, Catch::Contains("Authorization: Basic "));
  }
  CHECK(plain.authorizations("/image.raw") == std::vector<std::string>{""});
}
