// UEFI boot of deployed images: BOOTX64.CSV and efibootmgr parsing, what an ESP holds (a
// directory tree standing in for the mounted partition), and installUefiBoot with replayed
// sgdisk, mdadm and efibootmgr over files standing in for the disks (never /dev).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "agent/disk/device_io.h"
#include "agent/image/image_writer.h"
#include "agent/disk/uefi_boot.h"
#include "tests/support/replay_command_runner.h"
#include "tests/support/temp_dir.h"

using namespace kiln;
using namespace kiln::agent;
using nlohmann::json;

namespace {

std::string utf16(std::string_view ascii, bool bom) {
  std::string out = bom ? std::string("\xFF\xFE", 2) : std::string();
  for (char c : ascii) {
    out.push_back(c);
    out.push_back('\0');
  }
  return out;
}

void put(const std::filesystem::path& path, std::string_view content) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << content;
}

std::string replaceAll(std::string text, const std::string& from, const std::string& to) {
  for (size_t pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + to.size())) {
    text.replace(pos, from.size(), to);
  }
  return text;
}

std::string readAt(const std::string& path, uint64_t offset, size_t n) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  std::string s(n, '\0');
  in.read(s.data(), static_cast<std::streamsize>(n));
  return s;
}

/// A sparse file of `bytes`.
void sparse(const std::string& path, uint64_t bytes) {
  std::ofstream(path, std::ios::binary).close();
  std::filesystem::resize_file(path, bytes);
}

constexpr uint64_t kMiB = 1ULL << 20;

}  // namespace

TEST_CASE("BOOTX64.CSV in UTF-16 and ASCII", "[agent][disk][uefi]") {
  const std::string line = "shimx64.efi,debian,,This is the boot entry for debian\r\n";
  for (bool bom : {true, false}) {
    auto loaders = parseBootCsv(utf16(line, bom), "debian");
    REQUIRE(loaders.size() == 1);
    CHECK(loaders[0] == EfiLoader{"\\EFI\\debian\\shimx64.efi", "debian"});
  }
  auto ascii = parseBootCsv("grubx64.efi\n\n,label-without-loader\nshimx64.efi, Rocky Linux ,x\n", "rocky");
  REQUIRE(ascii.size() == 2);
  CHECK(ascii[0] == EfiLoader{"\\EFI\\rocky\\grubx64.efi", "rocky"});
  CHECK(ascii[1] == EfiLoader{"\\EFI\\rocky\\shimx64.efi", "Rocky Linux"});
  CHECK(parseBootCsv("../../x.efi,evil\n", "debian").empty());
  CHECK(parseBootCsv("", "debian").empty());
}

TEST_CASE("efibootmgr listings", "[agent][disk][uefi]") {
  const std::string text =
      "BootCurrent: 0001\nTimeout: 0 seconds\nBootOrder: 0003,0001,0000\n"
      "Boot0000* UiApp\tFvVol(7cb8bdc9-f8eb-4f34-aaea-3ee4af6516a1)/FvFile(462caa21-7614-4503-836e-8ab6f4662331)\n"
      "Boot0001* UEFI QEMU DVD-ROM QM00005 \tPciRoot(0x0)/Pci(0x1f,0x2)/Sata(2,65535,0){auto_created_boot_option}\n"
      "Boot0003  debian (vda)\tHD(2,GPT,...)/File(\\EFI\\debian\\shimx64.efi)\n"
      "BootXYZW* not an entry\n";
  auto entries = parseEfibootmgrList(text);
  REQUIRE(entries.size() == 3);
  CHECK(entries[0] == EfiBootEntry{"0000", "UiApp"});
  CHECK(entries[1] == EfiBootEntry{"0001", "UEFI QEMU DVD-ROM QM00005"});
  CHECK(entries[2] == EfiBootEntry{"0003", "debian (vda)"});
  CHECK(parseEfibootmgrList("").empty());
}

TEST_CASE("the loaders an ESP holds", "[agent][disk][uefi]") {
  test::TempDir dir("kiln-esp");
  const auto root = dir.path;
  SECTION("shim's CSV wins, names matched in any case") {
    put(root / "EFI/debian/BOOTX64.CSV", utf16("shimx64.efi,debian,,x\n", true));
    put(root / "EFI/debian/SHIMX64.EFI", "shim");
    put(root / "EFI/debian/grubx64.efi", "grub");
    put(root / "EFI/boot/bootx64.efi", "fallback");
    RootedSysfsReader esp(root.string());
    EspContent content = readEspContent(esp);
    CHECK(content.removablePath);
    REQUIRE(content.loaders.size() == 1);
    CHECK(content.loaders[0] == EfiLoader{"\\EFI\\debian\\SHIMX64.EFI", "debian"});
  }
  SECTION("a CSV naming a missing loader is ignored; vendor shim, then grub") {
    put(root / "EFI/aaa/BOOTX64.CSV", "missing.efi,aaa\n");
    put(root / "EFI/aaa/grubx64.efi", "grub");
    put(root / "EFI/zzz/shimx64.efi", "shim");
    put(root / "EFI/zzz/grubx64.efi", "grub");
    RootedSysfsReader esp(root.string());
    EspContent content = readEspContent(esp);
    CHECK_FALSE(content.removablePath);
    REQUIRE(content.loaders.size() == 2);
    CHECK(content.loaders[0] == EfiLoader{"\\EFI\\aaa\\grubx64.efi", "aaa"});
    CHECK(content.loaders[1] == EfiLoader{"\\EFI\\zzz\\shimx64.efi", "zzz"});
  }
  SECTION("only the removable-media path") {
    put(root / "EFI/BOOT/BOOTX64.EFI", "grub");
    RootedSysfsReader esp(root.string());
    EspContent content = readEspContent(esp);
    CHECK(content.removablePath);
    REQUIRE(content.loaders.size() == 1);
    CHECK(content.loaders[0] == EfiLoader{std::string(kRemovableLoaderPath), "kiln"});
  }
  SECTION("nothing bootable") {
    put(root / "EFI/BOOT/readme.txt", "x");
    RootedSysfsReader esp(root.string());
    EspContent content = readEspContent(esp);
    CHECK_FALSE(content.removablePath);
    CHECK(content.loaders.empty());
  }
}

namespace {

/// A fake firmware: sysfs with or without efivars.
struct Firmware {
  test::TempDir dir{"kiln-efi"};
  explicit Firmware(bool efivars) {
    std::filesystem::create_directories(dir.path / "sys/firmware/efi/efivars");
    if (efivars) put(dir.path / "sys/firmware/efi/efivars/BootOrder-8be4df61-93ca-11d2-aa0d-00e098032b8c", "x");
  }
  RootedSysfsReader sysfs() const { return RootedSysfsReader(dir.path.string()); }
};

EspInspector fixedEsp(EspContent content, std::vector<std::string>* inspected) {
  return [content, inspected](StepContext&, const std::string& partition) -> Result<EspContent> {
    inspected->push_back(partition);
    return content;
  };
}

const EspContent kDebianEsp{{{"\\EFI\\debian\\shimx64.efi", "debian"}}, true};
const std::string kListing =
    "BootCurrent: 0001\nBootOrder: 0007,0001\nBoot0001* UEFI PXEv4 (MAC:525400123456)\tPciRoot(0x0)\n"
    "Boot0007* debian (sdb)\tHD(2,GPT)/File(\\EFI\\debian\\shimx64.efi)\n";

}  // namespace

TEST_CASE("UEFI boot of a software RAID root: an ESP copy and an entry on every member disk",
          "[agent][disk][uefi]") {
  test::TempDir dir("kiln-uefi");
  const std::string md0 = dir.file("md0");
  sparse(md0, 2048 * kMiB);
  // The image's ESP (partition 1 of print_uefi_image: sectors 2048..133119) starts with this.
  const std::string espHead = "FAT ESP of the image";
  REQUIRE(writeRegion(md0, 2048 * 512, espHead));
  REQUIRE(writeRegion(md0, 133120 * 512 - 4, "LAST"));
  for (const char* d : {"sda", "sdb"}) sparse(dir.file(d), 2048 * kMiB);
  CommandOutput detail = test::recordedOutput("mdadm/detail_raid1_clean.txt");
  detail.out = replaceAll(detail.out, "/dev/sd", dir.file("sd"));

  test::ReplayCommandRunner runner;
  runner.expect({"sgdisk", "-p", md0}, "sgdisk/print_uefi_image.txt");
  runner.expect({"mdadm", "--detail", md0}, detail);
  for (const char* d : {"sda", "sdb"}) {
    runner.expect({"sgdisk", "-p", dir.file(d)}, "sgdisk/print_raid_member_reserved.txt")
        .expect({"sgdisk", "-n", "0:2048:+550M", "-t", "0:EF00", "-c", "0:kiln-esp", dir.file(d)},
                "sgdisk/new_partition.txt")
        .expect({"sgdisk", "-p", dir.file(d)}, "sgdisk/print_raid_member_with_esp.txt");
  }
  Firmware firmware(true);
  runner.expect({"efibootmgr"}, CommandOutput{0, kListing, ""})
      .expect({"efibootmgr", "-q", "-b", "0007", "-B"}, CommandOutput{})
      .expect({"efibootmgr", "-q", "-c", "-d", dir.file("sdb"), "-p", "2", "-L", "debian (sdb)", "-l",
               "\\EFI\\debian\\shimx64.efi"}, CommandOutput{})
      .expect({"efibootmgr", "-q", "-c", "-d", dir.file("sda"), "-p", "2", "-L", "debian (sda)", "-l",
               "\\EFI\\debian\\shimx64.efi"}, CommandOutput{});
  StepContext ctx;
  ctx.runner = &runner;
  std::vector<std::string> inspected;
  RootedSysfsReader sysfs = firmware.sysfs();
  auto result = installUefiBoot(ctx, md0, sysfs, fixedEsp(kDebianEsp, &inspected));
  REQUIRE(result);
  test::checkAllConsumed(runner);
  CHECK(inspected == std::vector<std::string>{dir.file("sda2")});
  CHECK((*result)["efi_system_partitions"] == json::array({dir.file("sda2"), dir.file("sdb2")}));
  REQUIRE((*result)["efi_boot_entries"].size() == 2);
  CHECK((*result)["efi_boot_entries"][0] ==
        json{{"disk", dir.file("sda")}, {"partition", dir.file("sda2")},
             {"loader", "\\EFI\\debian\\shimx64.efi"}, {"label", "debian (sda)"}});
  // Each member's new ESP (sectors 2048.. of the disk) is a byte copy of the image's.
  for (const char* d : {"sda", "sdb"}) {
    CHECK(readAt(dir.file(d), 2048 * 512, espHead.size()) == espHead);
    CHECK(readAt(dir.file(d), 133120 * 512 - 4, 4) == "LAST");
  }
}

TEST_CASE("UEFI boot of a plain disk: an entry for the image's own ESP", "[agent][disk][uefi]") {
  test::TempDir dir("kiln-uefi");
  const std::string vda = dir.file("vda");
  sparse(vda, 64 * kMiB);
  test::ReplayCommandRunner runner;
  CommandOutput print = test::recordedOutput("sgdisk/print_uefi_image.txt");
  runner.expect({"sgdisk", "-p", vda}, print)
      .expect({"efibootmgr"}, CommandOutput{0, "BootOrder: 0001\n", ""})
      .expect({"efibootmgr", "-q", "-c", "-d", vda, "-p", "1", "-L", "debian", "-l",
               "\\EFI\\debian\\shimx64.efi"}, CommandOutput{});
  Firmware firmware(true);
  RootedSysfsReader sysfs = firmware.sysfs();
  StepContext ctx;
  ctx.runner = &runner;
  std::vector<std::string> inspected;
  auto result = installUefiBoot(ctx, vda, sysfs, fixedEsp(kDebianEsp, &inspected));
  REQUIRE(result);
  test::checkAllConsumed(runner);
  CHECK(inspected == std::vector<std::string>{dir.file("vda1")});
  CHECK((*result)["efi_system_partitions"] == json::array({dir.file("vda1")}));
  CHECK((*result)["efi_boot_entries"][0]["label"] == "debian");
}

TEST_CASE("UEFI boot falls back to the removable-media path, or fails without one",
          "[agent][disk][uefi]") {
  test::TempDir dir("kiln-uefi");
  const std::string vda = dir.file("vda");
  sparse(vda, 64 * kMiB);
  std::vector<std::string> inspected;
  StepContext ctx;
  SECTION("no efivarfs, removable path present: no entry, success") {
    test::ReplayCommandRunner runner;
    runner.expect({"sgdisk", "-p", vda}, "sgdisk/print_uefi_image.txt");
    ctx.runner = &runner;
    Firmware firmware(false);
    RootedSysfsReader sysfs = firmware.sysfs();
    auto result = installUefiBoot(ctx, vda, sysfs, fixedEsp(kDebianEsp, &inspected));
    REQUIRE(result);
    CHECK((*result)["efi_boot_entries"].empty());
    test::checkAllConsumed(runner);
  }
  SECTION("efibootmgr fails and there is no removable path: the step fails") {
    test::ReplayCommandRunner runner;
    runner.expect({"sgdisk", "-p", vda}, "sgdisk/print_uefi_image.txt")
        .expect({"efibootmgr"}, CommandOutput{0, "", ""})
        .expect({"efibootmgr", "-q", "-c", "-d", vda, "-p", "1", "-L", "debian", "-l",
                 "\\EFI\\debian\\shimx64.efi"},
                CommandOutput{5, "", "Could not prepare Boot variable: No space left on device"});
    ctx.runner = &runner;
    Firmware firmware(true);
    RootedSysfsReader sysfs = firmware.sysfs();
    EspContent noFallback = kDebianEsp;
    noFallback.removablePath = false;
    auto result = installUefiBoot(ctx, vda, sysfs, fixedEsp(noFallback, &inspected));
    REQUIRE_FALSE(result);
    CHECK_THAT(result.error().message, Catch::Contains("No space left on device"));
    CHECK_THAT(result.error().message, Catch::Contains("BOOTX64.EFI"));
    test::checkAllConsumed(runner);
  }
  SECTION("an image without ESP or without loader") {
    test::ReplayCommandRunner runner;
    runner.expect({"sgdisk", "-p", vda}, "sgdisk/print_raid_member.txt");
    ctx.runner = &runner;
    Firmware firmware(true);
    RootedSysfsReader sysfs = firmware.sysfs();
    auto noEsp = installUefiBoot(ctx, vda, sysfs, fixedEsp(kDebianEsp, &inspected));
    REQUIRE_FALSE(noEsp);
    CHECK(noEsp.error().code == ErrorCode::InvalidArgument);
    CHECK_THAT(noEsp.error().message, Catch::Contains("no EFI system partition"));
    test::ReplayCommandRunner second;
    second.expect({"sgdisk", "-p", vda}, "sgdisk/print_uefi_image.txt");
    ctx.runner = &second;
    auto noLoader = installUefiBoot(ctx, vda, sysfs, fixedEsp(EspContent{}, &inspected));
    REQUIRE_FALSE(noLoader);
    CHECK_THAT(noLoader.error().message, Catch::Contains("has no boot loader"));
  }
}

TEST_CASE("ESP names the agent would not hand to efibootmgr", "[agent][disk][uefi][fuzz]") {
  // Found by the agent_tool_output fuzzer (tests/fuzz/regressions/agent_tool_output/).
  CHECK(parseBootCsv("..,x\n.,y\nshim\x01.efi,z\n", "debian").empty());
  auto labelled = parseBootCsv("shimx64.efi,deb\x02ian\n", "debian");
  REQUIRE(labelled.size() == 1);
  CHECK(labelled[0].label == "debian");
  test::TempDir dir("kiln-esp");
  put(dir.path / "EFI/bad\x7fvendor/shimx64.efi", "x");
  put(dir.path / "EFI/debian/BOOTX64.CSV", "..,up\n");
  RootedSysfsReader esp(dir.path.string());
  CHECK(readEspContent(esp).loaders.empty());
}
