#include <catch2/catch.hpp>

#include <cstdint>

#include "shared/core/strings.h"

using namespace kiln;

TEST_CASE("trim removes the given characters at both ends only", "[shared][strings]") {
  CHECK(trim("  a b \t\r\n") == "a b");
  CHECK(trim("") == "");
  CHECK(trim(" \t ") == "");
  // The default set leaves vertical tab and form feed; kAsciiSpace (std::isspace) takes them.
  CHECK(trim("\va\f") == "\va\f");
  CHECK(trim("\v a \f", kAsciiSpace) == "a");
  // A narrower set keeps the rest.
  CHECK(trim("\r a \n", " \t") == "\r a \n");
  CHECK(trimView(" x ") == "x");
  CHECK(trimEnd("a b \n \n", " \n") == "a b");
  CHECK(trimEnd(" \n", " \n") == "");
  CHECK(trimEnd(" a", " ") == " a");
}

TEST_CASE("asciiLower and asciiUpper change ASCII letters only", "[shared][strings]") {
  CHECK(asciiLower("AbC-1\xC3\x89") == "abc-1\xC3\x89");
  CHECK(asciiUpper("get, Patch\xC3\xA9") == "GET, PATCH\xC3\xA9");
  CHECK(asciiLower('Q') == 'q');
  CHECK(asciiLower('-') == '-');
  CHECK(asciiLower('\xC3') == '\xC3');
  CHECK(equalsIgnoreCase("Basic", "bASIC"));
  CHECK_FALSE(equalsIgnoreCase("Basic", "Basic "));
}

TEST_CASE("splitTrimmed trims each item and drops empty ones", "[shared][strings]") {
  using V = std::vector<std::string>;
  CHECK(splitTrimmed("a, b,c") == V{"a", "b", "c"});
  CHECK(splitTrimmed(" a ,, ,b,") == V{"a", "b"});
  CHECK(splitTrimmed("") == V{});
  CHECK(splitTrimmed(",,, ") == V{});
  CHECK(splitTrimmed("a;\tb ;c", ';') == V{"a", "b", "c"});
  // Only the given characters are trimmed.
  CHECK(splitTrimmed("a ,\tb", ',', " ") == V{"a", "\tb"});
}

TEST_CASE("split keeps every item as it is, as Python's str.split", "[shared][strings]") {
  using V = std::vector<std::string_view>;
  CHECK(split("a,,b", ',') == V{"a", "", "b"});
  CHECK(split("", ',') == V{""});
  CHECK(split(",", ',') == V{"", ""});
  CHECK(split(" a , b ", ',') == V{" a ", " b "});
}

TEST_CASE("parseInt accepts the whole text in range and nothing else", "[shared][strings]") {
  CHECK(parseInt<int>("42") == 42);
  CHECK(parseInt<int>("-7") == -7);
  CHECK(parseInt<int>("-0") == 0);
  CHECK(parseInt<int>("007") == 7);
  CHECK(parseInt<int>("0", 0, 10) == 0);
  CHECK(parseInt<int>("10", 0, 10) == 10);
  CHECK(parseInt<int64_t>("9223372036854775807") == INT64_MAX);
  CHECK(parseInt<int64_t>("-9223372036854775808") == INT64_MIN);
  for (const char* bad :
       {"", " ", "+5", " 5", "5 ", "5x", "0x10", "1e3", "1.0", "--1", "-", "١٢"}) {
    INFO(bad);
    auto r = parseInt<int>(bad);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::InvalidArgument);
    CHECK(r.error().message == "'" + std::string(bad) + "' is not an integer");
  }
  // Unsigned types take no sign at all, not even "-0".
  CHECK_FALSE(parseInt<unsigned>("-0"));
  CHECK_FALSE(parseInt<uint64_t>("-1"));
  CHECK(parseInt<uint16_t>("65535") == 65535);
}

TEST_CASE("parseInt reports overflow and out-of-range values clearly", "[shared][strings]") {
  auto overflow = parseInt<int>("2147483648");
  REQUIRE_FALSE(overflow);
  CHECK(overflow.error().message == "'2147483648' is not an integer");
  CHECK_FALSE(parseInt<uint16_t>("65536"));
  CHECK_FALSE(parseInt<int64_t>("99999999999999999999"));
  auto high = parseInt<int>("70000", 0, 65535);
  REQUIRE_FALSE(high);
  CHECK(high.error().code == ErrorCode::InvalidArgument);
  CHECK(high.error().message == "70000 is not between 0 and 65535");
  auto low = parseInt<int>("-1", 0, 65535);
  REQUIRE_FALSE(low);
  CHECK(low.error().message == "-1 is not between 0 and 65535");
}

TEST_CASE("parseInt with IntSyntax::Strtol takes leading space and a sign as std::stol",
          "[shared][strings]") {
  constexpr auto kStrtol = IntSyntax::Strtol;
  CHECK(parseInt<long>("+5", 0, 10, kStrtol) == 5);
  CHECK(parseInt<long>(" \t\n5", 0, 10, kStrtol) == 5);
  CHECK(parseInt<long>(" -0", -1, 1, kStrtol) == 0);
  CHECK(parseInt<long>(" -3", -5, 5, kStrtol) == -3);
  // Trailing text, a sign alone, two signs and space after the sign are still refused.
  for (const char* bad : {"5 ", "+", " +", "+-5", "-+5", "+ 5", "- 5", ""}) {
    INFO(bad);
    CHECK_FALSE(parseInt<long>(bad, 0, 10, kStrtol));
  }
}

TEST_CASE("UTF-8 helpers keep valid text, escape invalid bytes and never cut a character",
          "[shared][strings]") {
  using kiln::escapeInvalidUtf8;
  using kiln::truncateUtf8;
  using kiln::utf8SequenceLength;
  CHECK(utf8SequenceLength("a", 0) == 1);
  CHECK(utf8SequenceLength("\xC3\xA9", 0) == 2);
  CHECK(utf8SequenceLength("\xE2\x82\xAC", 0) == 3);
  CHECK(utf8SequenceLength("\xF0\x9F\x98\x80", 0) == 4);
  CHECK(utf8SequenceLength("\xC3", 0) == 0);              // cut
  CHECK(utf8SequenceLength("\xC0\xAF", 0) == 0);          // overlong
  CHECK(utf8SequenceLength("\xED\xA0\x80", 0) == 0);      // surrogate
  CHECK(utf8SequenceLength("\xF4\x90\x80\x80", 0) == 0);  // past U+10FFFF
  CHECK(utf8SequenceLength("\x80", 0) == 0);
  CHECK(escapeInvalidUtf8("caf\xC3\xA9") == "caf\xC3\xA9");
  CHECK(escapeInvalidUtf8("a\xFF" "b\xC3") == "a\\xFFb\\xC3");
  CHECK(truncateUtf8("caf\xC3\xA9", 4) == "caf");
  CHECK(truncateUtf8("caf\xC3\xA9", 5) == "caf\xC3\xA9");
  CHECK(truncateUtf8("ab\xFF" "cd", 3) == "ab\xFF");
  CHECK(truncateUtf8("", 0).empty());
}
