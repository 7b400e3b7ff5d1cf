#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "agent/raid/mdadm.h"
#include "tests/support/replay_command_runner.h"

using namespace kiln;
using namespace kiln::agent;

namespace {

std::string detailText(const char* fixture) {
  return test::recordedOutput(std::string("mdadm/") + fixture).out;
}

std::string mdstatText(const char* scenario) {
  std::ifstream in(test::testDataPath(std::string("sysfs/") + scenario + "/proc/mdstat"));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

TEST_CASE("parseMdadmDetail reads a clean RAID-1", "[agent][raid][mdadm]") {
  auto detail = parseMdadmDetail(detailText("detail_raid1_clean.txt"));
  REQUIRE(detail);
  CHECK(detail->device == "/dev/md0");
  CHECK(detail->version == "1.0");
  CHECK(detail->raidLevel == "raid1");
  CHECK(detail->arraySizeKiB == 49088);
  CHECK(detail->raidDevices == 2);
  CHECK(detail->totalDevices == 2);
  CHECK(detail->activeDevices == 2);
  CHECK(detail->failedDevices == 0);
  CHECK(detail->state == "clean");
  CHECK(detail->name == "node-17:0");
  CHECK(detail->uuid == "4abff139:c1b2dcaa:1fac110c:c15cc1f0");
  REQUIRE(detail->members.size() == 2);
  CHECK(detail->members[1].number == 1);
  CHECK(detail->members[1].raidDevice == 1);
  CHECK(detail->members[1].state == "active sync");
  CHECK(detail->members[1].device == "/dev/sdb1");
  CHECK(detail->memberDevices() == std::vector<std::string>{"/dev/sda1", "/dev/sdb1"});
}

TEST_CASE("parseMdadmDetail reads removed and faulty members of a degraded array",
          "[agent][raid][mdadm]") {
  auto detail = parseMdadmDetail(detailText("detail_raid1_degraded.txt"));
  REQUIRE(detail);
  CHECK(detail->state == "clean, degraded");
  CHECK(detail->failedDevices == 1);
  REQUIRE(detail->members.size() == 3);
  CHECK(detail->members[1].number == -1);
  CHECK(detail->members[1].raidDevice == 1);
  CHECK(detail->members[1].state == "removed");
  CHECK(detail->members[1].device.empty());
  CHECK(detail->members[2].raidDevice == -1);
  CHECK(detail->members[2].state == "faulty");
  CHECK(detail->memberDevices() == std::vector<std::string>{"/dev/sda1", "/dev/sdb1"});
}

TEST_CASE("parseMdadmDetail reads RAID-0, 5, 6 and 10 arrays", "[agent][raid][mdadm]") {
  struct Case {
    const char* fixture;
    const char* level;
    size_t members;
    uint64_t sizeKiB;
  };
  // Recorded on 48 MiB partitions (tests/ramdisk/record_mdadm_fixtures.py).
  for (const Case& c : {Case{"detail_raid0.txt", "raid0", 2, 97280},
                        Case{"detail_raid5.txt", "raid5", 3, 97280},
                        Case{"detail_raid6.txt", "raid6", 4, 97280},
                        Case{"detail_raid10.txt", "raid10", 4, 97280}}) {
    INFO(c.fixture);
    auto detail = parseMdadmDetail(detailText(c.fixture));
    REQUIRE(detail);
    CHECK(detail->raidLevel == c.level);
    CHECK(detail->members.size() == c.members);
    CHECK(detail->raidDevices == static_cast<int>(c.members));
    CHECK(detail->arraySizeKiB == c.sizeKiB);
    CHECK(detail->state == "clean");
  }
  auto raid10 = parseMdadmDetail(detailText("detail_raid10.txt"));
  REQUIRE(raid10);
  CHECK(raid10->members[1].state == "active sync set-B");
  CHECK(raid10->members[3].device == "/dev/sdd1");
}

TEST_CASE("parseMdadmDetail rejects text that is not --detail output", "[agent][raid][mdadm]") {
  CHECK_FALSE(parseMdadmDetail(""));
  CHECK_FALSE(parseMdadmDetail("mdadm: cannot open /dev/md9: No such file or directory\n"));
  CHECK_FALSE(parseMdadmDetail("/dev/md0:\n           Version : 1.0\n"));
}

TEST_CASE("parseMdadmExamine reads a member superblock", "[agent][raid][mdadm]") {
  auto examine = parseMdadmExamine(test::recordedOutput("mdadm/examine_raid1_member.txt").out);
  REQUIRE(examine);
  CHECK(examine->device == "/dev/sda1");
  CHECK(examine->version == "1.0");
  CHECK(examine->arrayUuid == "4abff139:c1b2dcaa:1fac110c:c15cc1f0");
  CHECK(examine->name == "node-17:0");
  CHECK(examine->raidLevel == "raid1");
  CHECK(examine->raidDevices == 2);
  CHECK(examine->deviceRole == "Active device 0");
  CHECK(examine->arrayState == "AA");
  CHECK_FALSE(parseMdadmExamine("/dev/sda:\n   MBR Magic : aa55\n"));
}

TEST_CASE("parseMdstat reads healthy arrays", "[agent][raid][mdadm]") {
  auto mdstat = parseMdstat(mdstatText("server1"));
  REQUIRE(mdstat);
  CHECK(mdstat->personalities.size() == 8);
  CHECK(mdstat->personalities[0] == "raid1");
  REQUIRE(mdstat->arrays.size() == 2);
  const MdstatArray& raid0 = mdstat->arrays[0];
  CHECK(raid0.name == "md1");
  CHECK(raid0.active);
  CHECK(raid0.level == "raid0");
  CHECK(raid0.blocks == 1932550144);
  CHECK(raid0.raidDevices == -1);
  REQUIRE(raid0.members.size() == 2);
  CHECK(raid0.members[0].device == "sdb2");
  CHECK(raid0.members[0].index == 1);
  const MdstatArray& raid1 = mdstat->arrays[1];
  CHECK(raid1.raidDevices == 2);
  CHECK(raid1.workingDevices == 2);
  CHECK(raid1.health == "UU");
  CHECK(raid1.progress.empty());
}

TEST_CASE("parseMdstat reads degraded, recovering and inactive arrays", "[agent][raid][mdadm]") {
  auto mdstat = parseMdstat(mdstatText("raid-degraded"));
  REQUIRE(mdstat);
  REQUIRE(mdstat->arrays.size() == 3);
  const MdstatArray& raid5 = mdstat->arrays[0];
  CHECK(raid5.level == "raid5");
  CHECK(raid5.health == "UU_");
  CHECK(raid5.workingDevices == 2);
  CHECK_THAT(raid5.progress, Catch::StartsWith("[=>...................]  recovery =  8.1%"));
  const MdstatArray& raid1 = mdstat->arrays[1];
  CHECK(raid1.health == "U_");
  REQUIRE(raid1.members.size() == 2);
  CHECK(raid1.members[1].faulty);
  CHECK_FALSE(raid1.members[0].faulty);
  CHECK(raid1.progress.empty());
  const MdstatArray& inactive = mdstat->arrays[2];
  CHECK(inactive.name == "md127");
  CHECK_FALSE(inactive.active);
  CHECK(inactive.level.empty());
  REQUIRE(inactive.members.size() == 1);
  CHECK(inactive.members[0].spare);
}

TEST_CASE("parseMdstat accepts a system without arrays and rejects garbage",
          "[agent][raid][mdadm]") {
  auto none = parseMdstat(mdstatText("vm-bios"));
  REQUIRE(none);
  CHECK(none->arrays.empty());
  auto readOnly = parseMdstat("md0 : active (auto-read-only) raid1 sda1[0] sdb1[1]\n");
  REQUIRE(readOnly);
  CHECK(readOnly->arrays[0].readOnly);
  CHECK(readOnly->arrays[0].level == "raid1");
  CHECK_FALSE(parseMdstat("md0 : exploded raid1 sda1[0]\n"));
  CHECK_FALSE(parseMdstat("md0 : active raid1 sda1[x]\n"));
}

TEST_CASE("Mdadm builds the expected argv and reads the answers", "[agent][raid][mdadm]") {
  test::ReplayCommandRunner runner;
  runner
      .expect(
          {"mdadm", "--create", "/dev/md0", "--metadata=1.0", "--level=10", "--raid-devices=4",
           "--name=root", "--run", "--force", "/dev/sda1", "/dev/sdb1", "/dev/sdc1", "/dev/sdd1"},
          "mdadm/create_started.txt")
      .expect({"mdadm", "--detail", "/dev/md0"}, "mdadm/detail_raid10.txt")
      .expect({"mdadm", "--examine", "/dev/sda1"}, "mdadm/examine_raid1_member.txt")
      .expect({"mdadm", "--examine", "/dev/sda"}, "mdadm/examine_no_superblock.txt")
      .expect({"mdadm", "--stop", "/dev/md0"}, "mdadm/stop.txt")
      .expect({"mdadm", "--zero-superblock", "/dev/sda1"}, "mdadm/zero_superblock_ok.txt")
      .expect({"mdadm", "--zero-superblock", "/dev/sda3"}, "mdadm/zero_superblock_not_member.txt");
  Mdadm mdadm(runner);
  const std::vector<std::string> members = {"/dev/sda1", "/dev/sdb1", "/dev/sdc1", "/dev/sdd1"};
  CHECK(mdadm.create("/dev/md0", "10", members, "root"));
  auto detail = mdadm.detail("/dev/md0");
  REQUIRE(detail);
  CHECK(detail->raidLevel == "raid10");
  auto member = mdadm.examine("/dev/sda1");
  REQUIRE(member);
  REQUIRE(member->has_value());
  CHECK((*member)->raidLevel == "raid1");
  auto blank = mdadm.examine("/dev/sda");
  REQUIRE(blank);
  CHECK_FALSE(blank->has_value());
  CHECK(mdadm.stop("/dev/md0"));
  CHECK(mdadm.zeroSuperblock("/dev/sda1"));
  CHECK(mdadm.zeroSuperblock("/dev/sda3"));
  test::checkAllConsumed(runner);
}

TEST_CASE("Mdadm turns a failed create into an error with mdadm's reason", "[agent][raid][mdadm]") {
  test::ReplayCommandRunner runner;
  runner.expect({"mdadm", "--create", "/dev/md0", "--metadata=1.0", "--level=1", "--raid-devices=2",
                 "--run", "--force", "/dev/sda1", "/dev/sdb1"},
                "mdadm/create_busy.txt");
  const std::vector<std::string> members = {"/dev/sda1", "/dev/sdb1"};
  auto created = Mdadm(runner).create("/dev/md0", "1", members);
  REQUIRE_FALSE(created);
  CHECK(created.error().code == ErrorCode::Internal);
  CHECK_THAT(created.error().message, Catch::Contains("exit 1"));
  CHECK_THAT(created.error().message, Catch::Contains("/dev/sdb1 is not suitable"));
  test::checkAllConsumed(runner);
}

TEST_CASE("Mdadm::examine: no superblock, whichever way mdadm says it", "[agent][raid][mdadm]") {
  // A partition without metadata (exit 1 on stderr); a disk with a partition table, which
  // mdadm 4.2 describes with exit 0 (the recorded fixture); a real error.
  test::ReplayCommandRunner runner;
  runner.expect({"mdadm", "--examine", "/dev/sdb3"},
                CommandOutput{1, "", "mdadm: No md superblock detected on /dev/sdb3.\n"})
      .expect({"mdadm", "--examine", "/dev/sdb"}, "mdadm/examine_no_superblock.txt")
      .expect({"mdadm", "--examine", "/dev/sdz"},
              CommandOutput{2, "", "mdadm: cannot open /dev/sdz: No such file or directory\n"});
  Mdadm mdadm(runner);
  auto partition = mdadm.examine("/dev/sdb3");
  REQUIRE(partition);
  CHECK_FALSE(partition->has_value());
  auto disk = mdadm.examine("/dev/sdb");
  REQUIRE(disk);
  CHECK_FALSE(disk->has_value());
  auto missing = mdadm.examine("/dev/sdz");
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message, Catch::Contains("No such file"));
  test::checkAllConsumed(runner);
}
