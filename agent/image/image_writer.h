// File: agent/image/image_writer.h
//
// The agent's image write pipeline (the write_image deploy step). A download thread streams
// the image through HttpClient into a fixed set of aligned buffers; the calling thread
// checksums the downloaded bytes and decompresses them when needed; a writer thread writes
// them with O_DIRECT (buffered where the file system refuses it) and syncs at the end. Memory
// is bounded by kImageBufferCount x kImageBufferSize whatever the image size. qcow2 images are
// staged at the tail of the target and converted with qemu-img through the CommandRunner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "agent/hardware/step_context.h"
#include "agent/image/image_info.h"
#include "shared/core/error.h"

namespace kiln::agent {

/// Size of one pipeline buffer (also the O_DIRECT write size).
inline constexpr size_t kImageBufferSize = 4 * 1024 * 1024;
/// Number of pipeline buffers: the pipeline's whole data memory.
inline constexpr size_t kImageBufferCount = 8;

/// Where an image goes: a block device (or, in tests, a regular file) and a region of it.
struct WriteTarget {
  std::string path;
  uint64_t offset = 0;    ///< bytes from the start of `path`
  uint64_t maxBytes = 0;  ///< 0 = up to the end of the device (or file)
};

struct WriteResult {
  uint64_t bytesDownloaded = 0;
  uint64_t bytesWritten = 0;  ///< after decompression; qcow2: the virtual size
  std::string checksum;       ///< hex digest of the downloaded bytes (info's algorithm)
  double seconds = 0;
  /// The algorithm of `checksum` (info's, or the one a checksum file's digest length told).
  ChecksumAlgorithm checksumAlgorithm = ChecksumAlgorithm::Sha256;
};

/// Downloads `info` (each URL in turn until one succeeds) and writes it to `target`; a checksum
/// given as a checksum file's URL is downloaded first (agent/image/checksum_file.h).
/// Errors: Unavailable/NotFound/DeadlineExceeded when no URL could be downloaded (the message
/// names the URL), InvalidArgument for a checksum mismatch (the first MiB of the target is
/// zeroed), corrupt compressed data or an image larger than the target, Conflict when aborted,
/// Internal for I/O errors on the target.
Result<WriteResult> writeImage(StepContext& ctx, const ImageInfo& info, const WriteTarget& target);

/// The usable bytes of `target`: maxBytes, or the device (file) size minus the offset.
Result<uint64_t> targetCapacity(const WriteTarget& target);

/// Writes `bytes` at `offset` of an existing device or file and syncs it.
Result<void> writeRegion(const std::string& path, uint64_t offset, std::string_view bytes);

}  // namespace kiln::agent
