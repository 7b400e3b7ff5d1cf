// File: agent/image/checksum.cpp
//
// Hasher over OpenSSL's EVP digest API.
#include "agent/image/checksum.h"

#include <openssl/evp.h>

namespace kiln::agent {
namespace {

const EVP_MD* digestOf(ChecksumAlgorithm algorithm) {
  switch (algorithm) {
    case ChecksumAlgorithm::Md5:
      return EVP_md5();
    case ChecksumAlgorithm::Sha256:
      return EVP_sha256();
    case ChecksumAlgorithm::Sha512:
      return EVP_sha512();
  }
  return nullptr;
}

EVP_MD_CTX* ctxOf(void* p) { return static_cast<EVP_MD_CTX*>(p); }

}  // namespace

void Hasher::CtxDeleter::operator()(void* ctx) const { EVP_MD_CTX_free(ctxOf(ctx)); }

Result<Hasher> Hasher::create(ChecksumAlgorithm algorithm) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (ctx == nullptr) return internalError("Cannot allocate a digest context");
  Hasher hasher(ctx);
  if (EVP_DigestInit_ex(ctx, digestOf(algorithm), nullptr) != 1) {
    return internalError("Cannot initialise the " + std::string(toString(algorithm)) +
                         " digest (is it disabled in this OpenSSL build?)");
  }
  return hasher;
}

void Hasher::update(std::string_view bytes) {
  EVP_DigestUpdate(ctxOf(ctx_.get()), bytes.data(), bytes.size());
}

std::string Hasher::finishHex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctxOf(ctx_.get()), md, &length);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(length * 2);
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

Result<std::string> digestHex(ChecksumAlgorithm algorithm, std::string_view bytes) {
  auto hasher = KILN_TRY(Hasher::create(algorithm));
  hasher.update(bytes);
  return hasher.finishHex();
}

}  // namespace kiln::agent
