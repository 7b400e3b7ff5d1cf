#include "agent/image/qcow2_writer.h"

#include <algorithm>

#include "agent/disk/device_io.h"
#include "agent/image/image_pipeline.h"

namespace kiln::agent {
namespace {

constexpr uint64_t kMiB = 1ULL << 20;

uint64_t readBigEndian64(std::string_view bytes, size_t at) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(bytes[at + i]);
  return v;
}

}  // namespace

std::string qemuOptionValue(std::string_view value) {
  std::string out;
  for (char c : value) {
    out += c;
    if (c == ',') out += ',';
  }
  return out;
}

Result<WriteResult> writeQcow2(StepContext& ctx, const ImageInfo& info, const WriteTarget& target,
                               uint64_t capacity, std::chrono::steady_clock::time_point start) {
  if (info.compression != Compression::Auto && info.compression != Compression::None) {
    return fail(ErrorCode::Unimplemented,
                "Compressed qcow2 downloads are not supported (compression " +
                    std::string(toString(info.compression)) + ")");
  }
  if (ctx.runner == nullptr) return internalError("No command runner to run qemu-img with");
  uint64_t stageRel = 0;
  uint64_t stageSize = 0;
  uint64_t virtualSize = 0;
  auto makePlan = [&](std::optional<uint64_t> length) -> Result<WritePlan> {
    if (!length) {
      return invalid(
          "A qcow2 image is staged on the target before conversion, which needs its "
          "size: the server sent no Content-Length");
    }
    stageSize = (*length + kMiB - 1) / kMiB * kMiB;
    if (stageSize >= capacity) {
      return invalid("The qcow2 image (" + std::to_string(*length) +
                     " bytes) does not fit on the target " + target.path + " (" +
                     std::to_string(capacity) + " bytes)");
    }
    stageRel = (capacity - stageSize) / kMiB * kMiB;
    WritePlan plan{target.offset + stageRel, capacity - stageRel, Compression::None, {}};
    plan.checkStart = [&, stageRelCopy = stageRel](std::string_view head) -> Result<void> {
      if (head.size() < 32 || head.substr(0, 4) != std::string_view("QFI\xfb", 4)) {
        return invalid(
            "The image is not a qcow2 file (no QFI magic) although disk_format is qcow2");
      }
      virtualSize = readBigEndian64(head, 24);
      if (virtualSize > stageRelCopy) {
        return invalid("The qcow2 image's virtual size (" + std::to_string(virtualSize) +
                       " bytes) does not fit on the target " + target.path + ": " +
                       std::to_string(stageRelCopy) +
                       " bytes are free before the staging area at its tail");
      }
      return {};
    };
    return plan;
  };
  std::string url;
  WritePlan plan;
  auto attempt = KILN_TRY(downloadAndWrite(ctx, info, target, makePlan, url, plan));
  KILN_TRY_VOID(
      verifyChecksum(ctx, info, url, attempt.checksum, {target.offset, plan.offset}, target.path));

  const std::string driver = isBlockDevice(target.path) ? "host_device" : "file";
  const std::string file = qemuOptionValue(target.path);
  Command convert;
  convert.argv = {
      "qemu-img",
      "convert",
      "--image-opts",
      "driver=qcow2,file.driver=raw,file.offset=" + std::to_string(plan.offset) +
          ",file.size=" + std::to_string(attempt.downloaded) + ",file.file.driver=" + driver +
          ",file.file.filename=" + file + ",file.file.locking=off",
      "-n",
      "--target-image-opts",
      "driver=raw,offset=" + std::to_string(target.offset) + ",size=" + std::to_string(stageRel) +
          ",file.driver=" + driver + ",file.filename=" + file + ",file.locking=off"};
  convert.timeout = std::chrono::hours(6);
  auto output = KILN_TRY(ctx.runner->run(convert));
  if (output.exitCode != 0) {
    return internalError("qemu-img convert of the qcow2 image failed (exit " +
                         std::to_string(output.exitCode) + "): " + output.err);
  }
  KILN_TRY_VOID(zeroRange(target.path, plan.offset, std::min(kImageWipeBytes, plan.capacity)));
  return WriteResult{attempt.downloaded, virtualSize, attempt.checksum, secondsSince(ctx, start)};
}

}  // namespace kiln::agent
