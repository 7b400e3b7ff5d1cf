// File: agent/image/checksum.h
//
// Incremental image checksums (md5, sha256, sha512) over OpenSSL EVP, held in RAII.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "agent/image/image_info.h"
#include "shared/core/error.h"

namespace kiln::agent {

/// One running digest. Not thread-safe (one pipeline stage owns it).
class Hasher {
 public:
  /// A fresh digest of `algorithm`.
  static Result<Hasher> create(ChecksumAlgorithm algorithm);
  /// Adds bytes.
  void update(std::string_view bytes);
  /// Finishes and returns the lowercase hex digest (call once).
  std::string finishHex();

 private:
  struct CtxDeleter {
    void operator()(void* ctx) const;
  };
  explicit Hasher(void* ctx) : ctx_(ctx) {}
  std::unique_ptr<void, CtxDeleter> ctx_;
};

/// The lowercase hex digest of `bytes` (tests, config drives).
Result<std::string> digestHex(ChecksumAlgorithm algorithm, std::string_view bytes);

}  // namespace kiln::agent
