#include "agent/dns_resolver.h"

#include <ares.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>

#include "shared/core/strings.h"

namespace kiln::agent {
namespace {

using Steady = std::chrono::steady_clock;

/// One DNS server from kiln.dns= / --dns.
struct Server {
  int family = AF_INET;
  in_addr v4{};
  in6_addr v6{};
  uint16_t port = 53;
};

std::optional<uint16_t> parsePort(std::string_view text) {
  const auto port = parseInt<uint16_t>(text, 1, 65535);
  return port ? std::optional<uint16_t>(*port) : std::nullopt;
}

std::optional<Server> parseServer(std::string_view item) {
  Server s;
  std::string host;
  std::string_view port;
  if (!item.empty() && item.front() == '[') {
    const size_t close = item.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = std::string(item.substr(1, close - 1));
    const std::string_view rest = item.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return std::nullopt;
      port = rest.substr(1);
      if (port.empty()) return std::nullopt;
    }
    s.family = AF_INET6;
  } else if (std::count(item.begin(), item.end(), ':') > 1) {
    host = std::string(item);  // a bare IPv6 address: no port
    s.family = AF_INET6;
  } else {
    const size_t colon = item.find(':');
    host = std::string(item.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = item.substr(colon + 1);
      if (port.empty()) return std::nullopt;
    }
    s.family = AF_INET;
  }
  if (s.family == AF_INET ? inet_pton(AF_INET, host.c_str(), &s.v4) != 1
                          : inet_pton(AF_INET6, host.c_str(), &s.v6) != 1) {
    return std::nullopt;
  }
  if (!port.empty()) {
    auto p = parsePort(port);
    if (!p) return std::nullopt;
    s.port = *p;
  }
  return s;
}

std::string addressText(int family, const void* addr) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (inet_ntop(family, addr, buf, sizeof buf) == nullptr) return "?";
  return buf;
}

/// ares_library_init once per process (it is not thread-safe; its result is kept).
int libraryInit() {
  static std::once_flag once;
  static int status = ARES_SUCCESS;
  std::call_once(once, [] { status = ares_library_init(ARES_LIB_INIT_ALL); });
  return status;
}

struct ChannelCloser {
  void operator()(ares_channel channel) const { ares_destroy(channel); }
};
using Channel = std::unique_ptr<std::remove_pointer_t<ares_channel>, ChannelCloser>;

/// The servers a channel asks, for error messages: "10.0.2.3:53, [fd00::1]:53".
std::string channelServers(ares_channel channel) {
  ares_addr_port_node* list = nullptr;
  if (ares_get_servers_ports(channel, &list) != ARES_SUCCESS) return "unknown";
  std::string out;
  for (auto* node = list; node != nullptr; node = node->next) {
    if (!out.empty()) out += ", ";
    const int port = node->udp_port ? node->udp_port : 53;
    if (node->family == AF_INET6) {
      out += "[" + addressText(AF_INET6, &node->addr.addr6) + "]:" + std::to_string(port);
    } else {
      out += addressText(AF_INET, &node->addr.addr4) + ":" + std::to_string(port);
    }
  }
  ares_free_data(list);
  return out.empty() ? "none" : out;
}

struct Lookup {
  bool done = false;
  int status = ARES_SUCCESS;
  uint16_t port = 0;
  std::vector<ResolvedEndpoint> endpoints;
};

void onAddrinfo(void* arg, int status, int /*timeouts*/, ares_addrinfo* result) {
  auto* lookup = static_cast<Lookup*>(arg);
  lookup->done = true;
  lookup->status = status;
  if (result == nullptr) return;
  for (auto* node = result->nodes; node != nullptr; node = node->ai_next) {
    ResolvedEndpoint endpoint;
    endpoint.port = lookup->port;
    if (node->ai_family == AF_INET) {
      endpoint.address =
          addressText(AF_INET, &reinterpret_cast<const sockaddr_in*>(node->ai_addr)->sin_addr);
    } else if (node->ai_family == AF_INET6) {
      endpoint.address =
          addressText(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(node->ai_addr)->sin6_addr);
    } else {
      continue;
    }
    if (std::find(lookup->endpoints.begin(), lookup->endpoints.end(), endpoint) ==
        lookup->endpoints.end()) {
      lookup->endpoints.push_back(std::move(endpoint));
    }
  }
  ares_freeaddrinfo(result);
}

class DnsResolver final : public Resolver {
 public:
  explicit DnsResolver(DnsOptions options) : options_(std::move(options)) {
    for (const auto& item : options_.servers) {
      if (auto server = parseServer(item)) servers_.push_back(*server);
    }
  }

  Result<std::vector<ResolvedEndpoint>> resolve(std::string_view host, uint16_t port,
                                                std::chrono::milliseconds timeout) override {
    const std::string name(host);
    if (isIpLiteral(name)) {
      return std::vector<ResolvedEndpoint>{{name, port}};
    }
    const std::string what = "cannot resolve host name " + name + ": ";
    if (name.empty()) return fail(ErrorCode::Unavailable, what + "empty name");
    if (const int status = libraryInit(); status != ARES_SUCCESS) {
      return fail(ErrorCode::Unavailable,
                  what + "cannot initialise c-ares: " + ares_strerror(status));
    }
    // A fresh channel per lookup: it reads /etc/resolv.conf now, so a lease that came (or
    // changed) after start-up counts, and lookups on different threads share nothing.
    ares_channel raw = nullptr;
    ares_options opts{};
    int mask = 0;
    if (options_.attemptTimeout.count() > 0) {
      opts.timeout = static_cast<int>(options_.attemptTimeout.count());
      mask |= ARES_OPT_TIMEOUTMS;
    }
    if (const int status = ares_init_options(&raw, &opts, mask); status != ARES_SUCCESS) {
      if (raw != nullptr) ares_destroy(raw);
      return fail(ErrorCode::Unavailable,
                  what + "cannot start the resolver: " + ares_strerror(status) +
                      " (reading /etc/resolv.conf)");
    }
    Channel channel(raw);
    if (!servers_.empty()) {
      std::vector<ares_addr_port_node> nodes(servers_.size());
      for (size_t i = 0; i < servers_.size(); ++i) {
        auto& node = nodes[i];
        node.next = i + 1 < nodes.size() ? &nodes[i + 1] : nullptr;
        node.family = servers_[i].family;
        if (node.family == AF_INET) {
          node.addr.addr4 = servers_[i].v4;
        } else {
          std::memcpy(&node.addr.addr6, &servers_[i].v6, sizeof(in6_addr));
        }
        node.udp_port = servers_[i].port;
        node.tcp_port = servers_[i].port;
      }
      if (const int status = ares_set_servers_ports(channel.get(), nodes.data());
          status != ARES_SUCCESS) {
        return fail(ErrorCode::Unavailable, what + "cannot use the DNS servers " +
                                                describeDns(options_) + ": " +
                                                ares_strerror(status));
      }
    }

    Lookup lookup;
    lookup.port = port;
    ares_addrinfo_hints hints{};
    hints.ai_family = AF_UNSPEC;  // A and AAAA
    hints.ai_socktype = SOCK_STREAM;
    ares_getaddrinfo(channel.get(), name.c_str(), nullptr, &hints, onAddrinfo, &lookup);

    const auto deadline = Steady::now() + timeout;
    while (!lookup.done) {
      const auto now = Steady::now();
      if (now >= deadline) {
        const std::string servers = channelServers(channel.get());
        ares_cancel(channel.get());  // runs onAddrinfo with ARES_ECANCELLED
        return fail(ErrorCode::DeadlineExceeded, what + "no answer within " +
                                                     std::to_string(timeout.count()) +
                                                     " ms (DNS servers: " + servers + ")");
      }
      ares_socket_t sockets[ARES_GETSOCK_MAXNUM];
      const int bits = ares_getsock(channel.get(), sockets, ARES_GETSOCK_MAXNUM);
      std::vector<pollfd> fds;
      for (int i = 0; i < ARES_GETSOCK_MAXNUM; ++i) {
        short events = 0;
        if (ARES_GETSOCK_READABLE(bits, i)) events |= POLLIN;
        if (ARES_GETSOCK_WRITABLE(bits, i)) events |= POLLOUT;
        if (events != 0) fds.push_back(pollfd{sockets[i], events, 0});
      }
      const auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - now);
      timeval maxWait{static_cast<time_t>(left.count() / 1000000),
                      static_cast<suseconds_t>(left.count() % 1000000)};
      timeval buffer{};
      const timeval* wait = ares_timeout(channel.get(), &maxWait, &buffer);
      const int waitMs = static_cast<int>(wait->tv_sec * 1000 + (wait->tv_usec + 999) / 1000);
      const int ready = ::poll(fds.data(), fds.size(), std::max(waitMs, 0));
      if (ready <= 0) {
        // Timeouts (and retries to the next server) are handled here.
        ares_process_fd(channel.get(), ARES_SOCKET_BAD, ARES_SOCKET_BAD);
        continue;
      }
      for (const auto& fd : fds) {
        const bool readable = (fd.revents & (POLLIN | POLLERR | POLLHUP)) != 0;
        const bool writable = (fd.revents & POLLOUT) != 0;
        if (readable || writable) {
          ares_process_fd(channel.get(), readable ? fd.fd : ARES_SOCKET_BAD,
                          writable ? fd.fd : ARES_SOCKET_BAD);
        }
      }
    }
    if (lookup.status != ARES_SUCCESS || lookup.endpoints.empty()) {
      const char* reason =
          lookup.status != ARES_SUCCESS ? ares_strerror(lookup.status) : "no addresses";
      return fail(ErrorCode::Unavailable,
                  what + reason + " (DNS servers: " + channelServers(channel.get()) + ")");
    }
    return lookup.endpoints;
  }

 private:
  DnsOptions options_;
  std::vector<Server> servers_;
};

}  // namespace

Result<std::vector<std::string>> parseDnsServers(std::string_view option, std::string_view list) {
  std::vector<std::string> out;
  for (const std::string_view item : split(list, ',')) {
    if (item.empty()) {
      return invalid(std::string(option) + " has an empty item in '" + std::string(list) + "'");
    }
    if (!parseServer(item)) {
      return invalid(std::string(option) + " needs IP addresses (IPv4[:PORT], IPv6 or " +
                     "[IPv6][:PORT], comma-separated), got '" + std::string(item) + "'");
    }
    out.emplace_back(item);
  }
  return out;
}

ResolverPtr makeDnsResolver(DnsOptions options) {
  return std::make_shared<DnsResolver>(std::move(options));
}

std::string describeDns(const DnsOptions& options) {
  if (options.servers.empty()) return "resolv.conf";
  std::string out;
  for (const auto& s : options.servers) {
    if (!out.empty()) out += ",";
    out += s;
  }
  return out;
}

}  // namespace kiln::agent
