#include "agent/api_tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <system_error>

#include "shared/core/file.h"

namespace kiln::agent {

namespace fs = std::filesystem;

size_t countPemCertificates(std::string_view pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  if (!bio) return 0;
  size_t count = 0;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    X509_free(cert);
    ++count;
  }
  ERR_clear_error();  // the read that ends the loop leaves "no start line" behind
  return count;
}

std::string systemCaBundle() {
  if (const char* env = std::getenv(X509_get_default_cert_file_env()); env && *env) return env;
  return X509_get_default_cert_file();
}

namespace {

Result<void> writeText(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.flush()) return internalError("Cannot write " + path.string());
  return {};
}

/// The certificates of a CA directory (OpenSSL's hashed layout or any *.pem/*.crt files), as one
/// PEM text; unreadable and non-certificate files are skipped.
std::string certificatesOfDirectory(const std::string& dir) {
  std::string pem;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->file_size(ec) > (1u << 20)) continue;
    auto text = readFile(it->path().string());
    if (!text || countPemCertificates(*text) == 0) continue;
    pem += *text;
    if (pem.back() != '\n') pem += '\n';
  }
  return pem;
}

}  // namespace

Result<TlsFiles> prepareTlsFiles(const ApiTls& tls, const std::string& dir,
                                 const std::string& systemBundle) {
  TlsFiles files;
  if (tls.insecure) {
    files.api = TlsDefaults{false, "", "nothing (insecure)"};
    files.downloads = files.api;
    return files;
  }
  if (tls.inlineCaPem.empty() && tls.caFile.empty()) return files;  // the system's store

  std::string apiPem;  // the API's CA certificates, for the download bundle
  std::error_code ec;
  if (!tls.inlineCaPem.empty()) {
    // Every certificate must read: a truncated kernel command line damages the last one.
    size_t blocks = 0;
    for (size_t at = tls.inlineCaPem.find("-----BEGIN CERTIFICATE-----"); at != std::string::npos;
         at = tls.inlineCaPem.find("-----BEGIN CERTIFICATE-----", at + 1)) {
      ++blocks;
    }
    const size_t read = countPemCertificates(tls.inlineCaPem);
    if (read == 0 || read != blocks) {
      return invalid(tls.source + " holds " + std::to_string(blocks) +
                     " certificate(s), of which OpenSSL reads " + std::to_string(read) +
                     " (is the kernel command line truncated?)");
    }
    fs::create_directories(dir, ec);
    if (ec) return internalError("Cannot create " + dir + ": " + ec.message());
    const std::string path = (fs::path(dir) / "api-ca.pem").string();
    KILN_TRY_VOID(writeText(path, tls.inlineCaPem));
    files.api = TlsDefaults{true, path, "the CA of " + tls.source + " (" + path + ")"};
    apiPem = tls.inlineCaPem;
  } else if (fs::is_directory(tls.caFile, ec)) {
    files.api =
        TlsDefaults{true, tls.caFile, "the CA directory " + tls.caFile + " (" + tls.source + ")"};
    apiPem = certificatesOfDirectory(tls.caFile);
  } else {
    auto text = readFile(tls.caFile);
    if (!text)
      return invalid("Cannot read the API's CA file " + tls.caFile + " (" + tls.source + ")");
    if (countPemCertificates(*text) == 0) {
      return invalid("The API's CA file " + tls.caFile + " (" + tls.source +
                     ") holds no PEM certificate");
    }
    files.api =
        TlsDefaults{true, tls.caFile, "the CA file " + tls.caFile + " (" + tls.source + ")"};
    apiPem = std::move(*text);
  }

  if (apiPem.empty()) {
    // A directory without readable certificates: downloads keep the system's store.
    return files;
  }
  std::string bundle;
  std::string trusted = "the API's CA";
  if (auto system = systemBundle.empty() ? std::nullopt : readFile(systemBundle);
      system && countPemCertificates(*system) > 0) {
    bundle = std::move(*system);
    if (bundle.back() != '\n') bundle += '\n';
    trusted = "the system's CA bundle " + systemBundle + " and the API's CA";
  }
  bundle += apiPem;
  fs::create_directories(dir, ec);
  if (ec) return internalError("Cannot create " + dir + ": " + ec.message());
  const std::string path = (fs::path(dir) / "download-ca.pem").string();
  KILN_TRY_VOID(writeText(path, bundle));
  files.downloads = TlsDefaults{true, path, trusted + " (" + path + ")"};
  return files;
}

HttpRequest TlsDefaultsHttpClient::adjust(const HttpRequest& request) const {
  HttpRequest out = request;
  if (!defaults_.verify) {
    out.verifyTls = false;
  } else if (out.verifyTls && out.caFile.empty()) {
    out.caFile = defaults_.caFile;
  }
  return out;
}

Result<HttpResponse> TlsDefaultsHttpClient::explain(Result<HttpResponse> result,
                                                    const HttpRequest& sent) const {
  if (result || sent.url.rfind("https://", 0) != 0) return result;
  Error e = result.error();
  if (e.is(Reason::TlsHandshake) && sent.verifyTls) {
    const std::string trusted =
        sent.caFile == defaults_.caFile ? defaults_.trusted : "the CA file " + sent.caFile;
    e.message += "; the server's certificate was checked against " + trusted;
  }
  return std::unexpected(std::move(e));
}

Result<HttpResponse> TlsDefaultsHttpClient::send(const HttpRequest& request) {
  HttpRequest sent = adjust(request);
  return explain(inner_.send(sent), sent);
}

Result<HttpResponse> TlsDefaultsHttpClient::stream(const HttpRequest& request,
                                                   const BodySink& sink) {
  HttpRequest sent = adjust(request);
  return explain(inner_.stream(sent, sink), sent);
}

}  // namespace kiln::agent
