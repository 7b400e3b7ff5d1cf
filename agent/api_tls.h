// File: agent/api_tls.h
//
// Turns the agent's TLS settings (ApiTls, agent/agent_config.h) into what HttpRequest takes
// (docs/protocol.md §7 "TLS"):
//
//   lookup and heartbeats   verify against the API's CA alone when one is given (an inline
//                           kiln.api_ca= is written to a PEM file first), else the system's store;
//   image and config drive  verify against the system's CA bundle plus the API's CA, so images
//   downloads               served by the conductor's HTTPS server (private CA) and by public
//                           HTTPS servers both work; the ramdisk ships no system store.
//
// The insecure switch turns verification off for both. TlsDefaultsHttpClient applies the
// settings to every request that names no CA of its own and explains certificate failures.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "agent/agent_config.h"
#include "shared/core/error.h"
#include "shared/http/http_client.h"

namespace kiln::agent {

/// What one kind of request verifies.
struct TlsDefaults {
  bool verify = true;
  std::string caFile;  ///< HttpRequest::caFile; empty = the system's store
  /// Names what is trusted, for certificate errors: "the CA of kiln.api_ca (/tmp/.../api-ca.pem)".
  std::string trusted = "the system's CA store";
};

struct TlsFiles {
  TlsDefaults api;        ///< lookup, heartbeats
  TlsDefaults downloads;  ///< images, config drives
};

/// Writes what the settings need under `dir` (created when needed): api-ca.pem for an inline
/// CA, download-ca.pem (the bundle `systemBundle` names, when readable, followed by the API's
/// CA certificates) when there is an API CA. InvalidArgument when the API's CA file cannot be
/// read or holds no certificate; Internal when `dir` cannot be written.
Result<TlsFiles> prepareTlsFiles(const ApiTls& tls, const std::string& dir,
                                 const std::string& systemBundle);

/// The system's CA bundle file as OpenSSL finds it: $SSL_CERT_FILE, else OpenSSL's default
/// (Debian: /usr/lib/ssl/cert.pem). It may not exist (the ramdisk has none).
std::string systemCaBundle();

/// How many certificates OpenSSL reads from PEM text.
size_t countPemCertificates(std::string_view pem);

/// Applies TlsDefaults to each request that has verification on and names no CA of its own (an
/// insecure default turns verification off for every request), and adds what is trusted to
/// the message of a failed TLS handshake.
class TlsDefaultsHttpClient final : public HttpClient {
 public:
  TlsDefaultsHttpClient(HttpClient& inner, TlsDefaults defaults)
      : inner_(inner), defaults_(std::move(defaults)) {}

  Result<HttpResponse> send(const HttpRequest& request) override;
  Result<HttpResponse> stream(const HttpRequest& request, const BodySink& sink) override;

  /// The request as it is sent.
  HttpRequest adjust(const HttpRequest& request) const;

 private:
  Result<HttpResponse> explain(Result<HttpResponse> result, const HttpRequest& sent) const;

  HttpClient& inner_;
  TlsDefaults defaults_;
};

}  // namespace kiln::agent
