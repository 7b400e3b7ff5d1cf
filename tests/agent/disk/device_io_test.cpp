#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "agent/disk/device_io.h"
#include "tests/support/temp_dir.h"

// Every test here works on files in a temporary directory: never on a real disk.

using namespace kiln;
using namespace kiln::agent;
using kiln::test::TempDir;

namespace {

constexpr uint64_t kMiB = 1ULL << 20;

std::string makeFile(const TempDir& dir, const std::string& name, uint64_t bytes, char fill) {
  const std::string path = dir.file(name);
  std::ofstream out(path, std::ios::binary);
  const std::string data(bytes, fill);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  return path;
}

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("UniqueFd closes its descriptor and moves ownership", "[agent][disk][device_io]") {
  TempDir dir("kiln-device-io");
  const std::string path = makeFile(dir, "f", 16, 'x');
  int raw = -1;
  {
    auto opened = openFile(path, O_RDONLY);
    REQUIRE(opened);
    raw = opened->get();
    CHECK(::fcntl(raw, F_GETFD) >= 0);
    CHECK((::fcntl(raw, F_GETFD) & FD_CLOEXEC) != 0);
    UniqueFd moved = std::move(*opened);
    CHECK_FALSE(*opened);
    CHECK(moved.get() == raw);
  }
  CHECK(::fcntl(raw, F_GETFD) == -1);  // closed when the owner went away
}

TEST_CASE("openFile reports a missing path as NotFound naming it", "[agent][disk][device_io]") {
  TempDir dir("kiln-device-io");
  auto missing = openFile(dir.file("nope"), O_WRONLY);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::NotFound);
  CHECK_THAT(missing.error().message,
             Catch::StartsWith("Cannot open " + dir.file("nope") + " for writing: "));
}

TEST_CASE("AlignedBuffer is zeroed and aligned for O_DIRECT", "[agent][disk][device_io]") {
  auto buffer = AlignedBuffer::allocate(3 * kDirectAlign + 7);
  REQUIRE(buffer);
  CHECK(reinterpret_cast<uintptr_t>(buffer->data()) % kDirectAlign == 0);
  CHECK(buffer->size() == 3 * kDirectAlign + 7);
  CHECK(
      std::all_of(buffer->data(), buffer->data() + buffer->size(), [](char c) { return c == 0; }));
}

TEST_CASE("DirectWriter writes aligned and unaligned pieces byte for byte",
          "[agent][disk][device_io]") {
  TempDir dir("kiln-device-io");
  const std::string path = makeFile(dir, "disk.img", 2 * kMiB, '\xAA');
  auto writer = DirectWriter::open(path);
  REQUIRE(writer);
  auto buffer = AlignedBuffer::allocate(kMiB);
  REQUIRE(buffer);
  for (size_t i = 0; i < buffer->size(); ++i) buffer->data()[i] = static_cast<char>('a' + i % 26);
  REQUIRE(writer->write(buffer->data(), 2 * kDirectAlign + 100, 0));              // aligned + tail
  REQUIRE(writer->write(buffer->data() + 1, 5000, kMiB + 3));                     // all unaligned
  REQUIRE(writer->write(buffer->data(), kDirectAlign, kMiB + 8 * kDirectAlign));  // aligned
  REQUIRE(writer->sync());
  const std::string data = readAll(path);
  REQUIRE(data.size() == 2 * kMiB);  // never extended
  CHECK(data.substr(0, 2 * kDirectAlign + 100) ==
        std::string(buffer->data(), 2 * kDirectAlign + 100));
  CHECK(data[2 * kDirectAlign + 100] == '\xAA');
  CHECK(data.substr(kMiB + 3, 5000) == std::string(buffer->data() + 1, 5000));
  CHECK(data.substr(kMiB + 8 * kDirectAlign, kDirectAlign) ==
        std::string(buffer->data(), kDirectAlign));
  CHECK(data[kMiB + 2] == '\xAA');
}

TEST_CASE("DirectWriter refuses a missing file", "[agent][disk][device_io]") {
  TempDir dir("kiln-device-io");
  auto writer = DirectWriter::open(dir.file("missing"));
  REQUIRE_FALSE(writer);
  CHECK(writer.error().code == ErrorCode::NotFound);
}

TEST_CASE("deviceSize reads a regular file's size and refuses other kinds",
          "[agent][disk][device_io]") {
  TempDir dir("kiln-device-io");
  CHECK(deviceSize(makeFile(dir, "f", 12345, 'x')) == 12345u);
  auto missing = deviceSize(dir.file("nope"));
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::NotFound);
  auto directory = deviceSize(dir.path.string());
  REQUIRE_FALSE(directory);
  CHECK(directory.error().code == ErrorCode::InvalidArgument);
  CHECK_THAT(directory.error().message,
             Catch::Contains("neither a block device nor a regular file"));
  CHECK_FALSE(isBlockDevice(dir.file("f")));
}

TEST_CASE("zeroRange zeroes unaligned ranges and reports each chunk", "[agent][disk][device_io]") {
  TempDir dir("kiln-device-io");
  const std::string path = makeFile(dir, "disk.img", 20 * kMiB, '\xAA');
  uint64_t reported = 0;
  int chunks = 0;
  REQUIRE(zeroRange(path, 3, 17 * kMiB + 5, [&](uint64_t bytes) {
    reported += bytes;
    ++chunks;
    return true;
  }));
  CHECK(reported == 17 * kMiB + 5);
  CHECK(chunks == 3);  // 8 MiB buffers
  const std::string data = readAll(path);
  REQUIRE(data.size() == 20 * kMiB);
  CHECK(data.substr(0, 3) == "\xAA\xAA\xAA");
  CHECK(std::count(data.begin() + 3, data.begin() + 3 + 17 * kMiB + 5, '\0') ==
        static_cast<long>(17 * kMiB + 5));
  CHECK(data[3 + 17 * kMiB + 5] == '\xAA');
}

TEST_CASE("zeroRange stops with Conflict when the callback says so", "[agent][disk][device_io]") {
  TempDir dir("kiln-device-io");
  const std::string path = makeFile(dir, "disk.img", 20 * kMiB, '\xAA');
  auto result = zeroRange(path, 0, 20 * kMiB, [](uint64_t) { return false; });
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::Conflict);
  CHECK_THAT(result.error().message, Catch::Contains("aborted after 8388608 bytes"));
  const std::string data = readAll(path);
  CHECK(data[8 * kMiB - 1] == '\0');
  CHECK(data[8 * kMiB] == '\xAA');
}
