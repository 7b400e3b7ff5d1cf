#include <catch2/catch.hpp>

#include <array>

#include "agent/disk/mbr.h"

using namespace kiln;
using namespace kiln::agent;

namespace {

std::array<MbrEntry, 4> table(std::initializer_list<MbrEntry> used) {
  std::array<MbrEntry, 4> entries{};
  for (int i = 0; i < 4; ++i) entries[i].slot = i;
  for (const MbrEntry& e : used) entries[e.slot] = e;
  return entries;
}

constexpr uint64_t k64MiB = 64ULL << 20;

}  // namespace

TEST_CASE("parseMbr reads the four primary entries", "[agent][disk][mbr]") {
  std::array<uint8_t, 512> sector{};
  sector[446 + 16 + 4] = 0x83;
  sector[446 + 16 + 8] = 0x00;
  sector[446 + 16 + 9] = 0x08;   // start 2048
  sector[446 + 16 + 13] = 0x10;  // 4096 sectors
  sector[510] = 0x55;
  sector[511] = 0xAA;
  auto entries = parseMbr(sector);
  REQUIRE(entries);
  CHECK_FALSE((*entries)[0].used());
  CHECK((*entries)[1].used());
  CHECK((*entries)[1].slot == 1);
  CHECK((*entries)[1].startSector == 2048);
  CHECK((*entries)[1].sectors == 4096);
  sector[511] = 0;
  CHECK_FALSE(parseMbr(sector));
}

TEST_CASE("planMbrPartitionAtEnd places the partition in the last aligned 64 MiB",
          "[agent][disk][mbr]") {
  auto plan = planMbrPartitionAtEnd(table({{0, 0x83, 2048, 204800}}), 614400, k64MiB);
  REQUIRE(plan);
  CHECK(plan->slot == 1);
  CHECK(plan->type == 0x83);
  CHECK(plan->startSector == 614400 - 131072);
  CHECK(plan->sectors == 131072);

  // An odd disk size: the start is aligned down to 1 MiB, the partition runs to the end.
  auto odd = planMbrPartitionAtEnd(table({{0, 0x83, 2048, 204800}}), 614401, k64MiB);
  REQUIRE(odd);
  CHECK(odd->startSector % 2048 == 0);
  CHECK(uint64_t{odd->startSector} + odd->sectors == 614401);
}

TEST_CASE("planMbrPartitionAtEnd stays within the 2 TiB an MBR addresses", "[agent][disk][mbr]") {
  auto plan = planMbrPartitionAtEnd(table({{0, 0x83, 2048, 204800}}), 8ULL << 32, k64MiB);
  REQUIRE(plan);
  CHECK(uint64_t{plan->startSector} + plan->sectors <= (1ULL << 32));
}

TEST_CASE("planMbrPartitionAtEnd refuses full, extended and overlapping tables",
          "[agent][disk][mbr]") {
  auto full = planMbrPartitionAtEnd(table({{0, 0x83, 2048, 2048},
                                           {1, 0x83, 4096, 2048},
                                           {2, 0x83, 6144, 2048},
                                           {3, 0x83, 8192, 2048}}),
                                    614400, k64MiB);
  REQUIRE_FALSE(full);
  CHECK_THAT(full.error().message, Catch::Contains("All four primary"));
  auto extended = planMbrPartitionAtEnd(table({{0, 0x05, 2048, 2048}}), 614400, k64MiB);
  REQUIRE_FALSE(extended);
  CHECK_THAT(extended.error().message, Catch::Contains("extended"));
  auto noRoom = planMbrPartitionAtEnd(table({{0, 0x83, 2048, 612000}}), 614400, k64MiB);
  REQUIRE_FALSE(noRoom);
  CHECK_THAT(noRoom.error().message, Catch::Contains("No room"));
}
