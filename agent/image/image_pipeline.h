// File: agent/image/image_pipeline.h
//
// The streaming half of writeImage (agent/image/image_writer.h), shared by the raw and qcow2
// writers: downloads an image URL by URL and streams it through checksum, decompression and
// the O_DIRECT writer into one region of the target. Internal to agent/image.
//
//   download thread            calling thread                    writer thread
//   HttpClient::stream  ->  [raw queue]  ->  checksum (+ decompress)  ->  [write queue]  ->  pwrite
//        ^ free input buffers <---------------------------------------------------- (raw path)
//        ^ free input buffers <--- (compressed path)  free output buffers <-------- (compressed)
//
// Buffers cycle between fixed pools, so memory stays at kImageBufferCount buffers; a slow stage
// stalls the ones before it instead of growing a queue. The first error cancels every queue
// and every stage returns.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/hardware/step_context.h"
#include "agent/image/decompressor.h"
#include "agent/image/image_info.h"
#include "agent/image/image_writer.h"
#include "shared/core/error.h"

namespace kiln::agent {

/// How much is zeroed at the start of a region to make a bad image unbootable.
inline constexpr uint64_t kImageWipeBytes = 1ULL << 20;

/// What one download attempt writes where.
struct WritePlan {
  uint64_t offset = 0;    ///< absolute offset in the target path
  uint64_t capacity = 0;  ///< bytes available from `offset`
  Compression compression = Compression::Auto;
  /// Checks the first bytes of the (decompressed) image before anything is written.
  std::function<Result<void>(std::string_view)> checkStart;
};

struct PipelineResult {
  uint64_t downloaded = 0;
  uint64_t written = 0;
  std::string checksum;  ///< hex digest of the downloaded bytes
};

/// Tries each URL of `info` in turn: a HEAD for the Content-Length, the plan `makePlan`
/// computes from it, then the whole pipeline into the plan's region. A URL that cannot be
/// downloaded moves on to the next one; any other failure (corrupt data, an image larger
/// than the region, an I/O error, an abort: Conflict) stops. `usedUrl` and `usedPlan` tell
/// the caller which attempt succeeded (`usedUrl` without user information: each URL's own
/// user information, else info.imageServerAuth, is sent as Basic credentials; imageRequest).
Result<PipelineResult> downloadAndWrite(
    StepContext& ctx, const ImageInfo& info, const WriteTarget& target,
    const std::function<Result<WritePlan>(std::optional<uint64_t>)>& makePlan, std::string& usedUrl,
    WritePlan& usedPlan);

/// Nothing when `info` has no checksum or `actual` equals it; else zeroes kImageWipeBytes at
/// each of `wipeOffsets` of `path` (so the bad image cannot boot) and returns InvalidArgument
/// "Image checksum mismatch for URL: ...".
Result<void> verifyChecksum(StepContext& ctx, const ImageInfo& info, const std::string& url,
                            const std::string& actual, const std::vector<uint64_t>& wipeOffsets,
                            const std::string& path);

/// Seconds since `start` on the context's clock (steady_clock without one).
double secondsSince(const StepContext& ctx, std::chrono::steady_clock::time_point start);

}  // namespace kiln::agent
