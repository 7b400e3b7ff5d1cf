#include <catch2/catch.hpp>

#include <string>

#include "shared/core/log.h"
#include "shared/core/tar.h"

using namespace kiln;

TEST_CASE("tarArchive writes ustar members that listTar and tarMemberContent read back",
          "[shared][tar]") {
  const std::string big(1500, 'x');  // spans three blocks, padded
  auto archive =
      tarArchive({{"agent.log", "line one\nline two\n"}, {"empty", ""}, {"big", big}}, 1700000000);
  REQUIRE(archive);
  CHECK(archive->size() % 512 == 0);
  CHECK(archive->substr(257, 6) == std::string("ustar\0", 6));
  auto members = listTar(*archive);
  REQUIRE(members);
  REQUIRE(members->size() == 3);
  CHECK((*members)[0].name == "agent.log");
  CHECK((*members)[0].size == 18);
  CHECK((*members)[1].size == 0);
  CHECK((*members)[2].size == 1500);
  CHECK(tarMemberContent(*archive, "big").value() == big);
  CHECK(tarMemberContent(*archive, "agent.log").value() == "line one\nline two\n");
  CHECK(tarMemberContent(*archive, "missing").error().code == ErrorCode::NotFound);
}

TEST_CASE("tarArchive refuses names it cannot store", "[shared][tar]") {
  CHECK_FALSE(tarArchive({{"", "x"}}, 0));
  CHECK_FALSE(tarArchive({{std::string(101, 'n'), "x"}}, 0));
  CHECK(tarArchive({{std::string(100, 'n'), "x"}}, 0));
}

TEST_CASE("listTar refuses damaged archives", "[shared][tar]") {
  auto archive = tarArchive({{"a", "hello"}}, 0);
  REQUIRE(archive);
  SECTION("a header byte changed") {
    std::string bad = *archive;
    bad[0] = 'b';
    auto r = listTar(bad);
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("Invalid tar archive: bad header checksum"));
  }
  SECTION("cut in a member") {
    auto r = listTar(archive->substr(0, 600));
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("truncated"));
  }
  SECTION("no end marker") {
    CHECK_FALSE(listTar(archive->substr(0, 1024)));
    CHECK_FALSE(listTar(""));
    CHECK_FALSE(listTar("not a tar archive at all"));
  }
  SECTION("too many members") {
    auto three = tarArchive({{"a", ""}, {"b", ""}, {"c", ""}}, 0);
    CHECK(listTar(*three, 3));
    CHECK_FALSE(listTar(*three, 2));
  }
}

TEST_CASE("a log tap receives every line as well as the sink", "[shared][log]") {
  std::string sunk;
  std::string tapped;
  const LogLevel level = Logger::level();
  Logger::setLevel(LogLevel::Info);
  auto previousSink = Logger::setSink([&](std::string_view line) { sunk += line; });
  auto previousTap = Logger::setTap([&](std::string_view line) { tapped += line; });
  Logger("unit").info("hello", {{"k", "v"}});
  Logger::setTap(std::move(previousTap));
  Logger::setSink(std::move(previousSink));
  Logger::setLevel(level);
  CHECK_THAT(sunk, Catch::Contains("INFO  unit: hello k=v\n"));
  CHECK(tapped == sunk);
}
