#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "server/api/http_request_parser.h"

using kiln::server::HttpRequestParser;

namespace {

std::vector<HttpRequestParser::Request> drain(HttpRequestParser& parser) {
  std::vector<HttpRequestParser::Request> out;
  while (auto r = parser.next()) out.push_back(std::move(*r));
  return out;
}

constexpr size_t kMaxBody = 1024;

}  // namespace

TEST_CASE("HttpRequestParser yields every pipelined request in order", "[server][http][parser]") {
  HttpRequestParser parser(kMaxBody);
  parser.feed(
      "GET /v1/nodes?limit=2&fields=uuid,name HTTP/1.1\r\nHost: a\r\n\r\n"
      "POST /v1/nodes HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}"
      "DELETE /v1/nodes/n1 HTTP/1.1\r\nHost: a\r\n\r\n");
  const auto requests = drain(parser);
  REQUIRE(requests.size() == 3);
  CHECK(requests[0].method == "GET");
  CHECK(requests[0].path == "/v1/nodes");
  CHECK(requests[0].param("limit") == "2");
  CHECK(requests[0].param("fields") == "uuid,name");
  CHECK(requests[1].method == "POST");
  CHECK(requests[1].body == "{}");
  CHECK(requests[2].method == "DELETE");
  CHECK(requests[2].path == "/v1/nodes/n1");
  CHECK_FALSE(parser.failed());
  CHECK_FALSE(parser.midRequest());
}

TEST_CASE("HttpRequestParser frames requests that arrive one byte at a time",
          "[server][http][parser]") {
  const std::string wire =
      "PATCH /v1/nodes/n1 HTTP/1.1\r\nHost: a\r\nContent-Type: application/json-patch+json\r\n"
      "X-Long: " + std::string(300, 'x') + "\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\n[{\"op\r\n3\r\n\":1\r\n0\r\n\r\n";
  HttpRequestParser parser(kMaxBody);
  for (char c : wire) {
    REQUIRE(drain(parser).empty());
    parser.feed(std::string_view(&c, 1));
  }
  const auto requests = drain(parser);
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].body == "[{\"op\":1");
  CHECK(requests[0].header("content-type") == "application/json-patch+json");
  CHECK(requests[0].header("x-long") == std::string(300, 'x'));
}

TEST_CASE("HttpRequestParser lowercases header names and trims values", "[server][http][parser]") {
  HttpRequestParser parser(kMaxBody);
  parser.feed("GET / HTTP/1.1\r\nX-OpenStack-Ironic-API-Version:   1.78  \r\nHost: a\r\n\r\n");
  auto r = parser.next();
  REQUIRE(r);
  CHECK(r->header("x-openstack-ironic-api-version") == "1.78");
}

TEST_CASE("HttpRequestParser says which connections stay open", "[server][http][parser]") {
  auto keepAlive = [](const std::string& wire) {
    HttpRequestParser parser(kMaxBody);
    parser.feed(wire);
    auto r = parser.next();
    REQUIRE(r);
    return r->keepAlive;
  };
  CHECK(keepAlive("GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
  CHECK_FALSE(keepAlive("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"));
  CHECK_FALSE(keepAlive("GET / HTTP/1.0\r\n\r\n"));
  CHECK(keepAlive("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  // Kiln never switches protocols (RFC 9110 §7.8 lets it ignore Upgrade): the connection stays
  // HTTP/1.1. After a CONNECT (refused by routing) the connection closes.
  CHECK(keepAlive("GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"));
  CHECK_FALSE(keepAlive("CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n"));
}

TEST_CASE("HttpRequestParser refuses what would let a body be read as a request",
          "[server][http][parser]") {
  struct Case {
    const char* name;
    std::string wire;
    int status;
  };
  const std::vector<Case> cases = {
      {"Content-Length beyond 64 bits", "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 400},
      {"negative Content-Length", "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400},
      {"two Content-Lengths", "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400},
      {"Content-Length and chunked", "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
      {"an encoding other than chunked", "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 400},
      {"an invalid chunk size", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
      {"a method that is not a token", "GE(T / HTTP/1.1\r\n\r\n", 400},
      {"a misspelt protocol", "GET / HTTX/1.1\r\n\r\n", 400},
      {"two spaces in the request line", "GET  / HTTP/1.1\r\n\r\n", 400},
      {"a space before a header's colon", "POST / HTTP/1.1\r\nTransfer-Encoding : chunked\r\nContent-Length: 3\r\n\r\n", 400},
      {"a folded header", "POST / HTTP/1.1\r\nX-A: 1\r\n Transfer-Encoding: chunked\r\n\r\n", 400},
      {"a bare CR in a header", "GET / HTTP/1.1\r\nX-A: 1\rContent-Length: 5\r\n\r\n", 400},
      {"bytes after a chunk's data", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}XY0\r\n\r\n", 400},
      {"a chunk size too long for 64 bits", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n", 400},
      {"a chunked HTTP/1.0 request", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
      {"two Host headers", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
      {"a Content-Length list", "POST / HTTP/1.1\r\nContent-Length: 1, 1\r\n\r\na", 400},
      {"129 headers", "GET / HTTP/1.1\r\n" + [] {
         std::string h;
         for (int i = 0; i < 129; ++i) h += "X-" + std::to_string(i) + ": v\r\n";
         return h;
       }() + "\r\n", 431},
      {"HTTP/2.0", "GET / HTTP/2.0\r\n\r\n", 400},
      {"HTTP/1.9", "GET / HTTP/1.9\r\n\r\n", 400},
      {"a control character in a header", std::string("GET / HTTP/1.1\r\nX: a\x01z\r\n\r\n"), 400},
      {"a space in the header name", "GET / HTTP/1.1\r\nX Y: 1\r\n\r\n", 400},
      {"a Content-Length over the limit", "POST / HTTP/1.1\r\nContent-Length: 1025\r\n\r\n", 413},
      {"a chunked body over the limit",
       "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n400\r\n" + std::string(1024, 'a') +
           "\r\n1\r\nb\r\n0\r\n\r\n",
       413},
      {"headers over 80 KiB", "GET / HTTP/1.1\r\nX: " + std::string(90 * 1024, 'a') + "\r\n\r\n", 431},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    HttpRequestParser parser(kMaxBody);
    // The smuggled request after the bad one must never come out of the parser.
    parser.feed(c.wire);
    parser.feed("DELETE /v1/nodes/victim HTTP/1.1\r\nHost: a\r\n\r\n");
    CHECK(parser.failed());
    CHECK(parser.failureStatus() == c.status);
    CHECK_FALSE(parser.failureMessage().empty());
    for (const auto& r : drain(parser)) CHECK(r.method != "DELETE");
  }
}

TEST_CASE("HttpRequestParser answers the requests before a framing error",
          "[server][http][parser]") {
  HttpRequestParser parser(kMaxBody);
  parser.feed("GET /v1 HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nContent-Length: x\r\n\r\n");
  const auto requests = drain(parser);
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].path == "/v1");
  CHECK(parser.failed());
}

TEST_CASE("HttpRequestParser reports a pending 100-continue until it is sent",
          "[server][http][parser]") {
  HttpRequestParser parser(kMaxBody);
  parser.feed("POST /v1/nodes HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
  CHECK(parser.midRequest());
  CHECK(parser.wantsContinue());
  parser.continueSent();
  CHECK_FALSE(parser.wantsContinue());
  parser.feed("{}");
  REQUIRE(parser.next());
  CHECK_FALSE(parser.midRequest());

  HttpRequestParser tooLarge(kMaxBody);
  tooLarge.feed("POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n");
  CHECK(tooLarge.failureStatus() == 413);
  CHECK_FALSE(tooLarge.wantsContinue());
}

TEST_CASE("HttpRequestParser takes the path of absolute-form targets", "[server][http][parser]") {
  HttpRequestParser parser(kMaxBody);
  parser.feed("\r\nGET http://kiln:6385/v1/nodes?limit=1 HTTP/1.1\r\nHost: kiln\r\n\r\nOPTIONS * HTTP/1.1\r\n\r\n");
  auto first = parser.next();
  REQUIRE(first);
  CHECK(first->path == "/v1/nodes");
  CHECK(first->param("limit") == "1");
  auto second = parser.next();
  REQUIRE(second);
  CHECK(second->path == "*");
}

TEST_CASE("HttpRequestParser routes unknown methods and reads chunked trailers",
          "[server][http][parser]") {
  HttpRequestParser parser(kMaxBody);
  parser.feed("BREW /v1 HTTP/1.1\nHost: a\n\n"
              "POST /v1 HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n1;ext=1\r\na\r\n0\r\nX-Sum: 1\r\n\r\n");
  auto first = parser.next();
  REQUIRE(first);
  CHECK(first->method == "BREW");  // the router answers 405
  auto second = parser.next();
  REQUIRE(second);
  CHECK(second->body == "a");
  CHECK_FALSE(parser.failed());
}

TEST_CASE("HttpRequestParser reads nothing after a request that closes the connection",
          "[server][http][parser]") {
  HttpRequestParser parser(kMaxBody);
  parser.feed("GET / HTTP/1.1\r\nConnection: close\r\n\r\nDELETE /v1/nodes/x HTTP/1.1\r\n\r\n");
  REQUIRE(parser.next());
  CHECK_FALSE(parser.next());
  CHECK_FALSE(parser.failed());
  CHECK_FALSE(parser.midRequest());
}

TEST_CASE("HttpRequestParser refuses garbage at its first bytes, not after 80 KiB",
          "[server][http][parser]") {
  HttpRequestParser tlsHello(kMaxBody);
  tlsHello.feed(std::string("\x16\x03\x01\x00\xc4", 5));
  CHECK(tlsHello.failureStatus() == 400);
  HttpRequestParser badLine(kMaxBody);
  badLine.feed("GET /v1 HTTP/1.1 extra\r\n");  // the head is not complete, its first line is
  CHECK(badLine.failureStatus() == 400);
  HttpRequestParser slow(kMaxBody);
  slow.feed("GET /v1 HT");
  CHECK_FALSE(slow.failed());
  CHECK(slow.midRequest());
}
