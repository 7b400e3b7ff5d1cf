// File: server/api/tls_session.h
//
// TLS for the API endpoint ([api] enable_ssl_api, [ssl] cert_file/key_file), with OpenSSL over
// memory BIOs: the endpoint hands ciphertext in and out, so handshakes run in the reactor
// threads like any other input and never block. (Pistache 0.0.5's own TLS runs a blocking
// SSL_accept() in its single accept thread: one client that connects and sends nothing stops
// every new connection; docs/security.md has the measurement.)
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "shared/core/error.h"

namespace kiln::server {

/// The server's certificate chain and key. Thread-safe to share between sessions.
class TlsContext {
 public:
  /// Loads a PEM certificate chain and private key; InvalidArgument names the file at fault.
  static Result<std::shared_ptr<TlsContext>> load(const std::string& certFile, const std::string& keyFile);
  ~TlsContext();

 private:
  friend class TlsSession;
  TlsContext() = default;
  void* ctx_ = nullptr;  // SSL_CTX*
};

/// One connection's TLS state (server side). Not thread-safe: one reactor thread owns it.
class TlsSession {
 public:
  explicit TlsSession(const TlsContext& context);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  /// Takes ciphertext from the client and appends the application data it decrypts to
  /// `plain`. Fails when the client's TLS is broken (bad record, failed handshake): the
  /// connection must then close.
  Result<void> receive(std::string_view cipher, std::string& plain);
  /// Encrypts application data for the client.
  Result<void> send(std::string_view plain);
  /// Queues the close_notify alert.
  void close();
  /// The ciphertext to write to the socket now (handshake records, encrypted data, alerts).
  std::string takeOutput();

 private:
  void* ssl_ = nullptr;     // SSL*
  void* output_ = nullptr;  // BIO* the session writes ciphertext to
  void* input_ = nullptr;   // BIO* the session reads ciphertext from
};

}  // namespace kiln::server
