// Regressions found by the agent_tool_output fuzzer (docs/fuzzing.md); their inputs are in
// tests/fuzz/regressions/agent_tool_output/.
#include <catch2/catch.hpp>

#include "agent/disk/sgdisk.h"

using namespace kiln;
using namespace kiln::agent;

TEST_CASE("parseSgdiskPrint refuses a partition that ends before it starts",
          "[agent][disk][sgdisk][fuzz]") {
  // GptPartition::sizeSectors() wrapped around to 2^64 - 2048, and the config drive placement
  // took such a partition for a huge one.
  auto table = parseSgdiskPrint(
      "Disk /dev/sda: 41943040 sectors, 20.0 GiB\nSector size (logical): 512 bytes\n\n"
      "Number  Start (sector)    End (sector)  Size       Code  Name\n"
      "   1            2048    0   20973567   10.0 GiB    FD00  \n");
  REQUIRE_FALSE(table);
  CHECK(table.error().message.find("Malformed sgdisk partition row") != std::string::npos);

  auto oneSector = parseSgdiskPrint(
      "Disk /dev/sda: 41943040 sectors, 20.0 GiB\n\n"
      "Number  Start (sector)    End (sector)  Size       Code  Name\n"
      "   1            2048            2048   512 bytes   8300  x\n");
  REQUIRE(oneSector);
  CHECK(oneSector->partitions.at(0).sizeSectors() == 1);
}
