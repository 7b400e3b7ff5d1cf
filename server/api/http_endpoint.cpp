#include "server/api/http_endpoint.h"

#include <pistache/endpoint.h>
#include <pistache/http.h>
#include <pistache/peer.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <thread>

namespace kiln::server {
namespace {

using namespace Pistache;

/// Connection handling of one request: what the response says and whether the connection
/// ends after it. HTTP/1.1 is persistent unless the client says otherwise (RFC 9112 §9.3);
/// HTTP/1.0 only when the client asks for it. (Pistache alone answers every request without a
/// Connection header with "Close", one TCP connection per request.)
bool keepsAlive(const Http::Request& req) {
  const auto connection = req.headers().tryGet<Http::Header::Connection>();
  if (connection) {
    return connection->control() != Http::ConnectionControl::Close;
  }
  return req.version() == Http::Version::Http11;
}

/// The status line and headers of `response`, ending with the blank line.
std::string responseHead(const ApiResponse& response, bool keepAlive) {
  std::string head;
  head.reserve(512);
  head += "HTTP/1.1 ";
  head += std::to_string(response.status);
  head += ' ';
  head += Http::codeString(static_cast<Http::Code>(response.status));
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
  if (response.status != 204) {  // RFC 9110 §8.6: no Content-Length on a 204
    head += "Content-Length: ";
    head += std::to_string(response.body.size());
    head += "\r\n";
  }
  head += "\r\n";
  return head;
}

/// What sendResponse keeps per connection: the responses still queued in Pistache's writer.
/// While there are any, a new response joins the queue too, so responses leave in order.
struct ConnectionState {
  int queued = 0;
};
constexpr const char* kConnectionStateKey = "kiln.connection";

/// The connection's state, made on its first response. A response leaves in one write, or in
/// two when the socket buffer fills: without TCP_NODELAY the second part would wait for the
/// client's delayed ACK (40 ms).
std::shared_ptr<ConnectionState> connectionState(const std::shared_ptr<Tcp::Peer>& peer) {
  auto state = std::static_pointer_cast<ConnectionState>(peer->tryGetData(kConnectionStateKey));
  if (!state) {
    const int one = 1;
    ::setsockopt(peer->fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    state = std::make_shared<ConnectionState>();
    peer->putData(kConnectionStateKey, state);
  }
  return state;
}

/// Writes the response straight to the socket from the handler's reactor thread. Pistache's
/// own path copies the body twice into its buffers and hands it to the reactor through a queue
/// and an eventfd (about ten system calls a request); a single non-blocking sendmsg() of the
/// head and the body usually sends everything. What the socket does not take now (a large body,
/// a slow client) goes to Pistache's writer, which sends it when the socket is writable.
void sendResponse(const std::shared_ptr<Tcp::Peer>& peer, const ApiResponse& response,
                  bool keepAlive) {
  const std::string head = responseHead(response, keepAlive);
  const int fd = peer->fd();

  auto state = connectionState(peer);
  size_t sent = 0;
  const size_t total = head.size() + response.body.size();
  if (state->queued == 0) {
    iovec iov[2] = {{const_cast<char*>(head.data()), head.size()},
                    {const_cast<char*>(response.body.data()), response.body.size()}};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = response.body.empty() ? 1 : 2;
    const ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return;  // the peer is gone; Pistache notices on its side of the socket
    }
    sent = n > 0 ? static_cast<size_t>(n) : 0;
  }
  if (sent == total) {
    if (!keepAlive) ::shutdown(fd, SHUT_WR);
    return;
  }

  std::string rest;
  rest.reserve(total - sent);
  if (sent < head.size()) {
    rest.append(head, sent);
    rest += response.body;
  } else {
    rest.append(response.body, sent - head.size());
  }
  ++state->queued;
  const size_t length = rest.size();
  std::weak_ptr<Tcp::Peer> weak = peer;
  peer->send(RawBuffer(std::move(rest), length))
      .then(
          [state, weak, keepAlive](ssize_t) {
            --state->queued;
            if (auto p = weak.lock(); p && !keepAlive) ::shutdown(p->fd(), SHUT_WR);
          },
          [state](std::exception_ptr&) { --state->queued; });
}

class PistacheHandler final : public Http::Handler {
 public:
  HTTP_PROTOTYPE(PistacheHandler)

  explicit PistacheHandler(ApiService* api) : api_(api) {}

  void onRequest(const Http::Request& req, Http::ResponseWriter writer) override {
    ApiRequest request;
    request.method = Http::methodString(req.method());
    request.path = req.resource();
    for (auto it = req.query().parameters_begin(); it != req.query().parameters_end(); ++it) {
      request.query.emplace_back(urlDecode(it->first, true), urlDecode(it->second, true));
    }
    for (const auto& [name, raw] : req.headers().rawList()) {
      std::string lower = name;
      for (auto& c : lower) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + ('a' - 'A')) : c;
      request.headers.emplace_back(std::move(lower), raw.value());
    }
    request.body = req.body();

    const ApiResponse response = api_->handle(request);
    auto peer = writer.peer();
    sendResponse(peer, response, keepsAlive(req));
    // What ResponseWriter::send would have done besides writing: the connection is idle
    // again, so Pistache's keep-alive timeout may close it without a 408.
    peer->setIdle(true);
  }

 private:
  ApiService* api_;
};

}  // namespace

struct HttpEndpoint::Impl {
  ApiService& api;
  std::string hostIp;
  uint16_t port;
  int threads;
  std::unique_ptr<Http::Endpoint> endpoint;
};

HttpEndpoint::HttpEndpoint(ApiService& api, std::string hostIp, uint16_t port, int threads)
    : impl_(new Impl{api, std::move(hostIp), port, threads, nullptr}) {}

HttpEndpoint::~HttpEndpoint() { stop(); }

Result<void> HttpEndpoint::start() {
  try {
    Address addr(impl_->hostIp, Port(impl_->port));
    impl_->endpoint = std::make_unique<Http::Endpoint>(addr);
    // Default: three reactor threads per CPU. A reactor thread serves its connections one
    // request at a time; with fewer threads a connection waits longer behind its neighbours
    // (wrk -c10 here: p99 of single-node GETs 1-27 ms with one or two threads per CPU,
    // 0.8-1.4 ms with three); docs/benchmarks.md has the figures.
    int threads = impl_->threads > 0
                      ? impl_->threads
                      : 3 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    impl_->endpoint->init(Http::Endpoint::options()
                              .threads(threads)
                              .flags(Tcp::Options::ReuseAddr)
                              .maxRequestSize(16 * 1024 * 1024)
                              .maxResponseSize(256 * 1024 * 1024));
    impl_->endpoint->setHandler(Http::make_handler<PistacheHandler>(&impl_->api));
    impl_->endpoint->serveThreaded();
  } catch (const std::exception& e) {
    impl_->endpoint.reset();
    return fail(ErrorCode::Unavailable, "cannot listen on " + impl_->hostIp + ":" +
                                            std::to_string(impl_->port) + ": " + e.what());
  }
  return {};
}

uint16_t HttpEndpoint::port() const {
  return impl_->endpoint ? static_cast<uint16_t>(impl_->endpoint->getPort()) : 0;
}

void HttpEndpoint::stop() {
  if (impl_ && impl_->endpoint) {
    impl_->endpoint->shutdown();
    impl_->endpoint.reset();
  }
}

}  // namespace kiln::server
