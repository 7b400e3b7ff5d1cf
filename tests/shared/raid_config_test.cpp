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
