#include "server/api/http_endpoint.h"

#include <pistache/endpoint.h>
#include <pistache/http.h>
#include <pistache/peer.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "server/api/errors.h"
#include "server/api/http_request_parser.h"
#include "server/api/tls_session.h"
#include "shared/core/log.h"

namespace kiln::server {
namespace {

using namespace Pistache;
using SteadyClock = std::chrono::steady_clock;

/// What every reactor thread's handler shares.
struct Shared {
  ApiService* api = nullptr;
  size_t maxBodyBytes = 0;
  size_t streamBufferBytes = 0;  ///< [events] stream_buffer_bytes
  int cap = 0;
  std::shared_ptr<TlsContext> tls;  ///< set when the API is served over HTTPS
  std::atomic<int> open{0};
  /// Steady-clock seconds of the last "connection limit" log line (one per 10 s at most).
  std::atomic<int64_t> lastLimitLog{-1000};
  Logger log{"http"};
};

/// One connection's state, kept in the peer's data (so it lives as long as the peer).
struct Connection {
  explicit Connection(std::shared_ptr<Shared> s)
      : shared(std::move(s)), parser(shared->maxBodyBytes) {
    shared->open.fetch_add(1, std::memory_order_relaxed);
  }
  ~Connection() { shared->open.fetch_sub(1, std::memory_order_relaxed); }

  std::shared_ptr<Shared> shared;
  HttpRequestParser parser;
  std::unique_ptr<TlsSession> tls;
  int queued = 0;        ///< responses still in Pistache's writer; later ones queue behind
  bool closing = false;  ///< answered its last response: later input is ignored
  /// A streamed response (Server-Sent Events) owns the connection from its head on: input is
  /// ignored, the stream's sink writes, and the end of the connection stops the stream.
  std::shared_ptr<ResponseStream> stream;
  ino_t inode = 0;       ///< the socket's inode, so a shed never hits a reused descriptor
  SteadyClock::time_point lastActive;
};
constexpr const char* kConnectionKey = "kiln.connection";

std::shared_ptr<Connection> connectionOf(const std::shared_ptr<Tcp::Peer>& peer) {
  return std::static_pointer_cast<Connection>(peer->tryGetData(kConnectionKey));
}

ino_t socketInode(int fd) {
  struct stat st{};
  return ::fstat(fd, &st) == 0 ? st.st_ino : 0;
}

/// The status line and headers of `response`, ending with the blank line.
std::string responseHead(const ApiResponse& response, bool keepAlive) {
  std::string head;
  head.reserve(512);
  head += "HTTP/1.1 ";
  head += std::to_string(response.status);
  head += ' ';
  head += reasonPhrase(response.status);
  head += "\r\n";
  if (!response.contentType.empty() && response.status != 204) {
    head += "Content-Type: ";
    head += response.contentType;
    head += "\r\n";
  }
  for (const auto& [name, value] : response.headers) {
    head += name;
    head += ": ";
    head += value;
    head += "\r\n";
  }
  head += keepAlive ? "Connection: Keep-Alive\r\n" : "Connection: Close\r\n";
  // A stream's body ends when the connection closes (RFC 9112 §6.3): no Content-Length.
  if (response.status != 204 && !response.stream) {  // RFC 9110 §8.6: no Content-Length on a 204
    head += "Content-Length: ";
    head += std::to_string(response.contentLength.value_or(response.body.size()));
    head += "\r\n";
  }
  head += "\r\n";
  return head;
}

/// An error answered by the endpoint itself (framing, limits), in Ironic's format.
ApiResponse endpointError(int status, const std::string& message) {
  ApiResponse r = errorResponse({status == 503 ? ErrorCode::Unavailable : ErrorCode::InvalidArgument,
                                 message});
  r.status = status;
  stampRequestId(r);
  return r;
}

/// Writes `head` + `body` to the socket. The bytes go straight to the socket from this reactor
/// thread with one non-blocking sendmsg() (Pistache's own path copies the body twice and costs
/// about ten system calls); what the socket does not take now goes to Pistache's writer, and
/// while anything waits there later writes queue behind it, so responses leave in order.
/// `shutdownHow` (SHUT_WR, SHUT_RDWR or -1 for none) ends the connection once all is sent.
void writeOut(const std::shared_ptr<Tcp::Peer>& peer, const std::shared_ptr<Connection>& conn,
              const std::string& head, const std::string& body, int shutdownHow) {
  const int fd = peer->fd();
  size_t sent = 0;
  const size_t total = head.size() + body.size();
  if (conn->queued == 0) {
    iovec iov[2] = {{const_cast<char*>(head.data()), head.size()},
                    {const_cast<char*>(body.data()), body.size()}};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = body.empty() ? 1 : 2;
    const ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      conn->closing = true;  // the peer is gone; Pistache notices on its side of the socket
      return;
    }
    sent = n > 0 ? static_cast<size_t>(n) : 0;
  }
  if (sent == total) {
    if (shutdownHow >= 0) ::shutdown(fd, shutdownHow);
    return;
  }

  std::string rest;
  rest.reserve(total - sent);
  if (sent < head.size()) {
    rest.append(head, sent);
    rest += body;
  } else {
    rest.append(body, sent - head.size());
  }
  ++conn->queued;
  const size_t length = rest.size();
  std::weak_ptr<Tcp::Peer> weak = peer;
  peer->send(RawBuffer(std::move(rest), length))
      .then(
          [conn, weak, shutdownHow](ssize_t) {
            --conn->queued;
            if (auto p = weak.lock(); p && shutdownHow >= 0) ::shutdown(p->fd(), shutdownHow);
          },
          [conn](std::exception_ptr&) {
            --conn->queued;
            conn->closing = true;
          });
}

/// Writes `head` + `body`, encrypted on a TLS connection (with the close_notify alert when the
/// connection ends after them).
void deliver(const std::shared_ptr<Tcp::Peer>& peer, const std::shared_ptr<Connection>& conn,
             const std::string& head, const std::string& body, int shutdownHow) {
  if (!conn->tls) {
    writeOut(peer, conn, head, body, shutdownHow);
    return;
  }
  if (!conn->tls->send(head) || !conn->tls->send(body)) {
    conn->closing = true;
    ::shutdown(peer->fd(), SHUT_RDWR);
    return;
  }
  if (shutdownHow >= 0) conn->tls->close();
  writeOut(peer, conn, conn->tls->takeOutput(), std::string(), shutdownHow);
}

void respond(const std::shared_ptr<Tcp::Peer>& peer, const std::shared_ptr<Connection>& conn,
             const ApiResponse& response, bool keepAlive, int closeHow = SHUT_WR) {
  deliver(peer, conn, responseHead(response, keepAlive), response.body, keepAlive ? -1 : closeHow);
}

/// A streamed response's writer (StreamSink): any thread may write. Bytes go straight to the
/// socket with a non-blocking send() while nothing of the stream waits in Pistache's writer;
/// otherwise they queue there behind it (Pistache's writer is thread-safe and keeps order).
/// What waits there is bounded by [events] stream_buffer_bytes: a client that stops reading
/// is disconnected once that is full, and its buffers go with the connection.
class EndpointSink final : public StreamSink {
 public:
  EndpointSink(const std::shared_ptr<Tcp::Peer>& peer, const std::shared_ptr<Connection>& conn,
               size_t limit, bool direct)
      : peer_(peer), conn_(conn), inode_(conn->inode), limit_(limit), direct_(direct) {}

  bool write(std::string bytes) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return false;
    auto peer = peer_.lock();
    auto conn = conn_.lock();
    // A peer Pistache already closed may still be held: never write to a reused descriptor.
    if (!peer || !conn || socketInode(peer->fd()) != inode_) {
      closed_ = true;
      return false;
    }
    if (conn->tls) {  // only this sink uses the session once the stream began
      if (!conn->tls->send(bytes)) return closeLocked(*peer, "TLS failure");
      bytes = conn->tls->takeOutput();
    }
    if (bytes.empty()) return true;
    size_t sent = 0;
    if (direct_ && pending_->load() == 0) {
      const ssize_t n = ::send(peer->fd(), bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        closed_ = true;  // the client is gone; Pistache notices on its side of the socket
        return false;
      }
      sent = n > 0 ? static_cast<size_t>(n) : 0;
    }
    if (sent == bytes.size()) return true;
    const size_t rest = bytes.size() - sent;
    if (pending_->load() + rest > limit_) return closeLocked(*peer, "the client stopped reading");
    pending_->fetch_add(rest);
    std::string tail = sent == 0 ? std::move(bytes) : bytes.substr(sent);
    auto pending = pending_;
    peer->send(RawBuffer(std::move(tail), rest))
        .then([pending, rest](ssize_t) { pending->fetch_sub(rest); },
              [pending, rest](std::exception_ptr&) { pending->fetch_sub(rest); });
    return true;
  }

  void close() override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return;
    closed_ = true;
    // What the kernel holds is still sent; what waits in Pistache's writer is dropped with
    // the connection (the server stops, or the journal could not be read).
    if (auto peer = peer_.lock(); peer && socketInode(peer->fd()) == inode_) {
      ::shutdown(peer->fd(), SHUT_RDWR);
    }
  }

 private:
  bool closeLocked(Tcp::Peer& peer, const char* why) {
    closed_ = true;
    Logger("http").info("closing an event stream", {{"reason", why}});
    // The reactor sees the end, drops the peer with its queued buffers and stops the stream.
    if (socketInode(peer.fd()) == inode_) ::shutdown(peer.fd(), SHUT_RDWR);
    return false;
  }

  std::mutex mutex_;
  std::weak_ptr<Tcp::Peer> peer_;
  std::weak_ptr<Connection> conn_;
  const ino_t inode_;
  const size_t limit_;
  const bool direct_;  ///< false when earlier responses were still queued at the stream's start
  std::shared_ptr<std::atomic<size_t>> pending_ = std::make_shared<std::atomic<size_t>>(0);
  bool closed_ = false;
};

/// Pistache's timer (TransportImpl::checkIdlePeers) closes a peer marked idle once its
/// parser's time is older than the keep-alive timeout. Kiln keeps every peer "idle" for
/// Pistache (so it never sends its own plain-text 408) and restarts that clock when a request
/// begins and when a connection becomes idle: a request must arrive whole within
/// client_socket_timeout of its first byte, and an idle connection lives as long.
void restartClock(const std::shared_ptr<Tcp::Peer>& peer) {
  Http::Handler::getParser(peer)->reset();
}

class PistacheHandler final : public Http::Handler {
 public:
  HTTP_PROTOTYPE(PistacheHandler)

  explicit PistacheHandler(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}

  // Pistache's Http::Handler never sees the bytes: Kiln frames requests itself.
  void onRequest(const Http::Request&, Http::ResponseWriter) override {}

  void onConnection(const std::shared_ptr<Tcp::Peer>& peer) override {
    // Pistache's timers read this parser's clock for every peer: it must always exist.
    peer->putData(ParserData, std::make_shared<Http::RequestParser>(64));
    peer->setIdle(true);
    auto conn = std::make_shared<Connection>(shared_);
    if (shared_->tls) conn->tls = std::make_unique<TlsSession>(*shared_->tls);
    conn->inode = socketInode(peer->fd());
    conn->lastActive = SteadyClock::now();
    peer->putData(kConnectionKey, conn);
    const int one = 1;
    ::setsockopt(peer->fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

    if (shared_->open.load(std::memory_order_relaxed) > shared_->cap) {
      if (shedIdleConnection()) {
        logLimit("connection limit reached: closed the longest idle connection");
      } else {
        logLimit("connection limit reached and no connection is idle: refused a connection");
        conn->closing = true;
        if (conn->tls) {  // no handshake yet: nothing can be said in TLS
          ::shutdown(peer->fd(), SHUT_RDWR);
          return;
        }
        const ApiResponse r = endpointError(
            503, "kiln-server has reached its limit of " + std::to_string(shared_->cap) +
                     " open connections; retry later.");
        respond(peer, conn, r, false, SHUT_RDWR);
        return;
      }
    }
    if (++sinceCompaction_ >= 256) compactPeers();
    peers_.push_back(peer);
  }

  void onDisconnection(const std::shared_ptr<Tcp::Peer>& peer) override {
    auto conn = connectionOf(peer);
    if (!conn || !conn->stream) return;
    // The client went away (or was dropped): the stream stops and lets go of its buffers.
    auto stream = std::move(conn->stream);
    stream->stop();
  }

  void onInput(const char* buffer, size_t len, const std::shared_ptr<Tcp::Peer>& peer) override {
    auto conn = connectionOf(peer);
    if (!conn || conn->closing) return;  // after the last answer, input is drained unread
    try {
      conn->lastActive = SteadyClock::now();
      std::string_view input(buffer, len);
      std::string plain;
      if (conn->tls) {
        auto received = conn->tls->receive(input, plain);
        writeOut(peer, conn, conn->tls->takeOutput(), std::string(), -1);  // handshake records
        if (!received) {
          shared_->log.debug("closing a TLS connection", {{"client", peer->address().host()},
                                                          {"error", received.error().message}});
          conn->closing = true;
          ::shutdown(peer->fd(), SHUT_RDWR);
          return;
        }
        if (plain.empty()) return;
        input = plain;
      }
      HttpRequestParser& parser = conn->parser;
      if (!parser.midRequest()) restartClock(peer);
      parser.feed(input);
      while (auto request = parser.next()) {
        const ApiResponse response = shared_->api->handle(*request);
        if (response.stream) {
          startStream(peer, conn, response);
          return;
        }
        respond(peer, conn, response, request->keepAlive);
        if (!request->keepAlive) {
          conn->closing = true;
          return;
        }
      }
      if (parser.failed()) {
        shared_->log.info("malformed HTTP request; closing the connection",
                          {{"client", peer->address().host()},
                           {"status", std::to_string(parser.failureStatus())},
                           {"reason", parser.failureMessage()}});
        respond(peer, conn, endpointError(parser.failureStatus(), parser.failureMessage()), false);
        conn->closing = true;
        return;
      }
      if (parser.wantsContinue()) {
        static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        deliver(peer, conn, kContinue, std::string(), -1);
        parser.continueSent();
      }
      if (!parser.midRequest()) restartClock(peer);
    } catch (const std::exception& e) {
      // Only allocation failures can get here (the API never throws): drop this connection.
      shared_->log.error("closing a connection after an internal error", {{"error", e.what()}});
      conn->closing = true;
      ::shutdown(peer->fd(), SHUT_RDWR);
    }
  }

 private:
  /// Writes a streamed response's head and body, then hands the connection to its stream.
  /// Pistache's idle timer leaves the connection alone from now on (it is not idle); the
  /// stream's sink bounds what waits for the client.
  void startStream(const std::shared_ptr<Tcp::Peer>& peer, const std::shared_ptr<Connection>& conn,
                   const ApiResponse& response) {
    conn->closing = true;  // later input is drained unread
    conn->stream = response.stream;
    peer->setIdle(false);
    auto sink =
        std::make_shared<EndpointSink>(peer, conn, shared_->streamBufferBytes, conn->queued == 0);
    if (!sink->write(responseHead(response, false) + response.body)) {
      auto stream = std::move(conn->stream);
      stream->stop();
      return;
    }
    response.stream->start(sink);
  }

  /// Closes this thread's longest-idle connection. Runs on the reactor thread that owns these
  /// peers, so none of them can be closed (and its descriptor reused) meanwhile; the inode
  /// check guards against a peer Pistache already closed but still holds.
  bool shedIdleConnection() {
    std::shared_ptr<Tcp::Peer> victim;
    std::shared_ptr<Connection> victimConn;
    for (const auto& weak : peers_) {
      auto peer = weak.lock();
      if (!peer) continue;
      auto conn = connectionOf(peer);
      if (!conn || conn->parser.midRequest() || conn->queued > 0 || conn->stream) continue;
      if (!victimConn || conn->closing > victimConn->closing ||
          (conn->closing == victimConn->closing && conn->lastActive < victimConn->lastActive)) {
        victim = peer;
        victimConn = conn;
      }
    }
    if (!victim || socketInode(victim->fd()) != victimConn->inode) return false;
    victimConn->closing = true;
    ::shutdown(victim->fd(), SHUT_RDWR);  // the reactor sees the end and removes the peer
    std::erase_if(peers_, [&](const std::weak_ptr<Tcp::Peer>& w) { return w.lock() == victim; });
    return true;
  }

  void compactPeers() {
    sinceCompaction_ = 0;
    std::erase_if(peers_, [](const std::weak_ptr<Tcp::Peer>& w) { return w.expired(); });
  }

  void logLimit(const char* message) {
    const int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(SteadyClock::now().time_since_epoch()).count();
    int64_t last = shared_->lastLimitLog.load();
    if (now - last < 10 || !shared_->lastLimitLog.compare_exchange_strong(last, now)) return;
    shared_->log.warning(message, {{"open_connections", std::to_string(shared_->open.load())},
                                   {"limit", std::to_string(shared_->cap)},
                                   {"hint", "[api] max_connections and the open-file limit set the cap"}});
  }

  std::shared_ptr<Shared> shared_;
  /// This reactor thread's connections (each clone of the handler serves one thread).
  std::vector<std::weak_ptr<Tcp::Peer>> peers_;
  int sinceCompaction_ = 0;
};

}  // namespace

long raiseOpenFileLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) {
      Logger("http").info("raised the open-file limit",
                          {{"from", std::to_string(limit.rlim_cur)}, {"to", std::to_string(raised.rlim_cur)}});
      limit = raised;
    }
  }
  return limit.rlim_cur == RLIM_INFINITY ? 1L << 20 : static_cast<long>(limit.rlim_cur);
}

int connectionCap(int configured, long openFileLimit) {
  const long reserve = std::max(64L, openFileLimit / 8);
  const long fromLimit = std::max(1L, openFileLimit - reserve);
  return static_cast<int>(std::min<long>(configured, fromLimit));
}

struct HttpEndpoint::Impl {
  ApiService& api;
  const Config& config;
  std::shared_ptr<Shared> shared;
  std::unique_ptr<Http::Endpoint> endpoint;
};

HttpEndpoint::HttpEndpoint(ApiService& api, const Config& config)
    : impl_(new Impl{api, config, nullptr, nullptr}) {}

HttpEndpoint::~HttpEndpoint() { stop(); }

Result<void> HttpEndpoint::start() {
  const Config& config = impl_->config;
  const long fileLimit = raiseOpenFileLimit();
  impl_->shared = std::make_shared<Shared>();
  impl_->shared->api = &impl_->api;
  impl_->shared->maxBodyBytes = static_cast<size_t>(config.maxRequestBodySize);
  impl_->shared->streamBufferBytes = static_cast<size_t>(config.eventsStreamBuffer);
  impl_->shared->cap = connectionCap(config.maxConnections, fileLimit);
  if (config.enableSslApi) {
    impl_->shared->tls = KILN_TRY(TlsContext::load(config.sslCertFile, config.sslKeyFile));
  }
  if (impl_->shared->cap < config.maxConnections) {
    impl_->shared->log.warning("the open-file limit caps connections below [api] max_connections",
                               {{"open_file_limit", std::to_string(fileLimit)},
                                {"connection_limit", std::to_string(impl_->shared->cap)}});
  }
  try {
    Address addr(config.hostIp, Port(static_cast<uint16_t>(config.port)));
    impl_->endpoint = std::make_unique<Http::Endpoint>(addr);
    // Default: three reactor threads per CPU. A reactor thread serves its connections one
    // request at a time; with fewer threads a connection waits longer behind its neighbours
    // (wrk -c10 here: p99 of single-node GETs 1-27 ms with one or two threads per CPU,
    // 0.8-1.4 ms with three); docs/benchmarks.md has the figures.
    const int threads = config.apiWorkers > 0
                            ? config.apiWorkers
                            : 3 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    impl_->endpoint->init(Http::Endpoint::options()
                              .threads(threads)
                              .flags(Tcp::Options::ReuseAddr)
                              .keepaliveTimeout(std::chrono::seconds(config.clientSocketTimeout))
                              .maxResponseSize(256 * 1024 * 1024));
    impl_->endpoint->setHandler(Http::make_handler<PistacheHandler>(impl_->shared));
    impl_->endpoint->serveThreaded();
  } catch (const std::exception& e) {
    impl_->endpoint.reset();
    return fail(ErrorCode::Unavailable, "cannot serve the API on " + config.hostIp + ":" +
                                            std::to_string(config.port) + ": " + e.what());
  }
  return {};
}

uint16_t HttpEndpoint::port() const {
  return impl_->endpoint ? static_cast<uint16_t>(impl_->endpoint->getPort()) : 0;
}

int HttpEndpoint::connectionLimit() const { return impl_->shared ? impl_->shared->cap : 0; }

void HttpEndpoint::stop() {
  if (impl_ && impl_->endpoint) {
    impl_->endpoint->shutdown();
    impl_->endpoint.reset();
  }
}

}  // namespace kiln::server
