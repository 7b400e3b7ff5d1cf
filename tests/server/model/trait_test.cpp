#include <catch2/catch.hpp>

#include "server/model/trait.h"

using namespace kiln::server;

TEST_CASE("validateTrait accepts standard os-traits names and CUSTOM_ traits", "[server][traits]") {
  CHECK(validateTrait("HW_CPU_X86_AVX2"));
  CHECK(validateTrait("STORAGE_DISK_SSD"));
  CHECK(validateTrait("CUSTOM_RAID1"));
  CHECK(validateTrait("CUSTOM_A_1_B"));
  CHECK(validateTrait("CUSTOM_" + std::string(248, 'X')));
}

TEST_CASE("validateTrait rejects bad, lowercase and overlong traits", "[server][traits]") {
  for (const std::string& bad : std::vector<std::string>{"", "CUSTOM_", "custom_raid1", "CUSTOM_raid", "CUSTOM_A-B", "HW_CPU_X86_NOPE",
                          "hw_cpu_x86_avx2", "RAID1", " CUSTOM_A", "CUSTOM_" + std::string(249, 'X')}) {
    INFO(bad);
    auto r = validateTrait(bad);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("Invalid trait") == 0);
  }
}

TEST_CASE("the compiled-in standard trait list is sorted and complete", "[server][traits]") {
  CHECK(isStandardTrait("COMPUTE_ACCELERATORS"));
  CHECK(isStandardTrait("HW_NIC_SRIOV"));
  CHECK_FALSE(isStandardTrait("CUSTOM_FOO"));
}

TEST_CASE("normalizeTraits sorts, de-duplicates and enforces 50 per node", "[server][traits]") {
  auto r = normalizeTraits({"CUSTOM_B", "CUSTOM_A", "CUSTOM_B"}, "n");
  REQUIRE(r);
  CHECK(*r == std::vector<std::string>{"CUSTOM_A", "CUSTOM_B"});
  std::vector<std::string> fifty, fiftyOne;
  for (int i = 0; i < 51; ++i) {
    (i < 50 ? fifty : fiftyOne).push_back("CUSTOM_T" + std::to_string(i));
  }
  fiftyOne.insert(fiftyOne.begin(), fifty.begin(), fifty.end());
  CHECK(normalizeTraits(fifty, "n"));
  auto tooMany = normalizeTraits(fiftyOne, "n");
  REQUIRE_FALSE(tooMany);
  CHECK(tooMany.error().message.find("(51 vs. 50)") != std::string::npos);
}
