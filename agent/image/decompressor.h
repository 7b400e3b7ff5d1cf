// File: agent/image/decompressor.h
//
// Streaming decompression for image downloads: zstd, gzip/zlib and xz behind one small
// interface, each holding its C library state in RAII. Memory is the library's window only
// (zstd <= 128 MiB, xz its dictionary); the pipeline feeds and drains fixed buffers.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "agent/image/image_info.h"
#include "shared/core/error.h"

namespace kiln::agent {

/// One decompression stream. Not thread-safe.
class Decompressor {
 public:
  virtual ~Decompressor() = default;
  /// Consumes from the front of `in` and writes up to `capacity` bytes to `out`, setting
  /// `produced`. `lastInput` says no input follows `in`. Call again while output fills up or
  /// input remains; a call that produces nothing with empty input means "needs more input".
  /// Errors: InvalidArgument for corrupt data.
  virtual Result<void> decompress(std::string_view& in, char* out, size_t capacity,
                                  size_t& produced, bool lastInput) = 0;
  /// After the last input is drained: InvalidArgument when the stream was truncated.
  virtual Result<void> finish() = 0;
};
using DecompressorPtr = std::unique_ptr<Decompressor>;

/// A decompressor for `compression` (Zstd, Gzip or Xz).
Result<DecompressorPtr> makeDecompressor(Compression compression);

}  // namespace kiln::agent
