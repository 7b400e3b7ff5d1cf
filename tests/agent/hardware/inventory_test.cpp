#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "agent/disk/block_device_lister.h"
#include "agent/hardware/inventory.h"
#include "tests/support/replay_command_runner.h"

using namespace kiln;
using namespace kiln::agent;
using nlohmann::json;

namespace {

RootedSysfsReader scenario(const char* name) {
  return RootedSysfsReader(test::testDataPath(std::string("sysfs/") + name).string());
}

}  // namespace

TEST_CASE("collectInventory reads CPU, memory and system identity of a server",
          "[agent][inventory]") {
  auto sysfs = scenario("server1");
  const json inventory = collectInventory(sysfs, {}, "x86_64");
  const json& cpu = inventory["cpu"];
  CHECK(cpu["model_name"] == "Intel(R) Xeon(R) Silver 4214 CPU @ 2.20GHz");
  CHECK(cpu["count"] == 4);
  CHECK(cpu["frequency"] == "3200");
  CHECK(cpu["architecture"] == "x86_64");
  CHECK(cpu["flags"].size() == 41);
  CHECK(cpu["flags"][0] == "fpu");
  CHECK(inventory["memory"]["total"] == 65584652ULL * 1024);
  CHECK(inventory["memory"]["physical_mb"] == 65536);
  CHECK(inventory["system_vendor"] ==
        json{{"product_name", "PowerEdge R640"},
             {"serial_number", "ABC1234"},
             {"manufacturer", "Dell Inc."},
             {"firmware",
              {{"vendor", "Dell Inc."}, {"version", "2.17.1"}, {"build_date", "06/19/2023"}}}});
  CHECK(inventory["boot"] == json{{"current_boot_mode", "uefi"}, {"pxe_interface", nullptr}});
  CHECK(inventory["hostname"] == "node-17");
}

TEST_CASE("collectInventory lists physical interfaces only", "[agent][inventory]") {
  auto sysfs = scenario("server1");
  const json nics = collectInventory(sysfs, {}, "x86_64")["interfaces"];
  REQUIRE(nics.size() == 2);
  CHECK(nics[0] == json{{"name", "eno1"},
                        {"mac_address", "b4:96:91:1a:2b:3c"},
                        {"ipv4_address", nullptr},
                        {"ipv6_address", nullptr},
                        {"has_carrier", true},
                        {"speed_mbps", 1000},
                        {"vendor", "0x8086"},
                        {"product", "0x1521"},
                        {"client_id", nullptr},
                        {"biosdevname", nullptr},
                        {"lldp", nullptr}});
  CHECK(nics[1]["name"] == "eno2");
  CHECK(nics[1]["has_carrier"] == false);
  CHECK_FALSE(nics[1].contains("speed_mbps"));
}

TEST_CASE("collectInventory includes the disks it is given", "[agent][inventory]") {
  auto sysfs = scenario("server1");
  const auto disks = listDisks(sysfs);
  const json inventory = collectInventory(sysfs, disks, "x86_64");
  REQUIRE(inventory["disks"].size() == 3);
  CHECK(inventory["disks"][1] == disks[1].toJson());
  CHECK(inventory["disks"][1]["serial"] == "ZBS0A1B2");
}

TEST_CASE("collectInventory reports BIOS boot and falls back to MemTotal on a VM",
          "[agent][inventory]") {
  auto sysfs = scenario("vm-bios");
  const json inventory = collectInventory(sysfs, {}, "x86_64");
  CHECK(inventory["boot"]["current_boot_mode"] == "bios");
  CHECK(inventory["cpu"]["count"] == 2);
  CHECK(inventory["cpu"]["frequency"] == "2994.372");
  CHECK(inventory["memory"]["physical_mb"] == 3934);
  CHECK(inventory["system_vendor"]["manufacturer"] == "QEMU");
  CHECK(inventory["system_vendor"]["serial_number"] == "");
  REQUIRE(inventory["interfaces"].size() == 1);
  CHECK(inventory["interfaces"][0]["mac_address"] == "52:54:00:12:34:56");
}

TEST_CASE("collectInventory returns empty values for an empty tree", "[agent][inventory]") {
  RootedSysfsReader sysfs("/nonexistent-kiln-root");
  const json inventory = collectInventory(sysfs, {}, "aarch64");
  CHECK(inventory["cpu"]["count"] == 0);
  CHECK(inventory["cpu"]["architecture"] == "aarch64");
  CHECK(inventory["memory"]["total"] == 0);
  CHECK(inventory["interfaces"].empty());
  CHECK(inventory["hostname"] == "");
  CHECK_FALSE(hostArchitecture().empty());
}
