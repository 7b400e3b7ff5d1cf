// File: tests/support/http_file_server.cpp
//
// HttpFileServer: an accept thread plus one thread per connection. Stopping wakes every
// thread through a self-pipe and shuts the sockets down, so stalled responses end at once.
#include "tests/support/http_file_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

namespace kiln::test {

namespace {

/// The value of header `lowercaseName` in a request's header block ("" when absent).
std::string headerValue(const std::string& block, std::string_view lowercaseName) {
  size_t pos = block.find("\r\n");
  while (pos != std::string::npos && pos + 2 < block.size()) {
    const size_t start = pos + 2;
    const size_t end = block.find("\r\n", start);
    const std::string line = block.substr(start, end == std::string::npos ? end : end - start);
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (name == lowercaseName) {
        const size_t value = line.find_first_not_of(" \t", colon + 1);
        return value == std::string::npos ? std::string() : line.substr(value);
      }
    }
    pos = end;
  }
  return "";
}

}  // namespace

struct HttpFileServer::State {
  mutable std::mutex mutex;
  std::map<std::string, ServedPath, std::less<>> paths;
  std::map<std::string, int, std::less<>> gets;
  std::map<std::string, int, std::less<>> heads;
  std::map<std::string, std::vector<std::string>, std::less<>> auths;
  std::map<std::string, std::vector<std::string>, std::less<>> methods;
  std::string address = "127.0.0.1";
  std::set<int> connections;
  std::vector<std::thread> threads;
  std::thread acceptor;
  int listenFd = -1;
  int wakeRead = -1;
  int wakeWrite = -1;
  uint16_t port = 0;
  std::atomic<bool> stopping{false};
  bool started = false;

  /// Sends everything; false when the peer went away or the server stops.
  bool sendAll(int fd, const char* data, size_t n) {
    while (n > 0) {
      if (stopping) return false;
      const ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
      if (w <= 0) return false;
      data += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }

  /// Holds a stalled connection until the client closes it or the server stops.
  void hold(int fd) {
    pollfd fds[2] = {{fd, POLLIN, 0}, {wakeRead, POLLIN, 0}};
    char buf[4096];
    while (!stopping) {
      if (::poll(fds, 2, -1) <= 0) return;
      if (fds[1].revents != 0) return;
      if (fds[0].revents != 0 && ::recv(fd, buf, sizeof buf, 0) <= 0) return;
    }
  }

  void handle(int fd) {
    std::string text;
    char buf[4096];
    while (text.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return;
      text.append(buf, static_cast<size_t>(n));
    }
    const auto lineEnd = text.find("\r\n");
    const std::string line = text.substr(0, lineEnd);
    const auto sp1 = line.find(' ');
    const auto sp2 = line.find(' ', sp1 + 1);
    if (sp1 == std::string::npos || sp2 == std::string::npos) return;
    const std::string method = line.substr(0, sp1);
    std::string path = line.substr(sp1 + 1, sp2 - sp1 - 1);
    if (const auto q = path.find('?'); q != std::string::npos) path.resize(q);
    const std::string headerBlock = text.substr(0, text.find("\r\n\r\n"));
    const std::string authorization = headerValue(headerBlock, "authorization");
    // Read a request body (a POST) so that closing the socket does not reset the connection.
    const std::string contentLength = headerValue(headerBlock, "content-length");
    const size_t bodyLength = contentLength.empty() ? 0 : std::stoul(contentLength);
    while (text.size() < headerBlock.size() + 4 + bodyLength) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return;
      text.append(buf, static_cast<size_t>(n));
    }

    std::optional<ServedPath> served;
    {
      std::lock_guard lock(mutex);
      ++(method == "HEAD" ? heads : gets)[path];
      auths[path].push_back(authorization);
      methods[path].push_back(method);
      if (const auto it = paths.find(path); it != paths.end()) served = it->second;
    }
    if (!served) {
      served = ServedPath{};
      served->status = 404;
    }
    const bool head = method == "HEAD";
    std::string extraHeaders;
    if (served->authorization && authorization != *served->authorization) {
      served->status = 401;
      extraHeaders = "WWW-Authenticate: Basic realm=\"kiln-test\"\r\n";
    } else if (!served->location.empty()) {
      extraHeaders = "Location: " + served->location + "\r\n";
    }
    if (served->status != 200) {
      const std::string body = "error " + std::to_string(served->status) + "\n";
      const std::string reply =
          "HTTP/1.1 " + std::to_string(served->status) + " Error\r\n" + extraHeaders +
          "Content-Type: text/plain\r\nContent-Length: " + std::to_string(body.size()) +
          "\r\nConnection: close\r\n\r\n" + (head ? std::string() : body);
      sendAll(fd, reply.data(), reply.size());
      return;
    }
    int file = -1;
    uint64_t length = served->data.size();
    if (!served->file.empty()) {
      file = ::open(served->file.c_str(), O_RDONLY | O_CLOEXEC);
      struct stat st {};
      if (file < 0 || ::fstat(file, &st) != 0) {
        if (file >= 0) ::close(file);
        const std::string reply = "HTTP/1.1 500 Error\r\nContent-Length: 0\r\n\r\n";
        sendAll(fd, reply.data(), reply.size());
        return;
      }
      length = static_cast<uint64_t>(st.st_size);
    }
    std::string header = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n";
    if (served->contentLength) header += "Content-Length: " + std::to_string(length) + "\r\n";
    header += "Connection: close\r\n\r\n";
    bool ok = sendAll(fd, header.data(), header.size());
    uint64_t limit = length;
    if (served->stallAfter) limit = std::min(limit, *served->stallAfter);
    if (served->closeAfter) limit = std::min(limit, *served->closeAfter);
    std::vector<char> chunk(1024 * 1024);
    for (uint64_t sent = 0; ok && !head && sent < limit;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), limit - sent));
      if (file >= 0) {
        const ssize_t r = ::pread(file, chunk.data(), n, static_cast<off_t>(sent));
        if (r <= 0) break;
        ok = sendAll(fd, chunk.data(), static_cast<size_t>(r));
        sent += static_cast<uint64_t>(r);
      } else {
        ok = sendAll(fd, served->data.data() + sent, n);
        sent += n;
      }
    }
    if (file >= 0) ::close(file);
    if (ok && !head && served->stallAfter && *served->stallAfter < length &&
        !(served->closeAfter && *served->closeAfter <= *served->stallAfter)) {
      hold(fd);
    }
  }

  void acceptLoop() {
    while (!stopping) {
      pollfd fds[2] = {{listenFd, POLLIN, 0}, {wakeRead, POLLIN, 0}};
      if (::poll(fds, 2, -1) <= 0) continue;
      if (fds[1].revents != 0 || stopping) return;
      const int fd = ::accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      std::lock_guard lock(mutex);
      connections.insert(fd);
      threads.emplace_back([this, fd] {
        handle(fd);
        {
          std::lock_guard inner(mutex);
          connections.erase(fd);
        }
        ::shutdown(fd, SHUT_RDWR);
        ::close(fd);
      });
    }
  }
};

HttpFileServer::HttpFileServer() : state_(std::make_shared<State>()) {}

HttpFileServer::~HttpFileServer() { stop(); }

Result<void> HttpFileServer::start(const std::string& address) {
  State& s = *state_;
  s.address = address;
  int pipeFds[2];
  if (::pipe2(pipeFds, O_CLOEXEC) != 0) return internalError("pipe2 failed");
  s.wakeRead = pipeFds[0];
  s.wakeWrite = pipeFds[1];
  s.listenFd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s.listenFd < 0) return internalError("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (::inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1) {
    return invalid("Not an IPv4 address: " + address);
  }
  socklen_t len = sizeof addr;
  if (::bind(s.listenFd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(s.listenFd, 16) != 0 ||
      ::getsockname(s.listenFd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return internalError("Cannot listen on " + address + ": " + std::strerror(errno));
  }
  s.port = ntohs(addr.sin_port);
  s.started = true;
  s.acceptor = std::thread([&s] { s.acceptLoop(); });
  return {};
}

void HttpFileServer::stop() {
  State& s = *state_;
  if (!s.started) return;
  s.started = false;
  s.stopping = true;
  const char byte = 1;
  [[maybe_unused]] const auto w = ::write(s.wakeWrite, &byte, 1);
  s.acceptor.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(s.mutex);
    for (int fd : s.connections) ::shutdown(fd, SHUT_RDWR);
    threads.swap(s.threads);
  }
  for (auto& t : threads) t.join();
  ::close(s.listenFd);
  ::close(s.wakeRead);
  ::close(s.wakeWrite);
}

uint16_t HttpFileServer::port() const { return state_->port; }

std::string HttpFileServer::url(std::string_view path) const {
  return "http://" + state_->address + ":" + std::to_string(state_->port) + std::string(path);
}

void HttpFileServer::serve(std::string path, ServedPath served) {
  std::lock_guard lock(state_->mutex);
  state_->paths[std::move(path)] = std::move(served);
}

void HttpFileServer::serveData(std::string path, std::string data) {
  ServedPath served;
  served.data = std::move(data);
  serve(std::move(path), std::move(served));
}

void HttpFileServer::serveFile(std::string path, std::string file) {
  ServedPath served;
  served.file = std::move(file);
  serve(std::move(path), std::move(served));
}

int HttpFileServer::getCount(std::string_view path) const {
  std::lock_guard lock(state_->mutex);
  const auto it = state_->gets.find(path);
  return it == state_->gets.end() ? 0 : it->second;
}

std::vector<std::string> HttpFileServer::authorizations(std::string_view path) const {
  std::lock_guard lock(state_->mutex);
  const auto it = state_->auths.find(path);
  return it == state_->auths.end() ? std::vector<std::string>() : it->second;
}

std::vector<std::string> HttpFileServer::methods(std::string_view path) const {
  std::lock_guard lock(state_->mutex);
  const auto it = state_->methods.find(path);
  return it == state_->methods.end() ? std::vector<std::string>() : it->second;
}

int HttpFileServer::headCount(std::string_view path) const {
  std::lock_guard lock(state_->mutex);
  const auto it = state_->heads.find(path);
  return it == state_->heads.end() ? 0 : it->second;
}

}  // namespace kiln::test
