// File: agent/disk/device_io.h
//
// The agent's one set of low-level disk I/O helpers, used by everything that reads or writes a
// device (image writer, erase, MBR, device listing, blkid probing): a file descriptor owner,
// an aligned buffer, a writer that uses O_DIRECT where it can and buffered I/O where it
// cannot, the size of a device or file, and zeroing a range. Every path may also be a
// regular file (tests, `--device` on an image file).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "shared/core/error.h"

namespace kiln::agent {

/// O_DIRECT alignment of offsets, lengths and memory (covers 512 and 4096 byte sectors).
inline constexpr size_t kDirectAlign = 4096;

/// A file descriptor, closed on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept;
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset();

 private:
  int fd_ = -1;
};

/// open(2) with O_CLOEXEC added. NotFound when `path` does not exist, Internal otherwise;
/// the message is "Cannot open PATH [for writing]: strerror".
Result<UniqueFd> openFile(const std::string& path, int flags);

/// Zero-initialised memory aligned to kDirectAlign (as O_DIRECT needs), freed on destruction.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  /// Internal when the memory cannot be allocated.
  static Result<AlignedBuffer> allocate(size_t bytes);

  char* data() const { return memory_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(char* p) const;
  };
  std::unique_ptr<char, Free> memory_;
  size_t size_ = 0;
};

/// pwrite(2) until all `length` bytes are written (EINTR retried). Internal "Writing PATH at
/// offset N failed: ..." on an error (errno stored in *errorNumber when given).
Result<void> pwriteAll(int fd, const char* data, size_t length, uint64_t offset,
                       const std::string& path, int* errorNumber = nullptr);

/// Writes to an existing device or file: through an O_DIRECT descriptor for aligned blocks
/// (offset, length and memory multiples of kDirectAlign), through a buffered one for the
/// rest. When the file system refuses O_DIRECT (at open, or with EINVAL at the first write,
/// as tmpfs does) every write is buffered from then on.
class DirectWriter {
 public:
  DirectWriter() = default;
  /// Errors as openFile's.
  static Result<DirectWriter> open(const std::string& path);

  /// Whether O_DIRECT is (still) in use.
  bool direct() const { return static_cast<bool>(direct_); }
  /// Writes `length` bytes at `offset`.
  Result<void> write(const char* data, size_t length, uint64_t offset);
  /// Makes everything written durable (fsync of both descriptors; EINVAL, for files that
  /// cannot be synced, is ignored).
  Result<void> sync();

 private:
  std::string path_;
  UniqueFd direct_;
  UniqueFd buffered_;
};

/// The size in bytes of a regular file (st_size) or a block device (BLKGETSIZE64).
/// NotFound when missing, InvalidArgument "PATH is neither a block device nor a regular
/// file", Internal when the size cannot be read.
Result<uint64_t> deviceSize(const std::string& path);

/// Whether `path` is a block device.
bool isBlockDevice(const std::string& path);

/// Size and logical sector size of an open block device (BLKGETSIZE64, BLKSSZGET; 512 when
/// the sector size cannot be read). Internal when the size cannot be read.
struct BlockGeometry {
  uint64_t bytes = 0;
  uint32_t logicalBlockSize = 512;
};
Result<BlockGeometry> blockGeometry(int fd, const std::string& path);

/// Called after each written chunk with the bytes written by that chunk; returning false
/// stops the write (abort).
using ChunkCallback = std::function<bool(uint64_t bytes)>;

/// Writes zeros to [offset, offset + length) of `path` (a device or a regular file, which is
/// never extended past `offset + length`), with a buffer of up to 8 MiB through DirectWriter,
/// then syncs. Internal on an I/O error, Conflict "aborted" when `onChunk` returns false.
Result<void> zeroRange(const std::string& path, uint64_t offset, uint64_t length,
                       const ChunkCallback& onChunk = {});

/// Copies `length` bytes from `source` at `sourceOffset` to the existing device or file
/// `target` at `targetOffset` (reads with pread, 8 MiB at a time, writes through
/// DirectWriter), then syncs the target. InvalidArgument when the source ends before
/// `length` bytes; errors of openFile and DirectWriter otherwise.
Result<void> copyRange(const std::string& source, uint64_t sourceOffset, const std::string& target,
                       uint64_t targetOffset, uint64_t length);

}  // namespace kiln::agent
