// Tests of image downloads that need credentials (agent/image/image_info.h): a URL's own user
// information and image_info's image_server_auth_strategy, for the image, a checksum file and
// a config drive URL; redirects that keep or drop them; and messages and log lines that never
// show them. Against real local HTTP (tests/support/http_file_server.h, a second server on
// 127.0.0.2 playing another host) and temp files as targets.
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "agent/image/checksum.h"
#include "agent/image/checksum_file.h"
#include "agent/image/config_drive.h"
#include "agent/image/image_info.h"
#include "agent/image/image_writer.h"
#include "shared/core/base64.h"
#include "shared/core/gzip.h"
#include "tests/support/basic_auth.h"
#include "tests/support/http_file_server.h"
#include "tests/support/log_capture.h"

using namespace kiln;
using namespace kiln::agent;
using nlohmann::json;
using test::basicAuthorization;
using test::ServedPath;
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kMiB = 1024 * 1024;

/// A temp file of `size` zero bytes, removed at the end of the test.
class Target {
 public:
  explicit Target(uint64_t size) {
    static std::atomic<int> counter{0};
    path_ = (fs::temp_directory_path() /
             ("kiln-creds-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++)))
                .string();
    std::ofstream(path_, std::ios::binary).flush();
    fs::resize_file(path_, size);
  }
  ~Target() {
    std::error_code ec;
    fs::remove(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string read(uint64_t length) const {
    std::ifstream in(path_, std::ios::binary);
    std::string out(length, '\0');
    in.read(out.data(), static_cast<std::streamsize>(length));
    return out;
  }

 private:
  std::string path_;
};

/// Image-like bytes.
std::string imageBytes(size_t size) {
  std::string out(size, '\0');
  for (size_t i = 0; i < size; ++i) out[i] = static_cast<char>((i * 131 + i / 4096) & 0xff);
  return out;
}

std::string sha256(const std::string& data) { return *digestHex(ChecksumAlgorithm::Sha256, data); }

ServedPath guarded(std::string data, const std::string& user, const std::string& password) {
  ServedPath p;
  p.data = std::move(data);
  p.authorization = basicAuthorization(user, password);
  return p;
}

ServedPath redirect(std::string location) {
  ServedPath p;
  p.status = 302;
  p.location = std::move(location);
  return p;
}

/// "http://user:password@127.0.0.1:port/path" from a server URL.
std::string withUserInfo(const std::string& url, const std::string& userinfo) {
  return "http://" + userinfo + "@" + url.substr(std::string("http://").size());
}

struct Fixture {
  HttpClientPtr http = makeHttpClient();
  StepContext ctx;
  test::HttpFileServer server;  ///< 127.0.0.1
  test::HttpFileServer other;   ///< 127.0.0.2: another host
  const std::string image = imageBytes(3 * kMiB + 123);

  Fixture() {
    ctx.http = http.get();
    ctx.byHand = true;
    REQUIRE(server.start("127.0.0.1"));
    REQUIRE(other.start("127.0.0.2"));
  }

  ImageInfo info(std::vector<std::string> urls) const {
    ImageInfo i;
    i.id = "image.raw";
    i.urls = std::move(urls);
    i.checksum = sha256(image);
    i.connectTimeout = std::chrono::seconds(10);
    i.idleTimeout = std::chrono::seconds(10);
    return i;
  }
};

}  // namespace

TEST_CASE("writeImage sends a URL's percent-decoded user information as Basic credentials",
          "[agent][image][credentials]") {
  Fixture f;
  f.server.serve("/private/image.raw", guarded(f.image, "alice", "p@ss:w rd"));
  const std::string url = withUserInfo(f.server.url("/private/image.raw"), "alice:p%40ss%3Aw%20rd");
  Target target(8 * kMiB);
  auto written = writeImage(f.ctx, f.info({url}), WriteTarget{target.path()});
  REQUIRE(written);
  CHECK(written->bytesWritten == f.image.size());
  CHECK(target.read(f.image.size()) == f.image);
  // The HEAD probe and the GET both carried them.
  const std::string expected = basicAuthorization("alice", "p@ss:w rd");
  CHECK(f.server.authorizations("/private/image.raw") ==
        std::vector<std::string>{expected, expected});
}

TEST_CASE("writeImage sends the image server's credentials when the URL has none of its own",
          "[agent][image][credentials]") {
  Fixture f;
  f.server.serve("/svc/image.raw", guarded(f.image, "svc", "svc-pass"));
  f.server.serve("/own/image.raw", guarded(f.image, "alice", "pw"));
  Target target(8 * kMiB);

  ImageInfo info = f.info({f.server.url("/svc/image.raw")});
  info.imageServerAuth = BasicCredentials{"svc", "svc-pass"};
  REQUIRE(writeImage(f.ctx, info, WriteTarget{target.path()}));
  CHECK(target.read(f.image.size()) == f.image);

  // A URL's own user information wins over the configured credentials.
  info.urls = {withUserInfo(f.server.url("/own/image.raw"), "alice:pw")};
  REQUIRE(writeImage(f.ctx, info, WriteTarget{target.path()}));
  for (const auto& sent : f.server.authorizations("/own/image.raw")) {
    CHECK(sent == basicAuthorization("alice", "pw"));
  }

  // Without credentials the server's 401 fails the download, naming the status.
  info.imageServerAuth.reset();
  info.urls = {f.server.url("/svc/image.raw")};
  auto refused = writeImage(f.ctx, info, WriteTarget{target.path()});
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::Unavailable);
  CHECK_THAT(refused.error().message, Catch::Contains("HTTP status 401"));
}

TEST_CASE("writeImage keeps the credentials through a same-origin redirect only",
          "[agent][image][credentials][redirect]") {
  Fixture f;
  Target target(8 * kMiB);
  const std::string auth = basicAuthorization("alice", "pw");

  SECTION("a redirect on the same server: the new path gets them") {
    f.server.serve("/image.raw", redirect("/moved/image.raw"));
    f.server.serve("/moved/image.raw", guarded(f.image, "alice", "pw"));
    REQUIRE(writeImage(f.ctx, f.info({withUserInfo(f.server.url("/image.raw"), "alice:pw")}),
                       WriteTarget{target.path()}));
    CHECK(target.read(f.image.size()) == f.image);
    CHECK(f.server.authorizations("/moved/image.raw") == std::vector<std::string>{auth, auth});
  }
  SECTION("a redirect to another host: it never sees them") {
    f.server.serve("/image.raw", redirect(f.other.url("/mirror/image.raw")));
    f.other.serveData("/mirror/image.raw", f.image);
    ImageInfo info = f.info({withUserInfo(f.server.url("/image.raw"), "alice:pw")});
    info.imageServerAuth = BasicCredentials{"svc", "svc-pass"};  // not sent there either
    REQUIRE(writeImage(f.ctx, info, WriteTarget{target.path()}));
    CHECK(target.read(f.image.size()) == f.image);
    CHECK(f.server.authorizations("/image.raw") == std::vector<std::string>{auth, auth});
    CHECK(f.other.authorizations("/mirror/image.raw") == std::vector<std::string>{"", ""});
  }
}

TEST_CASE("image download errors and log lines never show the URL's password",
          "[agent][image][credentials][secrets]") {
  Fixture f;
  test::LogCapture log;
  f.server.serve("/private/image.raw", guarded(f.image, "alice", "right"));
  Target target(8 * kMiB);
  for (const std::string& path : {std::string("/private/image.raw"), std::string("/missing.raw")}) {
    INFO(path);
    const std::string url = withUserInfo(f.server.url(path), "alice:wr0ngpass");
    auto result = writeImage(f.ctx, f.info({url}), WriteTarget{target.path()});
    REQUIRE_FALSE(result);
    CHECK_THAT(result.error().message, Catch::Contains(f.server.url(path)));
    CHECK_THAT(result.error().message, !Catch::Contains("wr0ngpass"));
  }
  // A checksum file URL and a config drive URL, likewise.
  ImageInfo info = f.info({f.server.url("/missing.raw")});
  info.checksum.clear();
  info.checksumUrl = withUserInfo(f.server.url("/SHA256SUMS"), "alice:wr0ngpass");
  auto checksum = writeImage(f.ctx, info, WriteTarget{target.path()});
  REQUIRE_FALSE(checksum);
  CHECK_THAT(checksum.error().message, Catch::Contains(f.server.url("/SHA256SUMS")));
  CHECK_THAT(checksum.error().message, !Catch::Contains("wr0ngpass"));
  auto drive = loadConfigDrive(f.ctx, withUserInfo(f.server.url("/cd"), "alice:wr0ngpass"));
  REQUIRE_FALSE(drive);
  CHECK_THAT(drive.error().message, !Catch::Contains("wr0ngpass"));
  CHECK_THAT(log.text(), !Catch::Contains("wr0ngpass"));
}

TEST_CASE("writeImage reads the checksum from a checksum file, with the image's credentials",
          "[agent][image][credentials][checksum]") {
  Fixture f;
  Target target(8 * kMiB);
  const std::string sums = "# SHA256 checksums\n" + std::string(64, '0') + "  other.raw\n" +
                           sha256(f.image) + " *image.raw\n";
  f.server.serve("/private/image.raw", guarded(f.image, "alice", "pw"));
  f.server.serve("/private/SHA256SUMS", guarded(sums, "alice", "pw"));
  f.server.serve("/svc/image.raw", guarded(f.image, "svc", "svc-pass"));
  f.server.serve("/svc/SHA256SUMS", guarded(sums, "svc", "svc-pass"));

  SECTION("the checksum URL's own user information") {
    ImageInfo info = f.info({withUserInfo(f.server.url("/private/image.raw"), "alice:pw")});
    info.checksum.clear();
    info.checksumUrl = withUserInfo(f.server.url("/private/SHA256SUMS"), "alice:pw");
    auto written = writeImage(f.ctx, info, WriteTarget{target.path()});
    REQUIRE(written);
    CHECK(written->checksum == sha256(f.image));
    CHECK(written->checksumAlgorithm == ChecksumAlgorithm::Sha256);
    CHECK(f.server.authorizations("/private/SHA256SUMS") ==
          std::vector<std::string>{basicAuthorization("alice", "pw")});
  }
  SECTION("the image server's credentials") {
    ImageInfo info = f.info({f.server.url("/svc/image.raw")});
    info.checksum.clear();
    info.checksumUrl = f.server.url("/svc/SHA256SUMS");
    info.imageServerAuth = BasicCredentials{"svc", "svc-pass"};
    REQUIRE(writeImage(f.ctx, info, WriteTarget{target.path()}));
    CHECK(target.read(f.image.size()) == f.image);
  }
  SECTION("a checksum file whose digest does not match fails the write") {
    f.server.serveData("/bad/SHA256SUMS", std::string(64, 'f') + "  image.raw\n");
    f.server.serveData("/bad/image.raw", f.image);
    ImageInfo info = f.info({f.server.url("/bad/image.raw")});
    info.checksum.clear();
    info.checksumUrl = f.server.url("/bad/SHA256SUMS");
    auto written = writeImage(f.ctx, info, WriteTarget{target.path()});
    REQUIRE_FALSE(written);
    CHECK_THAT(written.error().message, Catch::Contains("checksum mismatch"));
  }
}

TEST_CASE("findChecksumInFile reads the checksum file formats ironic-python-agent reads",
          "[agent][image][checksum]") {
  const std::string a(64, 'a');
  const std::string b(128, 'B');
  const std::string c(32, 'c');
  CHECK(*findChecksumInFile(a + "\n", "image.raw", "f") == a);  // just the digest
  CHECK(*findChecksumInFile("  " + c + "  \n\n", "x", "f") == c);
  CHECK(*findChecksumInFile(a + "  image.raw\n", "image.raw", "f") == a);          // sha256sum
  CHECK(*findChecksumInFile(b + " *image.raw", "image.raw", "f") == b);            // binary mode
  CHECK(*findChecksumInFile("SHA256 (image.raw) = " + a, "image.raw", "f") == a);  // BSD
  CHECK(*findChecksumInFile("# " + c + "  image.raw\n" + std::string(64, '1') + "  my-image.raw\n" +
                                a + "  image.raw\n",
                            "image.raw", "f") == a);  // comments and other files skipped
  for (const auto& [text, why] : std::vector<std::pair<std::string, std::string>>{
           {"", "empty"},
           {"\n  \n", "empty"},
           {"not-a-digest\n", "no valid checksum"},
           {a + "  other.raw\n", "no checksum for image.raw"},
           {"1234  image.raw\n", "no checksum for image.raw"}}) {
    INFO(text);
    auto r = findChecksumInFile(text, "image.raw", "http://h/SHA256SUMS");
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::InvalidArgument);
    CHECK_THAT(r.error().message, Catch::Contains(why) && Catch::Contains("http://h/SHA256SUMS"));
  }
}

TEST_CASE("parseImageInfo reads checksum file URLs and the image server's credentials",
          "[agent][image][credentials]") {
  json doc = {{"id", "img"}, {"urls", {"http://u:p@10.0.0.1/image.raw"}}};
  doc["os_hash_algo"] = "sha512";
  doc["os_hash_value"] = "https://10.0.0.1/SHA512SUMS";
  auto hashUrl = parseImageInfo(doc, false);
  REQUIRE(hashUrl);
  CHECK(hashUrl->urls == std::vector<std::string>{"http://u:p@10.0.0.1/image.raw"});
  CHECK(hashUrl->checksum.empty());
  CHECK(hashUrl->checksumUrl == "https://10.0.0.1/SHA512SUMS");
  CHECK(hashUrl->checksumAlgorithmFixed);
  CHECK(hashUrl->checksumAlgorithm == ChecksumAlgorithm::Sha512);
  CHECK_FALSE(hashUrl->imageServerAuth);

  doc.erase("os_hash_algo");
  doc.erase("os_hash_value");
  doc["checksum"] = "http://user:pw@10.0.0.1/CHECKSUM";
  auto legacy = parseImageInfo(doc, false);
  REQUIRE(legacy);
  CHECK(legacy->checksumUrl == "http://user:pw@10.0.0.1/CHECKSUM");
  CHECK_FALSE(legacy->checksumAlgorithmFixed);

  doc["image_server_auth_strategy"] = "http_basic";
  doc["image_server_user"] = "svc";
  doc["image_server_password"] = "svc-pass";
  auto withAuth = parseImageInfo(doc, false);
  REQUIRE(withAuth);
  REQUIRE(withAuth->imageServerAuth);
  CHECK(*withAuth->imageServerAuth == BasicCredentials{"svc", "svc-pass"});
  doc["image_server_auth_strategy"] = "noauth";
  CHECK_FALSE(parseImageInfo(doc, false)->imageServerAuth);

  doc["image_server_auth_strategy"] = "http_basic";
  doc["image_server_password"] = "";
  auto missing = parseImageInfo(doc, false);
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message, Catch::Contains("image_server_password is missing"));
  doc.erase("image_server_user");
  CHECK_THAT(parseImageInfo(doc, false).error().message,
             Catch::Contains("image_server_user and image_server_password are missing"));
  doc["image_server_user"] = "svc";
  doc["image_server_password"] = "svc-pass";
  doc["image_server_auth_strategy"] = "digest";
  auto unknown = parseImageInfo(doc, false);
  REQUIRE_FALSE(unknown);
  CHECK_THAT(unknown.error().message,
             Catch::Contains("\"digest\"") && !Catch::Contains("svc-pass"));

  doc["image_server_auth_strategy"] = "noauth";
  doc["checksum"] = "http://user:s3cret@10.0.0.1:99999/CHECKSUM";
  auto badUrl = parseImageInfo(doc, false);
  REQUIRE_FALSE(badUrl);
  CHECK_THAT(badUrl.error().message, Catch::Contains("checksum") && !Catch::Contains("s3cret"));
  doc["checksum"] = std::string(64, 'a');
  doc["urls"] = {"ftp://user:s3cret@10.0.0.1/image.raw"};
  auto ftp = parseImageInfo(doc, false);
  REQUIRE_FALSE(ftp);
  CHECK_THAT(ftp.error().message, !Catch::Contains("s3cret"));
}

TEST_CASE("loadConfigDrive downloads a config drive URL with its own or the configured credentials",
          "[agent][image][credentials][configdrive]") {
  Fixture f;
  const std::string iso = "CD001" + imageBytes(64 * 1024);
  const std::string b64 = base64Encode(*gzipCompress(iso));
  f.server.serve("/cd/own", guarded(b64, "alice", "p@ss"));
  f.server.serve("/cd/svc", guarded(b64, "svc", "svc-pass"));
  f.server.serve("/cd/moved", redirect(f.other.url("/cd")));
  f.other.serveData("/cd", b64);

  auto own = loadConfigDrive(f.ctx, withUserInfo(f.server.url("/cd/own"), "alice:p%40ss"),
                             BasicCredentials{"svc", "svc-pass"});
  REQUIRE(own);
  CHECK(*own == iso);
  auto configured =
      loadConfigDrive(f.ctx, f.server.url("/cd/svc"), BasicCredentials{"svc", "svc-pass"});
  REQUIRE(configured);
  CHECK(*configured == iso);
  auto moved =
      loadConfigDrive(f.ctx, f.server.url("/cd/moved"), BasicCredentials{"svc", "svc-pass"});
  REQUIRE(moved);
  CHECK(*moved == iso);
  CHECK(f.server.authorizations("/cd/moved") ==
        std::vector<std::string>{basicAuthorization("svc", "svc-pass")});
  CHECK(f.other.authorizations("/cd") == std::vector<std::string>{""});
}
