#include "server/api/tls_session.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace kiln::server {
namespace {

std::string openSslError() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown TLS error";
  char buf[256];
  ERR_error_string_n(code, buf, sizeof buf);
  return buf;
}

SSL* asSsl(void* p) { return static_cast<SSL*>(p); }
BIO* asBio(void* p) { return static_cast<BIO*>(p); }

}  // namespace

Result<std::shared_ptr<TlsContext>> TlsContext::load(const std::string& certFile,
                                                     const std::string& keyFile) {
  std::shared_ptr<TlsContext> context(new TlsContext());
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx) return fail(ErrorCode::Internal, "cannot create a TLS context: " + openSslError());
  context->ctx_ = ctx;
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                               SSL_OP_CIPHER_SERVER_PREFERENCE);
  // Responses are written whole; let SSL_write take any length and keep the buffers small
  // while a connection is idle.
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_RELEASE_BUFFERS);
  if (SSL_CTX_use_certificate_chain_file(ctx, certFile.c_str()) != 1) {
    return invalid("[ssl] cert_file " + certFile + " is not a readable PEM certificate: " + openSslError());
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, keyFile.c_str(), SSL_FILETYPE_PEM) != 1) {
    if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
      ERR_clear_error();
      return invalid("[ssl] key_file " + keyFile + " does not match [ssl] cert_file " + certFile);
    }
    return invalid("[ssl] key_file " + keyFile + " is not a readable PEM private key: " + openSslError());
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return invalid("[ssl] key_file " + keyFile + " does not match [ssl] cert_file " + certFile);
  }
  return context;
}

TlsContext::~TlsContext() { SSL_CTX_free(static_cast<SSL_CTX*>(ctx_)); }

TlsSession::TlsSession(const TlsContext& context) {
  SSL* ssl = SSL_new(static_cast<SSL_CTX*>(context.ctx_));
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  BIO_set_mem_eof_return(in, -1);  // an empty input means "more later", not end of stream
  SSL_set_bio(ssl, in, out);       // the session owns both BIOs now
  SSL_set_accept_state(ssl);
  ssl_ = ssl;
  input_ = in;
  output_ = out;
}

TlsSession::~TlsSession() { SSL_free(asSsl(ssl_)); }

Result<void> TlsSession::receive(std::string_view cipher, std::string& plain) {
  while (!cipher.empty()) {
    const int written = BIO_write(asBio(input_), cipher.data(), static_cast<int>(std::min<size_t>(cipher.size(), 1 << 20)));
    if (written <= 0) return invalid("cannot buffer TLS input");
    cipher.remove_prefix(static_cast<size_t>(written));
  }
  char buf[16 * 1024];
  for (;;) {
    const int n = SSL_read(asSsl(ssl_), buf, sizeof buf);
    if (n > 0) {
      plain.append(buf, static_cast<size_t>(n));
      continue;
    }
    const int error = SSL_get_error(asSsl(ssl_), n);
    if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) return {};
    if (error == SSL_ERROR_ZERO_RETURN) return {};  // the client's close_notify
    return invalid("TLS error: " + openSslError());
  }
}

Result<void> TlsSession::send(std::string_view plain) {
  while (!plain.empty()) {
    const int n = SSL_write(asSsl(ssl_), plain.data(), static_cast<int>(std::min<size_t>(plain.size(), 1 << 30)));
    if (n <= 0) return invalid("TLS error while writing: " + openSslError());
    plain.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

void TlsSession::close() {
  SSL_shutdown(asSsl(ssl_));
  ERR_clear_error();
}

std::string TlsSession::takeOutput() {
  std::string out;
  const size_t pending = BIO_ctrl_pending(asBio(output_));
  if (pending == 0) return out;
  out.resize(pending);
  const int n = BIO_read(asBio(output_), out.data(), static_cast<int>(pending));
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

}  // namespace kiln::server
