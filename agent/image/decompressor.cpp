// File: agent/image/decompressor.cpp
//
// The zstd, zlib (gzip, with concatenated members) and liblzma (xz, concatenated streams)
// implementations of Decompressor.
#include "agent/image/decompressor.h"

#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <string>

namespace kiln::agent {
namespace {

class ZstdDecompressor final : public Decompressor {
 public:
  ZstdDecompressor() : ctx_(ZSTD_createDCtx()) {}
  ~ZstdDecompressor() override { ZSTD_freeDCtx(ctx_); }
  ZstdDecompressor(const ZstdDecompressor&) = delete;
  ZstdDecompressor& operator=(const ZstdDecompressor&) = delete;

  bool ok() const { return ctx_ != nullptr; }

  Result<void> decompress(std::string_view& in, char* out, size_t capacity, size_t& produced,
                          bool) override {
    ZSTD_inBuffer input{in.data(), in.size(), 0};
    ZSTD_outBuffer output{out, capacity, 0};
    const size_t ret = ZSTD_decompressStream(ctx_, &output, &input);
    if (ZSTD_isError(ret)) {
      return invalid(std::string("Corrupt zstd image data: ") + ZSTD_getErrorName(ret));
    }
    if (input.pos > 0 || output.pos > 0) {
      lastRet_ = ret;
      sawData_ = true;
    }
    in.remove_prefix(input.pos);
    produced = output.pos;
    return {};
  }

  Result<void> finish() override {
    if (!sawData_ || lastRet_ != 0) return invalid("Truncated zstd image data");
    return {};
  }

 private:
  ZSTD_DCtx* ctx_;
  size_t lastRet_ = 1;
  bool sawData_ = false;
};

class GzipDecompressor final : public Decompressor {
 public:
  GzipDecompressor() { initialised_ = inflateInit2(&z_, 15 + 32) == Z_OK; }  // gzip or zlib
  ~GzipDecompressor() override {
    if (initialised_) inflateEnd(&z_);
  }
  GzipDecompressor(const GzipDecompressor&) = delete;
  GzipDecompressor& operator=(const GzipDecompressor&) = delete;

  bool ok() const { return initialised_; }

  Result<void> decompress(std::string_view& in, char* out, size_t capacity, size_t& produced,
                          bool) override {
    produced = 0;
    if (ended_ && !in.empty()) {
      // Another gzip member follows (pigz and `cat a.gz b.gz` produce these).
      inflateReset(&z_);
      ended_ = false;
    }
    if (ended_) return {};
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z_.avail_in = static_cast<uInt>(std::min<size_t>(in.size(), 1u << 30));
    z_.next_out = reinterpret_cast<Bytef*>(out);
    z_.avail_out = static_cast<uInt>(std::min<size_t>(capacity, 1u << 30));
    const uInt availIn = z_.avail_in;
    const uInt availOut = z_.avail_out;
    const int ret = inflate(&z_, Z_NO_FLUSH);
    in.remove_prefix(availIn - z_.avail_in);
    produced = availOut - z_.avail_out;
    if (ret == Z_STREAM_END) {
      ended_ = true;
    } else if (ret != Z_OK && ret != Z_BUF_ERROR) {
      return invalid(std::string("Corrupt gzip image data: ") +
                     (z_.msg ? z_.msg : "inflate failed"));
    }
    return {};
  }

  Result<void> finish() override {
    if (!ended_) return invalid("Truncated gzip image data");
    return {};
  }

 private:
  z_stream z_{};
  bool initialised_ = false;
  bool ended_ = false;
};

class XzDecompressor final : public Decompressor {
 public:
  XzDecompressor() {
    initialised_ = lzma_stream_decoder(&s_, UINT64_MAX, LZMA_CONCATENATED) == LZMA_OK;
  }
  ~XzDecompressor() override { lzma_end(&s_); }
  XzDecompressor(const XzDecompressor&) = delete;
  XzDecompressor& operator=(const XzDecompressor&) = delete;

  bool ok() const { return initialised_; }

  Result<void> decompress(std::string_view& in, char* out, size_t capacity, size_t& produced,
                          bool lastInput) override {
    produced = 0;
    if (ended_) {
      in.remove_prefix(in.size());
      return {};
    }
    s_.next_in = reinterpret_cast<const uint8_t*>(in.data());
    s_.avail_in = in.size();
    s_.next_out = reinterpret_cast<uint8_t*>(out);
    s_.avail_out = capacity;
    const lzma_ret ret = lzma_code(&s_, lastInput ? LZMA_FINISH : LZMA_RUN);
    in.remove_prefix(in.size() - s_.avail_in);
    produced = capacity - s_.avail_out;
    if (ret == LZMA_STREAM_END) {
      ended_ = true;
    } else if (ret != LZMA_OK && ret != LZMA_BUF_ERROR) {
      return invalid("Corrupt xz image data (liblzma error " + std::to_string(ret) + ")");
    }
    return {};
  }

  Result<void> finish() override {
    if (!ended_) return invalid("Truncated xz image data");
    return {};
  }

 private:
  lzma_stream s_ = LZMA_STREAM_INIT;
  bool initialised_ = false;
  bool ended_ = false;
};

template <class D>
Result<DecompressorPtr> make(const char* name) {
  auto d = std::make_unique<D>();
  if (!d->ok()) return internalError(std::string("Cannot initialise the ") + name + " decoder");
  return DecompressorPtr(std::move(d));
}

}  // namespace

Result<DecompressorPtr> makeDecompressor(Compression compression) {
  switch (compression) {
    case Compression::Zstd:
      return make<ZstdDecompressor>("zstd");
    case Compression::Gzip:
      return make<GzipDecompressor>("gzip");
    case Compression::Xz:
      return make<XzDecompressor>("xz");
    case Compression::Auto:
    case Compression::None:
      break;
  }
  return invalid("No decompressor for compression \"" + std::string(toString(compression)) + "\"");
}

}  // namespace kiln::agent
