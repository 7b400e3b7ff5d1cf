#include "agent/disk/device_io.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace kiln::agent {
namespace {

constexpr size_t kZeroBufferBytes = 8 << 20;

std::string errnoText(int err) { return std::strerror(err); }

bool aligned(uint64_t value) { return value % kDirectAlign == 0; }

}  // namespace

UniqueFd::UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void UniqueFd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result<UniqueFd> openFile(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    const bool writing = (flags & O_ACCMODE) != O_RDONLY;
    return fail(err == ENOENT ? ErrorCode::NotFound : ErrorCode::Internal,
                "Cannot open " + path + (writing ? " for writing: " : ": ") + errnoText(err));
  }
  return UniqueFd(fd);
}

void AlignedBuffer::Free::operator()(char* p) const { std::free(p); }

Result<AlignedBuffer> AlignedBuffer::allocate(size_t bytes) {
  void* p = nullptr;
  if (::posix_memalign(&p, kDirectAlign, std::max<size_t>(bytes, 1)) != 0) {
    return internalError("Cannot allocate " + std::to_string(bytes) + " bytes of I/O buffer");
  }
  std::memset(p, 0, bytes);
  AlignedBuffer buffer;
  buffer.memory_.reset(static_cast<char*>(p));
  buffer.size_ = bytes;
  return buffer;
}

Result<void> pwriteAll(int fd, const char* data, size_t length, uint64_t offset,
                       const std::string& path, int* errorNumber) {
  while (length > 0) {
    const ssize_t n = ::pwrite(fd, data, length, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      if (errorNumber) *errorNumber = err;
      return internalError("Writing " + path + " at offset " + std::to_string(offset) +
                           " failed: " + errnoText(err));
    }
    if (n == 0) return internalError("Writing " + path + " made no progress (device full?)");
    data += n;
    length -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return {};
}

Result<DirectWriter> DirectWriter::open(const std::string& path) {
  DirectWriter writer;
  writer.path_ = path;
  writer.buffered_ = KILN_TRY(openFile(path, O_WRONLY));
  // EINVAL (tmpfs and friends) or any other refusal: buffered only.
  if (auto direct = openFile(path, O_WRONLY | O_DIRECT)) writer.direct_ = std::move(*direct);
  return writer;
}

Result<void> DirectWriter::write(const char* data, size_t length, uint64_t offset) {
  size_t directBytes = 0;
  if (direct_ && aligned(offset) && aligned(reinterpret_cast<uintptr_t>(data))) {
    directBytes = length - length % kDirectAlign;
  }
  if (directBytes > 0) {
    int err = 0;
    auto written = pwriteAll(direct_.get(), data, directBytes, offset, path_, &err);
    if (!written && err == EINVAL) {
      // Accepted at open, refused at write: buffered I/O for good.
      direct_.reset();
      directBytes = 0;
    } else if (!written) {
      return written;
    }
  }
  if (directBytes < length) {
    KILN_TRY_VOID(pwriteAll(buffered_.get(), data + directBytes, length - directBytes,
                            offset + directBytes, path_));
  }
  return {};
}

Result<void> DirectWriter::sync() {
  for (const UniqueFd* fd : {&direct_, &buffered_}) {
    if (*fd && ::fsync(fd->get()) != 0 && errno != EINVAL) {
      return internalError("Syncing " + path_ + " failed: " + errnoText(errno));
    }
  }
  return {};
}

bool isBlockDevice(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISBLK(st.st_mode);
}

Result<BlockGeometry> blockGeometry(int fd, const std::string& path) {
  BlockGeometry geometry;
  if (::ioctl(fd, BLKGETSIZE64, &geometry.bytes) != 0) {
    return internalError("Cannot read the size of " + path + ": " + errnoText(errno));
  }
  int sectorSize = 512;
  if (::ioctl(fd, BLKSSZGET, &sectorSize) == 0 && sectorSize > 0) {
    geometry.logicalBlockSize = static_cast<uint32_t>(sectorSize);
  }
  return geometry;
}

Result<uint64_t> deviceSize(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    return fail(err == ENOENT ? ErrorCode::NotFound : ErrorCode::Internal,
                "Cannot use " + path + ": " + errnoText(err));
  }
  if (S_ISREG(st.st_mode)) return static_cast<uint64_t>(st.st_size);
  if (!S_ISBLK(st.st_mode)) {
    return invalid(path + " is neither a block device nor a regular file");
  }
  UniqueFd fd = KILN_TRY(openFile(path, O_RDONLY));
  return KILN_TRY(blockGeometry(fd.get(), path)).bytes;
}

Result<void> zeroRange(const std::string& path, uint64_t offset, uint64_t length,
                       const ChunkCallback& onChunk) {
  // No larger than the range (rounded up for O_DIRECT): metadata wipes zero 1 MiB at a time.
  const uint64_t rounded = (length + kDirectAlign - 1) / kDirectAlign * kDirectAlign;
  const size_t bufferBytes = static_cast<size_t>(
      std::min<uint64_t>(kZeroBufferBytes, std::max<uint64_t>(kDirectAlign, rounded)));
  const AlignedBuffer buffer = KILN_TRY(AlignedBuffer::allocate(bufferBytes));
  DirectWriter writer = KILN_TRY(DirectWriter::open(path));
  for (uint64_t written = 0; written < length;) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(bufferBytes, length - written));
    KILN_TRY_VOID(writer.write(buffer.data(), chunk, offset + written));
    written += chunk;
    if (onChunk && !onChunk(chunk)) {
      return conflict("Erasing " + path + " was aborted after " + std::to_string(written) +
                      " bytes");
    }
  }
  return writer.sync();
}

Result<void> copyRange(const std::string& source, uint64_t sourceOffset, const std::string& target,
                       uint64_t targetOffset, uint64_t length) {
  const size_t bufferBytes = static_cast<size_t>(std::min<uint64_t>(
      kZeroBufferBytes, std::max<uint64_t>(kDirectAlign, (length + kDirectAlign - 1) / kDirectAlign * kDirectAlign)));
  const AlignedBuffer buffer = KILN_TRY(AlignedBuffer::allocate(bufferBytes));
  const UniqueFd in = KILN_TRY(openFile(source, O_RDONLY));
  DirectWriter writer = KILN_TRY(DirectWriter::open(target));
  for (uint64_t copied = 0; copied < length;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(bufferBytes, length - copied));
    size_t got = 0;
    while (got < want) {
      const ssize_t n = ::pread(in.get(), buffer.data() + got, want - got,
                                static_cast<off_t>(sourceOffset + copied + got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        return internalError("Reading " + source + " at offset " +
                             std::to_string(sourceOffset + copied + got) + " failed: " +
                             std::strerror(errno));
      }
      if (n == 0) {
        return invalid(source + " ends " + std::to_string(copied + got) + " bytes after offset " +
                       std::to_string(sourceOffset) + ", before the " + std::to_string(length) +
                       " bytes to copy");
      }
      got += static_cast<size_t>(n);
    }
    KILN_TRY_VOID(writer.write(buffer.data(), want, targetOffset + copied));
    copied += want;
  }
  return writer.sync();
}

}  // namespace kiln::agent
