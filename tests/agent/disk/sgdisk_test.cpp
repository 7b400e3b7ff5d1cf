#include <catch2/catch.hpp>

#include "agent/disk/sgdisk.h"
#include "tests/support/replay_command_runner.h"

using namespace kiln;
using namespace kiln::agent;

TEST_CASE("parseSgdiskPrint reads the disk and its partitions", "[agent][disk][sgdisk]") {
  auto table = parseSgdiskPrint(test::recordedOutput("sgdisk/print_config_drive.txt").out);
  REQUIRE(table);
  CHECK(table->diskSectors == 41943040);
  CHECK(table->sectorSize == 512);
  CHECK(table->diskGuid == "6A92A990-504F-43C2-92F0-FEE142AAC823");
  CHECK(table->firstUsableSector == 34);
  CHECK(table->lastUsableSector == 41943006);
  REQUIRE(table->partitions.size() == 3);
  const GptPartition& esp = table->partitions[0];
  CHECK(esp.number == 1);
  CHECK(esp.startSector == 2048);
  CHECK(esp.endSector == 2099199);
  CHECK(esp.sizeSectors() == 2097152);
  CHECK(esp.code == "EF00");
  CHECK(esp.name == "EFI System");
  CHECK(table->partitions[2].name == "config-2");
  CHECK(table->partitions[2].code == "0700");
}

TEST_CASE("parseSgdiskPrint reads unnamed partitions and empty tables", "[agent][disk][sgdisk]") {
  auto members = parseSgdiskPrint(test::recordedOutput("sgdisk/print_raid_member.txt").out);
  REQUIRE(members);
  REQUIRE(members->partitions.size() == 2);
  CHECK(members->partitions[1].startSector == 20973568);
  CHECK(members->partitions[1].code == "FD00");
  CHECK(members->partitions[1].name.empty());

  auto empty = parseSgdiskPrint(
      "Disk /tmp/a b: 2048 sectors, 1024.0 KiB\nSector size (logical): 4096 bytes\n\n"
      "Number  Start (sector)    End (sector)  Size       Code  Name\n");
  REQUIRE(empty);
  CHECK(empty->diskSectors == 2048);
  CHECK(empty->sectorSize == 4096);
  CHECK(empty->partitions.empty());
}

TEST_CASE("parseSgdiskPrint rejects output that is not a partition listing",
          "[agent][disk][sgdisk]") {
  CHECK_FALSE(parseSgdiskPrint(""));
  CHECK_FALSE(parseSgdiskPrint("Problem opening /dev/sda for reading! Error is 2.\n"));
  auto bad = parseSgdiskPrint(
      "Disk /dev/sda: 2048 sectors, 1024.0 KiB\n"
      "Number  Start (sector)    End (sector)  Size       Code  Name\n   x  y\n");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == ErrorCode::InvalidArgument);
}

TEST_CASE("Sgdisk builds the expected argv for each operation", "[agent][disk][sgdisk]") {
  test::ReplayCommandRunner runner;
  runner.expect({"sgdisk", "-o", "/dev/sda"}, "sgdisk/new_table.txt")
      .expect({"sgdisk", "-n", "1:0:+10240M", "-t", "1:FD00", "/dev/sda"},
              "sgdisk/new_partition.txt")
      .expect({"sgdisk", "-n", "0:-64M:0", "-t", "0:0700", "-c", "0:config-2", "/dev/sda"},
              "sgdisk/new_partition.txt")
      .expect({"sgdisk", "-e", "/dev/sda"}, "sgdisk/new_table.txt")
      .expect({"sgdisk", "-p", "/dev/sda"}, "sgdisk/print_raid_member.txt");
  Sgdisk sgdisk(runner);
  CHECK(sgdisk.newTable("/dev/sda"));
  CHECK(sgdisk.newPartition("/dev/sda", 1, "0", "+10240M", "FD00"));
  CHECK(sgdisk.newPartition("/dev/sda", 0, "-64M", "0", "0700", "config-2"));
  CHECK(sgdisk.moveBackupToEnd("/dev/sda"));
  auto table = sgdisk.print("/dev/sda");
  REQUIRE(table);
  CHECK(table->partitions.size() == 2);
  test::checkAllConsumed(runner);
}

TEST_CASE("Sgdisk reports a failed command with its stderr", "[agent][disk][sgdisk]") {
  test::ReplayCommandRunner runner;
  runner.expect({"sgdisk", "-n", "0:-64M:0", "-t", "0:0700", "-c", "0:config-2", "/dev/sda"},
                "sgdisk/new_partition_no_space.txt");
  auto done = Sgdisk(runner).newPartition("/dev/sda", 0, "-64M", "0", "0700", "config-2");
  REQUIRE_FALSE(done);
  CHECK(done.error().code == ErrorCode::Internal);
  CHECK_THAT(done.error().message, Catch::Contains("exit 4"));
  CHECK_THAT(done.error().message, Catch::Contains("Could not create partition 2"));
  test::checkAllConsumed(runner);
}

TEST_CASE("Sgdisk zap accepts sgdisk's complaint about the table it destroyed",
          "[agent][disk][sgdisk]") {
  test::ReplayCommandRunner runner;
  runner.expect({"sgdisk", "-Z", "/dev/sda"}, "sgdisk/zap.txt")
      .expect({"sgdisk", "-Z", "/dev/sda"}, "sgdisk/zap_damaged_gpt.txt")
      .expect({"sgdisk", "-Z", "/dev/sda"}, "sgdisk/open_failed.txt");
  Sgdisk sgdisk(runner);
  CHECK(sgdisk.zap("/dev/sda"));
  CHECK(sgdisk.zap("/dev/sda"));
  auto failed = sgdisk.zap("/dev/sda");
  REQUIRE_FALSE(failed);
  CHECK_THAT(failed.error().message, Catch::Contains("Problem opening /dev/sda for reading"));
  test::checkAllConsumed(runner);
}
