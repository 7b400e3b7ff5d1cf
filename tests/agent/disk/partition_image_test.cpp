// Partition images: the agent's partitioning of the root device and the installation of the
// image's own GRUB in a chroot, with replayed tools (files stand in for the disk; a temporary
// directory stands in for the mounted root file system).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "agent/disk/partition_image.h"
#include "tests/support/replay_command_runner.h"
#include "tests/support/temp_dir.h"

using namespace kiln;
using namespace kiln::agent;
using nlohmann::json;

namespace {

constexpr uint64_t kGiB = 1ULL << 30;

void expectPartitioning(test::ReplayCommandRunner& runner, const std::string& disk, bool uefi) {
  runner.expect({"sgdisk", "-Z", disk}, "sgdisk/zap.txt")
      .expect({"sgdisk", "-o", disk}, "sgdisk/new_table.txt");
  if (uefi) {
    runner.expect({"sgdisk", "-n", "1:0:+550M", "-t", "1:EF00", "-c", "1:efi-system", disk}, "sgdisk/new_partition.txt");
  } else {
    runner.expect({"sgdisk", "-n", "1:0:+1M", "-t", "1:EF02", "-c", "1:bios-boot", disk}, "sgdisk/new_partition.txt");
  }
  runner.expect({"sgdisk", "-n", "2:0:+1024M", "-t", "2:8300", "-c", "2:root", disk}, "sgdisk/new_partition.txt")
      .expect({"sgdisk", "-p", disk},
              uefi ? "sgdisk/print_partition_image_uefi.txt" : "sgdisk/print_partition_image_bios.txt");
}

}  // namespace

TEST_CASE("a partition image's disk layout on UEFI and BIOS machines", "[agent][disk][partition]") {
  test::TempDir dir("kiln-partimg");
  const std::string disk = dir.file("vda");
  std::ofstream(disk).close();
  StepContext ctx;
  SECTION("UEFI: a FAT32 ESP, then the root") {
    test::ReplayCommandRunner runner;
    expectPartitioning(runner, disk, true);
    runner.expect({"mkfs.vfat", "-I", "-F", "32", "-n", "EFI-SYSTEM", "--offset", "2048", disk, "563200"},
                  CommandOutput{});
    ctx.runner = &runner;
    auto layout = partitionForImage(ctx, disk, 2 * kGiB, 1024, true);
    REQUIRE(layout);
    CHECK(layout->uefi);
    CHECK(layout->bootPartition == 1);
    CHECK(layout->rootPartition == 2);
    CHECK(layout->rootOffset == 1128448ULL * 512);
    CHECK(layout->rootBytes == 1024ULL << 20);
    test::checkAllConsumed(runner);
  }
  SECTION("BIOS: a BIOS boot partition for GRUB's core image, nothing formatted") {
    test::ReplayCommandRunner runner;
    expectPartitioning(runner, disk, false);
    ctx.runner = &runner;
    auto layout = partitionForImage(ctx, disk, 2 * kGiB, 1024, false);
    REQUIRE(layout);
    CHECK_FALSE(layout->uefi);
    CHECK(layout->rootOffset == 4096ULL * 512);
    test::checkAllConsumed(runner);
  }
  SECTION("a disk too small is refused before anything is touched") {
    test::ReplayCommandRunner runner;
    ctx.runner = &runner;
    auto refused = partitionForImage(ctx, disk, 1 * kGiB, 1024, true);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == ErrorCode::InvalidArgument);
    CHECK_THAT(refused.error().message, Catch::Contains("1640 MiB"));
    CHECK(runner.received().empty());
  }
}

namespace {

/// The commands that mount the image's root (at `base`) and bind the kernel file systems.
void expectMounts(test::ReplayCommandRunner& runner, const std::string& base) {
  runner.expect({"mount", "-t", "ext4", "/dev/vda2", base}, CommandOutput{});
  for (const char* d : {"dev", "proc", "sys", "run"}) {
    runner.expect({"mount", "--bind", std::string("/") + d, base + "/" + d}, CommandOutput{});
  }
}

void expectUnmounts(test::ReplayCommandRunner& runner, const std::string& base, bool esp) {
  if (esp) runner.expect({"umount", base + "/boot/efi"}, CommandOutput{});
  for (const char* d : {"run", "sys", "proc", "dev"}) runner.expect({"umount", base + "/" + d}, CommandOutput{});
  runner.expect({"umount", base}, CommandOutput{});
}

}  // namespace

TEST_CASE("the image's GRUB is installed in a chroot, every mount undone", "[agent][disk][partition]") {
  test::TempDir dir("kiln-grub");
  const std::string base = dir.path.string();
  std::filesystem::create_directories(dir.path / "usr/sbin");
  std::ofstream(dir.file("usr/sbin/grub-install")) << "#!/bin/sh\n";
  StepContext ctx;
  SECTION("UEFI: the removable path, no NVRAM write from the chroot") {
    test::ReplayCommandRunner runner;
    expectMounts(runner, base);
    runner.expect({"mount", "-t", "vfat", "/dev/vda1", base + "/boot/efi"}, CommandOutput{})
        .expect({"chroot", base, "grub-install", "--target=x86_64-efi", "--efi-directory=/boot/efi",
                 "--removable", "--no-nvram"}, CommandOutput{})
        .expect({"chroot", base, "grub-mkconfig", "-o", "/boot/grub/grub.cfg"}, CommandOutput{});
    expectUnmounts(runner, base, true);
    ctx.runner = &runner;
    auto done = installImageGrub(ctx, PartitionImageLayout{"/dev/vda", true}, "/dev/vda2", "/dev/vda1", "ext4", base);
    REQUIRE(done);
    CHECK(*done == json{{"bootloader", "grub"}, {"grub_target", "x86_64-efi"}});
    test::checkAllConsumed(runner);
  }
  SECTION("BIOS: GRUB's boot code on the disk") {
    test::ReplayCommandRunner runner;
    expectMounts(runner, base);
    runner.expect({"chroot", base, "grub-install", "--target=i386-pc", "/dev/vda"}, CommandOutput{})
        .expect({"chroot", base, "grub-mkconfig", "-o", "/boot/grub/grub.cfg"}, CommandOutput{});
    expectUnmounts(runner, base, false);
    ctx.runner = &runner;
    auto done = installImageGrub(ctx, PartitionImageLayout{"/dev/vda", false}, "/dev/vda2", "/dev/vda1", "ext4", base);
    REQUIRE(done);
    CHECK((*done)["grub_target"] == "i386-pc");
    test::checkAllConsumed(runner);
  }
  SECTION("a failing grub-install fails the step, and everything is unmounted") {
    test::ReplayCommandRunner runner;
    expectMounts(runner, base);
    runner.expect({"chroot", base, "grub-install", "--target=i386-pc", "/dev/vda"},
                  CommandOutput{1, "", "grub-install: error: cannot find a device for /boot/grub."});
    expectUnmounts(runner, base, false);
    ctx.runner = &runner;
    auto failed = installImageGrub(ctx, PartitionImageLayout{"/dev/vda", false}, "/dev/vda2", "/dev/vda1", "ext4", base);
    REQUIRE_FALSE(failed);
    CHECK_THAT(failed.error().message, Catch::Contains("cannot find a device"));
    test::checkAllConsumed(runner);
  }
  SECTION("grub2 names (Red Hat family images)") {
    std::filesystem::remove(dir.file("usr/sbin/grub-install"));
    std::ofstream(dir.file("usr/sbin/grub2-install")) << "#!/bin/sh\n";
    test::ReplayCommandRunner runner;
    expectMounts(runner, base);
    runner.expect({"chroot", base, "grub2-install", "--target=i386-pc", "/dev/vda"}, CommandOutput{})
        .expect({"chroot", base, "grub2-mkconfig", "-o", "/boot/grub2/grub.cfg"}, CommandOutput{});
    expectUnmounts(runner, base, false);
    ctx.runner = &runner;
    auto done = installImageGrub(ctx, PartitionImageLayout{"/dev/vda", false}, "/dev/vda2", "/dev/vda1", "ext4", base);
    REQUIRE(done);
    CHECK((*done)["bootloader"] == "grub2");
    test::checkAllConsumed(runner);
  }
  SECTION("an image without GRUB is refused, its root unmounted") {
    std::filesystem::remove(dir.file("usr/sbin/grub-install"));
    test::ReplayCommandRunner runner;
    runner.expect({"mount", "-t", "ext4", "/dev/vda2", base}, CommandOutput{}).expect({"umount", base}, CommandOutput{});
    ctx.runner = &runner;
    auto refused = installImageGrub(ctx, PartitionImageLayout{"/dev/vda", false}, "/dev/vda2", "/dev/vda1", "ext4", base);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == ErrorCode::InvalidArgument);
    CHECK_THAT(refused.error().message, Catch::Contains("no grub-install"));
    test::checkAllConsumed(runner);
  }
}
