#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "agent/disk/block_device_lister.h"
#include "agent/hardware/sysfs.h"
#include "tests/support/replay_command_runner.h"

using namespace kiln;
using namespace kiln::agent;

namespace {

RootedSysfsReader scenario(const char* name) {
  return RootedSysfsReader(test::testDataPath(std::string("sysfs/") + name).string());
}

const BlockDevice* find(const std::vector<BlockDevice>& disks, const std::string& name) {
  for (const auto& d : disks) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("RootedSysfsReader reads, lists and follows links below its root", "[agent][disk]") {
  auto sysfs = scenario("server1");
  CHECK(sysfs.read("/sys/block/sda/size") == "1953525168\n");
  CHECK_FALSE(sysfs.read("/sys/block/sda/nonexistent"));
  CHECK_FALSE(sysfs.read("/sys/block/sda"));  // a directory is not a file
  CHECK(sysfs.list("/sys/class/net") == std::vector<std::string>{"docker0", "eno1", "eno2", "lo"});
  CHECK(sysfs.list("/sys/nothing").empty());
  CHECK(sysfs.exists("/sys/firmware/efi"));
  CHECK_FALSE(sysfs.exists("/sys/firmware/nothing"));
  CHECK(sysfs.readLink("/dev/disk/by-path/pci-0000:00:17.0-ata-2") == "../../sdb");
  CHECK_FALSE(sysfs.readLink("/sys/block/sda/size"));
  CHECK(trimSysfsValue("  ATA     \n") == "ATA");
}

TEST_CASE("RootedSysfsReader at / reads the real system unchanged", "[agent][disk]") {
  RootedSysfsReader real("/");
  CHECK(real.exists("/proc/self"));
  CHECK(real.read("/proc/sys/kernel/ostype") == "Linux\n");
}

TEST_CASE("listDisks reports whole disks and skips virtual and empty devices", "[agent][disk]") {
  auto sysfs = scenario("server1");
  const auto disks = listDisks(sysfs);
  std::vector<std::string> names;
  for (const auto& d : disks) names.push_back(d.name);
  CHECK(names == std::vector<std::string>{"/dev/nvme0n1", "/dev/sda", "/dev/sdb"});
}

TEST_CASE("listDisks reads identity and queue properties from sysfs", "[agent][disk]") {
  auto sysfs = scenario("server1");
  const auto disks = listDisks(sysfs);
  const BlockDevice* sda = find(disks, "/dev/sda");
  REQUIRE(sda);
  CHECK(sda->size == 1953525168ULL * 512);
  CHECK(sda->model == "ST1000NM0055-1V4");
  CHECK(sda->vendor == "ATA");
  CHECK(sda->serial == "ZBS0A1B2");
  CHECK(sda->wwn == "0x5000c500a1b2c3d4");
  CHECK(sda->byPath == "/dev/disk/by-path/pci-0000:00:17.0-ata-1");
  CHECK(sda->rotational);
  CHECK_FALSE(sda->supportsDiscard);
  CHECK(sda->logicalBlockSize == 512);

  const BlockDevice* nvme = find(disks, "/dev/nvme0n1");
  REQUIRE(nvme);
  CHECK(nvme->serial == "S437NA0M123456");
  CHECK(nvme->wwn == "eui.0025388b91b2c3d4");
  CHECK(nvme->vendor.empty());
  CHECK(nvme->byPath == "/dev/disk/by-path/pci-0000:3b:00.0-nvme-1");
  CHECK_FALSE(nvme->rotational);
  CHECK(nvme->supportsDiscard);
}

TEST_CASE("listDisks leaves fields empty when sysfs lacks them", "[agent][disk]") {
  auto sysfs = scenario("vm-bios");
  const auto disks = listDisks(sysfs);
  REQUIRE(disks.size() == 1);
  CHECK(disks[0].name == "/dev/vda");
  CHECK(disks[0].size == 20ULL << 30);
  CHECK(disks[0].serial.empty());
  CHECK(disks[0].wwn.empty());
  CHECK(disks[0].byPath.empty());
}

TEST_CASE("isVirtualBlockDeviceName recognises devices that are never targets", "[agent][disk]") {
  for (const char* name : {"loop0", "ram1", "sr0", "zram0", "md127", "dm-3", "fd0", "nbd2"}) {
    CHECK(isVirtualBlockDeviceName(name));
  }
  for (const char* name : {"sda", "nvme0n1", "vda", "xvda", "mmcblk0"}) {
    CHECK_FALSE(isVirtualBlockDeviceName(name));
  }
}

TEST_CASE("describeDevices sizes regular files by their length", "[agent][disk]") {
  const auto dir =
      std::filesystem::temp_directory_path() / ("kiln-lister-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string image = (dir / "disk.img").string();
  std::ofstream(image).close();
  std::filesystem::resize_file(image, 3 << 20);
  const std::vector<std::string> paths = {image};
  auto devices = describeDevices(paths);
  std::filesystem::remove_all(dir);
  REQUIRE(devices);
  REQUIRE(devices->size() == 1);
  CHECK((*devices)[0].name == image);
  CHECK((*devices)[0].size == 3 << 20);
}

TEST_CASE("describeDevices rejects missing paths and directories", "[agent][disk]") {
  const std::vector<std::string> missing = {"/nonexistent/kiln-disk.img"};
  auto none = describeDevices(missing);
  REQUIRE_FALSE(none);
  CHECK(none.error().code == ErrorCode::InvalidArgument);
  CHECK_THAT(none.error().message, Catch::Contains("/nonexistent/kiln-disk.img"));
  const std::vector<std::string> directory = {std::filesystem::temp_directory_path().string()};
  auto dir = describeDevices(directory);
  REQUIRE_FALSE(dir);
  CHECK_THAT(dir.error().message, Catch::Contains("neither a regular file nor a block device"));
}
