// File: tests/support/raw_http_client.h
//
// A blocking loopback HTTP/1.x client for tests that need to see the bytes on the wire:
// connection handling, headers, large bodies.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

namespace kiln::test {

/// A TCP socket connected to 127.0.0.1:`port`. `receiveBuffer` > 0 shrinks its receive buffer
/// (set before connecting, so the server sees a small window and cannot send a large response
/// in one write).
inline int connectLoopback(uint16_t port, int receiveBuffer = 0) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (receiveBuffer > 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receiveBuffer, sizeof receiveBuffer);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  return fd;
}

/// A blocking loopback client that reads one HTTP response (headers + Content-Length body).
class RawClient {
 public:
  /// `receiveBuffer` > 0 shrinks the socket's receive buffer (set before connecting, so the
  /// server sees a small window and cannot send a large response in one write).
  explicit RawClient(uint16_t port, int receiveBuffer = 0) {
    fd_ = connectLoopback(port, receiveBuffer);
    timeval tv{5, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~RawClient() { close(fd_); }

  /// True when the server has closed its side: the next read sees end of stream.
  bool serverClosed() {
    if (!pending_.empty()) return false;
    char c;
    return recv(fd_, &c, 1, 0) == 0;
  }

  /// Sends `bytes` as they are (a request, part of one, or several).
  void sendRaw(const std::string& bytes) {
    REQUIRE(send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()));
  }

  /// Reads one response (headers + Content-Length body); bytes of a later response stay
  /// buffered for the next call. Empty when the server closed first (or after 5 s).
  std::string readResponse() {
    char buf[4096];
    while (true) {
      const auto headerEnd = pending_.find("\r\n\r\n");
      if (headerEnd != std::string::npos) {
        const std::string head = pending_.substr(0, headerEnd);
        const auto cl = head.find("Content-Length: ");
        const size_t length = cl == std::string::npos ? 0 : std::stoul(head.substr(cl + 16));
        if (pending_.size() >= headerEnd + 4 + length) {
          std::string response = pending_.substr(0, headerEnd + 4 + length);
          pending_.erase(0, headerEnd + 4 + length);
          return response;
        }
      }
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        std::string rest;
        rest.swap(pending_);
        return rest;
      }
      pending_.append(buf, static_cast<size_t>(n));
    }
  }

  std::string roundTrip(const std::string& request) {
    sendRaw(request);
    return readResponse();
  }

 private:
  int fd_ = -1;
  std::string pending_;
};

}  // namespace kiln::test
