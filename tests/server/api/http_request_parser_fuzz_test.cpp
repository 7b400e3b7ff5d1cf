// Regressions found by the http_request fuzzer (docs/fuzzing.md); their inputs are in
// tests/fuzz/regressions/http_request/.
#include <catch2/catch.hpp>

#include <string>
#include <string_view>
#include <utility>

#include "server/api/http_request_parser.h"

using kiln::server::HttpRequestParser;

namespace {

constexpr size_t kMaxBody = 1024;

/// The failure after `wire` arrives in one read, then after it arrives one byte per read.
std::pair<std::string, std::string> failureWholeAndByBytes(std::string_view wire) {
  HttpRequestParser whole(kMaxBody);
  whole.feed(wire);
  HttpRequestParser bytes(kMaxBody);
  for (char c : wire) bytes.feed(std::string_view(&c, 1));
  return {std::to_string(whole.failureStatus()) + " " + whole.failureMessage(),
          std::to_string(bytes.failureStatus()) + " " + bytes.failureMessage()};
}

}  // namespace

TEST_CASE("HttpRequestParser refuses a bad request line in the same words however it arrives",
          "[server][http][parser][fuzz]") {
  // The first fuzz find: a request line of one non-token byte was "not METHOD target
  // HTTP/1.x" when read whole but "not an HTTP token" when read in pieces.
  for (std::string_view wire : {std::string_view("\x90\n\n"), std::string_view("GE(T\r\n\r\n"),
                                std::string_view("G\rX / HTTP/1.1\r\n\r\n"),
                                std::string_view("GET\r\n\r\n"), std::string_view(" / HTTP/1.1\r\n\r\n"),
                                std::string_view("GET / HTTP/1.1\rX\r\n\r\n")}) {
    CAPTURE(wire);
    const auto [whole, bytes] = failureWholeAndByBytes(wire);
    CHECK(whole.starts_with("400 "));
    CHECK(whole == bytes);
  }
  CHECK(failureWholeAndByBytes("\x90\n\n").first == "400 The request method is not an HTTP token.");
  CHECK(failureWholeAndByBytes("GET / HTTP/1.1\rX\r\n\r\n").first ==
        "400 The request line has a stray carriage return.");
}
