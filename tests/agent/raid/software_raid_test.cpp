#include <catch2/catch.hpp>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "agent/disk/block_device_lister.h"
#include "agent/disk/uefi_boot.h"
#include "agent/raid/software_raid.h"
#include "tests/support/replay_command_runner.h"
#include "tests/support/temp_dir.h"

using namespace kiln;
using namespace kiln::agent;
using nlohmann::json;

namespace {

constexpr uint64_t kGiB = 1ULL << 30;

BlockDevice disk(std::string name, uint64_t gib = 930) {
  BlockDevice d;
  d.name = std::move(name);
  d.size = gib * kGiB;
  return d;
}

RootedSysfsReader scenario(const char* name) {
  return RootedSysfsReader(test::testDataPath(std::string("sysfs/") + name).string());
}

/// A context over `devices` whose tools are replayed by `runner`.
StepContext contextFor(std::vector<BlockDevice> devices, test::ReplayCommandRunner& runner) {
  StepContext context;
  context.devices = std::move(devices);
  context.runner = &runner;
  return context;
}

void expectNewTables(test::ReplayCommandRunner& runner, const std::vector<std::string>& disks) {
  for (const auto& d : disks) runner.expect({"sgdisk", "-o", d}, "sgdisk/new_table.txt");
}

void expectPartitions(test::ReplayCommandRunner& runner, const std::vector<std::string>& disks,
                      int number, const std::string& end, const std::string& start = "0") {
  const std::string n = std::to_string(number);
  for (const auto& d : disks) {
    runner.expect({"sgdisk", "-n", n + ":" + start + ":" + end, "-t", n + ":FD00", d},
                  "sgdisk/new_partition.txt");
  }
}

void expectPartx(test::ReplayCommandRunner& runner, const std::vector<std::string>& disks) {
  for (const auto& d : disks) runner.expect({"partx", "-u", d}, "partx/update_ok.txt");
}

void expectCreate(test::ReplayCommandRunner& runner, const std::string& md,
                  const std::string& level, const std::vector<std::string>& parts,
                  const std::string& name = "") {
  std::vector<std::string> argv = {
      "mdadm",          "--create",         md,
      "--metadata=1.0", "--level=" + level, "--raid-devices=" + std::to_string(parts.size())};
  if (!name.empty()) argv.push_back("--name=" + name);
  argv.push_back("--run");
  argv.push_back("--force");
  argv.insert(argv.end(), parts.begin(), parts.end());
  runner.expect(argv, "mdadm/create_started.txt");
}

/// The deletion of server1's two arrays (md1: RAID-0 on sda2+sdb2, md0: RAID-1 on
/// sda1+sdb1), the stale-superblock scan of `disks`, and the wipe of sda and sdb.
void expectDeleteServer1(test::ReplayCommandRunner& runner, const std::vector<std::string>& disks) {
  runner.expect({"mdadm", "--detail", "/dev/md1"}, "mdadm/detail_raid0.txt")
      .expect({"mdadm", "--stop", "/dev/md1"}, "mdadm/stop.txt")
      .expect({"mdadm", "--zero-superblock", "/dev/sda2"}, "mdadm/zero_superblock_ok.txt")
      .expect({"mdadm", "--zero-superblock", "/dev/sdb2"}, "mdadm/zero_superblock_ok.txt")
      .expect({"mdadm", "--detail", "/dev/md0"}, "mdadm/detail_raid1_clean.txt")
      .expect({"mdadm", "--stop", "/dev/md0"}, "mdadm/stop.txt")
      .expect({"mdadm", "--zero-superblock", "/dev/sda1"}, "mdadm/zero_superblock_ok.txt")
      .expect({"mdadm", "--zero-superblock", "/dev/sdb1"}, "mdadm/zero_superblock_ok.txt");
  for (const auto& d : disks) {
    runner.expect({"mdadm", "--examine", d}, "mdadm/examine_no_superblock.txt");
  }
  for (const char* d : {"/dev/sda", "/dev/sdb"}) {
    runner.expect({"wipefs", "--force", "--all", d}, "wipefs/wipe_all_gpt.txt")
        .expect({"sgdisk", "-Z", d}, "sgdisk/zap.txt");
  }
}

const json kRootPlusData = {{"logical_disks",
                             {{{"size_gb", 10}, {"raid_level", "1"}, {"is_root_volume", true}},
                              {{"size_gb", "MAX"}, {"raid_level", "0"}}}}};

Error createError(const json& config, std::vector<BlockDevice> devices) {
  test::ReplayCommandRunner runner;
  StepContext context = contextFor(std::move(devices), runner);
  auto result = createSoftwareRaid(context, config);
  REQUIRE_FALSE(result);
  CHECK(runner.received().empty());  // validation happens before any disk is touched
  return result.error();
}

json oneVolume(const std::string& level, json size = 10) {
  return {{"logical_disks", {{{"size_gb", size}, {"raid_level", level}}}}};
}

}  // namespace

TEST_CASE("memberPartitionMiB divides the volume size by the level's data disks", "[agent][raid]") {
  CHECK(memberPartitionMiB("1", 10, 2) == 10240);
  CHECK(memberPartitionMiB("1", 10, 3) == 10240);
  CHECK(memberPartitionMiB("0", 10, 2) == 5120);
  CHECK(memberPartitionMiB("0", 10, 3) == 3414);  // rounded up
  CHECK(memberPartitionMiB("5", 20, 3) == 10240);
  CHECK(memberPartitionMiB("5", 10, 4) == 3414);
  CHECK(memberPartitionMiB("6", 20, 4) == 10240);
  CHECK(memberPartitionMiB("1+0", 20, 4) == 10240);
  CHECK(memberPartitionMiB("1+0", 10, 6) == 3414);
}

TEST_CASE("createSoftwareRaid builds a RAID-1 root and a MAX RAID-0 over two disks",
          "[agent][raid]") {
  test::ReplayCommandRunner runner;
  const std::vector<std::string> disks = {"/dev/sda", "/dev/sdb"};
  expectNewTables(runner, disks);
  expectPartitions(runner, disks, 1, "+10240M");
  expectPartitions(runner, disks, 2, "0");
  expectPartx(runner, disks);
  expectCreate(runner, "/dev/md0", "1", {"/dev/sda1", "/dev/sdb1"});
  expectCreate(runner, "/dev/md1", "0", {"/dev/sda2", "/dev/sdb2"});
  StepContext context = contextFor({disk("/dev/sda"), disk("/dev/sdb")}, runner);
  auto result = createSoftwareRaid(context, kRootPlusData);
  REQUIRE(result);
  test::checkAllConsumed(runner);
  const json expected = {{"raid_config",
                          {{"logical_disks",
                            {{{"size_gb", 10},
                              {"raid_level", "1"},
                              {"is_root_volume", true},
                              {"controller", "software"},
                              {"device", "/dev/md0"},
                              {"physical_disks", {"/dev/sda", "/dev/sdb"}}},
                             {{"size_gb", "MAX"},
                              {"raid_level", "0"},
                              {"controller", "software"},
                              {"device", "/dev/md1"},
                              {"physical_disks", {"/dev/sda", "/dev/sdb"}}}}}}},
                         {"root_device_hint", {{"name", "/dev/md0"}}}};
  CHECK(*result == expected);
}

TEST_CASE("createSoftwareRaid builds RAID-5 over NVMe disks with p-separated partitions",
          "[agent][raid]") {
  test::ReplayCommandRunner runner;
  const std::vector<std::string> disks = {"/dev/nvme0n1", "/dev/nvme1n1", "/dev/nvme2n1"};
  expectNewTables(runner, disks);
  expectPartitions(runner, disks, 1, "+10240M");
  expectPartx(runner, disks);
  expectCreate(runner, "/dev/md0", "5", {"/dev/nvme0n1p1", "/dev/nvme1n1p1", "/dev/nvme2n1p1"});
  StepContext context = contextFor(
      {disk("/dev/nvme0n1", 447), disk("/dev/nvme1n1", 447), disk("/dev/nvme2n1", 447)}, runner);
  auto result = createSoftwareRaid(context, oneVolume("5", 20));
  REQUIRE(result);
  CHECK((*result)["root_device_hint"]["name"] == "/dev/md0");
  test::checkAllConsumed(runner);
}

TEST_CASE("createSoftwareRaid builds RAID-6 and RAID-1+0 over four disks", "[agent][raid]") {
  const std::vector<std::string> disks = {"/dev/vda", "/dev/vdb", "/dev/vdc", "/dev/vdd"};
  const std::vector<std::string> parts = {"/dev/vda1", "/dev/vdb1", "/dev/vdc1", "/dev/vdd1"};
  for (const auto& [level, mdadmLevel] : {std::pair<std::string, std::string>{"6", "6"},
                                          std::pair<std::string, std::string>{"1+0", "10"}}) {
    INFO(level);
    test::ReplayCommandRunner runner;
    expectNewTables(runner, disks);
    expectPartitions(runner, disks, 1, "+10240M");
    expectPartx(runner, disks);
    expectCreate(runner, "/dev/md0", mdadmLevel, parts, "data");
    StepContext context = contextFor(
        {disk("/dev/vda", 40), disk("/dev/vdb", 40), disk("/dev/vdc", 40), disk("/dev/vdd", 40)},
        runner);
    json config = oneVolume(level, 20);
    config["logical_disks"][0]["volume_name"] = "data";
    auto result = createSoftwareRaid(context, config);
    REQUIRE(result);
    CHECK((*result)["raid_config"]["logical_disks"][0]["volume_name"] == "data");
    test::checkAllConsumed(runner);
  }
}

TEST_CASE("createSoftwareRaid uses the physical_disks given and ignores md devices",
          "[agent][raid]") {
  test::ReplayCommandRunner runner;
  const std::vector<std::string> disks = {"/dev/sdb", "/dev/sdc"};
  expectNewTables(runner, disks);
  expectPartitions(runner, disks, 1, "+10240M");
  expectPartx(runner, disks);
  expectCreate(runner, "/dev/md0", "1", {"/dev/sdb1", "/dev/sdc1"});
  StepContext context = contextFor(
      {disk("/dev/md127"), disk("/dev/sda"), disk("/dev/sdb"), disk("/dev/sdc")}, runner);
  json config = oneVolume("1");
  config["logical_disks"][0]["physical_disks"] = {"/dev/sdb", "sdc"};
  auto result = createSoftwareRaid(context, config);
  REQUIRE(result);
  CHECK((*result)["raid_config"]["logical_disks"][0]["physical_disks"] ==
        json({"/dev/sdb", "/dev/sdc"}));
  test::checkAllConsumed(runner);
}

TEST_CASE("createSoftwareRaid points the root hint at the volume marked as root", "[agent][raid]") {
  test::ReplayCommandRunner runner;
  const std::vector<std::string> disks = {"/dev/sda", "/dev/sdb"};
  expectNewTables(runner, disks);
  expectPartitions(runner, disks, 1, "+5120M");
  expectPartitions(runner, disks, 2, "+20480M");
  expectPartx(runner, disks);
  expectCreate(runner, "/dev/md0", "0", {"/dev/sda1", "/dev/sdb1"});
  expectCreate(runner, "/dev/md1", "1", {"/dev/sda2", "/dev/sdb2"});
  StepContext context = contextFor({disk("/dev/sda"), disk("/dev/sdb")}, runner);
  const json config = {{"logical_disks",
                        {{{"size_gb", 10}, {"raid_level", "0"}},
                         {{"size_gb", 20}, {"raid_level", "1"}, {"is_root_volume", true}}}}};
  auto result = createSoftwareRaid(context, config);
  REQUIRE(result);
  CHECK((*result)["root_device_hint"]["name"] == "/dev/md1");
  test::checkAllConsumed(runner);
}

TEST_CASE("createSoftwareRaid rejects unsupported levels", "[agent][raid]") {
  for (const char* level : {"2", "JBOD", "5+0", "6+0"}) {
    INFO(level);
    Error error = createError(
        oneVolume(level), {disk("/dev/sda"), disk("/dev/sdb"), disk("/dev/sdc"), disk("/dev/sdd")});
    CHECK(error.code == ErrorCode::InvalidArgument);
    CHECK_THAT(error.message, Catch::Contains("not supported for software RAID"));
  }
}

TEST_CASE("createSoftwareRaid rejects too few disks for the level", "[agent][raid]") {
  struct Case {
    const char* level;
    size_t disks;
    const char* needs;
  };
  for (const Case& c :
       {Case{"0", 1, "at least 2"}, Case{"1", 1, "at least 2"}, Case{"5", 2, "at least 3"},
        Case{"6", 3, "at least 4"}, Case{"1+0", 3, "at least 4"}}) {
    INFO(c.level);
    std::vector<BlockDevice> devices;
    for (size_t i = 0; i < c.disks; ++i)
      devices.push_back(disk("/dev/sd" + std::string(1, 'a' + i)));
    Error error = createError(oneVolume(c.level), devices);
    CHECK(error.code == ErrorCode::InvalidArgument);
    CHECK_THAT(error.message, Catch::Contains(c.needs));
  }
}

TEST_CASE("createSoftwareRaid allows MAX only on the last logical disk", "[agent][raid]") {
  const json config = {
      {"logical_disks",
       {{{"size_gb", "MAX"}, {"raid_level", "1"}}, {{"size_gb", "MAX"}, {"raid_level", "0"}}}}};
  Error error = createError(config, {disk("/dev/sda"), disk("/dev/sdb")});
  CHECK(error.code == ErrorCode::InvalidArgument);
  CHECK_THAT(error.message, Catch::Contains("Only the last logical disk may have size_gb MAX"));
}

TEST_CASE("createSoftwareRaid rejects configurations that do not validate or fit",
          "[agent][raid]") {
  Error schema = createError(json{{"logical_disks", json::array()}}, {disk("/dev/sda")});
  CHECK(schema.code == ErrorCode::InvalidArgument);
  CHECK_THAT(schema.message, Catch::StartsWith("RAID config validation error"));

  Error tooBig = createError(oneVolume("1", 2000), {disk("/dev/sda"), disk("/dev/sdb")});
  CHECK_THAT(tooBig.message, Catch::Contains("which has only 952320 MiB"));

  json unknown = oneVolume("1");
  unknown["logical_disks"][0]["physical_disks"] = {"/dev/sda", "/dev/sdz"};
  Error missing = createError(unknown, {disk("/dev/sda"), disk("/dev/sdb")});
  CHECK_THAT(missing.message,
             Catch::Contains("'/dev/sdz' matches none of the agent's disks (/dev/sda, /dev/sdb)"));
}

TEST_CASE("createSoftwareRaid resolves physical_disks given as device hints", "[agent][raid]") {
  test::ReplayCommandRunner runner;
  const std::vector<std::string> disks = {"/dev/vdb", "/dev/vdc"};
  expectNewTables(runner, disks);
  expectPartitions(runner, disks, 1, "+10240M");
  expectPartx(runner, disks);
  expectCreate(runner, "/dev/md0", "1", {"/dev/vdb1", "/dev/vdc1"});
  BlockDevice small = disk("/dev/vda", 20);
  BlockDevice first = disk("/dev/vdb", 40);
  first.serial = "S-B";
  first.model = "QEMU HARDDISK";
  BlockDevice second = disk("/dev/vdc", 40);
  second.serial = "S-C";
  second.model = "QEMU HARDDISK";
  StepContext context = contextFor({disk("/dev/md127", 40), small, first, second}, runner);
  json config = oneVolume("1");
  config["logical_disks"][0]["physical_disks"] = {{{"size", ">= 30"}, {"model", "<in> qemu"}},
                                                  {{"serial", "s== S-C"}}};
  auto result = createSoftwareRaid(context, config);
  REQUIRE(result);
  CHECK((*result)["raid_config"]["logical_disks"][0]["physical_disks"] ==
        json({"/dev/vdb", "/dev/vdc"}));
}

TEST_CASE("createSoftwareRaid gives each identical hint entry the next matching disk",
          "[agent][raid]") {
  test::ReplayCommandRunner runner;
  const std::vector<std::string> disks = {"/dev/vdb", "/dev/vdc"};
  expectNewTables(runner, disks);
  expectPartitions(runner, disks, 1, "+10240M");
  expectPartx(runner, disks);
  expectCreate(runner, "/dev/md0", "1", {"/dev/vdb1", "/dev/vdc1"});
  StepContext context = contextFor(
      {disk("/dev/md0", 40), disk("/dev/vda", 20), disk("/dev/vdb", 40), disk("/dev/vdc", 40)},
      runner);
  json config = oneVolume("1");
  config["logical_disks"][0]["physical_disks"] = {{{"size", ">= 30"}}, {{"size", ">= 30"}}};
  REQUIRE(createSoftwareRaid(context, config));
}

TEST_CASE("createSoftwareRaid accepts name hints with and without /dev/", "[agent][raid]") {
  test::ReplayCommandRunner runner;
  const std::vector<std::string> disks = {"/dev/vda", "/dev/vdb"};
  expectNewTables(runner, disks);
  expectPartitions(runner, disks, 1, "+10240M");
  expectPartx(runner, disks);
  expectCreate(runner, "/dev/md0", "1", {"/dev/vda1", "/dev/vdb1"});
  StepContext context = contextFor({disk("/dev/vda"), disk("/dev/vdb")}, runner);
  json config = oneVolume("1");
  config["logical_disks"][0]["physical_disks"] = {{{"name", "/dev/vda"}}, {{"name", "vdb"}}};
  REQUIRE(createSoftwareRaid(context, config));
}

TEST_CASE("createSoftwareRaid names the hints that match no disk, or none left",
          "[agent][raid]") {
  const std::vector<BlockDevice> devices = {disk("/dev/md0", 40), disk("/dev/vda", 20),
                                            disk("/dev/vdb", 40)};
  json none = oneVolume("1");
  none["logical_disks"][0]["physical_disks"] = {{{"name", "/dev/vda"}}, {{"serial", "NOPE"}}};
  Error noMatch = createError(none, devices);
  CHECK(noMatch.code == ErrorCode::InvalidArgument);
  CHECK_THAT(noMatch.message,
             Catch::Contains("physical_disks entry '{\"serial\":\"NOPE\"}' matches none of the "
                             "agent's disks (/dev/vda, /dev/vdb)"));

  json md = oneVolume("1");
  md["logical_disks"][0]["physical_disks"] = {{{"name", "/dev/md0"}}, {{"name", "/dev/vda"}}};
  CHECK_THAT(createError(md, devices).message,
             Catch::Contains("'{\"name\":\"/dev/md0\"}' matches none"));

  json used = oneVolume("1");
  used["logical_disks"][0]["physical_disks"] = {{{"size", ">= 30"}}, {{"size", ">= 30"}}};
  Error noneLeft = createError(used, devices);
  CHECK(noneLeft.code == ErrorCode::InvalidArgument);
  CHECK_THAT(noneLeft.message,
             Catch::Contains("physical_disks entry '{\"size\":\">= 30\"}' matches no disk "
                             "left: /dev/vdb already picked"));
}

TEST_CASE("createSoftwareRaid rejects invalid hints before touching a disk", "[agent][raid]") {
  json config = oneVolume("1");
  config["logical_disks"][0]["physical_disks"] = {{{"nme", "/dev/vda"}}, {{"name", "/dev/vdb"}}};
  Error error = createError(config, {disk("/dev/vda"), disk("/dev/vdb")});
  CHECK(error.code == ErrorCode::InvalidArgument);
  CHECK_THAT(error.message, Catch::StartsWith("RAID config validation error"));
  CHECK_THAT(error.message, Catch::Contains("\"nme\""));
}

TEST_CASE("createSoftwareRaid stops when mdadm fails", "[agent][raid]") {
  test::ReplayCommandRunner runner;
  const std::vector<std::string> disks = {"/dev/sda", "/dev/sdb"};
  expectNewTables(runner, disks);
  expectPartitions(runner, disks, 1, "+10240M");
  expectPartx(runner, disks);
  runner.expect({"mdadm", "--create", "/dev/md0", "--metadata=1.0", "--level=1", "--raid-devices=2",
                 "--run", "--force", "/dev/sda1", "/dev/sdb1"},
                "mdadm/create_busy.txt");
  StepContext context = contextFor({disk("/dev/sda"), disk("/dev/sdb")}, runner);
  auto result = createSoftwareRaid(context, oneVolume("1"));
  REQUIRE_FALSE(result);
  CHECK_THAT(result.error().message, Catch::Contains("create aborted"));
  test::checkAllConsumed(runner);
}

TEST_CASE("deleteSoftwareRaid stops the arrays, zeroes members and wipes their disks",
          "[agent][raid]") {
  auto sysfs = scenario("server1");
  test::ReplayCommandRunner runner;
  expectDeleteServer1(runner, {"/dev/nvme0n1", "/dev/sda", "/dev/sdb"});
  StepContext context = contextFor(listDisks(sysfs), runner);
  auto result = deleteSoftwareRaid(context, sysfs);
  REQUIRE(result);
  CHECK(*result == json::object());
  test::checkAllConsumed(runner);
}

TEST_CASE("deleteSoftwareRaid leaves arrays on disks it was not given alone", "[agent][raid]") {
  auto sysfs = scenario("server1");
  test::ReplayCommandRunner runner;
  runner.expect({"mdadm", "--detail", "/dev/md1"}, "mdadm/detail_raid0.txt")
      .expect({"mdadm", "--detail", "/dev/md0"}, "mdadm/detail_raid1_clean.txt")
      .expect({"mdadm", "--examine", "/dev/nvme0n1"}, "mdadm/examine_no_superblock.txt");
  StepContext context = contextFor({disk("/dev/nvme0n1", 447)}, runner);
  REQUIRE(deleteSoftwareRaid(context, sysfs));
  test::checkAllConsumed(runner);
}

TEST_CASE("deleteSoftwareRaid zeroes stale superblocks found by --examine", "[agent][raid]") {
  auto sysfs = scenario("vm-bios");
  test::ReplayCommandRunner runner;
  runner.expect({"mdadm", "--examine", "/dev/vda"}, "mdadm/examine_raid1_member.txt")
      .expect({"mdadm", "--zero-superblock", "/dev/vda"}, "mdadm/zero_superblock_ok.txt")
      .expect({"wipefs", "--force", "--all", "/dev/vda"}, "wipefs/wipe_all_empty.txt")
      .expect({"sgdisk", "-Z", "/dev/vda"}, "sgdisk/zap.txt");
  StepContext context = contextFor(listDisks(sysfs), runner);
  REQUIRE(deleteSoftwareRaid(context, sysfs));
  test::checkAllConsumed(runner);
}

TEST_CASE("applySoftwareRaid deletes the existing arrays, then creates the new ones",
          "[agent][raid]") {
  auto sysfs = scenario("server1");
  test::ReplayCommandRunner runner;
  const std::vector<std::string> disks = {"/dev/sda", "/dev/sdb"};
  expectDeleteServer1(runner, disks);
  expectNewTables(runner, disks);
  // server1 booted through UEFI (sys/firmware/efi): room for an ESP before partition 1.
  expectPartitions(runner, disks, 1, "+10240M", "552M");
  expectPartitions(runner, disks, 2, "0");
  expectPartx(runner, disks);
  expectCreate(runner, "/dev/md0", "1", {"/dev/sda1", "/dev/sdb1"});
  expectCreate(runner, "/dev/md1", "0", {"/dev/sda2", "/dev/sdb2"});
  StepContext context = contextFor({disk("/dev/sda"), disk("/dev/sdb")}, runner);
  auto result = applySoftwareRaid(context, {{"raid_config", kRootPlusData}}, sysfs);
  REQUIRE(result);
  CHECK((*result)["root_device_hint"]["name"] == "/dev/md0");
  test::checkAllConsumed(runner);
}

TEST_CASE("applySoftwareRaid keeps existing arrays when delete_existing is false",
          "[agent][raid]") {
  auto sysfs = scenario("server1");
  test::ReplayCommandRunner runner;
  const std::vector<std::string> disks = {"/dev/sdc", "/dev/sdd"};
  expectNewTables(runner, disks);
  expectPartitions(runner, disks, 1, "+10240M", "552M");  // server1 is a UEFI machine
  expectPartx(runner, disks);
  expectCreate(runner, "/dev/md0", "1", {"/dev/sdc1", "/dev/sdd1"});
  StepContext context = contextFor({disk("/dev/sdc"), disk("/dev/sdd")}, runner);
  auto result = applySoftwareRaid(
      context, {{"raid_config", oneVolume("1")}, {"delete_existing", false}}, sysfs);
  REQUIRE(result);
  test::checkAllConsumed(runner);
}

TEST_CASE("applySoftwareRaid validates before deleting anything", "[agent][raid]") {
  auto sysfs = scenario("server1");
  test::ReplayCommandRunner runner;
  StepContext context = contextFor({disk("/dev/sda"), disk("/dev/sdb")}, runner);
  for (const json& args : {json::object(), json{{"raid_config", oneVolume("5")}},
                           json{{"raid_config", {{"logical_disks", "x"}}}},
                           json{{"raid_config", oneVolume("1")}, {"delete_existing", "yes"}}}) {
    INFO(args.dump());
    auto result = applySoftwareRaid(context, args, sysfs);
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::InvalidArgument);
  }
  CHECK(runner.received().empty());
}

TEST_CASE("createSoftwareRaid leaves room for an ESP before the members on UEFI machines",
          "[agent][raid][uefi]") {
  test::ReplayCommandRunner runner;
  const std::vector<std::string> disks = {"/dev/sda", "/dev/sdb"};
  expectNewTables(runner, disks);
  expectPartitions(runner, disks, 1, "+10240M", "552M");
  expectPartitions(runner, disks, 2, "0");  // later partitions follow as usual
  expectPartx(runner, disks);
  expectCreate(runner, "/dev/md0", "1", {"/dev/sda1", "/dev/sdb1"});
  expectCreate(runner, "/dev/md1", "0", {"/dev/sda2", "/dev/sdb2"});
  StepContext context = contextFor({disk("/dev/sda"), disk("/dev/sdb")}, runner);
  auto result = createSoftwareRaid(context, kRootPlusData, SoftwareRaidLayout{kRaidBootReserveMiB});
  REQUIRE(result);
  test::checkAllConsumed(runner);
}

TEST_CASE("the ESP room counts when checking that the members fit", "[agent][raid][uefi]") {
  const RaidConfig config = *parseRaidConfig(oneVolume("1", 1));
  const std::vector<BlockDevice> small = {disk("/dev/sda", 1), disk("/dev/sdb", 1)};
  // 1 GiB members plus GPT overhead fit 1 GiB + 2 MiB disks, not with 551 MiB more.
  std::vector<BlockDevice> fits = small;
  for (auto& d : fits) d.size += 2ULL << 20;
  CHECK(planSoftwareRaid(config, fits));
  auto refused = planSoftwareRaid(config, fits, SoftwareRaidLayout{kRaidBootReserveMiB});
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message, Catch::Contains("1577 MiB"));
}

TEST_CASE("raidLayoutFor reserves ESP room only when the machine booted through UEFI",
          "[agent][raid][uefi]") {
  test::TempDir root("kiln-layout");
  RootedSysfsReader bios(root.path.string());
  CHECK(raidLayoutFor(bios).bootReserveMiB == 0);
  std::filesystem::create_directories(root.path / "sys/firmware/efi");
  RootedSysfsReader uefi(root.path.string());
  CHECK(raidLayoutFor(uefi).bootReserveMiB == kRaidBootReserveMiB);
}
