#include "agent/disk/erase.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/disk/sgdisk.h"
#include "agent/disk/wipefs.h"

namespace kiln::agent {
namespace {

constexpr uint64_t kMiB = 1ULL << 20;

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
