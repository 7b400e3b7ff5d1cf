// File: server/api/http_request_parser.h
//
// The HTTP/1.1 request framing of kiln-server's endpoint (RFC 9112). Pistache 0.0.5 keeps its
// reactor, sockets, writer and timers, but its request parser is not used: it drops pipelined
// requests, answers framing errors in plain text without consuming the body (a request
// smuggled in that body then runs) and turns an oversized Content-Length into a 500. Debian's
// libhttp-parser is no better fit: it is built in its lenient mode, which accepts "HTTX/1.1",
// any two bytes after a chunk's data and a space before a header's colon
// (docs/security.md has the evidence). So the framing is Kiln's own, strict and fuzzed:
//  - one Content-Length (decimal, within the body limit) or "Transfer-Encoding: chunked",
//    never both; HTTP/1.0 and HTTP/1.1 only; a Host header at most once;
//  - header names are tokens with the colon right after them, values have no control
//    characters, no line folding; lines end in CRLF (a bare LF is accepted, a bare CR is not);
//  - at most 80 KiB of request line and headers, 128 headers, and the configured body size.
// It reads one connection's bytes, in whatever pieces they arrive, and yields complete
// requests in order; after the first framing error (or a request that closes the connection)
// it parses nothing more, and the connection must close once the last answer is sent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include "server/api/http.h"

namespace kiln::server {

class HttpRequestParser {
 public:
  /// A complete request and what the connection does after answering it.
  struct Request : ApiRequest {
    /// False for "Connection: close", HTTP/1.0 without keep-alive, and CONNECT.
    bool keepAlive = true;
  };

  /// Bodies above `maxBodyBytes` are refused with 413.
  explicit HttpRequestParser(size_t maxBodyBytes);

  /// Consumes `bytes`. Complete requests queue up for next(); after a framing error or a
  /// request that ends the connection, later bytes are ignored.
  void feed(std::string_view bytes);

  /// The next complete request, oldest first.
  std::optional<Request> next();

  /// True once the input could not be framed; failureStatus() (400, 413 or 431) and
  /// failureMessage() then describe it in words fit for an API error.
  bool failed() const { return failureStatus_ != 0; }
  int failureStatus() const { return failureStatus_; }
  const std::string& failureMessage() const { return failureMessage_; }

  /// True while part of a request has been read (the connection is not idle).
  bool midRequest() const;

  /// True when the request being read asked for "Expect: 100-continue" and no interim answer
  /// has been sent yet; continueSent() records that the caller sent it.
  bool wantsContinue() const { return continuePending_; }
  void continueSent() { continuePending_ = false; }

 private:
  enum class Phase { Head, Body, ChunkSize, ChunkData, ChunkEnd, Trailers };

  /// Advances over buffered bytes; false when it needs more input (or stopped).
  bool step();
  struct RequestLine {
    std::string_view method;
    std::string_view target;
    int minor = 1;
  };
  bool parseRequestLine(std::string_view line, RequestLine& out);
  /// The request line of a head that is not complete yet (or too large), checked as far as it
  /// has arrived, with the words parseHead would use; false after fail().
  bool checkEarlyRequestLine(std::string_view pending);
  bool parseHead(std::string_view head);
  void complete();
  void fail(int status, std::string message);
  void failTooLarge();

  size_t maxBodyBytes_;
  std::string buffer_;  ///< bytes read and not yet consumed start at offset_
  size_t offset_ = 0;
  size_t scanned_ = 0;  ///< bytes of the pending head already searched for its end
  Phase phase_ = Phase::Head;
  size_t remaining_ = 0;  ///< body or chunk bytes still to read
  size_t blankLines_ = 0;
  bool lineChecked_ = false;  ///< the pending head's request line is known to be valid
  size_t trailerBytes_ = 0;
  Request current_;
  std::deque<Request> ready_;
  bool inMessage_ = false;
  bool continuePending_ = false;
  bool stopped_ = false;
  int failureStatus_ = 0;
  std::string failureMessage_;
};

}  // namespace kiln::server
