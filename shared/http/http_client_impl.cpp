// The one Boost.Beast + Asio translation unit (house style, section 5: Beast's templates stay
// here; everything else sees shared/http/http_client.h).
//
// Each request opens a new connection and runs asio's asynchronous operations one at a time on
// a private io_context. The asynchronous forms are used only because they honour a deadline:
// beast::tcp_stream closes the socket when the request's deadline passes, so a peer that never
// answers ends the exchange with DeadlineExceeded instead of blocking the caller.

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <filesystem>
#include <limits>
#include <memory>
#include <vector>

#include "shared/core/secrets.h"
#include "shared/core/strings.h"
#include "shared/http/http_client.h"
#include "shared/http/url.h"

namespace kiln {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using ErrorCodeT = boost::system::error_code;
using Steady = std::chrono::steady_clock;

/// The body buffer `stream` hands to the sink: memory stays constant whatever the body size.
constexpr size_t kBodyBufferSize = 64 * 1024;
/// Response header block limit (Beast's default of 8 KiB is tight for some BMCs).
constexpr uint32_t kHeaderLimit = 64 * 1024;
/// Upper bound of the read buffer in front of the parser.
constexpr size_t kReadBufferLimit = 1024 * 1024;

std::string base64Encode(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(in[i]) << 16) |
                       (static_cast<uint8_t>(in[i + 1]) << 8) | static_cast<uint8_t>(in[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i + 1 == in.size()) {
    const uint32_t v = static_cast<uint8_t>(in[i]) << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    const uint32_t v = (static_cast<uint8_t>(in[i]) << 16) | (static_cast<uint8_t>(in[i + 1]) << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

bool isToken(std::string_view s) {
  if (s.empty()) {
    return false;
  }
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f ||
        std::string_view("()<>@,;:\\\"/[]?={}").find(c) != std::string_view::npos) {
      return false;
    }
  }
  return true;
}

bool hasLineBreak(std::string_view s) { return s.find_first_of("\r\n") != std::string_view::npos; }

bool isFollowedRedirect(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

/// One request/response exchange on a fresh connection. Not shared between threads. With
/// `stopAtRedirect`, a redirect status with a Location ends the exchange after the header.
class Exchange {
 public:
  Exchange(const HttpRequest& request, HttpUrl url, Resolver& resolver, Steady::time_point deadline,
           std::string what, bool stopAtRedirect)
      : request_(request),
        resolver_(resolver),
        url_(std::move(url)),
        deadline_(deadline),
        stopAtRedirect_(stopAtRedirect),
        what_(std::move(what)) {}

  Result<HttpResponse> run(const BodySink& sink) {
    auto message = KILN_TRY(buildRequest());
    auto endpoints = KILN_TRY(resolve());
    if (!url_.https()) {
      beast::tcp_stream stream(ioc_);
      KILN_TRY_VOID(connect(stream, endpoints));
      return talk(stream, message, sink);
    }
    ssl::context ctx(ssl::context::tls_client);
    KILN_TRY_VOID(configureTls(ctx));
    beast::ssl_stream<beast::tcp_stream> stream(ioc_, ctx);
    SSL* handle = stream.native_handle();
    if (!url_.ipLiteral) {
      // SNI carries names only (RFC 6066 §3).
      SSL_set_tlsext_host_name(handle, url_.host.c_str());
    }
    if (request_.verifyTls) {
      // OpenSSL checks the name (or IP) against the certificate during verification, and a
      // mismatch is reported as such ("hostname mismatch") rather than as a bare failure.
      if (url_.ipLiteral) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(handle), url_.host.c_str());
      } else {
        SSL_set1_host(handle, url_.host.c_str());
      }
    }
    KILN_TRY_VOID(connect(beast::get_lowest_layer(stream), endpoints));
    const ErrorCodeT ec =
        wait([&](auto handler) { stream.async_handshake(ssl::stream_base::client, handler); });
    if (ec) {
      Error e = ioError("the TLS handshake", ec);
      e.reason = Reason::TlsHandshake;
      const long verify = SSL_get_verify_result(handle);
      if (verify != X509_V_OK && e.code == ErrorCode::Unavailable) {
        e.message += std::string(" (certificate: ") + X509_verify_cert_error_string(verify) + ")";
      }
      return std::unexpected(std::move(e));
    }
    return talk(stream, message, sink);
  }

 private:
  /// Starts one asynchronous operation and runs the io_context until it completes (the stream's
  /// expiry bounds it). Returns the operation's error code.
  template <class Initiate>
  ErrorCodeT wait(Initiate&& initiate) {
    ErrorCodeT result = asio::error::would_block;
    initiate([&result](ErrorCodeT ec, auto&&...) { result = ec; });
    ioc_.restart();
    ioc_.run();
    return result;
  }

  Error ioError(std::string_view step, const ErrorCodeT& ec) const {
    if (idlePhase_) {
      // Only the idle timer runs while reading the body: the overall deadline does not apply.
      if (ec == beast::error::timeout) {
        return Error{ErrorCode::DeadlineExceeded,
                     what_ + " stalled: no data for " +
                         std::to_string(request_.idleTimeout.count()) + " ms (during " +
                         std::string(step) + ")"};
      }
      return Error{ErrorCode::Unavailable,
                   what_ + " failed during " + std::string(step) + ": " + ec.message()};
    }
    if (ec == beast::error::timeout || Steady::now() >= deadline_) {
      return Error{ErrorCode::DeadlineExceeded, what_ + " timed out after " +
                                                    std::to_string(request_.timeout.count()) +
                                                    " ms (during " + std::string(step) + ")"};
    }
    return Error{ErrorCode::Unavailable,
                 what_ + " failed during " + std::string(step) + ": " + ec.message()};
  }

  Result<http::request<http::string_body>> buildRequest() const {
    http::request<http::string_body> req;
    req.version(11);
    const http::verb verb = http::string_to_verb(request_.method);
    if (verb != http::verb::unknown) {
      req.method(verb);
    } else if (isToken(request_.method)) {
      req.method_string(request_.method);
    } else {
      return invalid("Invalid HTTP method \"" + request_.method + "\"");
    }
    req.target(url_.target);
    req.set(http::field::host, url_.hostHeader());
    req.set(http::field::user_agent, "kiln");
    // One connection per request: say so, so the peer does not hold the socket open.
    req.set(http::field::connection, "close");
    if (request_.basicAuth) {
      req.set(http::field::authorization, "Basic " + base64Encode(request_.basicAuth->first + ":" +
                                                                  request_.basicAuth->second));
    }
    for (const auto& [name, value] : request_.headers) {
      if (!isToken(name) || hasLineBreak(value)) {
        return invalid("Invalid HTTP header \"" + name + "\"");
      }
      const std::string lower = asciiLower(name);
      if (lower == "host" || lower == "user-agent" || lower == "authorization" ||
          lower == "connection") {
        req.set(name, value);
      } else {
        req.insert(name, value);
      }
    }
    req.body() = request_.body;
    req.prepare_payload();
    return req;
  }

  Result<std::vector<tcp::endpoint>> resolve() {
    std::vector<tcp::endpoint> endpoints;
    if (url_.ipLiteral) {
      ErrorCodeT ec;
      const auto address = asio::ip::make_address(url_.host, ec);
      if (ec) {
        return invalid("Invalid IP address \"" + url_.host + "\" in URL " + request_.url);
      }
      endpoints.emplace_back(address, url_.port);
      return endpoints;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Steady::now());
    auto resolved =
        resolver_.resolve(url_.host, url_.port, std::max(left, std::chrono::milliseconds(1)));
    if (!resolved) {
      if (resolved.error().code == ErrorCode::DeadlineExceeded) {
        return fail(ErrorCode::DeadlineExceeded, what_ + " timed out after " +
                                                     std::to_string(request_.timeout.count()) +
                                                     " ms (resolving " + url_.host + ")");
      }
      return fail(resolved.error().code, what_ + " failed: " + resolved.error().message);
    }
    for (const auto& entry : *resolved) {
      ErrorCodeT ec;
      const auto address = asio::ip::make_address(entry.address, ec);
      if (!ec) endpoints.emplace_back(address, entry.port);
    }
    if (endpoints.empty()) {
      return fail(ErrorCode::Unavailable,
                  what_ + " failed: cannot resolve host \"" + url_.host + "\": no addresses");
    }
    return endpoints;
  }

  Result<void> connect(beast::tcp_stream& socket, const std::vector<tcp::endpoint>& endpoints) {
    socket.expires_at(deadline_);
    const ErrorCodeT ec = wait([&](auto handler) { socket.async_connect(endpoints, handler); });
    if (ec) {
      return std::unexpected(
          ioError("connecting to " + url_.host + ":" + std::to_string(url_.port), ec));
    }
    return {};
  }

  Result<void> configureTls(ssl::context& ctx) const {
    ErrorCodeT ec;
    if (!request_.verifyTls) {
      ctx.set_verify_mode(ssl::verify_none);
      return {};
    }
    if (request_.caFile.empty()) {
      ctx.set_default_verify_paths(ec);
    } else {
      std::error_code fsError;
      if (std::filesystem::is_directory(request_.caFile, fsError)) {
        ctx.add_verify_path(request_.caFile, ec);
      } else {
        ctx.load_verify_file(request_.caFile, ec);
      }
    }
    if (ec) {
      return invalid("Cannot load the CA certificates " +
                     (request_.caFile.empty() ? std::string("of the system")
                                              : "from \"" + request_.caFile + "\"") +
                     ": " + ec.message());
    }
    ctx.set_verify_mode(ssl::verify_peer);
    return {};
  }

  template <class Stream>
  Result<HttpResponse> talk(Stream& stream, http::request<http::string_body>& message,
                            const BodySink& sink) {
    ErrorCodeT ec = wait([&](auto handler) { http::async_write(stream, message, handler); });
    if (ec) {
      return std::unexpected(ioError("sending the request", ec));
    }

    beast::flat_buffer buffer(kReadBufferLimit);
    // Beast reads at most the buffer's spare capacity (512 bytes at first) per system call, and
    // a buffer that is always consumed never grows: give it room for whole chunks.
    buffer.reserve(kBodyBufferSize);
    http::response_parser<http::buffer_body> parser;
    parser.header_limit(kHeaderLimit);
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    if (message.method() == http::verb::head) {
      parser.skip(true);
    }
    ec = wait([&](auto handler) { http::async_read_header(stream, buffer, parser, handler); });
    if (ec) {
      return std::unexpected(ioError("reading the response header", ec));
    }

    HttpResponse response;
    response.status = static_cast<int>(parser.get().result_int());
    for (const auto& field : parser.get().base()) {
      const auto name = field.name_string();
      const auto value = field.value();
      response.headers.emplace_back(asciiLower(std::string_view(name.data(), name.size())),
                                    std::string(value.data(), value.size()));
    }
    if (stopAtRedirect_ && isFollowedRedirect(response.status) && response.header("location")) {
      return response;  // the body is not read: the connection closes with this exchange
    }

    std::unique_ptr<char[]> chunk(new char[kBodyBufferSize]);
    idlePhase_ = request_.idleTimeout.count() > 0;
    while (!parser.is_done()) {
      if (idlePhase_) {
        beast::get_lowest_layer(stream).expires_after(request_.idleTimeout);
      }
      parser.get().body().data = chunk.get();
      parser.get().body().size = kBodyBufferSize;
      if (idlePhase_) {
        // Hand over whatever arrived: the idle timer bounds the wait for any bytes, not for a
        // whole chunk, so a slow but steady peer is not mistaken for a stalled one.
        ec = wait([&](auto handler) { http::async_read_some(stream, buffer, parser, handler); });
      } else {
        ec = wait([&](auto handler) { http::async_read(stream, buffer, parser, handler); });
      }
      if (ec == http::error::need_buffer) {
        ec = {};
      } else if (ec == ssl::error::stream_truncated && parser.need_eof()) {
        // A TLS peer that ends an EOF-delimited body without close_notify: the body is complete.
        ec = {};
        parser.put_eof(ec);
      }
      if (ec) {
        return std::unexpected(ioError("reading the response body", ec));
      }
      const size_t n = kBodyBufferSize - parser.get().body().size;
      if (n > 0 && sink) {
        KILN_TRY_VOID(sink(std::string_view(chunk.get(), n)));
      }
    }
    return response;
  }

  const HttpRequest& request_;
  Resolver& resolver_;
  HttpUrl url_;
  Steady::time_point deadline_;
  bool stopAtRedirect_ = false;
  /// Reading the body with an idle timeout: each read has its own expiry.
  bool idlePhase_ = false;
  std::string what_;
  asio::io_context ioc_{1};
};

/// getaddrinfo on Asio's resolver thread, bounded by the timeout.
class SystemResolver final : public Resolver {
 public:
  Result<std::vector<ResolvedEndpoint>> resolve(std::string_view host, uint16_t port,
                                                std::chrono::milliseconds timeout) override {
    asio::io_context ioc{1};
    tcp::resolver resolver(ioc);
    std::vector<ResolvedEndpoint> endpoints;
    ErrorCodeT result = asio::error::would_block;
    bool done = false;
    const std::string name(host);
    resolver.async_resolve(
        name, std::to_string(port), [&](ErrorCodeT ec, tcp::resolver::results_type results) {
          result = ec;
          done = true;
          for (const auto& entry : results) {
            endpoints.push_back(
                ResolvedEndpoint{entry.endpoint().address().to_string(), entry.endpoint().port()});
          }
        });
    ioc.run_for(timeout);
    if (!done) {
      // NOTE(kiln): getaddrinfo cannot be interrupted; cancelling makes the handler report
      // operation_aborted as soon as the lookup returns.
      resolver.cancel();
      ioc.restart();
      ioc.run();
      return fail(ErrorCode::DeadlineExceeded, "cannot resolve host \"" + name +
                                                   "\": no answer within " +
                                                   std::to_string(timeout.count()) + " ms");
    }
    if (result || endpoints.empty()) {
      return fail(ErrorCode::Unavailable,
                  "cannot resolve host \"" + name + "\": " + result.message());
    }
    return endpoints;
  }
};

class BeastHttpClient final : public HttpClient {
 public:
  explicit BeastHttpClient(ResolverPtr resolver) : resolver_(std::move(resolver)) {}

  Result<HttpResponse> send(const HttpRequest& request) override {
    std::string body;
    auto response = exchange(request, [&body](std::string_view chunk) -> Result<void> {
      body.append(chunk);
      return {};
    });
    if (response) {
      response->body = std::move(body);
    }
    return response;
  }

  Result<HttpResponse> stream(const HttpRequest& request, const BodySink& sink) override {
    return exchange(request, sink);
  }

 private:
  /// One exchange, or a chain of them through redirects (the top of http_client.h).
  Result<HttpResponse> exchange(const HttpRequest& request, const BodySink& sink) {
    const HttpUrl origin = KILN_TRY(parseHttpUrl(request.url));
    const std::string what = "HTTP " + request.method + " " + request.url;
    const auto deadline = Steady::now() + request.timeout;
    if (request.maxRedirects <= 0) return once(request, origin, deadline, what, false, sink);

    HttpRequest hop = request;
    HttpUrl url = origin;
    for (int redirects = 0;; ++redirects) {
      // A hop's messages name the request and, masked (a Location may carry a signature), the
      // URL it was redirected to.
      const std::string hopWhat =
          redirects == 0 ? what : what + " (redirected to " + maskUrl(url.str()) + ")";
      auto response = KILN_TRY(once(hop, url, deadline, hopWhat, true, sink));
      const auto location = response.header("location");
      if (!isFollowedRedirect(response.status) || !location) return response;
      if (redirects >= request.maxRedirects) {
        return fail(
            ErrorCode::Unavailable,
            what + " failed: more than " + std::to_string(request.maxRedirects) + " redirects");
      }
      const std::string next = resolveReference(url, *location);
      auto parsed = parseHttpUrl(next);
      if (!parsed) {
        return fail(ErrorCode::Unavailable, hopWhat + " failed: cannot follow the redirect to " +
                                                maskUrl(next) + ": " + parsed.error().message);
      }
      if (!parsed->sameOrigin(origin)) dropCredentials(hop);
      if (response.status == 303 ||
          ((response.status == 301 || response.status == 302) && hop.method == "POST")) {
        if (hop.method != "HEAD") hop.method = "GET";
        hop.body.clear();
        std::erase_if(hop.headers, [](const auto& h) {
          const std::string name = asciiLower(h.first);
          return name == "content-type" || name == "content-length";
        });
      }
      url = std::move(*parsed);
      hop.url = url.str();
    }
  }

  /// Credentials stay with the first origin of a chain (http_client.h).
  static void dropCredentials(HttpRequest& hop) {
    hop.basicAuth.reset();
    std::erase_if(hop.headers, [](const auto& h) {
      const std::string name = asciiLower(h.first);
      return name == "authorization" || name == "proxy-authorization" || name == "cookie";
    });
  }

  Result<HttpResponse> once(const HttpRequest& request, const HttpUrl& url,
                            Steady::time_point deadline, const std::string& what,
                            bool stopAtRedirect, const BodySink& sink) {
    try {
      Exchange exchange(request, url, *resolver_, deadline, what, stopAtRedirect);
      return exchange.run(sink);
    } catch (const std::exception& e) {
      // Asio and Beast report through error codes above; this catches allocation failures and
      // anything else a library throws, so no exception crosses the module boundary.
      return internalError(what + " failed: " + e.what());
    }
  }

  ResolverPtr resolver_;
};

}  // namespace

ResolverPtr makeSystemResolver() { return std::make_shared<SystemResolver>(); }

bool isIpLiteral(std::string_view host) {
  ErrorCodeT ec;
  asio::ip::make_address(std::string(host), ec);
  return !ec;
}

HttpClientPtr makeHttpClient() { return makeHttpClient(makeSystemResolver()); }

HttpClientPtr makeHttpClient(ResolverPtr resolver) {
  if (!resolver) resolver = makeSystemResolver();
  return std::make_shared<BeastHttpClient>(std::move(resolver));
}

}  // namespace kiln
