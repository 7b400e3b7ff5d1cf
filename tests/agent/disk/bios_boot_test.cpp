// Legacy-BIOS boot code on the members of a software RAID root: replayed mdadm and sgdisk, the
// boot code written to files standing in for the member disks (never /dev).
#include <catch2/catch.hpp>

#include <fstream>

#include "agent/disk/bios_boot.h"
#include "tests/support/replay_command_runner.h"
#include "tests/support/temp_dir.h"

using namespace kiln;
using namespace kiln::agent;

namespace {

std::string readHead(const std::string& path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::string s(n, '\0');
  in.read(s.data(), static_cast<std::streamsize>(n));
  return s;
}

std::string replaceAll(std::string text, const std::string& from, const std::string& to) {
  for (size_t pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + to.size())) {
    text.replace(pos, from.size(), to);
  }
  return text;
}

}  // namespace

TEST_CASE("partition numbers from partition paths", "[agent][disk][bios]") {
  CHECK(partitionNumber("/dev/vda1") == 1);
  CHECK(partitionNumber("/dev/nvme0n1p12") == 12);
  CHECK(partitionNumber("/dev/sdb") == -1);
}

TEST_CASE("BIOS boot code goes on every RAID member disk", "[agent][disk][bios]") {
  test::TempDir dir("kiln-bios");
  const std::string code = dir.file("gptmbr.bin");
  std::ofstream(code, std::ios::binary) << std::string(512, 'B');
  // The recorded `mdadm --detail` with its members moved into the temp directory.
  CommandOutput detail = test::recordedOutput("mdadm/detail_raid1_clean.txt");
  detail.out = replaceAll(detail.out, "/dev/sd", dir.file("sd"));
  for (const char* disk : {"sda", "sdb"}) {
    std::ofstream(dir.file(disk), std::ios::binary) << std::string(1024, 'D');
  }
  test::ReplayCommandRunner runner;
  runner.expect({"mdadm", "--detail", "/dev/md0"}, detail);
  runner.expect({"sgdisk", "-A", "1:set:2", dir.file("sda")}, CommandOutput{});
  runner.expect({"sgdisk", "-A", "1:set:2", dir.file("sdb")}, CommandOutput{});
  StepContext ctx;
  ctx.runner = &runner;
  auto result = installRaidBiosBoot(ctx, "/dev/md0", code);
  REQUIRE(result);
  CHECK((*result)["bios_boot_disks"] == nlohmann::json::array({dir.file("sda"), dir.file("sdb")}));
  for (const char* disk : {"sda", "sdb"}) {
    const std::string head = readHead(dir.file(disk), 1024);
    CHECK(head.substr(0, 440) == std::string(440, 'B'));
    CHECK(head.substr(440) == std::string(1024 - 440, 'D'));  // partition table untouched
  }
  test::checkAllConsumed(runner);
}

TEST_CASE("BIOS boot code: missing code file, failing sgdisk", "[agent][disk][bios]") {
  test::TempDir dir("kiln-bios");
  test::ReplayCommandRunner none;
  StepContext ctx;
  ctx.runner = &none;
  auto missing = installRaidBiosBoot(ctx, "/dev/md0", dir.file("absent.bin"));
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message, Catch::Contains("gptmbr.bin"));

  const std::string code = dir.file("gptmbr.bin");
  std::ofstream(code, std::ios::binary) << std::string(440, 'B');
  CommandOutput detail = test::recordedOutput("mdadm/detail_raid1_clean.txt");
  detail.out = replaceAll(detail.out, "/dev/sd", dir.file("sd"));
  test::ReplayCommandRunner runner;
  runner.expect({"mdadm", "--detail", "/dev/md0"}, detail);
  runner.expect({"sgdisk", "-A", "1:set:2", dir.file("sda")}, CommandOutput{4, "", "Problem opening disk"});
  ctx.runner = &runner;
  auto failed = installRaidBiosBoot(ctx, "/dev/md0", code);
  REQUIRE_FALSE(failed);
  CHECK_THAT(failed.error().message, Catch::Contains("legacy-BIOS bootable"));
}
