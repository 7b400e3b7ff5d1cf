#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include <nlohmann/json.hpp>

#include "agent/disk/erase.h"
#include "agent/disk/wipefs.h"
#include "tests/support/replay_command_runner.h"
#include "tests/support/temp_dir.h"

using namespace kiln;
using namespace kiln::agent;
using kiln::test::TempDir;

namespace {

constexpr uint64_t kMiB = 1ULL << 20;

/// A regular file of `bytes` filled with 0xAA, described as a device.
BlockDevice patternedFile(const TempDir& dir, const std::string& name, uint64_t bytes) {
  const std::string path = (dir.path / name).string();
  std::ofstream out(path, std::ios::binary);
  const std::string block(kMiB, '\xAA');
  for (uint64_t done = 0; done < bytes; done += kMiB) {
    out.write(block.data(), static_cast<std::streamsize>(std::min(kMiB, bytes - done)));
  }
  BlockDevice device;
  device.name = path;
  device.size = bytes;
  return device;
}

/// Counts the bytes of [offset, offset + length) of `path` equal to `value`.
uint64_t countBytes(const std::string& path, uint64_t offset, uint64_t length, char value) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  std::string data(length, '\0');
  in.read(data.data(), static_cast<std::streamsize>(length));
  return static_cast<uint64_t>(std::count(data.begin(), data.end(), value));
}

struct RecordingProgress : ProgressReporter {
  std::mutex mutex;
  uint64_t lastDone = 0;
  uint64_t lastTotal = 0;
  int calls = 0;
  void report(uint64_t done, uint64_t total) override {
    std::lock_guard lock(mutex);
    lastDone = std::max(lastDone, done);
    lastTotal = total;
    ++calls;
  }
};

/// Answers commands in any order (devices are erased in parallel threads): each argv may run
/// once; anything else fails. Every allowed command must have run by the end of the test.
class UnorderedRunner : public CommandRunner {
 public:
  ~UnorderedRunner() override {
    if (std::uncaught_exceptions() > 0) return;
    std::string left;
    for (const auto& [argv, output] : allowed_) left += "  " + test::joinArgv(argv) + "\n";
    INFO("commands that never ran:\n" << left);
    CHECK(allowed_.empty());
  }
  void allow(std::vector<std::string> argv, CommandOutput output) {
    allowed_[argv] = std::move(output);
  }
  Result<CommandOutput> run(const Command& command) override {
    std::lock_guard lock(mutex_);
    auto it = allowed_.find(command.argv);
    if (it == allowed_.end()) return internalError("unexpected " + test::joinArgv(command.argv));
    CommandOutput out = it->second;
    allowed_.erase(it);
    return out;
  }
  size_t remaining() {
    std::lock_guard lock(mutex_);
    return allowed_.size();
  }

 private:
  std::mutex mutex_;
  std::map<std::vector<std::string>, CommandOutput> allowed_;
};

}  // namespace

TEST_CASE("zeroRange zeroes exactly the range and never extends the file", "[agent][erase]") {
  TempDir dir("kiln-erase");
  BlockDevice file = patternedFile(dir, "disk.img", 3 * kMiB + 512);
  REQUIRE(zeroRange(file.name, kMiB + 100, kMiB));
  CHECK(std::filesystem::file_size(file.name) == 3 * kMiB + 512);
  CHECK(countBytes(file.name, 0, kMiB + 100, '\xAA') == kMiB + 100);
  CHECK(countBytes(file.name, kMiB + 100, kMiB, '\0') == kMiB);
  CHECK(countBytes(file.name, 2 * kMiB + 100, kMiB + 412, '\xAA') == kMiB + 412);
}

TEST_CASE("eraseDevicesMetadata wipes signatures and zeroes the first and last MiB",
          "[agent][erase]") {
  TempDir dir("kiln-erase");
  StepContext context;
  context.devices = {patternedFile(dir, "disk.img", 5 * kMiB)};
  const std::string path = context.devices[0].name;
  test::ReplayCommandRunner runner;
  runner.expect({"wipefs", "--force", "--all", path}, "wipefs/wipe_all_gpt.txt")
      .expect({"sgdisk", "-Z", path}, "sgdisk/zap.txt");
  context.runner = &runner;
  auto result = eraseDevicesMetadata(context);
  REQUIRE(result);
  CHECK(*result == nlohmann::json::object());
  CHECK(countBytes(path, 0, kMiB, '\0') == kMiB);
  CHECK(countBytes(path, kMiB, 3 * kMiB, '\xAA') == 3 * kMiB);
  CHECK(countBytes(path, 4 * kMiB, kMiB, '\0') == kMiB);
  test::checkAllConsumed(runner);
}

TEST_CASE("eraseDevicesMetadata handles devices smaller than two MiB", "[agent][erase]") {
  TempDir dir("kiln-erase");
  StepContext context;
  context.devices = {patternedFile(dir, "tiny.img", kMiB + 4096)};
  const std::string path = context.devices[0].name;
  test::ReplayCommandRunner runner;
  runner.expect({"wipefs", "--force", "--all", path}, "wipefs/wipe_all_empty.txt")
      .expect({"sgdisk", "-Z", path}, "sgdisk/zap.txt");
  context.runner = &runner;
  REQUIRE(eraseDevicesMetadata(context));
  CHECK(countBytes(path, 0, kMiB + 4096, '\0') == kMiB + 4096);
  CHECK(std::filesystem::file_size(path) == kMiB + 4096);
}

TEST_CASE("eraseDevicesMetadata erases several devices in parallel", "[agent][erase]") {
  TempDir dir("kiln-erase");
  StepContext context;
  UnorderedRunner runner;
  for (const char* name : {"a.img", "b.img", "c.img"}) {
    context.devices.push_back(patternedFile(dir, name, 3 * kMiB));
    runner.allow({"wipefs", "--force", "--all", context.devices.back().name}, {});
    runner.allow({"sgdisk", "-Z", context.devices.back().name}, {});
  }
  context.runner = &runner;
  REQUIRE(eraseDevicesMetadata(context));
  CHECK(runner.remaining() == 0);
  for (const BlockDevice& device : context.devices) {
    CHECK(countBytes(device.name, 0, kMiB, '\0') == kMiB);
    CHECK(countBytes(device.name, 2 * kMiB, kMiB, '\0') == kMiB);
  }
}

TEST_CASE("eraseDevicesMetadata names the device and the tool's error when wipefs fails",
          "[agent][erase]") {
  TempDir dir("kiln-erase");
  StepContext context;
  context.devices = {patternedFile(dir, "disk.img", 3 * kMiB)};
  const std::string path = context.devices[0].name;
  test::ReplayCommandRunner runner;
  runner.expect({"wipefs", "--force", "--all", path}, "wipefs/busy.txt");
  context.runner = &runner;
  auto result = eraseDevicesMetadata(context);
  REQUIRE_FALSE(result);
  CHECK_THAT(result.error().message, Catch::Contains(path + ": wipefs --force --all " + path));
  CHECK_THAT(result.error().message, Catch::Contains("Device or resource busy"));
  CHECK(countBytes(path, 0, kMiB, '\xAA') == kMiB);  // nothing zeroed after the failure
  test::checkAllConsumed(runner);
}

TEST_CASE("eraseDevices overwrites devices without discard and reports progress",
          "[agent][erase]") {
  TempDir dir("kiln-erase");
  StepContext context;
  context.devices = {patternedFile(dir, "a.img", 9 * kMiB + 512),
                     patternedFile(dir, "b.img", 2 * kMiB)};
  test::ReplayCommandRunner runner;  // no tool may run
  RecordingProgress progress;
  context.runner = &runner;
  context.progress = &progress;
  REQUIRE(eraseDevices(context));
  CHECK(countBytes(context.devices[0].name, 0, 9 * kMiB + 512, '\0') == 9 * kMiB + 512);
  CHECK(countBytes(context.devices[1].name, 0, 2 * kMiB, '\0') == 2 * kMiB);
  CHECK(progress.lastTotal == 11 * kMiB + 512);
  CHECK(progress.lastDone == 11 * kMiB + 512);
  CHECK(progress.calls >= 3);
  CHECK(runner.received().empty());
}

TEST_CASE("eraseDevices discards devices that support it", "[agent][erase]") {
  TempDir dir("kiln-erase");
  StepContext context;
  context.devices = {patternedFile(dir, "ssd.img", 2 * kMiB)};
  context.devices[0].supportsDiscard = true;
  test::ReplayCommandRunner runner;
  runner.expect({"blkdiscard", context.devices[0].name}, "blkdiscard/ok.txt");
  context.runner = &runner;
  REQUIRE(eraseDevices(context));
  // The replayed discard did nothing, so the pattern is still there: no overwrite happened.
  CHECK(countBytes(context.devices[0].name, 0, 2 * kMiB, '\xAA') == 2 * kMiB);
  test::checkAllConsumed(runner);
}

TEST_CASE("eraseDevices overwrites when blkdiscard fails", "[agent][erase]") {
  TempDir dir("kiln-erase");
  StepContext context;
  context.devices = {patternedFile(dir, "ssd.img", 2 * kMiB)};
  context.devices[0].supportsDiscard = true;
  test::ReplayCommandRunner runner;
  runner.expect({"blkdiscard", context.devices[0].name}, "blkdiscard/unsupported.txt");
  context.runner = &runner;
  REQUIRE(eraseDevices(context));
  CHECK(countBytes(context.devices[0].name, 0, 2 * kMiB, '\0') == 2 * kMiB);
  test::checkAllConsumed(runner);
}

TEST_CASE("eraseDevices stops with an error when the step is aborted", "[agent][erase]") {
  TempDir dir("kiln-erase");
  StepContext context;
  context.devices = {patternedFile(dir, "big.img", 24 * kMiB)};
  test::ReplayCommandRunner runner;
  std::atomic<bool> abort{true};
  context.runner = &runner;
  context.abortRequested = &abort;
  auto result = eraseDevices(context);
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::Conflict);
  CHECK_THAT(result.error().message, Catch::Contains("aborted"));
  CHECK(countBytes(context.devices[0].name, 16 * kMiB, 8 * kMiB, '\xAA') == 8 * kMiB);
}

TEST_CASE("Wipefs and Blkdiscard run their tool on the device and report failures",
          "[agent][erase]") {
  test::ReplayCommandRunner runner;
  runner.expect({"wipefs", "--force", "--all", "/dev/sda"}, "wipefs/wipe_all_gpt.txt")
      .expect({"blkdiscard", "/dev/nvme0n1"}, "blkdiscard/ok.txt")
      .expect({"blkdiscard", "/dev/sda"}, "blkdiscard/unsupported.txt");
  CHECK(Wipefs(runner).wipeAll("/dev/sda"));
  CHECK(Blkdiscard(runner).discardAll("/dev/nvme0n1"));
  auto failed = Blkdiscard(runner).discardAll("/dev/sda");
  REQUIRE_FALSE(failed);
  CHECK(failed.error().message ==
        "blkdiscard /dev/sda failed on /dev/sda (exit 1): blkdiscard: /dev/sda: BLKDISCARD "
        "ioctl failed: Operation not supported");
  test::checkAllConsumed(runner);
}
