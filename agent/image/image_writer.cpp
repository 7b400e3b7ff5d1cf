// File: agent/image/image_writer.cpp
//
// writeImage: raw images here; the streaming pipeline is agent/image/image_pipeline.cpp and
// qcow2 conversion agent/image/qcow2_writer.cpp.
#include "agent/image/image_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent/disk/device_io.h"
#include "agent/image/checksum_file.h"
#include "agent/image/image_pipeline.h"
#include "agent/image/qcow2_writer.h"

namespace kiln::agent {
namespace {

Result<WriteResult> writeRaw(StepContext& ctx, const ImageInfo& info, const WriteTarget& target,
                             uint64_t capacity, std::chrono::steady_clock::time_point start) {
  auto makePlan = [&](std::optional<uint64_t> length) -> Result<WritePlan> {
    if (length && *length > capacity && info.compression == Compression::None) {
      return invalid("The image (" + std::to_string(*length) +
                     " bytes) is larger than the target " + target.path + " (" +
                     std::to_string(capacity) + " bytes)");
    }
    return WritePlan{target.offset, capacity, info.compression, {}};
  };
  std::string url;
  WritePlan plan;
  auto attempt = KILN_TRY(downloadAndWrite(ctx, info, target, makePlan, url, plan));
  KILN_TRY_VOID(verifyChecksum(ctx, info, url, attempt.checksum, {target.offset}, target.path));
  return WriteResult{attempt.downloaded, attempt.written, attempt.checksum,
                     secondsSince(ctx, start)};
}

}  // namespace

Result<uint64_t> targetCapacity(const WriteTarget& target) {
  const uint64_t size = KILN_TRY(deviceSize(target.path));
  if (target.offset > size) {
    return invalid("Offset " + std::to_string(target.offset) + " is beyond the end of " +
                   target.path + " (" + std::to_string(size) + " bytes)");
  }
  const uint64_t available = size - target.offset;
  if (target.maxBytes != 0) {
    if (isBlockDevice(target.path) && target.maxBytes > available) {
      return invalid("The region of " + std::to_string(target.maxBytes) + " bytes at offset " +
                     std::to_string(target.offset) + " does not fit on " + target.path);
    }
    return target.maxBytes;
  }
  return available;
}

Result<WriteResult> writeImage(StepContext& ctx, const ImageInfo& given,
                               const WriteTarget& target) {
  const auto start = ctx.clock ? ctx.clock->monotonic() : std::chrono::steady_clock::now();
  const uint64_t capacity = KILN_TRY(targetCapacity(target));
  ImageInfo info = given;
  KILN_TRY_VOID(resolveChecksumUrl(ctx, info));  // a checksum file first: nothing written yet
  WriteResult result =
      KILN_TRY(info.diskFormat == DiskFormat::Qcow2 ? writeQcow2(ctx, info, target, capacity, start)
                                                    : writeRaw(ctx, info, target, capacity, start));
  result.checksumAlgorithm = info.checksumAlgorithm;
  return result;
}

Result<void> writeRegion(const std::string& path, uint64_t offset, std::string_view bytes) {
  const UniqueFd fd = KILN_TRY(openFile(path, O_WRONLY));
  KILN_TRY_VOID(pwriteAll(fd.get(), bytes.data(), bytes.size(), offset, path));
  if (::fdatasync(fd.get()) != 0 && errno != EINVAL) {
    return internalError("Syncing " + path + " failed: " + std::strerror(errno));
  }
  return {};
}

}  // namespace kiln::agent
