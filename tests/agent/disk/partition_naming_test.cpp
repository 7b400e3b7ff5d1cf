#include <catch2/catch.hpp>

#include "agent/disk/partition_naming.h"

using namespace kiln::agent;

TEST_CASE("partitionPath adds a p separator after a digit", "[agent][disk]") {
  CHECK(partitionPath("/dev/sda", 1) == "/dev/sda1");
  CHECK(partitionPath("/dev/vda", 12) == "/dev/vda12");
  CHECK(partitionPath("/dev/nvme0n1", 1) == "/dev/nvme0n1p1");
  CHECK(partitionPath("/dev/loop0", 2) == "/dev/loop0p2");
  CHECK(partitionPath("/dev/mmcblk0", 1) == "/dev/mmcblk0p1");
}

TEST_CASE("holderDisk strips the partition suffix", "[agent][disk]") {
  CHECK(holderDisk("/dev/sda1") == "/dev/sda");
  CHECK(holderDisk("/dev/sdb12") == "/dev/sdb");
  CHECK(holderDisk("/dev/nvme0n1p2") == "/dev/nvme0n1");
  CHECK(holderDisk("/dev/loop0p1") == "/dev/loop0");
  CHECK(holderDisk("/dev/mmcblk0p1") == "/dev/mmcblk0");
}

TEST_CASE("holderDisk returns whole disks unchanged", "[agent][disk]") {
  CHECK(holderDisk("/dev/sda") == "/dev/sda");
  CHECK(holderDisk("/dev/nvme0n1") == "/dev/nvme0n1");
  CHECK(holderDisk("/dev/loop0") == "/dev/loop0");
  CHECK(holderDisk("/dev/md0") == "/dev/md0");
}
