#include "agent/disk/erase.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/disk/sgdisk.h"
#include "agent/disk/wipefs.h"

namespace kiln::agent {
namespace {

constexpr uint64_t kMiB = 1ULL << 20;
constexpr size_t kBufferBytes = 8 * kMiB;
constexpr size_t kDirectAlignment = 4096;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

/// An open file that falls back from O_DIRECT to buffered I/O on demand.
class ZeroWriter {
 public:
  explicit ZeroWriter(std::string path) : path_(std::move(path)) {}
  ~ZeroWriter() {
    if (fd_ >= 0) ::close(fd_);
  }

  Result<void> open() {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC | O_DIRECT);
    direct_ = fd_ >= 0;
    if (fd_ < 0) return reopenBuffered();
    return {};
  }

  /// Writes `length` zero bytes from `buffer` at `offset`.
  Result<void> write(const char* buffer, uint64_t offset, size_t length) {
    if (direct_ && (offset % kDirectAlignment != 0 || length % kDirectAlignment != 0)) {
      KILN_TRY_VOID(reopenBuffered());
    }
    size_t done = 0;
    while (done < length) {
      const ssize_t n =
          ::pwrite(fd_, buffer + done, length - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EINVAL && direct_) {
        KILN_TRY_VOID(reopenBuffered());
        continue;
      }
      if (n <= 0) return ioError("write");
      done += static_cast<size_t>(n);
    }
    return {};
  }

  Result<void> sync() {
    if (::fsync(fd_) != 0) return ioError("fsync");
    return {};
  }

 private:
  Result<void> reopenBuffered() {
    if (fd_ >= 0) ::close(fd_);
    direct_ = false;
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0) return ioError("open");
    return {};
  }

  std::unexpected<Error> ioError(const char* what) const {
    return internalError(std::string("Cannot ") + what + " " + path_ + ": " + std::strerror(errno));
  }

  std::string path_;
  int fd_ = -1;
  bool direct_ = false;
};

/// Runs `work` for every device in its own thread; the error lists every failure.
Result<void> forEachDeviceInParallel(const std::vector<BlockDevice>& devices,
                                     const std::function<Result<void>(const BlockDevice&)>& work,
                                     const std::string& what) {
  std::vector<Result<void>> results(devices.size());
  std::vector<std::thread> threads;
  threads.reserve(devices.size());
  for (size_t i = 0; i < devices.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = work(devices[i]); });
  }
  for (auto& t : threads) t.join();
  std::string failures;
  ErrorCode code = ErrorCode::Internal;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (results[i]) continue;
    if (!failures.empty()) failures += "; ";
    failures += devices[i].name + ": " + results[i].error().message;
    code = results[i].error().code;
  }
  if (!failures.empty()) return fail(code, what + " failed: " + failures);
  return {};
}

Result<void> eraseMetadata(StepContext& context, const BlockDevice& device) {
  KILN_TRY_VOID(Wipefs(*context.runner).wipeAll(device.name));
  KILN_TRY_VOID(Sgdisk(*context.runner).zap(device.name));
  const uint64_t head = std::min(kMiB, device.size);
  KILN_TRY_VOID(zeroRange(device.name, 0, head));
  if (device.size > kMiB) {
    KILN_TRY_VOID(zeroRange(device.name, device.size - kMiB, kMiB));
  }
  return {};
}

struct EraseProgress {
  StepContext& context;
  uint64_t total = 0;
  std::atomic<uint64_t> done{0};

  bool onChunk(uint64_t bytes) {
    const uint64_t now = done.fetch_add(bytes) + bytes;
    if (context.progress) context.progress->report(now, total);
    return !context.aborted();
  }
};

Result<void> eraseOne(StepContext& context, const BlockDevice& device, EraseProgress& progress) {
  if (device.supportsDiscard) {
    auto discarded = Blkdiscard(*context.runner).discardAll(device.name);
    if (discarded) {
      progress.onChunk(device.size);
      return {};
    }
    context.log.warning("blkdiscard failed, overwriting with zeros instead",
                        {{"device", device.name}, {"error", discarded.error().message}});
  }
  return zeroRange(device.name, 0, device.size,
                   [&progress](uint64_t bytes) { return progress.onChunk(bytes); });
}

}  // namespace

Result<void> zeroRange(const std::string& path, uint64_t offset, uint64_t length,
                       const ChunkCallback& onChunk) {
  // No larger than the range (rounded up for O_DIRECT): metadata wipes zero 1 MiB at a time.
  const size_t bufferBytes = static_cast<size_t>(std::min<uint64_t>(
      kBufferBytes, std::max<uint64_t>(kDirectAlignment, (length + kDirectAlignment - 1) /
                                                             kDirectAlignment * kDirectAlignment)));
  std::unique_ptr<char, FreeDeleter> buffer(
      static_cast<char*>(std::aligned_alloc(kDirectAlignment, bufferBytes)));
  if (!buffer) return internalError("Cannot allocate the zero buffer");
  std::memset(buffer.get(), 0, bufferBytes);
  ZeroWriter writer(path);
  KILN_TRY_VOID(writer.open());
  for (uint64_t written = 0; written < length;) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(bufferBytes, length - written));
    KILN_TRY_VOID(writer.write(buffer.get(), offset + written, chunk));
    written += chunk;
    if (onChunk && !onChunk(chunk)) {
      return conflict("Erasing " + path + " was aborted after " + std::to_string(written) +
                      " bytes");
    }
  }
  return writer.sync();
}

Result<nlohmann::json> eraseDevicesMetadata(StepContext& context) {
  if (!context.runner) return internalError("erase_devices_metadata needs a command runner");
  KILN_TRY_VOID(forEachDeviceInParallel(
      context.devices,
      [&context](const BlockDevice& device) { return eraseMetadata(context, device); },
      "Erasing device metadata"));
  return nlohmann::json::object();
}

Result<nlohmann::json> eraseDevices(StepContext& context) {
  if (!context.runner) return internalError("erase_devices needs a command runner");
  EraseProgress progress{context};
  for (const BlockDevice& device : context.devices) progress.total += device.size;
  KILN_TRY_VOID(forEachDeviceInParallel(
      context.devices,
      [&](const BlockDevice& device) { return eraseOne(context, device, progress); },
      "Erasing devices"));
  return nlohmann::json::object();
}

}  // namespace kiln::agent
