#include "agent/image/image_pipeline.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "agent/disk/device_io.h"
#include "agent/image/checksum.h"
#include "shared/core/strings.h"

namespace kiln::agent {
namespace {

/// A pipeline buffer: aligned memory of kImageBufferSize and the pool it returns to.
struct Buffer;

/// A blocking FIFO of buffers with end-of-stream (close) and abandonment (cancel).
class Channel {
 public:
  void push(Buffer* b) {
    {
      std::lock_guard lock(mutex_);
      items_.push_back(b);
    }
    cv_.notify_one();
  }
  /// The next buffer; nullptr once closed and drained, or cancelled.
  Buffer* pop() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return cancelled_ || closed_ || !items_.empty(); });
    if (cancelled_ || items_.empty()) return nullptr;
    Buffer* b = items_.front();
    items_.pop_front();
    return b;
  }
  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    cv_.notify_all();
  }
  void cancel() {
    {
      std::lock_guard lock(mutex_);
      cancelled_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Buffer*> items_;
  bool closed_ = false;
  bool cancelled_ = false;
};

struct Buffer {
  char* data = nullptr;
  size_t size = 0;
  Channel* home = nullptr;

  size_t room() const { return kImageBufferSize - size; }
  void recycle() {
    size = 0;
    home->push(this);
  }
};

/// Writes the pipeline's buffers one after the other into one region of the target.
class RegionWriter {
 public:
  static Result<RegionWriter> open(const std::string& path, uint64_t offset, uint64_t capacity) {
    RegionWriter w;
    w.path_ = path;
    w.offset_ = offset;
    w.capacity_ = capacity;
    w.writer_ = KILN_TRY(DirectWriter::open(path));
    return w;
  }

  /// Whether the region's writes go through O_DIRECT (an aligned region on a file system
  /// that allows it).
  bool direct() const { return writer_.direct() && offset_ % kDirectAlign == 0; }

  /// Appends `length` bytes from aligned memory.
  Result<void> append(const char* data, size_t length) {
    if (length > capacity_ - std::min(capacity_, position_)) {
      return invalid("The image is larger than the target " + path_ + ": more than " +
                     std::to_string(capacity_) + " bytes");
    }
    KILN_TRY_VOID(writer_.write(data, length, offset_ + position_));
    position_ += length;
    return {};
  }

  uint64_t written() const { return position_; }

  /// Makes everything durable.
  Result<void> sync() { return writer_.sync(); }

 private:
  std::string path_;
  uint64_t offset_ = 0;
  uint64_t capacity_ = 0;
  uint64_t position_ = 0;
  DirectWriter writer_;
};

/// The first error of an attempt, and whether another URL may succeed where this one failed.
class PipelineState {
 public:
  explicit PipelineState(std::vector<Channel*> channels) : channels_(std::move(channels)) {}

  void fail(Error error, bool downloadFailure) {
    {
      std::lock_guard lock(mutex_);
      if (error_) return;
      error_ = std::move(error);
      downloadFailure_ = downloadFailure;
      failed_ = true;
    }
    for (Channel* c : channels_) c->cancel();
  }
  bool failed() const { return failed_.load(); }
  std::optional<Error> error() const {
    std::lock_guard lock(mutex_);
    return error_;
  }
  bool downloadFailure() const {
    std::lock_guard lock(mutex_);
    return downloadFailure_;
  }

 private:
  std::vector<Channel*> channels_;
  mutable std::mutex mutex_;
  std::optional<Error> error_;
  bool downloadFailure_ = false;
  std::atomic<bool> failed_{false};
};

Error abortedError(const ImageInfo& info) {
  return Error{
      ErrorCode::Conflict,
      "Writing image " + (info.id.empty() ? std::string("(unnamed)") : info.id) + " was aborted"};
}

Error cancelledError() { return Error{ErrorCode::Internal, "image pipeline cancelled"}; }

/// The pipeline's memory: kImageBufferCount aligned buffers.
class BufferSet {
 public:
  BufferSet() {
    if (auto memory = AlignedBuffer::allocate(kImageBufferCount * kImageBufferSize)) {
      memory_ = std::move(*memory);
    }
    for (size_t i = 0; i < kImageBufferCount && ok(); ++i) {
      buffers_[i].data = memory_.data() + i * kImageBufferSize;
    }
  }
  bool ok() const { return memory_.data() != nullptr; }
  Buffer* at(size_t i) { return &buffers_[i]; }

 private:
  AlignedBuffer memory_;
  Buffer buffers_[kImageBufferCount];
};

/// Content-Length from a HEAD request (best effort); an error only when the host cannot be
/// reached at all, which GET would meet too.
Result<std::optional<uint64_t>> probeLength(StepContext& ctx, const HttpRequest& get,
                                            const std::string& url) {
  HttpRequest head = get;
  head.method = "HEAD";
  head.idleTimeout = std::chrono::milliseconds(0);
  auto response = ctx.http->send(head);
  if (!response) {
    if (response.error().code == ErrorCode::InvalidArgument)
      return std::unexpected(response.error());
    return fail(response.error().code,
                "Cannot download image from " + url + ": " + response.error().message);
  }
  if (response->status != 200) return std::nullopt;
  const auto length = response->header("content-length");
  if (!length) return std::nullopt;
  const auto size = parseInt<uint64_t>(*length);
  return size ? std::optional<uint64_t>(*size) : std::nullopt;
}

/// One download of `request` (its url, without user information, is `url`) through the whole
/// pipeline into `plan`'s region.
Result<PipelineResult> runAttempt(StepContext& ctx, const ImageInfo& info,
                                  const HttpRequest& request, const WriteTarget& target,
                                  const WritePlan& plan, std::optional<uint64_t> contentLength,
                                  bool& retriable) {
  const std::string& url = request.url;
  retriable = false;
  BufferSet buffers;
  if (!buffers.ok()) return internalError("Cannot allocate the image pipeline buffers");
  const bool maybeCompressed = plan.compression != Compression::None;
  // Compressed images need separate input and output buffers (half each), else a full raw
  // queue could starve the decompressor of output space.
  const size_t inputCount = maybeCompressed ? kImageBufferCount / 2 : kImageBufferCount;
  Channel inPool, outPool, rawQueue, writeQueue;
  for (size_t i = 0; i < kImageBufferCount; ++i) {
    Buffer* b = buffers.at(i);
    b->home = i < inputCount ? &inPool : &outPool;
    b->home->push(b);
  }
  PipelineState state({&inPool, &outPool, &rawQueue, &writeQueue});
  auto hasher = KILN_TRY(Hasher::create(info.checksumAlgorithm));
  auto writer = KILN_TRY(RegionWriter::open(target.path, plan.offset, plan.capacity));
  ctx.log.info("Writing image", {{"url", url},
                                 {"target", target.path},
                                 {"offset", std::to_string(plan.offset)},
                                 {"direct_io", writer.direct() ? "yes" : "no"}});

  // --- download thread ---
  uint64_t downloaded = 0;
  const uint64_t total = contentLength.value_or(0);
  std::thread downloader([&] {
    Buffer* current = nullptr;
    Buffer* held = nullptr;  // the first full buffer, kept until the body is clearly no error page
    uint64_t reported = 0;
    auto sink = [&](std::string_view chunk) -> Result<void> {
      if (ctx.aborted()) return std::unexpected(abortedError(info));
      if (state.failed()) return std::unexpected(cancelledError());
      if (held != nullptr) {
        rawQueue.push(held);
        held = nullptr;
      }
      while (!chunk.empty()) {
        if (current == nullptr) {
          current = inPool.pop();
          if (current == nullptr) return std::unexpected(cancelledError());
        }
        const size_t n = std::min(chunk.size(), current->room());
        std::memcpy(current->data + current->size, chunk.data(), n);
        current->size += n;
        chunk.remove_prefix(n);
        downloaded += n;
        if (current->room() == 0) {
          if (downloaded == current->size) {
            held = current;
          } else {
            rawQueue.push(current);
          }
          current = nullptr;
        }
      }
      if (ctx.progress && downloaded - reported >= kImageBufferSize) {
        reported = downloaded;
        ctx.progress->report(downloaded, total);
      }
      return {};
    };
    auto response = ctx.http->stream(request, sink);
    if (!response) {
      const bool ours = state.failed() || response.error().code == ErrorCode::Conflict;
      state.fail(ours ? response.error()
                      : Error{response.error().code, "Cannot download image from " + url + ": " +
                                                         response.error().message},
                 !ours);
    } else if (response->status != 200) {
      state.fail(Error{response->status == 404 ? ErrorCode::NotFound : ErrorCode::Unavailable,
                       "Cannot download image from " + url + ": HTTP status " +
                           std::to_string(response->status)},
                 true);
    } else {
      if (held != nullptr) rawQueue.push(held);
      if (current != nullptr && current->size > 0) rawQueue.push(current);
      held = current = nullptr;
      if (ctx.progress) ctx.progress->report(downloaded, total != 0 ? total : downloaded);
    }
    rawQueue.close();
  });

  // --- writer thread ---
  std::thread writerThread([&] {
    while (Buffer* b = writeQueue.pop()) {
      if (ctx.aborted()) {
        state.fail(abortedError(info), false);
        return;
      }
      auto written = writer.append(b->data, b->size);
      b->recycle();
      if (!written) {
        state.fail(written.error(), false);
        return;
      }
    }
    if (state.failed()) return;
    if (auto synced = writer.sync(); !synced) state.fail(synced.error(), false);
  });

  // --- checksum and decompression, on this thread ---
  auto process = [&]() -> Result<void> {
    DecompressorPtr decompressor;
    Buffer* out = nullptr;
    bool first = true;
    auto emit = [&](bool lastInput, std::string_view in) -> Result<void> {
      for (;;) {
        if (out == nullptr) {
          out = outPool.pop();
          if (out == nullptr) return std::unexpected(cancelledError());
        }
        size_t produced = 0;
        KILN_TRY_VOID(
            decompressor->decompress(in, out->data + out->size, out->room(), produced, lastInput));
        out->size += produced;
        if (out->room() == 0) {
          if (first && plan.checkStart) KILN_TRY_VOID(plan.checkStart({out->data, out->size}));
          first = false;
          writeQueue.push(out);
          out = nullptr;
          continue;
        }
        if (in.empty() && produced == 0) return {};
      }
    };
    bool sawInput = false;
    while (Buffer* b = rawQueue.pop()) {
      if (ctx.aborted()) return std::unexpected(abortedError(info));
      hasher.update({b->data, b->size});
      if (!sawInput) {
        sawInput = true;
        Compression c = plan.compression;
        if (c == Compression::Auto) c = detectCompression({b->data, std::min<size_t>(b->size, 16)});
        if (c != Compression::None) {
          auto made = makeDecompressor(c);
          if (!made) {
            b->recycle();
            return std::unexpected(made.error());
          }
          decompressor = std::move(*made);
          ctx.log.info("Decompressing image", {{"compression", std::string(toString(c))}});
        } else if (inputCount != kImageBufferCount) {
          // Detected as uncompressed: the output buffers (all free, only this thread takes
          // them) join the input pool, so raw images always use every buffer.
          for (size_t i = inputCount; i < kImageBufferCount; ++i) {
            Buffer* spare = outPool.pop();
            if (spare == nullptr) return std::unexpected(cancelledError());
            spare->home = &inPool;
            inPool.push(spare);
          }
        }
      }
      if (!decompressor) {
        if (first && plan.checkStart) {
          auto checked = plan.checkStart({b->data, b->size});
          if (!checked) {
            b->recycle();
            return checked;
          }
        }
        first = false;
        writeQueue.push(b);
        continue;
      }
      auto emitted = emit(false, {b->data, b->size});
      b->recycle();
      KILN_TRY_VOID(emitted);
    }
    if (state.failed()) return {};
    if (decompressor) {
      KILN_TRY_VOID(emit(true, {}));
      KILN_TRY_VOID(decompressor->finish());
      if (out != nullptr) {
        if (first && plan.checkStart && out->size > 0) {
          KILN_TRY_VOID(plan.checkStart({out->data, out->size}));
        }
        if (out->size > 0) {
          writeQueue.push(out);
        } else {
          out->recycle();
        }
        out = nullptr;
      }
    }
    return {};
  };
  if (auto processed = process(); !processed) state.fail(processed.error(), false);
  writeQueue.close();
  downloader.join();
  writerThread.join();

  if (auto error = state.error()) {
    retriable = state.downloadFailure();
    return std::unexpected(*error);
  }
  if (ctx.aborted()) return std::unexpected(abortedError(info));
  return PipelineResult{downloaded, writer.written(), hasher.finishHex()};
}

}  // namespace

double secondsSince(const StepContext& ctx, std::chrono::steady_clock::time_point start) {
  const auto now = ctx.clock ? ctx.clock->monotonic() : std::chrono::steady_clock::now();
  return std::chrono::duration<double>(now - start).count();
}

/// Tries each URL in turn with the plan `makePlan` computes from the Content-Length.
Result<PipelineResult> downloadAndWrite(
    StepContext& ctx, const ImageInfo& info, const WriteTarget& target,
    const std::function<Result<WritePlan>(std::optional<uint64_t>)>& makePlan, std::string& usedUrl,
    WritePlan& usedPlan) {
  if (info.urls.empty()) return invalid("The image has no URL to download from");
  if (ctx.http == nullptr) return internalError("No HTTP client to download the image with");
  std::optional<Error> lastError;
  for (const auto& given : info.urls) {
    if (ctx.aborted()) return std::unexpected(abortedError(info));
    // The URL's user information becomes Basic credentials; `url` (without it) is the one
    // messages and logs quote.
    const HttpRequest request = KILN_TRY(imageRequest(info, given));
    const std::string& url = request.url;
    auto length = probeLength(ctx, request, url);
    if (!length) {
      if (length.error().code == ErrorCode::InvalidArgument) return std::unexpected(length.error());
      ctx.log.warning("Image URL failed, trying the next one",
                      {{"url", url}, {"error", length.error().message}});
      lastError = length.error();
      continue;
    }
    auto plan = KILN_TRY(makePlan(*length));
    bool retriable = false;
    auto attempt = runAttempt(ctx, info, request, target, plan, *length, retriable);
    if (attempt) {
      usedUrl = url;
      usedPlan = std::move(plan);
      return attempt;
    }
    if (!retriable) return attempt;
    ctx.log.warning("Image URL failed, trying the next one",
                    {{"url", url}, {"error", attempt.error().message}});
    lastError = attempt.error();
  }
  if (info.urls.size() == 1) return std::unexpected(*lastError);
  return fail(lastError->code,
              "No URL of the image could be downloaded; last error: " + lastError->message);
}

Result<void> verifyChecksum(StepContext& ctx, const ImageInfo& info, const std::string& url,
                            const std::string& actual, const std::vector<uint64_t>& wipeOffsets,
                            const std::string& path) {
  if (info.checksum.empty() || actual == info.checksum) return {};
  for (uint64_t offset : wipeOffsets) {
    if (auto wiped = zeroRange(path, offset, kImageWipeBytes); !wiped) {
      ctx.log.error("Cannot wipe the start of the bad image", {{"error", wiped.error().message}});
    }
  }
  return invalid("Image checksum mismatch for " + url + ": expected " + info.checksum + ", got " +
                 actual + " (" + std::string(toString(info.checksumAlgorithm)) + ")");
}

}  // namespace kiln::agent
