#include "shared/core/gzip.h"

#include <zlib.h>

namespace kiln {
namespace {

constexpr size_t kChunk = 64 * 1024;

}  // namespace

Result<std::string> gzipCompress(std::string_view data, int level) {
  z_stream z{};
  // windowBits 15 + 16: a gzip wrapper rather than zlib's.
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return internalError("Cannot initialise zlib for compression");
  }
  std::string out;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  char chunk[kChunk];
  int ret = Z_OK;
  while (ret != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof chunk;
    ret = deflate(&z, Z_FINISH);
    if (ret != Z_OK && ret != Z_STREAM_END && ret != Z_BUF_ERROR) {
      deflateEnd(&z);
      return internalError(std::string("gzip compression failed: ") +
                           (z.msg ? z.msg : "deflate failed"));
    }
    out.append(chunk, sizeof chunk - z.avail_out);
  }
  deflateEnd(&z);
  return out;
}

Result<std::string> gunzip(std::string_view data, size_t maxBytes) {
  z_stream z{};
  // windowBits 15 + 32: gzip or zlib, from the header.
  if (inflateInit2(&z, 15 + 32) != Z_OK) return internalError("Cannot initialise zlib");
  std::string out;
  char chunk[kChunk];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  int ret = Z_OK;
  while (ret != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof chunk;
    ret = inflate(&z, Z_NO_FLUSH);
    if (ret != Z_OK && ret != Z_STREAM_END) {
      inflateEnd(&z);
      return invalid(ret == Z_BUF_ERROR
                         ? std::string("Truncated gzip data")
                         : std::string("Corrupt gzip data: ") + (z.msg ? z.msg : "inflate failed"));
    }
    const size_t produced = sizeof chunk - z.avail_out;
    if (out.size() + produced > maxBytes) {
      inflateEnd(&z);
      return invalid("The gzip data inflates to more than " + std::to_string(maxBytes) + " bytes");
    }
    out.append(chunk, produced);
  }
  inflateEnd(&z);
  return out;
}

}  // namespace kiln
