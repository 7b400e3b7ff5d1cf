// kiln-agent's TLS settings: the CA options on the kernel command line and as flags, their
// precedence, the insecure switch; the CA files written for the HTTP client; the client
// wrapper that applies them and explains certificate failures; and real handshakes of the
// agent's heartbeat against a TLS server on 127.0.0.1 (tests/data/tls, plus certificates made
// at test time): the right CA is accepted, another CA or a certificate for another name is
// refused before a byte of the request, so before the token, leaves the agent.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "agent/agent_config.h"
#include "agent/api_tls.h"
#include "agent/server_client.h"
#include "shared/core/file.h"
#include "tests/support/replay_command_runner.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_cas.h"

using namespace kiln;
using namespace kiln::agent;
using kiln::test::TempDir;
using kiln::test::derBase64;
using kiln::test::kCaA;
using kiln::test::kCaB;

namespace {


/// The PEM body without line breaks: base64 of the DER, what kiln-server puts in kiln.api_ca=.

std::string base64(const std::string& bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) |
                       (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    out += {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63],
            kAlphabet[v & 63]};
  }
  if (i + 1 == bytes.size()) {
    const unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    out += {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == bytes.size()) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) |
                       (static_cast<unsigned char>(bytes[i + 1]) << 8);
    out += {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63], '='};
  }
  return out;
}

Result<AgentConfig> ramdisk(const std::string& cmdline,
                            const std::string& defaultCa = "/nonexistent/ca.pem") {
  return parseAgentArgs(std::vector<std::string>{}, "kiln.api_url=https://10.0.2.2:6385 " + cmdline,
                        defaultCa);
}

Result<AgentConfig> byHand(std::vector<std::string> extra, const std::string& cmdline = "",
                           const std::string& defaultCa = "/nonexistent/ca.pem") {
  std::vector<std::string> args = {"--api-url", "https://127.0.0.1:6385", "--device", "/tmp/d"};
  args.insert(args.end(), extra.begin(), extra.end());
  return parseAgentArgs(args, cmdline, defaultCa);
}

/// Records what it is asked to send; answers with `answer`.
class RecordingHttpClient final : public HttpClient {
 public:
  Result<HttpResponse> send(const HttpRequest& request) override {
    sent.push_back(request);
    return answer;
  }
  Result<HttpResponse> stream(const HttpRequest& request, const BodySink&) override {
    sent.push_back(request);
    return answer;
  }
  std::vector<HttpRequest> sent;
  Result<HttpResponse> answer = HttpResponse{200, {}, ""};
};

}  // namespace

TEST_CASE("agent config: kiln.api_ca carries base64 DER or PEM certificates, comma-separated",
          "[agent][config][tls]") {
  auto c = ramdisk("quiet kiln.api_ca=" + derBase64(kCaA));
  REQUIRE(c);
  CHECK(c->tls.source == "kiln.api_ca");
  CHECK_FALSE(c->tls.insecure);
  CHECK(c->tls.caFile.empty());
  CHECK(c->tls.inlineCaPem == kCaA);  // the PEM body is the same base64, in lines of 64
  CHECK(countPemCertificates(c->tls.inlineCaPem) == 1);

  c = ramdisk("kiln.api_ca=" + derBase64(kCaA) + "," + derBase64(kCaB));
  REQUIRE(c);
  CHECK(c->tls.inlineCaPem == kCaA + kCaB);
  CHECK(countPemCertificates(c->tls.inlineCaPem) == 2);

  c = ramdisk("kiln.api_ca=" + base64(kCaA + kCaB));  // base64 of a whole PEM file
  REQUIRE(c);
  CHECK(countPemCertificates(c->tls.inlineCaPem) == 2);

  // Bad values stop the agent at start (exit code 2) with the item named.
  auto bad = ramdisk("kiln.api_ca=!!!");
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("kiln.api_ca item 1 is not base64"));
  bad = ramdisk("kiln.api_ca=" + derBase64(kCaA) + "," + base64("hello, world"));
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message,
             Catch::Contains("item 2 is neither the DER of a certificate nor a PEM file"));
  bad = ramdisk("kiln.api_ca=" + derBase64(kCaA) + ",");
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("item 2 is empty"));
  bad = ramdisk("kiln.api_ca=" + base64("-----BEGIN PRIVATE KEY-----\nabc\n"));
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("without a CERTIFICATE block"));
}

TEST_CASE(
    "agent config: the CA's precedence: kiln.api_ca, kiln.api_ca_file, the embedded file, the "
    "system",
    "[agent][config][tls]") {
  TempDir dir("kiln-agent-tls");
  const std::string embedded = dir.file("ca.pem");
  std::ofstream(embedded) << kCaB;

  auto c = ramdisk("kiln.api_ca_file=/etc/site/ca.pem kiln.api_ca=" + derBase64(kCaA), embedded);
  REQUIRE(c);
  CHECK(c->tls.source == "kiln.api_ca");
  CHECK(c->tls.caFile.empty());
  c = ramdisk("kiln.api_ca_file=/etc/site/ca.pem", embedded);
  REQUIRE(c);
  CHECK(c->tls.source == "kiln.api_ca_file");
  CHECK(c->tls.caFile == "/etc/site/ca.pem");
  c = ramdisk("", embedded);  // the ramdisk's embedded CA when it exists
  REQUIRE(c);
  CHECK(c->tls.caFile == embedded);
  CHECK(c->tls.source == embedded);
  c = ramdisk("");  // no embedded CA: the system's store
  REQUIRE(c);
  CHECK(c->tls.caFile.empty());
  CHECK(c->tls.inlineCaPem.empty());
  CHECK(c->tls.source == "system");
  CHECK(std::string(kDefaultApiCaFile) == "/etc/kiln/ca.pem");

  // By hand: the flags only; the kernel line and the embedded file are not read.
  c = byHand({}, "kiln.api_ca_file=/etc/site/ca.pem", embedded);
  REQUIRE(c);
  CHECK(c->tls.source == "system");
  CHECK(c->tls.caFile.empty());
  c = byHand({"--api-ca-file", "/srv/ca.pem"});
  REQUIRE(c);
  CHECK(c->tls.caFile == "/srv/ca.pem");
  CHECK(c->tls.source == "--api-ca-file");
  c = byHand({"--cafile", "/srv/ca.pem"});  // ironic-python-agent's name
  REQUIRE(c);
  CHECK(c->tls.caFile == "/srv/ca.pem");
  c = byHand({"--api-ca-file", "/srv/ca.pem", "--api-ca", derBase64(kCaA)});  // inline first
  REQUIRE(c);
  CHECK(c->tls.source == "--api-ca");
  CHECK(c->tls.inlineCaPem == kCaA);
  CHECK(c->tls.caFile.empty());
  auto bad = byHand({"--api-ca", "%%%"});
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::StartsWith("--api-ca: "));
  // The CA flags need --api-url: the ramdisk takes its CA from the kernel command line.
  CHECK_FALSE(parseAgentArgs(std::vector<std::string>{"--api-ca-file", "/srv/ca.pem"},
                             "kiln.api_url=https://10.0.2.2:6385", "/nonexistent"));
  CHECK_FALSE(byHand({"--api-ca-file"}));  // missing value
}

TEST_CASE(
    "agent config: the insecure switch (kiln.insecure, ipa-insecure, --insecure) drops every CA",
    "[agent][config][tls]") {
  auto c = ramdisk("kiln.insecure=1 kiln.api_ca=" + derBase64(kCaA));
  REQUIRE(c);
  CHECK(c->tls.insecure);
  CHECK(c->tls.inlineCaPem.empty());
  CHECK(c->tls.caFile.empty());
  CHECK(c->tls.source == "none (insecure)");
  for (const char* yes :
       {"ipa-insecure=1", "ipa-insecure=True", "ipa-insecure=yes", "kiln.insecure=on"}) {
    c = ramdisk(yes);
    REQUIRE(c);
    CHECK(c->tls.insecure);
  }
  c = ramdisk("ipa-insecure=0");
  REQUIRE(c);
  CHECK_FALSE(c->tls.insecure);
  c = ramdisk("ipa-insecure=1 kiln.insecure=false");  // Kiln's name decides when both are given
  REQUIRE(c);
  CHECK_FALSE(c->tls.insecure);
  c = ramdisk("");
  REQUIRE(c);
  CHECK_FALSE(c->tls.insecure);  // verifying is the default
  auto bad = ramdisk("ipa-insecure=perhaps");
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("ipa-insecure needs true or false"));

  c = byHand({"--api-ca-file", "/srv/ca.pem", "--insecure"});
  REQUIRE(c);
  CHECK(c->tls.insecure);
  CHECK(c->tls.caFile.empty());
  c = parseAgentArgs(std::vector<std::string>{"--insecure"}, "kiln.api_url=https://10.0.2.2:6385",
                     "/nonexistent");
  REQUIRE(c);
  CHECK(c->tls.insecure);

  CHECK(parseBool("TRUE") == true);
  CHECK(parseBool("n") == false);
  CHECK_FALSE(parseBool("2"));
  CHECK_FALSE(parseBool(""));
}

TEST_CASE(
    "agent TLS files: an inline CA is written, downloads trust the system bundle and the API's CA",
    "[agent][tls]") {
  TempDir dir("kiln-agent-tls");
  const std::string system = dir.file("system.pem");
  std::ofstream(system) << kCaB;
  ApiTls tls;
  tls.inlineCaPem = kCaA;
  tls.source = "kiln.api_ca";
  auto files = prepareTlsFiles(tls, dir.file("run"), system);
  REQUIRE(files);
  CHECK(files->api.verify);
  CHECK(files->api.caFile == dir.file("run") + "/api-ca.pem");
  CHECK(readFile(files->api.caFile) == kCaA);
  CHECK_THAT(files->api.trusted, Catch::Contains("kiln.api_ca"));
  CHECK(files->downloads.verify);
  CHECK(readFile(files->downloads.caFile) == kCaB + kCaA);
  CHECK_THAT(files->downloads.trusted, Catch::Contains("system's CA bundle " + system));

  // No system bundle (the ramdisk): downloads trust the API's CA alone.
  files = prepareTlsFiles(tls, dir.file("run2"), dir.file("missing.pem"));
  REQUIRE(files);
  CHECK(readFile(files->downloads.caFile) == kCaA);

  // A CA file is used in place; a directory too, its certificates joining the download bundle.
  const std::string caFile = dir.file("ca.pem");
  std::ofstream(caFile) << kCaA;
  tls = ApiTls{false, caFile, "", "kiln.api_ca_file"};
  files = prepareTlsFiles(tls, dir.file("run3"), system);
  REQUIRE(files);
  CHECK(files->api.caFile == caFile);
  CHECK(readFile(files->downloads.caFile) == kCaB + kCaA);
  std::filesystem::create_directory(dir.file("cadir"));
  std::ofstream(dir.file("cadir/0a1b2c3d.0")) << kCaA;
  std::ofstream(dir.file("cadir/README")) << "not a certificate";
  tls = ApiTls{false, dir.file("cadir"), "", "--api-ca-file"};
  files = prepareTlsFiles(tls, dir.file("run4"), "");
  REQUIRE(files);
  CHECK(files->api.caFile == dir.file("cadir"));
  CHECK(readFile(files->downloads.caFile) == kCaA);

  // The system's store when no CA is given: nothing written.
  files = prepareTlsFiles(ApiTls{}, dir.file("run5"), system);
  REQUIRE(files);
  CHECK(files->api.verify);
  CHECK(files->api.caFile.empty());
  CHECK(files->downloads.caFile.empty());
  CHECK_FALSE(std::filesystem::exists(dir.file("run5")));

  // Insecure: verification off for both.
  files = prepareTlsFiles(ApiTls{true, "", "", "none (insecure)"}, dir.file("run6"), system);
  REQUIRE(files);
  CHECK_FALSE(files->api.verify);
  CHECK_FALSE(files->downloads.verify);

  // A named CA that is missing or holds no certificate stops the agent at start.
  auto bad = prepareTlsFiles(ApiTls{false, dir.file("nope.pem"), "", "kiln.api_ca_file"},
                             dir.file("run7"), "");
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("Cannot read the API's CA file") &&
                                      Catch::Contains("kiln.api_ca_file"));
  bad = prepareTlsFiles(ApiTls{false, dir.file("cadir/README"), "", "kiln.api_ca_file"},
                        dir.file("run8"), "");
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("holds no PEM certificate"));
  ApiTls garbage;
  garbage.inlineCaPem = "-----BEGIN CERTIFICATE-----\nMAAA\n-----END CERTIFICATE-----\n";
  garbage.source = "kiln.api_ca";
  bad = prepareTlsFiles(garbage, dir.file("run9"), "");
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message,
             Catch::Contains("kiln.api_ca holds 1 certificate(s), of which OpenSSL reads 0"));
  // A command line cut in the middle of the second certificate: still base64 of something
  // DER-like, so parsing takes it; the check at start refuses it.
  const std::string cut = derBase64(kCaA) + "," + derBase64(kCaB).substr(0, 300);
  auto parsed = ramdisk("kiln.api_ca=" + cut);
  REQUIRE(parsed);
  bad = prepareTlsFiles(parsed->tls, dir.file("run10"), "");
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message,
             Catch::Contains("of which OpenSSL reads 1 (is the kernel command line truncated?)"));
}

TEST_CASE(
    "agent TLS client: requests without a CA get the defaults, handshake failures name what is "
    "trusted",
    "[agent][tls]") {
  RecordingHttpClient inner;
  TlsDefaultsHttpClient client(
      inner, TlsDefaults{true, "/run/api-ca.pem", "the CA of kiln.api_ca (/run/api-ca.pem)"});
  HttpRequest request;
  request.url = "https://127.0.0.1:6385/v1/lookup";
  REQUIRE(client.send(request));
  REQUIRE(inner.sent.size() == 1);
  CHECK(inner.sent[0].verifyTls);
  CHECK(inner.sent[0].caFile == "/run/api-ca.pem");
  request.caFile = "/srv/own.pem";  // a request's own CA stays
  REQUIRE(client.stream(request, [](std::string_view) -> Result<void> { return {}; }));
  CHECK(inner.sent[1].caFile == "/srv/own.pem");
  request.caFile.clear();
  request.verifyTls = false;  // and so does a request's own "do not verify"
  REQUIRE(client.send(request));
  CHECK_FALSE(inner.sent[2].verifyTls);

  inner.answer = std::unexpected(
      Error{ErrorCode::Unavailable,
            "HTTP GET https://127.0.0.1:6385/v1/lookup failed during the TLS handshake: "
            "certificate verify failed (certificate: unable to get local issuer certificate)",
            kiln::Reason::TlsHandshake});
  request.verifyTls = true;
  auto failed = client.send(request);
  REQUIRE_FALSE(failed);
  CHECK_THAT(
      failed.error().message,
      Catch::Contains(
          "(certificate: unable to get local issuer certificate); the server's certificate was "
          "checked against the CA of kiln.api_ca (/run/api-ca.pem)"));
  inner.answer = std::unexpected(Error{ErrorCode::Unavailable, "connection refused"});
  CHECK(client.send(request).error().message == "connection refused");

  TlsDefaultsHttpClient insecure(inner, TlsDefaults{false, "", "nothing (insecure)"});
  inner.answer = HttpResponse{200, {}, ""};
  request.caFile = "/srv/own.pem";
  REQUIRE(insecure.send(request));
  CHECK_FALSE(inner.sent.back().verifyTls);
}

// --- Real handshakes ----------------------------------------------------------------------

namespace {

using PKey = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using Cert = std::unique_ptr<X509, decltype(&X509_free)>;

/// A certificate made at test time (EC P-256, valid for a day), with its key; nothing is kept.
struct Issued {
  PKey key{nullptr, EVP_PKEY_free};
  Cert cert{nullptr, X509_free};

  std::string certPem() const {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
    PEM_write_bio_X509(bio.get(), cert.get());
    char* data = nullptr;
    const long size = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<size_t>(size));
  }
  std::string keyPem() const {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
    PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr);
    char* data = nullptr;
    const long size = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<size_t>(size));
  }
};

/// Issues a certificate for `commonName` with the given X.509v3 extensions (openssl's config
/// syntax), signed by `issuer` or, without one, self-signed.
Issued issue(const std::string& commonName,
             const std::vector<std::pair<int, std::string>>& extensions,
             const Issued* issuer = nullptr) {
  static std::atomic<long> serial{1};
  Issued out;
  out.key.reset(EVP_EC_gen("P-256"));
  REQUIRE(out.key);
  out.cert.reset(X509_new());
  X509* cert = out.cert.get();
  REQUIRE(X509_set_version(cert, 2) == 1);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(commonName.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert, issuer ? X509_get_subject_name(issuer->cert.get()) : name);
  X509_set_pubkey(cert, out.key.get());
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer ? issuer->cert.get() : cert, cert, nullptr, nullptr, 0);
  for (const auto& [nid, value] : extensions) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    REQUIRE(ext != nullptr);
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  }
  REQUIRE(X509_sign(cert, issuer ? issuer->key.get() : out.key.get(), EVP_sha256()) > 0);
  return out;
}

Issued issueCa(const std::string& commonName) {
  return issue(commonName, {{NID_basic_constraints, "critical,CA:TRUE"},
                            {NID_key_usage, "critical,keyCertSign,cRLSign"},
                            {NID_subject_key_identifier, "hash"}});
}

Issued issueServer(const Issued& ca, const std::string& subjectAltName) {
  return issue("kiln-server",
               {{NID_basic_constraints, "CA:FALSE"},
                {NID_ext_key_usage, "serverAuth"},
                {NID_subject_alt_name, subjectAltName}},
               &ca);
}

/// A TLS server on 127.0.0.1 (ephemeral port) standing in for kiln-server: one connection at
/// a time, each answered with a heartbeat's 202. Records why each failed handshake failed and
/// every byte of application data clients sent after a completed one.
class RecordingTlsServer {
 public:
  RecordingTlsServer(const std::string& certFile, const std::string& keyFile) {
    ctx_ = SSL_CTX_new(TLS_server_method());
    REQUIRE(ctx_);
    REQUIRE(SSL_CTX_use_certificate_chain_file(ctx_, certFile.c_str()) == 1);
    REQUIRE(SSL_CTX_use_PrivateKey_file(ctx_, keyFile.c_str(), SSL_FILETYPE_PEM) == 1);
    listen_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(listen_ >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listen_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(listen_, 8) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(::getsockname(listen_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~RecordingTlsServer() {
    stop_ = true;
    thread_.join();
    ::close(listen_);
    SSL_CTX_free(ctx_);
  }
  RecordingTlsServer(const RecordingTlsServer&) = delete;
  RecordingTlsServer& operator=(const RecordingTlsServer&) = delete;

  uint16_t port() const { return port_; }
  std::string url(const std::string& host = "127.0.0.1") const {
    return "https://" + host + ":" + std::to_string(port_);
  }

  /// Waits (5 s at most) until `count` connections have ended, so that what they sent is
  /// recorded.
  bool waitForConnections(int count) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (done_.load() < count) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }
  std::string received() const {
    std::lock_guard lock(mutex_);
    return received_;
  }
  std::vector<std::string> refused() const {
    std::lock_guard lock(mutex_);
    return refused_;
  }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{listen_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int fd = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      timeval timeout{5, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
      handle(fd);
      ::close(fd);
      ++done_;
    }
  }

  void handle(int fd) {
    SSL* ssl = SSL_new(ctx_);
    SSL_set_fd(ssl, fd);
    ERR_clear_error();
    if (SSL_accept(ssl) != 1) {
      char why[256] = "no OpenSSL error";
      if (const unsigned long e = ERR_get_error()) ERR_error_string_n(e, why, sizeof why);
      std::lock_guard lock(mutex_);
      refused_.emplace_back(why);
      SSL_free(ssl);
      ERR_clear_error();
      return;
    }
    // The request: a header, then Content-Length bytes of body.
    std::string request;
    char buffer[16384];
    while (true) {
      const int n = SSL_read(ssl, buffer, sizeof buffer);
      if (n <= 0) break;
      request.append(buffer, static_cast<size_t>(n));
      const size_t headerEnd = request.find("\r\n\r\n");
      if (headerEnd == std::string::npos) continue;
      size_t length = 0;
      for (const char* name : {"Content-Length: ", "content-length: "}) {
        if (const size_t at = request.find(name); at != std::string::npos && at < headerEnd) {
          length = std::stoul(request.substr(at + std::strlen(name)));
        }
      }
      if (request.size() >= headerEnd + 4 + length) break;
    }
    {
      std::lock_guard lock(mutex_);
      received_ += request;
    }
    const std::string body = R"({"commands": [], "heartbeat_interval": 7})";
    const std::string response =
        "HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\n"
        "Content-Length: " +
        std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
    SSL_write(ssl, response.data(), static_cast<int>(response.size()));
    SSL_shutdown(ssl);
    SSL_free(ssl);
    ERR_clear_error();
  }

  SSL_CTX* ctx_ = nullptr;
  int listen_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> done_{0};
  mutable std::mutex mutex_;
  std::string received_;
  std::vector<std::string> refused_;
  std::thread thread_;
};

const std::string kSecretToken = "agent-token-that-must-stay-secret-0123456789";

/// One heartbeat, as the agent sends it, through the agent's TLS settings (prepareTlsFiles,
/// TlsDefaultsHttpClient, the real HttpClient) to `apiUrl`.
Result<protocol::HeartbeatResponse> heartbeatWith(const ApiTls& tls, const std::string& apiUrl,
                                                  const TempDir& dir) {
  static std::atomic<int> runs{0};
  auto files = prepareTlsFiles(tls, dir.file("tls-" + std::to_string(runs++)), "");
  REQUIRE(files);
  HttpClientPtr http = makeHttpClient();
  TlsDefaultsHttpClient apiHttp(*http, files->api);
  HttpServerClient server(apiHttp, apiUrl);
  protocol::HeartbeatRequest beat;
  beat.agentVersion = "kiln-agent test";
  beat.agentToken = kSecretToken;
  return server.heartbeat("1be26c0b-03f2-4d2e-ae87-c02d7f33c123", beat);
}

ApiTls caFileTls(const std::string& path, const std::string& source = "--api-ca-file") {
  ApiTls tls;
  tls.caFile = path;
  tls.source = source;
  return tls;
}

}  // namespace

TEST_CASE(
    "agent TLS handshake: the server's CA is accepted, the heartbeat and its token get "
    "through",
    "[agent][tls][handshake]") {
  TempDir dir("kiln-agent-tls");
  const std::string ca = kiln::test::testDataPath("tls/ca.pem").string();
  RecordingTlsServer server(kiln::test::testDataPath("tls/server.pem").string(),
                            kiln::test::testDataPath("tls/server.key").string());

  SECTION("a CA file (--api-ca-file, kiln.api_ca_file=)") {
    auto beat = heartbeatWith(caFileTls(ca), server.url(), dir);
    REQUIRE(beat);
    CHECK(beat->heartbeatInterval == 7);
  }
  SECTION("by name: the certificate's DNS subjectAltName localhost") {
    auto beat = heartbeatWith(caFileTls(ca), server.url("localhost"), dir);
    REQUIRE(beat);
  }
  SECTION("kiln.api_ca= on the kernel command line, as kiln-server writes it") {
    auto pem = readFile(ca);
    REQUIRE(pem);
    auto config = ramdisk("kiln.api_ca=" + derBase64(*pem));
    REQUIRE(config);
    auto beat = heartbeatWith(config->tls, server.url(), dir);
    REQUIRE(beat);
  }
  SECTION("the ramdisk's embedded CA file, when the kernel command line names none") {
    auto config = ramdisk("", ca);
    REQUIRE(config);
    REQUIRE(config->tls.caFile == ca);
    auto beat = heartbeatWith(config->tls, server.url(), dir);
    REQUIRE(beat);
  }
  REQUIRE(server.waitForConnections(1));
  CHECK(server.refused().empty());
  CHECK_THAT(server.received(),
             Catch::StartsWith("POST /v1/heartbeat/") && Catch::Contains(kSecretToken));
}

TEST_CASE("agent TLS handshake: another CA is refused and no byte of the request is sent",
          "[agent][tls][handshake]") {
  TempDir dir("kiln-agent-tls");
  RecordingTlsServer server(kiln::test::testDataPath("tls/server.pem").string(),
                            kiln::test::testDataPath("tls/server.key").string());
  const Issued other = issueCa("Kiln agent test: another CA");
  const std::string otherCa = dir.file("other-ca.pem");
  std::ofstream(otherCa) << other.certPem();

  std::string expectTrusted;
  SECTION("a CA file") {
    auto beat = heartbeatWith(caFileTls(otherCa), server.url(), dir);
    REQUIRE_FALSE(beat);
    CHECK(beat.error().code == ErrorCode::Unavailable);  // the agent retries, token unsent
    CHECK_THAT(beat.error().message,
               Catch::Contains("TLS handshake") &&
                   Catch::Contains("(certificate: unable to get local issuer certificate)") &&
                   Catch::Contains("checked against the CA file " + otherCa + " (--api-ca-file)"));
  }
  SECTION("kiln.api_ca=") {
    auto config = ramdisk("kiln.api_ca=" + derBase64(other.certPem()));
    REQUIRE(config);
    auto beat = heartbeatWith(config->tls, server.url(), dir);
    REQUIRE_FALSE(beat);
    CHECK_THAT(beat.error().message, Catch::Contains("unable to get local issuer certificate") &&
                                         Catch::Contains("the CA of kiln.api_ca"));
  }
  SECTION("two certificates, neither the server's (kiln.api_ca=A,B)") {
    auto config = ramdisk("kiln.api_ca=" + derBase64(kCaA) + "," + derBase64(other.certPem()));
    REQUIRE(config);
    CHECK_FALSE(heartbeatWith(config->tls, server.url(), dir));
  }
  SECTION("no CA named: the system's store does not hold a private CA") {
    // SSL_CERT_FILE/SSL_CERT_DIR point OpenSSL's default store at an empty directory, so the
    // result does not depend on this machine's store.
    std::filesystem::create_directory(dir.file("empty"));
    ::setenv("SSL_CERT_FILE", dir.file("empty/none.pem").c_str(), 1);
    ::setenv("SSL_CERT_DIR", dir.file("empty").c_str(), 1);
    auto beat = heartbeatWith(ApiTls{}, server.url(), dir);
    ::unsetenv("SSL_CERT_FILE");
    ::unsetenv("SSL_CERT_DIR");
    REQUIRE_FALSE(beat);
    CHECK_THAT(beat.error().message, Catch::Contains("the system's CA store"));
  }
  REQUIRE(server.waitForConnections(1));
  CHECK(server.refused().size() == 1);
  CHECK(server.received().empty());  // not the request line, not the token
}

TEST_CASE("agent TLS handshake: a certificate for another name or address is refused",
          "[agent][tls][handshake]") {
  TempDir dir("kiln-agent-tls");
  // Signed by the CA the agent trusts, but for 127.0.0.2 and kiln.invalid only.
  const Issued ca = issueCa("Kiln agent test: site CA");
  const Issued leaf = issueServer(ca, "IP:127.0.0.2,DNS:kiln.invalid");
  const std::string caFile = dir.file("ca.pem");
  std::ofstream(caFile) << ca.certPem();
  std::ofstream(dir.file("server.pem")) << leaf.certPem();
  std::ofstream(dir.file("server.key")) << leaf.keyPem();
  RecordingTlsServer server(dir.file("server.pem"), dir.file("server.key"));

  SECTION("an IP literal URL checks the IP subjectAltNames") {
    auto beat = heartbeatWith(caFileTls(caFile), server.url("127.0.0.1"), dir);
    REQUIRE_FALSE(beat);
    CHECK_THAT(beat.error().message, Catch::Contains("(certificate: IP address mismatch)"));
  }
  SECTION("a host name URL checks the DNS subjectAltNames") {
    auto beat = heartbeatWith(caFileTls(caFile), server.url("localhost"), dir);
    REQUIRE_FALSE(beat);
    CHECK_THAT(beat.error().message, Catch::Contains("(certificate: hostname mismatch)"));
  }
  REQUIRE(server.waitForConnections(1));
  CHECK(server.refused().size() == 1);
  CHECK(server.received().empty());

  // The same CA with a certificate that names 127.0.0.1 is accepted: the refusal above was the
  // name's.
  const Issued good = issueServer(ca, "IP:127.0.0.1");
  std::ofstream(dir.file("good.pem")) << good.certPem();
  std::ofstream(dir.file("good.key")) << good.keyPem();
  RecordingTlsServer goodServer(dir.file("good.pem"), dir.file("good.key"));
  REQUIRE(heartbeatWith(caFileTls(caFile), goodServer.url(), dir));
}

TEST_CASE("agent TLS handshake: the insecure switch accepts any certificate",
          "[agent][tls][handshake]") {
  TempDir dir("kiln-agent-tls");
  const Issued ca = issueCa("Kiln agent test: nobody's CA");
  const Issued leaf = issueServer(ca, "DNS:kiln.invalid");
  std::ofstream(dir.file("server.pem")) << leaf.certPem();
  std::ofstream(dir.file("server.key")) << leaf.keyPem();
  RecordingTlsServer server(dir.file("server.pem"), dir.file("server.key"));
  auto config = ramdisk("ipa-insecure=1 kiln.api_ca=" + derBase64(kCaA));
  REQUIRE(config);
  REQUIRE(config->tls.insecure);
  auto beat = heartbeatWith(config->tls, server.url(), dir);
  REQUIRE(beat);  // unknown CA and wrong name: nothing is checked
  REQUIRE(server.waitForConnections(1));
  CHECK_THAT(server.received(), Catch::Contains(kSecretToken));
}
