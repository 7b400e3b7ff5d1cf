#include "server/api/http_endpoint.h"

#include <pistache/endpoint.h>
#include <pistache/http.h>

#include <thread>

namespace kiln::server {
namespace {

using namespace Pistache;

/// A response header with a name chosen at run time (Pistache's typed headers have fixed
/// names, and raw headers are not written on responses).
class NamedHeader final : public Http::Header::Header {
 public:
  NamedHeader(std::string name, std::string value)
      : name_(std::move(name)), value_(std::move(value)) {}
  const char* name() const override { return name_.c_str(); }
  uint64_t hash() const override { return std::hash<std::string>{}(name_); }
  void parse(const std::string& data) override { value_ = data; }
  void write(std::ostream& os) const override { os << value_; }

 private:
  std::string name_;
  std::string value_;
};

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
      for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      request.headers.emplace_back(std::move(lower), raw.value());
    }
    request.body = req.body();

    // HTTP/1.1 is persistent unless the client says otherwise (RFC 9112 §9.3).
    if (req.version() == Http::Version::Http11 && !req.headers().has("Connection")) {
      writer.headers().remove<Http::Header::Connection>();
      writer.headers().add<Http::Header::Connection>(Http::ConnectionControl::KeepAlive);
    }

    ApiResponse response = api_->handle(request);
    for (auto& [name, value] : response.headers) {
      writer.headers().add(std::make_shared<NamedHeader>(name, value));
    }
    const auto code = static_cast<Http::Code>(response.status);
    if (response.status == 204 || response.contentType.empty()) {
      writer.send(code, response.body);
    } else {
      writer.send(code, response.body, MIME(Application, Json));
    }
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
    // Default: two reactor threads per CPU. Handlers block briefly on SQLite, and with one
    // thread per CPU a core idles while its thread waits; docs/benchmarks.md has the figures.
    int threads = impl_->threads > 0
                      ? impl_->threads
                      : 2 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
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
