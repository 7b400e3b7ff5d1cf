#include <catch2/catch.hpp>

#include <string>

#include "shared/core/base64.h"
#include "shared/core/gzip.h"

using kiln::base64Decode;
using kiln::base64Encode;
using kiln::Base64Mode;
using kiln::base64UrlEncode;

namespace {

std::string allBytes() {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  return bytes;
}

}  // namespace

TEST_CASE("base64Encode follows RFC 4648's test vectors", "[shared][base64]") {
  CHECK(base64Encode("") == "");
  CHECK(base64Encode("f") == "Zg==");
  CHECK(base64Encode("fo") == "Zm8=");
  CHECK(base64Encode("foo") == "Zm9v");
  CHECK(base64Encode("foob") == "Zm9vYg==");
  CHECK(base64Encode("fooba") == "Zm9vYmE=");
  CHECK(base64Encode("foobar") == "Zm9vYmFy");
  CHECK(base64Encode(std::string("\xfb\xff\xfe", 3)) == "+//+");
}

TEST_CASE("base64UrlEncode uses - and _ and no padding", "[shared][base64]") {
  CHECK(base64UrlEncode(std::string("\xfb\xff\xfe", 3)) == "-__-");
  CHECK(base64UrlEncode("f") == "Zg");
  CHECK(base64UrlEncode("fo") == "Zm8");
  CHECK(base64UrlEncode(std::string(32, '\xff')).size() == 43);  // an agent token's length
}

TEST_CASE("base64 round-trips every byte value and every length", "[shared][base64]") {
  const std::string bytes = allBytes();
  for (size_t n = 0; n <= bytes.size(); ++n) {
    const std::string data = bytes.substr(bytes.size() - n);
    INFO(n);
    REQUIRE(base64Decode(base64Encode(data)) == data);
    REQUIRE(base64Decode(base64Encode(data), Base64Mode::Lenient) == data);
    REQUIRE(base64Decode(base64UrlEncode(data), Base64Mode::UrlSafe) == data);
  }
}

TEST_CASE("base64Decode rejects invalid input in every mode", "[shared][base64]") {
  for (Base64Mode mode : {Base64Mode::Strict, Base64Mode::Lenient, Base64Mode::UrlSafe}) {
    for (const char* text : {"Zm9v!", "Zm9v*mFy", "Z===", "Zg=a", "Zm=9v", "Zg==Zg==", "Z", "Zm9vY",
                             "\x01\x02\x03\x04"}) {
      INFO(static_cast<int>(mode) << " " << text);
      auto r = base64Decode(text, mode);
      REQUIRE_FALSE(r);
      CHECK(r.error().code == kiln::ErrorCode::InvalidArgument);
      CHECK_THAT(r.error().message, Catch::StartsWith("Invalid base64 text: "));
    }
  }
  CHECK_FALSE(base64Decode("Zg"));                       // strict: padding required
  CHECK_FALSE(base64Decode("Zg", Base64Mode::Lenient));  // so is it for config drives
  CHECK(base64Decode("Zg", Base64Mode::UrlSafe) == std::string("f"));
  CHECK_FALSE(base64Decode("-__-"));                       // strict: standard alphabet only
  CHECK_FALSE(base64Decode("+//+", Base64Mode::UrlSafe));  // URL-safe alphabet only
  CHECK(base64Decode("-__-", Base64Mode::Lenient) == std::string("\xfb\xff\xfe", 3));
  CHECK(base64Decode("") == std::string());
}

TEST_CASE("base64Decode ignores whitespace only when lenient", "[shared][base64]") {
  const std::string wrapped = " Zm9v\nYmFy\r\n\tZm9v YmE=\n";
  CHECK(base64Decode(wrapped, Base64Mode::Lenient) == std::string("foobarfooba"));
  CHECK_FALSE(base64Decode(wrapped));
  CHECK_FALSE(base64Decode("Zm9v YmFy", Base64Mode::UrlSafe));
  CHECK(base64Decode(" \n ", Base64Mode::Lenient) == std::string());
}

TEST_CASE("gzipCompress and gunzip round-trip, gzip or zlib", "[shared][gzip]") {
  const std::string text = allBytes() + std::string(100000, 'k') + allBytes();
  auto gz = kiln::gzipCompress(text);
  REQUIRE(gz);
  CHECK(gz->substr(0, 2) == "\x1f\x8b");  // a gzip header, as gzip(1) writes
  CHECK(gz->size() < text.size() / 10);
  CHECK(kiln::gunzip(*gz, text.size()) == text);
  auto empty = kiln::gzipCompress("");
  REQUIRE(empty);
  CHECK(kiln::gunzip(*empty, 0) == std::string());
  // zlib-wrapped deflate: 'x\x9c' header, "hello".
  const std::string zlib("\x78\x9c\xcb\x48\xcd\xc9\xc9\x07\x00\x06\x2c\x02\x15", 13);
  CHECK(kiln::gunzip(zlib, 100) == std::string("hello"));
}

TEST_CASE("gunzip rejects corrupt, truncated and oversized data", "[shared][gzip]") {
  auto gz = kiln::gzipCompress(std::string(1 << 20, 'z'));
  REQUIRE(gz);
  auto big = kiln::gunzip(*gz, 1000);
  REQUIRE_FALSE(big);
  CHECK(big.error().code == kiln::ErrorCode::InvalidArgument);
  CHECK(big.error().message == "The gzip data inflates to more than 1000 bytes");
  auto truncated = kiln::gunzip(gz->substr(0, gz->size() / 2), 2 << 20);
  REQUIRE_FALSE(truncated);
  CHECK(truncated.error().message == "Truncated gzip data");
  auto corrupt = kiln::gunzip("not gzip at all", 100);
  REQUIRE_FALSE(corrupt);
  CHECK_THAT(corrupt.error().message, Catch::StartsWith("Corrupt gzip data: "));
}
