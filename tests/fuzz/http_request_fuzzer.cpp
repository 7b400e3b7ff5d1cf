// Fuzz target http_request (docs/fuzzing.md): the bytes of one connection through
// HttpRequestParser (server/api/http_request_parser.h). The first byte configures the run, the
// rest is the wire:
//   bits 0-1  the body limit: 16 MiB (the server's default), 1 KiB, 64 KiB, 16 bytes
//   bits 2-7  how the wire is cut into feed() calls: 0 = one byte at a time, otherwise sizes
//             1..61 drawn from a generator seeded with the value
// Checks: the parser yields the same requests and the same failure whether the wire arrives
// whole or cut up; no body exceeds the limit; a failure is a 4xx; and the first requests it
// yields (the in-process server of fuzz_server.h answers them, as the endpoint would) get no
// 5xx and well-formed bodies.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/api/http_request_parser.h"
#include "tests/fuzz/fuzz_server.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using kiln::server::HttpRequestParser;

constexpr size_t kBodyLimits[] = {16 * 1024 * 1024, 1024, 64 * 1024, 16};
/// Requests of one input sent on to the API (each costs a fresh server state).
constexpr size_t kMaxApiCalls = 3;

struct Outcome {
  std::vector<HttpRequestParser::Request> requests;
  int failureStatus = 0;
  std::string failureMessage;
};

void drain(HttpRequestParser& parser, Outcome& out) {
  while (auto r = parser.next()) out.requests.push_back(std::move(*r));
}

Outcome parseWhole(std::string_view wire, size_t limit) {
  HttpRequestParser parser(limit);
  Outcome out;
  parser.feed(wire);
  drain(parser, out);
  out.failureStatus = parser.failureStatus();
  out.failureMessage = parser.failureMessage();
  return out;
}

Outcome parsePieces(std::string_view wire, size_t limit, uint32_t seed) {
  HttpRequestParser parser(limit);
  Outcome out;
  uint32_t state = seed * 2654435761u;
  while (!wire.empty()) {
    size_t n = 1;
    if (seed != 0) {
      state = state * 1103515245u + 12345u;
      n = 1 + (state >> 16) % 61;
    }
    n = std::min(n, wire.size());
    parser.feed(wire.substr(0, n));
    wire.remove_prefix(n);
    drain(parser, out);  // as the endpoint does after every read
  }
  out.failureStatus = parser.failureStatus();
  out.failureMessage = parser.failureMessage();
  return out;
}

std::string describe(const HttpRequestParser::Request& r) {
  std::string out = r.method + " " + r.path + " (" + std::to_string(r.query.size()) + " params, " +
                    std::to_string(r.headers.size()) + " headers, " + std::to_string(r.body.size()) +
                    " body bytes, keep-alive " + (r.keepAlive ? "yes" : "no") + ")";
  return out;
}

bool same(const HttpRequestParser::Request& a, const HttpRequestParser::Request& b) {
  return a.method == b.method && a.path == b.path && a.query == b.query && a.headers == b.headers &&
         a.body == b.body && a.keepAlive == b.keepAlive;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return -1;
  const size_t limit = kBodyLimits[data[0] & 3];
  const uint32_t seed = data[0] >> 2;
  const std::string_view wire(reinterpret_cast<const char*>(data) + 1, size - 1);

  const Outcome whole = parseWhole(wire, limit);
  const Outcome pieces = parsePieces(wire, limit, seed);
  if (whole.requests.size() != pieces.requests.size()) {
    kiln::fuzz::fail("the parser yields " + std::to_string(whole.requests.size()) +
                         " requests from the whole wire but " +
                         std::to_string(pieces.requests.size()) + " from pieces",
                     wire);
  }
  for (size_t i = 0; i < whole.requests.size(); ++i) {
    if (!same(whole.requests[i], pieces.requests[i])) {
      kiln::fuzz::fail("request " + std::to_string(i) + " differs when the wire is cut up: " +
                           describe(whole.requests[i]) + " vs " + describe(pieces.requests[i]),
                       wire);
    }
  }
  if (whole.failureStatus != pieces.failureStatus || whole.failureMessage != pieces.failureMessage) {
    kiln::fuzz::fail("the failure differs when the wire is cut up: " +
                         std::to_string(whole.failureStatus) + " " + whole.failureMessage + " vs " +
                         std::to_string(pieces.failureStatus) + " " + pieces.failureMessage,
                     wire);
  }
  if (whole.failureStatus != 0 && (whole.failureStatus < 400 || whole.failureStatus > 499)) {
    kiln::fuzz::fail("a framing failure answers " + std::to_string(whole.failureStatus), wire);
  }
  if (!kiln::fuzz::isValidUtf8(whole.failureMessage)) {
    kiln::fuzz::fail("the failure message is not UTF-8", whole.failureMessage);
  }
  for (const auto& r : whole.requests) {
    if (r.body.size() > limit) kiln::fuzz::fail("a body exceeds the limit: " + describe(r), wire);
  }
  for (size_t i = 0; i < whole.requests.size() && i < kMaxApiCalls; ++i) {
    kiln::fuzz::FuzzServer::instance().call(whole.requests[i]);
  }
  return 0;
}
