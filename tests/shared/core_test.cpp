#include <catch2/catch.hpp>

#include <stdlib.h>
#include <unistd.h>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "shared/core/file.h"
#include "shared/core/strings.h"
#include "shared/core/error.h"
#include "shared/core/uuid.h"
#include "shared/json/json_util.h"
#include "shared/json/json_writer.h"

using namespace kiln;

TEST_CASE("httpStatus maps every canonical error code to its HTTP status", "[shared][error]") {
  CHECK(httpStatus(ErrorCode::InvalidArgument) == 400);
  CHECK(httpStatus(ErrorCode::Unauthenticated) == 401);
  CHECK(httpStatus(ErrorCode::PermissionDenied) == 403);
  CHECK(httpStatus(ErrorCode::NotFound) == 404);
  CHECK(httpStatus(ErrorCode::MethodNotAllowed) == 405);
  CHECK(httpStatus(ErrorCode::NotAcceptable) == 406);
  CHECK(httpStatus(ErrorCode::AlreadyExists) == 409);
  CHECK(httpStatus(ErrorCode::Conflict) == 409);
  CHECK(httpStatus(ErrorCode::Internal) == 500);
  CHECK(httpStatus(ErrorCode::Unavailable) == 503);
}

namespace {
Result<int> half(int x) {
  if (x % 2) return invalid("odd");
  return x / 2;
}
Result<int> quarter(int x) { return half(KILN_TRY(half(x))); }
}  // namespace

TEST_CASE("KILN_TRY propagates the first error and unwraps values", "[shared][error]") {
  CHECK(quarter(8).value() == 2);
  auto r = quarter(6);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::InvalidArgument);
  CHECK(r.error().message == "odd");
}

TEST_CASE("generateUuid produces distinct lowercase version-4 UUIDs", "[shared][uuid]") {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string u = generateUuid();
    REQUIRE(isUuidLike(u));
    CHECK(u[14] == '4');
    CHECK((u[19] == '8' || u[19] == '9' || u[19] == 'a' || u[19] == 'b'));
    CHECK(u == normalizeUuid(u));
    seen.insert(u);
  }
  CHECK(seen.size() == 1000);
}

TEST_CASE("isUuidLike accepts only the canonical 8-4-4-4-12 form", "[shared][uuid]") {
  CHECK(isUuidLike("8221F906-208B-44A5-B575-F8E8A59C4A84"));
  CHECK_FALSE(isUuidLike("8221f906208b44a5b575f8e8a59c4a84"));
  CHECK_FALSE(isUuidLike("node-1"));
  CHECK_FALSE(isUuidLike("8221f906-208b-44a5-b575-f8e8a59c4a8g"));
  CHECK(normalizeUuid("8221F906-208B-44A5-B575-F8E8A59C4A84") ==
        "8221f906-208b-44a5-b575-f8e8a59c4a84");
}

TEST_CASE("JsonWriter escapes strings and produces valid JSON", "[shared][json]") {
  JsonWriter w;
  w.beginObject();
  w.field("quote", "a\"b\\c\nd\te\x01");
  w.key("list");
  w.beginArray();
  w.integer(-5);
  w.boolean(true);
  w.null();
  w.raw("{\"x\":1}");
  w.endArray();
  w.key("empty");
  w.beginObject();
  w.endObject();
  w.endObject();
  const auto parsed = nlohmann::json::parse(w.str());
  CHECK(parsed["quote"] == "a\"b\\c\nd\te\x01");
  CHECK(parsed["list"] == nlohmann::json::parse("[-5,true,null,{\"x\":1}]"));
  CHECK(parsed["empty"].empty());
}

TEST_CASE("parseJson reports malformed input as InvalidArgument", "[shared][json]") {
  CHECK(parseJson("{\"a\": [1, 2]}").has_value());
  auto bad = parseJson("{\"a\": ");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == ErrorCode::InvalidArgument);
}

TEST_CASE("pyRepr renders JSON the way Python's repr shows dicts", "[shared][json]") {
  CHECK(pyRepr(nlohmann::json::parse(R"({"op":"remove","path":"/extra/foo"})")) ==
        "{'op': 'remove', 'path': '/extra/foo'}");
  CHECK(pyRepr(nlohmann::json::parse(R"([true,false,null,1,"it's"])")) ==
        "[True, False, None, 1, \"it's\"]");
}

TEST_CASE("JsonWriter escaping round-trips arbitrary ASCII strings", "[shared][json]") {
  std::mt19937 rng(42);
  for (int i = 0; i < 2000; ++i) {
    std::string s(rng() % 40, ' ');
    for (auto& c : s) {
      const unsigned r = rng() % 100;
      c = r < 10 ? static_cast<char>(rng() % 0x20) : r < 15 ? '"' : r < 20 ? '\\' : static_cast<char>(0x20 + rng() % 95);
    }
    std::string out;
    JsonWriter::escapeTo(out, s);
    INFO(out);
    REQUIRE(nlohmann::json::parse(out).get<std::string>() == s);
  }
}

TEST_CASE("JsonWriter keeps valid UTF-8 and replaces what is not with U+FFFD", "[shared][json]") {
  auto escaped = [](std::string_view s) {
    std::string out;
    JsonWriter::escapeTo(out, s);
    return out;
  };
  // Valid: 2-, 3- and 4-byte sequences, and long ASCII runs that take the 8-byte fast path.
  CHECK(escaped("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5 0123456789abcdef") ==
        "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5 0123456789abcdef\"");
  const std::string r = "\xEF\xBF\xBD";
  CHECK(escaped("a\xff") == "\"a" + r + "\"");                     // never valid
  CHECK(escaped("\xc0\xaf") == "\"" + r + r + "\"");                // overlong '/'
  CHECK(escaped("\xed\xa0\x80") == "\"" + r + r + r + "\"");       // a UTF-16 surrogate
  CHECK(escaped("\xf4\x90\x80\x80") == "\"" + r + r + r + r + "\"");  // above U+10FFFF
  CHECK(escaped("\xe2\x82") == "\"" + r + r + "\"");                // truncated at the end
  CHECK(escaped("01234567\xc3") == "\"01234567" + r + "\"");
  // Random bytes always give text the JSON library accepts.
  std::mt19937 rng(7);
  for (int i = 0; i < 3000; ++i) {
    std::string s(rng() % 24, ' ');
    for (auto& c : s) c = static_cast<char>(rng() % 256);
    INFO(escaped(s));
    CHECK_NOTHROW(nlohmann::json::parse(escaped(s)));
  }
}

TEST_CASE("parseJson refuses deep nesting and words errors in Kiln's terms", "[shared][json]") {
  CHECK(parseJson(std::string(64, '[') + std::string(64, ']')).has_value());
  auto deep = parseJson(std::string(65, '[') + std::string(65, ']'));
  REQUIRE_FALSE(deep);
  CHECK_THAT(deep.error().message, Catch::Contains("nested deeper than 64"));
  auto huge = parseJson(std::string(100000, '[') + std::string(100000, ']'));
  CHECK_FALSE(huge);
  // Brackets inside strings do not count.
  CHECK(parseJson("{\"a\": \"" + std::string(500, '[') + "\\\"\"}").has_value());
  auto utf8 = parseJson("{\"name\": \"\xff\xfe\"}");
  REQUIRE_FALSE(utf8);
  CHECK_THAT(utf8.error().message, Catch::Contains("not valid UTF-8") && !Catch::Contains("json.exception") &&
                                       !Catch::Contains("\xff"));
}

TEST_CASE("readFile reads regular files, /proc files that cannot seek, and reports missing ones",
          "[shared][core]") {
  char tmpl[] = "/tmp/kiln-readfile-XXXXXX";
  const int fd = mkstemp(tmpl);
  REQUIRE(fd >= 0);
  std::string bytes(200000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 31);
  REQUIRE(write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  close(fd);
  CHECK(kiln::readFile(tmpl) == bytes);
  unlink(tmpl);
  // seq_file-backed /proc files refuse SEEK_END; their content must still come through.
  const auto status = kiln::readFile("/proc/self/status");
  REQUIRE(status);
  CHECK(status->find("Name:") == 0);
  CHECK(!kiln::readFile("/nonexistent/kiln/file"));
  CHECK(kiln::trim(" \t value \r\n") == "value");
  CHECK(kiln::trim(" \n ").empty());
}
