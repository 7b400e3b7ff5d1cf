// Tests of the image write pipeline against real local HTTP (tests/support/http_file_server)
// and regular temp files as targets: raw and compressed images, checksums, URL fallback,
// server failures, size limits, progress, abort, bounded memory, and qcow2 through the real
// qemu-img (run by ProcessCommandRunner on temp files only).
#include <lzma.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "agent/image/checksum.h"
#include "agent/image/config_drive.h"
#include "agent/image/image_writer.h"
#include "shared/core/base64.h"
#include "shared/exec/command_runner.h"
#include "tests/support/http_file_server.h"

using namespace kiln;
using namespace kiln::agent;
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kMiB = 1024 * 1024;

/// Image-like data: random blocks with runs of zeros and text, so it compresses somewhat.
std::string makeImage(size_t size, uint32_t seed = 1) {
  std::string out(size, '\0');
  std::mt19937 rng(seed);
  for (size_t i = 0; i < size; i += 4096) {
    const size_t end = std::min(size, i + 4096);
    const uint32_t kind = rng() % 4;
    for (size_t j = i; j < end; ++j) {
      out[j] = kind == 0   ? '\0'
               : kind == 1 ? static_cast<char>('a' + j % 26)
                           : static_cast<char>(rng());
    }
  }
  return out;
}

/// A temp file of `size` bytes filled with `fill`, removed at the end of the test.
class TempFile {
 public:
  explicit TempFile(uint64_t size, char fill = '\xAA') {
    static std::atomic<int> counter{0};
    path_ = (fs::temp_directory_path() /
             ("kiln-image-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++)))
                .string();
    std::ofstream out(path_, std::ios::binary);
    const std::string block(kMiB, fill);
    for (uint64_t done = 0; done < size; done += block.size()) {
      out.write(block.data(), static_cast<std::streamsize>(std::min<uint64_t>(kMiB, size - done)));
    }
  }
  ~TempFile() {
    std::error_code ec;
    fs::remove(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string read(uint64_t offset, uint64_t length) const {
    std::ifstream in(path_, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(offset));
    std::string out(length, '\0');
    in.read(out.data(), static_cast<std::streamsize>(length));
    out.resize(static_cast<size_t>(in.gcount()));
    return out;
  }

 private:
  std::string path_;
};

class RecordingProgress final : public ProgressReporter {
 public:
  void report(uint64_t done, uint64_t total) override {
    std::lock_guard lock(mutex_);
    reports.emplace_back(done, total);
  }
  std::mutex mutex_;
  std::vector<std::pair<uint64_t, uint64_t>> reports;
};

/// A StepContext with the real HTTP client and process runner.
struct Fixture {
  HttpClientPtr http = makeHttpClient();
  ProcessCommandRunner runner;
  SystemClock clock;
  RecordingProgress progress;
  std::atomic<bool> abort{false};
  StepContext ctx;
  test::HttpFileServer server;

  Fixture() {
    ctx.http = http.get();
    ctx.runner = &runner;
    ctx.clock = &clock;
    ctx.progress = &progress;
    ctx.abortRequested = &abort;
    ctx.byHand = true;
    REQUIRE(server.start());
  }
};

ImageInfo infoFor(std::vector<std::string> urls, const std::string& data,
                  ChecksumAlgorithm algorithm = ChecksumAlgorithm::Sha256) {
  ImageInfo info;
  info.id = "test-image";
  info.urls = std::move(urls);
  info.checksumAlgorithm = algorithm;
  info.checksum = *digestHex(algorithm, data);
  info.connectTimeout = std::chrono::seconds(10);
  info.idleTimeout = std::chrono::seconds(10);
  return info;
}

std::string zstdCompress(const std::string& data) {
  std::string out(ZSTD_compressBound(data.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 3);
  REQUIRE_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

std::string gzipCompress(const std::string& data) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string xzCompress(const std::string& data) {
  std::string out(lzma_stream_buffer_bound(data.size()), '\0');
  size_t pos = 0;
  REQUIRE(lzma_easy_buffer_encode(
              1, LZMA_CHECK_CRC64, nullptr, reinterpret_cast<const uint8_t*>(data.data()),
              data.size(), reinterpret_cast<uint8_t*>(out.data()), &pos, out.size()) == LZMA_OK);
  out.resize(pos);
  return out;
}

/// A port nobody listens on: bound, read, closed.
std::string closedPortUrl() {
  test::HttpFileServer probe;
  REQUIRE(probe.start());
  const std::string url = probe.url("/gone.img");
  probe.stop();
  return url;
}

long maxRssKiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

}  // namespace

TEST_CASE("writeImage writes a raw image byte for byte and verifies sha256 and sha512",
          "[agent][image]") {
  Fixture f;
  // Not a multiple of the buffer size nor of 4096: exercises the buffered tail.
  const std::string image = makeImage(9 * kMiB + 123);
  f.server.serveData("/image.raw", image);
  const auto algorithm = GENERATE(ChecksumAlgorithm::Sha256, ChecksumAlgorithm::Sha512);
  TempFile target(16 * kMiB);
  auto result = writeImage(f.ctx, infoFor({f.server.url("/image.raw")}, image, algorithm),
                           WriteTarget{target.path()});
  REQUIRE(result);
  CHECK(result->bytesDownloaded == image.size());
  CHECK(result->bytesWritten == image.size());
  CHECK(result->checksum == *digestHex(algorithm, image));
  CHECK(result->seconds >= 0);
  CHECK(target.read(0, image.size()) == image);
  CHECK(target.read(image.size(), 16) == std::string(16, '\xAA'));  // nothing beyond
}

TEST_CASE("writeImage writes at an offset within a bounded region", "[agent][image]") {
  Fixture f;
  const std::string image = makeImage(5 * kMiB + 7);
  f.server.serveData("/image.raw", image);
  TempFile target(16 * kMiB);
  auto result = writeImage(f.ctx, infoFor({f.server.url("/image.raw")}, image),
                           WriteTarget{target.path(), 3 * kMiB + 512, 6 * kMiB});
  REQUIRE(result);
  CHECK(target.read(0, 3 * kMiB + 512) == std::string(3 * kMiB + 512, '\xAA'));
  CHECK(target.read(3 * kMiB + 512, image.size()) == image);
}

TEST_CASE("writeImage decompresses zstd, gzip and xz images, named or detected", "[agent][image]") {
  Fixture f;
  const std::string image = makeImage(11 * kMiB + 5, 7);
  struct Case {
    Compression compression;
    std::string data;
  };
  const std::vector<Case> cases = {{Compression::Zstd, zstdCompress(image)},
                                   {Compression::Gzip, gzipCompress(image)},
                                   {Compression::Xz, xzCompress(image)}};
  for (const auto& c : cases) {
    for (const bool named : {true, false}) {
      INFO(std::string(toString(c.compression)) << (named ? " named" : " detected"));
      f.server.serveData("/image.comp", c.data);
      ImageInfo info = infoFor({f.server.url("/image.comp")}, c.data);
      info.compression = named ? c.compression : Compression::Auto;
      TempFile target(16 * kMiB);
      auto result = writeImage(f.ctx, info, WriteTarget{target.path()});
      REQUIRE(result);
      CHECK(result->bytesDownloaded == c.data.size());
      CHECK(result->bytesWritten == image.size());
      CHECK(result->checksum == info.checksum);  // over the downloaded (compressed) bytes
      CHECK(target.read(0, image.size()) == image);
    }
  }
}

TEST_CASE("writeImage with compression none writes compressed bytes as they are",
          "[agent][image]") {
  Fixture f;
  const std::string data = zstdCompress(makeImage(2 * kMiB));
  f.server.serveData("/image.zst", data);
  ImageInfo info = infoFor({f.server.url("/image.zst")}, data);
  info.compression = Compression::None;
  TempFile target(4 * kMiB);
  auto result = writeImage(f.ctx, info, WriteTarget{target.path()});
  REQUIRE(result);
  CHECK(target.read(0, data.size()) == data);
}

TEST_CASE("writeImage reports corrupt compressed data", "[agent][image]") {
  Fixture f;
  std::string data = gzipCompress(makeImage(3 * kMiB));
  data.resize(data.size() / 2);  // truncated
  f.server.serveData("/image.gz", data);
  TempFile target(8 * kMiB);
  auto result =
      writeImage(f.ctx, infoFor({f.server.url("/image.gz")}, data), WriteTarget{target.path()});
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::InvalidArgument);
  CHECK_THAT(result.error().message, Catch::Contains("gzip"));
}

TEST_CASE("writeImage on a checksum mismatch fails and zeroes the first MiB", "[agent][image]") {
  Fixture f;
  const std::string image = makeImage(6 * kMiB);
  f.server.serveData("/image.raw", image);
  ImageInfo info = infoFor({f.server.url("/image.raw")}, image);
  info.checksum = std::string(64, '0');
  TempFile target(8 * kMiB);
  auto result = writeImage(f.ctx, info, WriteTarget{target.path()});
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::InvalidArgument);
  CHECK_THAT(result.error().message,
             Catch::Contains("checksum") && Catch::Contains(f.server.url("/image.raw")) &&
                 Catch::Contains("expected " + std::string(64, '0')) &&
                 Catch::Contains(*digestHex(ChecksumAlgorithm::Sha256, image)));
  CHECK(target.read(0, kMiB) == std::string(kMiB, '\0'));
  CHECK(target.read(kMiB, kMiB) == image.substr(kMiB, kMiB));
}

TEST_CASE("writeImage verifies md5 when the image info allows it", "[agent][image]") {
  Fixture f;
  const std::string image = makeImage(kMiB + 3);
  f.server.serveData("/image.raw", image);
  nlohmann::json doc = {{"id", "i"},
                        {"urls", {f.server.url("/image.raw")}},
                        {"checksum", *digestHex(ChecksumAlgorithm::Md5, image)}};
  REQUIRE_FALSE(parseImageInfo(doc, false));
  auto info = parseImageInfo(doc, true);
  REQUIRE(info);
  TempFile target(2 * kMiB);
  auto result = writeImage(f.ctx, *info, WriteTarget{target.path()});
  REQUIRE(result);
  CHECK(result->checksum == info->checksum);
}

TEST_CASE("writeImage reports an unreachable URL as Unavailable naming it", "[agent][image]") {
  Fixture f;
  const std::string url = closedPortUrl();
  TempFile target(kMiB);
  auto result = writeImage(f.ctx, infoFor({url}, "x"), WriteTarget{target.path()});
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::Unavailable);
  CHECK_THAT(result.error().message, Catch::Contains(url));
}

TEST_CASE("writeImage reports an HTTP error status naming the URL and writes nothing",
          "[agent][image]") {
  Fixture f;
  TempFile target(kMiB);
  SECTION("404 for an unknown path") {
    auto result =
        writeImage(f.ctx, infoFor({f.server.url("/missing.img")}, "x"), WriteTarget{target.path()});
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::NotFound);
    CHECK_THAT(result.error().message,
               Catch::Contains(f.server.url("/missing.img")) && Catch::Contains("404"));
  }
  SECTION("500") {
    test::ServedPath served;
    served.status = 500;
    f.server.serve("/broken.img", served);
    auto result =
        writeImage(f.ctx, infoFor({f.server.url("/broken.img")}, "x"), WriteTarget{target.path()});
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::Unavailable);
    CHECK_THAT(result.error().message, Catch::Contains("500"));
  }
  CHECK(target.read(0, kMiB) == std::string(kMiB, '\xAA'));
}

TEST_CASE("writeImage falls back to the next URL when one fails", "[agent][image]") {
  Fixture f;
  const std::string image = makeImage(5 * kMiB);
  f.server.serveData("/good.raw", image);
  test::ServedPath cut;
  cut.data = image;
  cut.closeAfter = 4 * kMiB + 100;  // the pipeline has already written data from this one
  f.server.serve("/cut.raw", cut);
  TempFile target(8 * kMiB);
  auto result = writeImage(f.ctx,
                           infoFor({closedPortUrl(), f.server.url("/missing.raw"),
                                    f.server.url("/cut.raw"), f.server.url("/good.raw")},
                                   image),
                           WriteTarget{target.path()});
  REQUIRE(result);
  CHECK(f.server.getCount("/good.raw") == 1);
  CHECK(f.server.getCount("/cut.raw") == 1);
  CHECK(target.read(0, image.size()) == image);
}

TEST_CASE("writeImage names every failure when no URL works", "[agent][image]") {
  Fixture f;
  TempFile target(kMiB);
  auto result = writeImage(f.ctx, infoFor({f.server.url("/a.img"), f.server.url("/b.img")}, "x"),
                           WriteTarget{target.path()});
  REQUIRE_FALSE(result);
  CHECK_THAT(result.error().message,
             Catch::Contains("No URL") && Catch::Contains(f.server.url("/b.img")));
}

TEST_CASE("writeImage fails a connection closed mid-body", "[agent][image]") {
  Fixture f;
  test::ServedPath cut;
  cut.data = makeImage(3 * kMiB);
  cut.closeAfter = kMiB;
  f.server.serve("/cut.raw", cut);
  TempFile target(4 * kMiB);
  auto result =
      writeImage(f.ctx, infoFor({f.server.url("/cut.raw")}, cut.data), WriteTarget{target.path()});
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::Unavailable);
  CHECK_THAT(result.error().message, Catch::Contains(f.server.url("/cut.raw")));
}

TEST_CASE("writeImage fails a stalled download after the idle timeout", "[agent][image]") {
  Fixture f;
  test::ServedPath stalled;
  stalled.data = makeImage(3 * kMiB);
  stalled.stallAfter = 2 * kMiB;
  f.server.serve("/stall.raw", stalled);
  ImageInfo info = infoFor({f.server.url("/stall.raw")}, stalled.data);
  info.connectTimeout = std::chrono::seconds(60);
  info.idleTimeout = std::chrono::milliseconds(300);
  TempFile target(4 * kMiB);
  auto result = writeImage(f.ctx, info, WriteTarget{target.path()});
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::DeadlineExceeded);
  CHECK_THAT(result.error().message,
             Catch::Contains(f.server.url("/stall.raw")) && Catch::Contains("no data for 300 ms"));
}

TEST_CASE("writeImage refuses an image larger than the target", "[agent][image]") {
  Fixture f;
  SECTION("known from Content-Length") {
    const std::string image = makeImage(3 * kMiB);
    f.server.serveData("/big.raw", image);
    TempFile target(2 * kMiB);
    ImageInfo info = infoFor({f.server.url("/big.raw")}, image);
    info.compression = Compression::None;
    auto result = writeImage(f.ctx, info, WriteTarget{target.path()});
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::InvalidArgument);
    CHECK_THAT(result.error().message, Catch::Contains("larger than the target"));
    CHECK(f.server.getCount("/big.raw") == 0);
  }
  SECTION("found while writing") {
    const std::string image = makeImage(3 * kMiB);
    f.server.serveData("/big.raw", image);
    TempFile target(2 * kMiB);
    auto result =
        writeImage(f.ctx, infoFor({f.server.url("/big.raw")}, image), WriteTarget{target.path()});
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::InvalidArgument);
    CHECK_THAT(result.error().message, Catch::Contains("larger than the target"));
  }
  SECTION("found while decompressing") {
    const std::string compressed = zstdCompress(makeImage(12 * kMiB));
    f.server.serveData("/big.zst", compressed);
    TempFile target(16 * kMiB);
    auto result = writeImage(f.ctx, infoFor({f.server.url("/big.zst")}, compressed),
                             WriteTarget{target.path(), 0, 5 * kMiB});
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::InvalidArgument);
    CHECK_THAT(result.error().message, Catch::Contains("larger than the target"));
    CHECK(target.read(5 * kMiB, kMiB) == std::string(kMiB, '\xAA'));
  }
}

TEST_CASE("writeImage reports download progress against the Content-Length", "[agent][image]") {
  Fixture f;
  const std::string image = makeImage(20 * kMiB);
  f.server.serveData("/image.raw", image);
  TempFile target(20 * kMiB);
  REQUIRE(
      writeImage(f.ctx, infoFor({f.server.url("/image.raw")}, image), WriteTarget{target.path()}));
  const auto& reports = f.progress.reports;
  REQUIRE(reports.size() >= 4);
  for (size_t i = 1; i < reports.size(); ++i) CHECK(reports[i].first >= reports[i - 1].first);
  for (const auto& r : reports) CHECK(r.second == image.size());
  CHECK(reports.back().first == image.size());
}

TEST_CASE("writeImage stops with an error when aborted", "[agent][image]") {
  Fixture f;
  const std::string image = makeImage(24 * kMiB);
  f.server.serveData("/image.raw", image);
  // Abort from the progress callback once a few MiB have arrived.
  class AbortingProgress final : public ProgressReporter {
   public:
    explicit AbortingProgress(std::atomic<bool>& flag) : flag_(flag) {}
    void report(uint64_t done, uint64_t) override {
      if (done >= 4 * kMiB) flag_ = true;
    }

   private:
    std::atomic<bool>& flag_;
  } aborting(f.abort);
  f.ctx.progress = &aborting;
  TempFile target(24 * kMiB);
  auto result =
      writeImage(f.ctx, infoFor({f.server.url("/image.raw")}, image), WriteTarget{target.path()});
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::Conflict);
  CHECK_THAT(result.error().message, Catch::Contains("aborted"));
}

TEST_CASE("writeImage keeps memory bounded whatever the image size", "[agent][image]") {
  Fixture f;
  constexpr uint64_t kSize = 160 * kMiB;
  TempFile source(kSize, '\x5A');
  f.server.serveFile("/big.raw", source.path());
  ImageInfo info;
  info.urls = {f.server.url("/big.raw")};
  info.connectTimeout = info.idleTimeout = std::chrono::seconds(30);
  TempFile target(kSize);
  // Warm up once so allocator and thread stacks are counted before measuring.
  const long before = maxRssKiB();
  auto result = writeImage(f.ctx, info, WriteTarget{target.path()});
  REQUIRE(result);
  CHECK(result->bytesWritten == kSize);
  // 8 x 4 MiB buffers plus thread stacks and the HTTP client's buffers: well under 64 MiB.
  CHECK(maxRssKiB() - before < 64 * 1024);
}

TEST_CASE("writeImage converts a qcow2 image with qemu-img into raw bytes", "[agent][image]") {
  Fixture f;
  TempFile work(0);
  const std::string rawPath = work.path() + ".raw";
  const std::string qcowPath = work.path() + ".qcow2";
  const std::string pattern = makeImage(3 * kMiB + 4096, 11) + std::string(kMiB, '\0');
  {
    std::ofstream out(rawPath, std::ios::binary);
    out.write(pattern.data(), static_cast<std::streamsize>(pattern.size()));
  }
  Command make;
  make.argv = {"qemu-img", "convert", "-f", "raw", "-O", "qcow2", rawPath, qcowPath};
  auto made = f.runner.run(make);
  REQUIRE(made);
  REQUIRE(made->exitCode == 0);
  std::string qcow2;
  {
    std::ifstream in(qcowPath, std::ios::binary);
    qcow2.assign(std::istreambuf_iterator<char>(in), {});
  }
  fs::remove(rawPath);
  fs::remove(qcowPath);
  f.server.serveData("/image.qcow2", qcow2);

  SECTION("fits") {
    TempFile target(16 * kMiB);
    ImageInfo info = infoFor({f.server.url("/image.qcow2")}, qcow2);
    info.diskFormat = DiskFormat::Qcow2;
    auto result = writeImage(f.ctx, info, WriteTarget{target.path()});
    REQUIRE(result);
    CHECK(result->bytesDownloaded == qcow2.size());
    CHECK(result->bytesWritten == pattern.size());
    CHECK(target.read(0, pattern.size()) == pattern);
    // The staging area at the tail no longer starts with the qcow2 header.
    const std::string tail = target.read(16 * kMiB - (qcow2.size() + kMiB), qcow2.size() + kMiB);
    CHECK(tail.find("QFI\xfb") == std::string::npos);
  }
  SECTION("virtual size too large for the space before the staging area") {
    TempFile target(6 * kMiB);
    ImageInfo info = infoFor({f.server.url("/image.qcow2")}, qcow2);
    info.diskFormat = DiskFormat::Qcow2;
    auto result = writeImage(f.ctx, info, WriteTarget{target.path()});
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::InvalidArgument);
    CHECK_THAT(result.error().message,
               Catch::Contains("virtual size") && Catch::Contains("staging"));
  }
  SECTION("not qcow2 at all") {
    const std::string raw = makeImage(kMiB);
    f.server.serveData("/fake.qcow2", raw);
    TempFile target(8 * kMiB);
    ImageInfo info = infoFor({f.server.url("/fake.qcow2")}, raw);
    info.diskFormat = DiskFormat::Qcow2;
    auto result = writeImage(f.ctx, info, WriteTarget{target.path()});
    REQUIRE_FALSE(result);
    CHECK_THAT(result.error().message, Catch::Contains("not a qcow2"));
  }
}

TEST_CASE("writeImage refuses a missing target", "[agent][image]") {
  Fixture f;
  auto result = writeImage(f.ctx, infoFor({f.server.url("/x")}, "x"),
                           WriteTarget{"/nonexistent/kiln/target"});
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::NotFound);
}

TEST_CASE("loadConfigDrive decodes base64 of gzip, inline or fetched", "[agent][image]") {
  Fixture f;
  const std::string iso = "CD001" + makeImage(300 * 1024, 3);
  const std::string gz = gzipCompress(iso);
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string b64;
  for (size_t i = 0; i < gz.size(); i += 3) {
    uint32_t v = static_cast<uint8_t>(gz[i]) << 16;
    if (i + 1 < gz.size()) v |= static_cast<uint8_t>(gz[i + 1]) << 8;
    if (i + 2 < gz.size()) v |= static_cast<uint8_t>(gz[i + 2]);
    b64 += kAlphabet[(v >> 18) & 63];
    b64 += kAlphabet[(v >> 12) & 63];
    b64 += i + 1 < gz.size() ? kAlphabet[(v >> 6) & 63] : '=';
    b64 += i + 2 < gz.size() ? kAlphabet[v & 63] : '=';
    if (i % 57 == 54) b64 += '\n';
  }
  auto inlined = loadConfigDrive(f.ctx, b64);
  REQUIRE(inlined);
  CHECK(*inlined == iso);

  f.server.serveData("/configdrive", b64);
  auto fetched = loadConfigDrive(f.ctx, f.server.url("/configdrive"));
  REQUIRE(fetched);
  CHECK(*fetched == iso);

  auto missing = loadConfigDrive(f.ctx, f.server.url("/nope"));
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message, Catch::Contains("404"));

  auto garbage = loadConfigDrive(f.ctx, "not base64 at all!");
  REQUIRE_FALSE(garbage);
  CHECK(garbage.error().code == ErrorCode::InvalidArgument);

  auto tooBig = loadConfigDrive(
      f.ctx, base64Encode(gzipCompress(std::string(kMaxConfigDriveBytes + 1, 'z'))));
  REQUIRE_FALSE(tooBig);
  CHECK(tooBig.error().message == "The config drive is larger than 67108864 bytes");

  const std::string cut = gzipCompress(iso);
  auto truncated = loadConfigDrive(f.ctx, base64Encode(cut.substr(0, cut.size() / 2)));
  REQUIRE_FALSE(truncated);
  CHECK(truncated.error().message == "Truncated gzip data in the config drive");

  TempFile target(kMiB);
  REQUIRE(writeRegion(target.path(), 4096, *inlined));
  CHECK(target.read(4096, iso.size()) == iso);
  CHECK(target.read(0, 4096) == std::string(4096, '\xAA'));
}
