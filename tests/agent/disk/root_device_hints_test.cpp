#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "agent/disk/root_device_hints.h"

using namespace kiln;
using namespace kiln::agent;
using nlohmann::json;

namespace {

constexpr uint64_t kGiB = 1ULL << 30;

BlockDevice disk(std::string name, uint64_t gib, std::string serial, bool rotational = false) {
  BlockDevice d;
  d.name = std::move(name);
  d.size = gib * kGiB;
  d.serial = std::move(serial);
  d.rotational = rotational;
  d.model = "ST1000NM0055-1V4";
  d.vendor = "ATA";
  d.wwn = "0x5000c500a1b2c3d" + std::to_string(gib % 10);
  d.byPath = "/dev/disk/by-path/pci-0000:00:17.0-ata-" + std::to_string(gib);
  return d;
}

const std::vector<BlockDevice> kDisks = {
    disk("/dev/sda", 930, "ZBS0A1B2", true), disk("/dev/sdb", 930, "ZBS0C3D4", true),
    disk("/dev/nvme0n1", 447, "S437NA0M123456"), disk("/dev/sdc", 2, "USBSTICK")};

std::string chosen(const json& hints) {
  auto result = chooseRootDevice(kDisks, hints);
  if (!result) return "error: " + result.error().message;
  return result->name;
}

}  // namespace

TEST_CASE("chooseRootDevice without hints picks the smallest disk of at least 4 GiB",
          "[agent][disk]") {
  CHECK(chosen(json::object()) == "/dev/nvme0n1");
  CHECK(chosen(nullptr) == "/dev/nvme0n1");
}

TEST_CASE("chooseRootDevice without hints takes the only device given, whatever its size",
          "[agent][disk]") {
  const std::vector<BlockDevice> one = {disk("/tmp/disk.img", 1, "")};
  auto result = chooseRootDevice(one, json::object());
  REQUIRE(result);
  CHECK(result->name == "/tmp/disk.img");
}

TEST_CASE("chooseRootDevice without hints fails when every disk is too small", "[agent][disk]") {
  const std::vector<BlockDevice> small = {disk("/dev/sda", 2, "a"), disk("/dev/sdb", 3, "b")};
  auto result = chooseRootDevice(small, json::object());
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::NotFound);
}

TEST_CASE("chooseRootDevice matches each supported hint", "[agent][disk]") {
  CHECK(chosen({{"name", "/dev/sdb"}}) == "/dev/sdb");
  CHECK(chosen({{"name", "sdb"}}) == "/dev/sdb");
  CHECK(chosen({{"serial", "ZBS0C3D4"}}) == "/dev/sdb");
  CHECK(chosen({{"serial", "s== ZBS0A1B2"}}) == "/dev/sda");
  CHECK(chosen({{"wwn", "0X5000C500A1B2C3D7"}}) == "/dev/nvme0n1");
  CHECK(chosen({{"by_path", "/dev/disk/by-path/pci-0000:00:17.0-ata-2"}}) == "/dev/sdc");
  CHECK(chosen({{"rotational", false}, {"size", ">= 4"}}) == "/dev/nvme0n1");
  CHECK(chosen({{"rotational", "false"}, {"model", "st1000nm0055-1v4"}, {"size", 447}}) ==
        "/dev/nvme0n1");
  CHECK(chosen({{"vendor", "ata"}, {"size", "2"}}) == "/dev/sdc");
  CHECK(chosen({{"serial", "<in> STICK"}}) == "/dev/sdc");
}

TEST_CASE("chooseRootDevice supports the size comparison operators", "[agent][disk]") {
  CHECK(chosen({{"size", "== 447"}}) == "/dev/nvme0n1");
  CHECK(chosen({{"size", "> 900"}, {"serial", "ZBS0C3D4"}}) == "/dev/sdb");
  CHECK(chosen({{"size", "< 3"}}) == "/dev/sdc");
  CHECK(chosen({{"size", "<= 2"}}) == "/dev/sdc");
  CHECK(chosen({{"size", ">500"}, {"serial", "ZBS0A1B2"}}) == "/dev/sda");
  CHECK(chosen({{"size", "!= 930"}, {"rotational", true}}) ==
        "error: No device matches the root device hints {\"rotational\":true,\"size\":\"!= 930\"}");
}

TEST_CASE("chooseRootDevice refuses to guess when hints match several disks", "[agent][disk]") {
  auto result = chooseRootDevice(kDisks, {{"size", 930}});
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::Conflict);
  CHECK_THAT(result.error().message, Catch::Contains("ambiguous"));
  CHECK_THAT(result.error().message, Catch::Contains("/dev/sda (930 GiB, serial ZBS0A1B2)"));
  CHECK_THAT(result.error().message, Catch::Contains("/dev/sdb (930 GiB, serial ZBS0C3D4)"));
}

TEST_CASE("chooseRootDevice fails when no disk matches the hints", "[agent][disk]") {
  auto result = chooseRootDevice(kDisks, {{"serial", "NOPE"}});
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::NotFound);
  CHECK_THAT(result.error().message, Catch::Contains("NOPE"));
}

TEST_CASE("chooseRootDevice rejects unknown hints and malformed values", "[agent][disk]") {
  for (const json& hints :
       {json{{"hctl", "1:0:0:0"}}, json{{"size", "big"}}, json{{"size", -1}}, json{{"size", 1.5}},
        json{{"rotational", "maybe"}}, json{{"serial", 42}}, json::array()}) {
    INFO(hints.dump());
    auto result = chooseRootDevice(kDisks, hints);
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::InvalidArgument);
  }
}

TEST_CASE("chooseRootDevice supports the other oslo string operators", "[agent][disk]") {
  CHECK(chosen({{"serial", "<or> NOPE <or> USBSTICK"}}) == "/dev/sdc");
  CHECK(chosen({{"serial", "s!= ZBS0A1B2"}, {"rotational", true}}) == "/dev/sdb");
  CHECK(chosen({{"serial", "s> ZBS0A1B2"}, {"rotational", true}}) == "/dev/sdb");
  CHECK(chosen({{"serial", "s< ZBS0C3D4"}, {"rotational", true}}) == "/dev/sda");
  CHECK(chosen({{"name", "<in> nvme"}}) == "/dev/nvme0n1");
}

TEST_CASE("chooseRootDevice rejects unsupported operators and a zero size", "[agent][disk]") {
  for (const json& hints : {json{{"serial", "<all-in> ZBS"}}, json{{"model", "s=~ ST"}},
                            json{{"size", 0}}, json{{"size", ">= 0"}}, json{{"serial", "s=="}}}) {
    INFO(hints.dump());
    auto result = chooseRootDevice(kDisks, hints);
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::InvalidArgument);
    CHECK_THAT(result.error().message, Catch::StartsWith("Root device hint \""));
  }
}

TEST_CASE("findDevicesByHints returns every match in the order given", "[agent][disk]") {
  auto hints = parseDeviceHints(json{{"rotational", true}});
  REQUIRE(hints);
  const auto matches = findDevicesByHints(kDisks, *hints);
  REQUIRE(matches.size() == 2);
  CHECK(matches[0]->name == "/dev/sda");
  CHECK(matches[1]->name == "/dev/sdb");
  CHECK(findDevicesByHints(kDisks, DeviceHints{}).size() == kDisks.size());
}
