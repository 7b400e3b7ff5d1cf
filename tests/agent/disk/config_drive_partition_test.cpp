#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "agent/disk/block_device_probe.h"
#include "agent/disk/config_drive_partition.h"
#include "agent/disk/mbr.h"
#include "agent/disk/sgdisk.h"
#include "tests/support/replay_command_runner.h"
#include "tests/support/temp_dir.h"

using namespace kiln;
using namespace kiln::agent;
using kiln::test::TempDir;

// These tests run the real sgdisk on image files in a temporary directory (never on /dev).

namespace {

constexpr uint64_t kMiB = 1ULL << 20;

std::string sparseFile(const TempDir& dir, const std::string& name, uint64_t bytes) {
  const std::string path = (dir.path / name).string();
  std::ofstream(path).close();
  std::filesystem::resize_file(path, bytes);
  return path;
}

/// A GPT image with one 100 MiB root partition, made with the real sgdisk.
std::string gptImage(const TempDir& dir, ProcessCommandRunner& runner, uint64_t bytes) {
  const std::string path = sparseFile(dir, "disk.img", bytes);
  Sgdisk sgdisk(runner);
  REQUIRE(sgdisk.newTable(path));
  REQUIRE(sgdisk.newPartition(path, 1, "0", "+100M", "8300", "root"));
  return path;
}

/// An image with a hand-made MBR: one Linux partition of `partitionMiB` from sector 2048.
std::string mbrImage(const TempDir& dir, uint64_t bytes, uint32_t partitionMiB) {
  const std::string path = sparseFile(dir, "mbr.img", bytes);
  REQUIRE(writeMbrEntry(path, MbrEntry{0, 0x83, 2048, partitionMiB * 2048}));
  std::fstream out(path, std::ios::in | std::ios::out | std::ios::binary);
  out.seekp(510);
  out.write("\x55\xAA", 2);
  return path;
}

/// Says what it is told: the whole device has `table`; the partition at `labelOffset` has a
/// file system labelled config-2.
class FakeProbe : public BlockDeviceProbe {
 public:
  FakeProbe(std::string table, uint64_t labelOffset = 0)
      : table_(std::move(table)), labelOffset_(labelOffset) {}
  Result<ProbeResult> probe(const std::string&, uint64_t offset, uint64_t) override {
    if (offset == 0) return ProbeResult{table_, "", ""};
    if (offset == labelOffset_) return ProbeResult{"", "vfat", "config-2"};
    return ProbeResult{"", "ext4", "cloudimg-rootfs"};
  }

 private:
  std::string table_;
  uint64_t labelOffset_;
};

}  // namespace

TEST_CASE("BlkidBlockDeviceProbe recognises GPT, MBR and blank images", "[agent][disk]") {
  TempDir dir("kiln-configdrive");
  ProcessCommandRunner runner;
  BlkidBlockDeviceProbe probe;
  const std::string gpt = gptImage(dir, runner, 200 * kMiB);
  auto gptResult = probe.probe(gpt);
  REQUIRE(gptResult);
  CHECK(gptResult->partitionTableType == "gpt");

  const std::string blank = sparseFile(dir, "blank.img", 8 * kMiB);
  auto blankResult = probe.probe(blank);
  REQUIRE(blankResult);
  CHECK(blankResult->partitionTableType.empty());
  CHECK(blankResult->filesystemType.empty());

  const std::string mbr = mbrImage(dir, 8 * kMiB, 4);
  auto mbrResult = probe.probe(mbr);
  REQUIRE(mbrResult);
  CHECK(mbrResult->partitionTableType == "dos");

  auto missing = probe.probe((dir.path / "missing.img").string());
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::NotFound);
}

TEST_CASE("prepareConfigDrivePartition adds a config-2 partition at the end of a GPT disk",
          "[agent][disk][configdrive]") {
  TempDir dir("kiln-configdrive");
  ProcessCommandRunner runner;
  const std::string image = gptImage(dir, runner, 300 * kMiB);
  StepContext context;
  context.runner = &runner;
  auto target = prepareConfigDrivePartition(context, image, 2 * kMiB);
  REQUIRE(target);
  CHECK(target->path == image);
  CHECK(target->size >= 63 * kMiB);
  CHECK(target->size <= 65 * kMiB);
  CHECK(target->offset + target->size <= 300 * kMiB);
  CHECK(target->offset >= 300 * kMiB - 66 * kMiB);

  auto table = Sgdisk(runner).print(image);
  REQUIRE(table);
  REQUIRE(table->partitions.size() == 2);
  CHECK(table->partitions[1].name == "config-2");
  CHECK(table->partitions[1].code == "0700");
  CHECK(table->partitions[1].startSector * 512 == target->offset);
}

TEST_CASE("prepareConfigDrivePartition reuses an existing config-2 partition",
          "[agent][disk][configdrive]") {
  TempDir dir("kiln-configdrive");
  ProcessCommandRunner runner;
  const std::string image = gptImage(dir, runner, 300 * kMiB);
  StepContext context;
  context.runner = &runner;
  auto first = prepareConfigDrivePartition(context, image, kMiB);
  REQUIRE(first);
  auto second = prepareConfigDrivePartition(context, image, kMiB);
  REQUIRE(second);
  CHECK(second->offset == first->offset);
  CHECK(second->size == first->size);
  auto table = Sgdisk(runner).print(image);
  REQUIRE(table);
  CHECK(table->partitions.size() == 2);
}

TEST_CASE("prepareConfigDrivePartition grows into a disk larger than the written image",
          "[agent][disk][configdrive]") {
  TempDir dir("kiln-configdrive");
  ProcessCommandRunner runner;
  // The image's GPT was made for 110 MiB (no room for 64 MiB more); the disk is 400 MiB.
  const std::string image = gptImage(dir, runner, 110 * kMiB);
  std::filesystem::resize_file(image, 400 * kMiB);
  StepContext context;
  context.runner = &runner;
  auto target = prepareConfigDrivePartition(context, image, kMiB);
  REQUIRE(target);
  CHECK(target->offset > 300 * kMiB);
  CHECK(target->offset + target->size <= 400 * kMiB);
}

TEST_CASE("prepareConfigDrivePartition finds a partition by its file-system label",
          "[agent][disk][configdrive]") {
  test::ReplayCommandRunner runner;
  runner.expect({"sgdisk", "-p", "/dev/sda"}, "sgdisk/print_raid_member.txt");
  StepContext context;
  context.runner = &runner;
  FakeProbe probe("gpt", 20973568ULL * 512);
  auto target = prepareConfigDrivePartition(context, "/dev/sda", kMiB, probe);
  REQUIRE(target);
  CHECK(target->path == "/dev/sda");
  CHECK(target->offset == 20973568ULL * 512);
  CHECK(target->size == (41943006ULL - 20973568 + 1) * 512);
  test::checkAllConsumed(runner);
}

TEST_CASE("prepareConfigDrivePartition reports what it cannot do", "[agent][disk][configdrive]") {
  test::ReplayCommandRunner runner;
  StepContext context;
  context.runner = &runner;
  FakeProbe atari("atari");
  auto onAtari = prepareConfigDrivePartition(context, "/dev/sda", kMiB, atari);
  REQUIRE_FALSE(onAtari);
  CHECK(onAtari.error().code == ErrorCode::Unimplemented);
  CHECK_THAT(onAtari.error().message, Catch::Contains("'atari'"));

  FakeProbe none("");
  auto noTable = prepareConfigDrivePartition(context, "/dev/sda", kMiB, none);
  REQUIRE_FALSE(noTable);
  CHECK_THAT(noTable.error().message, Catch::Contains("no partition table"));

  FakeProbe gpt("gpt");
  auto tooBig = prepareConfigDrivePartition(context, "/dev/sda", 65 * kMiB, gpt);
  REQUIRE_FALSE(tooBig);
  CHECK(tooBig.error().code == ErrorCode::InvalidArgument);
  CHECK(runner.received().empty());
}

TEST_CASE("prepareConfigDrivePartition fails when sgdisk finds no room",
          "[agent][disk][configdrive]") {
  test::ReplayCommandRunner runner;
  runner.expect({"sgdisk", "-p", "/dev/sda"}, "sgdisk/print_raid_member.txt")
      .expect({"sgdisk", "-e", "/dev/sda"}, "sgdisk/new_table.txt")
      .expect({"sgdisk", "-n", "0:-64M:0", "-t", "0:0700", "-c", "0:config-2", "/dev/sda"},
              "sgdisk/new_partition_no_space.txt");
  StepContext context;
  context.runner = &runner;
  FakeProbe probe("gpt", 1);  // no partition carries the label
  auto target = prepareConfigDrivePartition(context, "/dev/sda", kMiB, probe);
  REQUIRE_FALSE(target);
  CHECK_THAT(target.error().message, Catch::Contains("Could not create partition"));
  test::checkAllConsumed(runner);
}

TEST_CASE("prepareConfigDrivePartition appends a primary partition to an MBR disk",
          "[agent][disk][configdrive]") {
  TempDir dir("kiln-configdrive");
  const std::string image = mbrImage(dir, 300 * kMiB, 100);
  test::ReplayCommandRunner runner;  // no tool runs for MBR
  StepContext context;
  context.runner = &runner;
  auto target = prepareConfigDrivePartition(context, image, 2 * kMiB);
  REQUIRE(target);
  CHECK(target->path == image);
  CHECK(target->offset == 236 * kMiB);
  CHECK(target->size == 64 * kMiB);

  auto entries = readMbr(image);
  REQUIRE(entries);
  CHECK((*entries)[0].sectors == 100 * 2048);
  CHECK((*entries)[1].type == 0x83);
  CHECK(uint64_t{(*entries)[1].startSector} * 512 == target->offset);
  BlkidBlockDeviceProbe probe;
  auto probed = probe.probe(image);
  REQUIRE(probed);
  CHECK(probed->partitionTableType == "dos");
  CHECK(std::filesystem::file_size(image) == 300 * kMiB);
  CHECK(runner.received().empty());
}

TEST_CASE("prepareConfigDrivePartition reuses an MBR partition labelled config-2",
          "[agent][disk][configdrive]") {
  TempDir dir("kiln-configdrive");
  const std::string image = mbrImage(dir, 300 * kMiB, 100);
  test::ReplayCommandRunner runner;
  StepContext context;
  context.runner = &runner;
  FakeProbe probe("dos", 2048 * 512);
  auto target = prepareConfigDrivePartition(context, image, 2 * kMiB, probe);
  REQUIRE(target);
  CHECK(target->offset == kMiB);
  CHECK(target->size == 100 * kMiB);
  auto entries = readMbr(image);
  REQUIRE(entries);
  CHECK_FALSE((*entries)[1].used());
}
