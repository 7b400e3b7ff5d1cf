#include "server/api/http_request_parser.h"

#include <charconv>

#include "shared/core/strings.h"

namespace kiln::server {
namespace {

constexpr size_t kMaxHeadBytes = 80 * 1024;  ///< request line + headers
constexpr size_t kMaxHeaders = 128;
constexpr size_t kMaxChunkLine = 4096;       ///< chunk size line with its extensions
constexpr size_t kMaxTrailerBytes = 16 * 1024;
constexpr size_t kMaxLeadingBlankLines = 8;  ///< RFC 9112 §2.2: empty lines before a request

bool isTokenChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool isToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!isTokenChar(c)) return false;
  }
  return true;
}

/// RFC 9110 §5.5 field-value characters: VCHAR, obs-text, SP and HTAB.
bool isFieldValue(std::string_view s) {
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  return true;
}

/// Request-target characters: visible ASCII, plus bytes above 0x7f (some clients send raw
/// UTF-8; answers replace what is not valid UTF-8).
bool isTargetChar(char ch) {
  const auto c = static_cast<unsigned char>(ch);
  return c > 0x20 && c != 0x7f;
}

std::string_view trimOws(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

/// Splits a line off `text` at LF; the line must end in CRLF or a bare LF (RFC 9112 §2.2
/// lets a recipient accept a bare LF); a CR anywhere else is an error. Returns false when the
/// line is malformed.
bool takeLine(std::string_view& text, std::string_view& line) {
  const size_t lf = text.find('\n');
  line = text.substr(0, lf);
  text.remove_prefix(lf == std::string_view::npos ? text.size() : lf + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line.find('\r') == std::string_view::npos;
}

/// True for each comma-separated item of a header value equal (ignoring case) to `token`.
bool listHas(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    if (equalsIgnoreCase(trimOws(value.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

/// The end of the header section in `text` (the offset just past the blank line), if any.
std::optional<size_t> headEnd(std::string_view text, size_t from) {
  for (size_t lf = text.find('\n', from); lf != std::string_view::npos; lf = text.find('\n', lf + 1)) {
    if (lf + 1 < text.size() && text[lf + 1] == '\n') return lf + 2;
    if (lf + 2 < text.size() && text[lf + 1] == '\r' && text[lf + 2] == '\n') return lf + 3;
  }
  return std::nullopt;
}

}  // namespace

HttpRequestParser::HttpRequestParser(size_t maxBodyBytes) : maxBodyBytes_(maxBodyBytes) {}

void HttpRequestParser::fail(int status, std::string message) {
  if (failureStatus_ != 0) return;
  failureStatus_ = status;
  failureMessage_ = std::move(message);
  stopped_ = true;
  continuePending_ = false;
  buffer_.clear();
  offset_ = 0;
}

void HttpRequestParser::feed(std::string_view bytes) {
  if (stopped_ || bytes.empty()) return;
  if (offset_ > 0 && offset_ == buffer_.size()) {
    buffer_.clear();
    offset_ = 0;
  }
  buffer_.append(bytes.data(), bytes.size());
  while (!stopped_ && step()) {
  }
  // Keep what is not consumed yet; drop the rest once it is a large share of the buffer.
  if (offset_ > 64 * 1024 && offset_ * 2 > buffer_.size()) {
    buffer_.erase(0, offset_);
    offset_ = 0;
  }
}

bool HttpRequestParser::step() {
  std::string_view pending = std::string_view(buffer_).substr(offset_);
  switch (phase_) {
    case Phase::Head: {
      // Empty lines before a request line are skipped (a few of them).
      while (!pending.empty() && (pending[0] == '\n' || (pending[0] == '\r' && pending.size() > 1 && pending[1] == '\n'))) {
        const size_t n = pending[0] == '\n' ? 1 : 2;
        if (++blankLines_ > kMaxLeadingBlankLines) {
          fail(400, "The request starts with too many empty lines.");
          return false;
        }
        offset_ += n;
        pending.remove_prefix(n);
      }
      if (pending.empty()) return false;
      inMessage_ = true;
      // The head's end may straddle two reads: search again from just before the old end.
      const size_t from = scanned_ > 2 ? scanned_ - 2 : 0;
      const auto end = headEnd(pending, from);
      // A whole head within the limit is checked by parseHead; otherwise garbage is refused as
      // soon as its first line (or the method) shows it, not after 80 KiB or a timeout.
      if ((!end || *end > kMaxHeadBytes) && !lineChecked_ && !checkEarlyRequestLine(pending)) {
        return false;
      }
      if (!end) {
        scanned_ = pending.size();
        if (pending.size() > kMaxHeadBytes) {
          fail(431, "The request line and headers are larger than 80 KiB.");
        }
        return false;
      }
      if (*end > kMaxHeadBytes) {
        fail(431, "The request line and headers are larger than 80 KiB.");
        return false;
      }
      scanned_ = 0;
      blankLines_ = 0;
      lineChecked_ = false;
      offset_ += *end;
      return parseHead(pending.substr(0, *end));
    }
    case Phase::Body: {
      const size_t take = std::min<size_t>(pending.size(), remaining_);
      current_.body.append(pending.data(), take);
      offset_ += take;
      remaining_ -= take;
      if (remaining_ > 0) return false;
      complete();
      return true;
    }
    case Phase::ChunkSize: {
      const size_t lf = pending.find('\n');
      if (lf == std::string_view::npos) {
        if (pending.size() > kMaxChunkLine) fail(400, "A chunk size line of the request body is too long.");
        return false;
      }
      std::string_view rest = pending;
      std::string_view line;
      const bool clean = takeLine(rest, line);
      offset_ += lf + 1;
      const std::string_view size = trimOws(line.substr(0, line.find(';')));  // extensions ignored
      uint64_t value = 0;
      const auto [ptr, ec] = std::from_chars(size.data(), size.data() + size.size(), value, 16);
      if (!clean || size.empty() || size.size() > 16 || ec != std::errc() || ptr != size.data() + size.size() ||
          !isFieldValue(line)) {
        fail(400, "A chunk of the request body has an invalid size line.");
        return false;
      }
      if (value == 0) {
        phase_ = Phase::Trailers;
        trailerBytes_ = 0;
        return true;
      }
      if (value > maxBodyBytes_ || current_.body.size() + value > maxBodyBytes_) {
        failTooLarge();
        return false;
      }
      remaining_ = static_cast<size_t>(value);
      phase_ = Phase::ChunkData;
      return true;
    }
    case Phase::ChunkData: {
      const size_t take = std::min<size_t>(pending.size(), remaining_);
      current_.body.append(pending.data(), take);
      offset_ += take;
      remaining_ -= take;
      if (remaining_ > 0) return false;
      phase_ = Phase::ChunkEnd;
      return true;
    }
    case Phase::ChunkEnd: {
      // Exactly CRLF (or LF) after the chunk's data.
      if (pending.empty()) return false;
      if (pending[0] == '\n') {
        offset_ += 1;
      } else if (pending[0] == '\r') {
        if (pending.size() < 2) return false;
        if (pending[1] != '\n') {
          fail(400, "A chunk of the request body is longer than its size says.");
          return false;
        }
        offset_ += 2;
      } else {
        fail(400, "A chunk of the request body is longer than its size says.");
        return false;
      }
      phase_ = Phase::ChunkSize;
      return true;
    }
    case Phase::Trailers: {
      const size_t lf = pending.find('\n');
      if (lf == std::string_view::npos) {
        if (trailerBytes_ + pending.size() > kMaxTrailerBytes) fail(431, "The request's trailer fields are too large.");
        return false;
      }
      std::string_view rest = pending;
      std::string_view line;
      const bool clean = takeLine(rest, line);
      offset_ += lf + 1;
      trailerBytes_ += lf + 1;
      if (!clean || trailerBytes_ > kMaxTrailerBytes) {
        fail(clean ? 431 : 400, clean ? "The request's trailer fields are too large."
                                      : "A trailer field of the request is malformed.");
        return false;
      }
      if (line.empty()) {  // trailer fields are read and dropped
        complete();
        return true;
      }
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos || !isToken(line.substr(0, colon)) || !isFieldValue(line.substr(colon + 1))) {
        fail(400, "A trailer field of the request is malformed.");
        return false;
      }
      return true;
    }
  }
  return false;
}

bool HttpRequestParser::checkEarlyRequestLine(std::string_view pending) {
  const size_t lf = pending.find('\n');
  if (lf == std::string_view::npos) {
    // Only what the whole line would be refused for too, with the same words: a CR that ends
    // the bytes so far may be the line's CRLF.
    std::string_view method = pending.substr(0, pending.find(' '));
    if (method.size() == pending.size() && method.ends_with('\r')) method.remove_suffix(1);
    for (char c : method) {
      if (!isTokenChar(c)) {
        fail(400, "The request method is not an HTTP token.");
        return false;
      }
    }
    return true;
  }
  std::string_view line;
  RequestLine requestLine;
  takeLine(pending, line);  // parseRequestLine refuses a stray CR
  if (!parseRequestLine(line, requestLine)) return false;
  lineChecked_ = true;
  return true;
}

bool HttpRequestParser::parseRequestLine(std::string_view line, RequestLine& out) {
  // request-line = method SP request-target SP HTTP-version (RFC 9112 §3). The method is
  // checked first, as step() checks it before the line is complete: the answer must not depend
  // on how the bytes arrived.
  if (!isToken(line.substr(0, line.find(' ')))) {
    fail(400, "The request method is not an HTTP token.");
    return false;
  }
  if (line.find('\r') != std::string_view::npos) {
    fail(400, "The request line has a stray carriage return.");
    return false;
  }
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    fail(400, "The request line is not \"METHOD target HTTP/1.x\".");
    return false;
  }
  out.method = line.substr(0, sp1);
  out.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (out.target.empty()) {
    fail(400, "The request target is empty.");
    return false;
  }
  for (char c : out.target) {
    if (!isTargetChar(c)) {
      fail(400, "The request target has a character HTTP does not allow.");
      return false;
    }
  }
  if (version == "HTTP/1.1") {
    out.minor = 1;
  } else if (version == "HTTP/1.0") {
    out.minor = 0;
  } else {
    fail(400, "Kiln speaks HTTP/1.0 and HTTP/1.1 only.");
    return false;
  }
  return true;
}

bool HttpRequestParser::parseHead(std::string_view head) {
  std::string_view line;
  takeLine(head, line);  // parseRequestLine refuses a stray CR
  RequestLine requestLine;
  if (!parseRequestLine(line, requestLine)) return false;
  const std::string_view method = requestLine.method;
  const std::string_view target = requestLine.target;
  const int minor = requestLine.minor;

  current_ = Request{};
  current_.method = std::string(method);
  std::string_view path = target;
  // absolute-form (RFC 9112 §3.2.2): the path of the URL; "*" and anything else that does not
  // start with '/' reaches the router as a path no route matches.
  if (const size_t scheme = path.find("://"); scheme != std::string_view::npos && path[0] != '/') {
    const size_t slash = path.find('/', scheme + 3);
    path = slash == std::string_view::npos ? std::string_view("/") : path.substr(slash);
  }
  path = path.substr(0, path.find('#'));
  const size_t question = path.find('?');
  current_.path = std::string(path.substr(0, question));
  if (question != std::string_view::npos) current_.query = parseQueryString(path.substr(question + 1));

  // field-line = field-name ":" OWS field-value OWS; no space before the colon and no
  // obsolete line folding (RFC 9112 §5): both are how requests get smuggled past proxies.
  std::optional<uint64_t> contentLength;
  int contentLengths = 0;
  int transferEncodings = 0;
  bool chunked = false;
  int hosts = 0;
  while (!head.empty()) {
    if (!takeLine(head, line)) {
      fail(400, "A request header has a stray carriage return.");
      return false;
    }
    if (line.empty()) break;
    if (line[0] == ' ' || line[0] == '\t') {
      fail(400, "Folded (multi-line) request headers are not accepted.");
      return false;
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || !isToken(line.substr(0, colon))) {
      fail(400, "A request header name has a character HTTP does not allow.");
      return false;
    }
    const std::string_view value = trimOws(line.substr(colon + 1));
    if (!isFieldValue(value)) {
      fail(400, "A request header value has a control character.");
      return false;
    }
    if (current_.headers.size() >= kMaxHeaders) {
      fail(431, "The request has more than " + std::to_string(kMaxHeaders) + " headers.");
      return false;
    }
    std::string name = asciiLower(line.substr(0, colon));
    if (name == "content-length") {
      ++contentLengths;
      uint64_t n = 0;
      const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (value.empty() || ec != std::errc() || ptr != value.data() + value.size()) {
        fail(400, "The Content-Length header is not a number Kiln accepts.");
        return false;
      }
      contentLength = n;
    } else if (name == "transfer-encoding") {
      ++transferEncodings;
      chunked = equalsIgnoreCase(value, "chunked");
      if (!chunked) {
        fail(400, "Only the chunked Transfer-Encoding is accepted on requests.");
        return false;
      }
    } else if (name == "host") {
      ++hosts;
    }
    current_.headers.emplace_back(std::move(name), std::string(value));
  }
  if (contentLengths > 1 || transferEncodings > 1 || (contentLengths && transferEncodings)) {
    fail(400, "The request has more than one Content-Length or Transfer-Encoding, or both.");
    return false;
  }
  if (transferEncodings && minor == 0) {
    fail(400, "HTTP/1.0 requests cannot be chunked.");
    return false;
  }
  if (hosts > 1) {
    fail(400, "The request has more than one Host header.");
    return false;
  }

  const auto connection = current_.header("connection");
  if (minor == 1) {
    current_.keepAlive = !(connection && listHas(*connection, "close"));
  } else {
    current_.keepAlive = connection && listHas(*connection, "keep-alive") && !listHas(*connection, "close");
  }
  // A CONNECT is refused by routing; whatever follows it would be tunnel data.
  if (current_.method == "CONNECT") current_.keepAlive = false;

  if (contentLength && *contentLength > maxBodyBytes_) {
    failTooLarge();
    return false;
  }
  const bool expectsBody = chunked || (contentLength && *contentLength > 0);
  if (expectsBody && minor == 1) {
    const auto expect = current_.header("expect");
    if (expect && equalsIgnoreCase(*expect, "100-continue")) continuePending_ = true;
  }
  if (chunked) {
    phase_ = Phase::ChunkSize;
  } else if (contentLength && *contentLength > 0) {
    remaining_ = static_cast<size_t>(*contentLength);
    phase_ = Phase::Body;
  } else {
    complete();
  }
  return true;
}

void HttpRequestParser::failTooLarge() {
  fail(413, "The request body is larger than the " + std::to_string(maxBodyBytes_) + " bytes Kiln accepts.");
}

void HttpRequestParser::complete() {
  ready_.push_back(std::move(current_));
  current_ = Request{};
  phase_ = Phase::Head;
  continuePending_ = false;
  inMessage_ = false;
  if (!ready_.back().keepAlive) stopped_ = true;  // nothing after it is read
}

bool HttpRequestParser::midRequest() const {
  return inMessage_ || (!stopped_ && offset_ < buffer_.size());
}

std::optional<HttpRequestParser::Request> HttpRequestParser::next() {
  if (ready_.empty()) return std::nullopt;
  Request r = std::move(ready_.front());
  ready_.pop_front();
  return r;
}

}  // namespace kiln::server
