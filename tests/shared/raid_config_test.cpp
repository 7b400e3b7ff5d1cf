#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "shared/raid/raid_config.h"

using kiln::parseRaidConfig;
using J = nlohmann::json;

TEST_CASE("parseRaidConfig accepts Ironic's target RAID configurations", "[shared][raid]") {
  auto r = parseRaidConfig(J::parse(R"({"logical_disks": [
      {"size_gb": "MAX", "raid_level": "1", "is_root_volume": true},
      {"size_gb": 100, "raid_level": "1+0", "volume_name": "data", "physical_disks": ["/dev/sda", "/dev/sdb"]},
      {"size_gb": 50, "raid_level": "JBOD"}]})"));
  REQUIRE(r);
  REQUIRE(r->logicalDisks.size() == 3);
  CHECK_FALSE(r->logicalDisks[0].sizeGb.has_value());
  CHECK(r->logicalDisks[0].isRootVolume);
  CHECK(*r->logicalDisks[1].sizeGb == 100);
  CHECK(r->logicalDisks[1].physicalDisks.size() == 2);
}

TEST_CASE("parseRaidConfig takes a null size_gb as MAX", "[shared][raid]") {
  // Metal3 sends size_gb null for a volume without a size; Ironic's schema would refuse it.
  auto r = parseRaidConfig(J::parse(R"({"logical_disks": [
      {"size_gb": null, "raid_level": "1", "controller": "RAID.Integrated.1-1"},
      {"size_gb": 20, "raid_level": "0"}]})"));
  REQUIRE(r);
  REQUIRE(r->logicalDisks.size() == 2);
  CHECK_FALSE(r->logicalDisks[0].sizeGb.has_value());
  CHECK(r->logicalDisks[1].sizeGb == std::optional<int64_t>(20));
}

TEST_CASE("parseRaidConfig rejects what the schema forbids", "[shared][raid]") {
  const char* bad[] = {
      R"({})",
      R"({"logical_disks": []})",
      R"({"logical_disks": [{"raid_level": "1"}]})",
      R"({"logical_disks": [{"size_gb": 10}]})",
      R"({"logical_disks": [{"size_gb": 10, "raid_level": "3"}]})",
      R"({"logical_disks": [{"size_gb": 0, "raid_level": "1"}]})",
      R"({"logical_disks": [{"size_gb": "ALL", "raid_level": "1"}]})",
      R"({"logical_disks": [{"size_gb": 10, "raid_level": "1", "colour": "red"}]})",
      R"({"logical_disks": [{"size_gb": 10, "raid_level": "1", "disk_type": "tape"}]})",
      R"({"logical_disks": [{"size_gb": 10, "raid_level": "1"}], "extra": 1})",
      R"({"logical_disks": [{"size_gb": 10, "raid_level": "1", "is_root_volume": true},
                            {"size_gb": 10, "raid_level": "0", "is_root_volume": true}]})",
  };
  for (const char* text : bad) {
    INFO(text);
    auto r = parseRaidConfig(J::parse(text));
    REQUIRE_FALSE(r);
    CHECK(r.error().code == kiln::ErrorCode::InvalidArgument);
  }
}

TEST_CASE("parseRaidConfig accepts physical_disks as names and device hints", "[shared][raid]") {
  auto r = parseRaidConfig(J::parse(R"({"logical_disks": [{"size_gb": 10, "raid_level": "1",
      "physical_disks": [{"name": "/dev/vda"}, {"size": ">= 100", "rotational": false}, "vdc"]}]})"));
  REQUIRE(r);
  const auto& disks = r->logicalDisks[0].physicalDisks;
  REQUIRE(disks.size() == 3);
  CHECK(disks[0].text == R"({"name":"/dev/vda"})");
  CHECK(disks[1].hints.hints.size() == 2);
  CHECK(disks[2].text == "vdc");
  REQUIRE(disks[2].hints.hints.size() == 1);
  CHECK(disks[2].hints.hints[0].values == std::vector<std::string>{"/dev/vdc"});
}

TEST_CASE("parseRaidConfig rejects physical_disks entries with invalid hints", "[shared][raid]") {
  struct Case {
    const char* config;
    const char* message;
  };
  const Case cases[] = {
      {R"({"logical_disks": [{"size_gb": 10, "raid_level": "1",
          "physical_disks": [{"nme": "/dev/vda"}, {"name": "/dev/vdb"}]}]})",
       "RAID config validation error: physical_disks entry {\"nme\":\"/dev/vda\"} has invalid "
       "device hints: The hints \"nme\" are invalid. Valid hints are: \"by_path, model, name, "
       "rotational, serial, size, vendor, wwn\""},
      {R"({"logical_disks": [{"size_gb": 10, "raid_level": "1",
          "physical_disks": [{"size": "huge"}]}]})",
       "RAID config validation error: physical_disks entry {\"size\":\"huge\"} has invalid "
       "device hints: Device hint \"size\" is not an integer value. Current value: huge"},
      {R"({"logical_disks": [{"size_gb": 10, "raid_level": "1", "physical_disks": [{}]}]})",
       "RAID config validation error: physical_disks entry {} has no device hints"},
      {R"({"logical_disks": [{"size_gb": 10, "raid_level": "1", "physical_disks": [7]}]})",
       "RAID config validation error: 7 is not of type 'string', 'object'"},
  };
  for (const Case& c : cases) {
    INFO(c.config);
    auto r = parseRaidConfig(J::parse(c.config));
    REQUIRE_FALSE(r);
    CHECK(r.error().code == kiln::ErrorCode::InvalidArgument);
    CHECK(r.error().message == c.message);
  }
}
