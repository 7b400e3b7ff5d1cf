#include <catch2/catch.hpp>

#include "server/model/capabilities.h"

using namespace kiln::server;

TEST_CASE("getCapability reads the first well-formed item of the key",
          "[server][model][capabilities]") {
  CHECK(getCapability("boot_mode:uefi", "boot_mode") == "uefi");
  CHECK(getCapability("a:1,boot_mode:bios,boot_mode:uefi", "boot_mode") == "bios");
  // Key and value are trimmed; items are split on ',' only.
  CHECK(getCapability(" boot_mode : uefi ,x:y", "boot_mode") == "uefi");
  CHECK(getCapability("boot_mode:\tuefi\n", "boot_mode") == "uefi");
  // A value of spaces is there, and empty once trimmed (as Ironic's strip()).
  CHECK(getCapability("boot_mode: ", "boot_mode") == "");
  CHECK(getCapability("BOOT_MODE:uefi", "boot_mode") == std::nullopt);  // keys keep their case
  CHECK(getCapability("", "boot_mode") == std::nullopt);
  CHECK(getCapability(",,", "boot_mode") == std::nullopt);
}

TEST_CASE("getCapability skips items that are not exactly key:value",
          "[server][model][capabilities]") {
  for (const char* caps : {"boot_mode", "boot_mode:", ":uefi", "boot_mode:uefi:x", "boot_mode;uefi",
                           "boot_mode uefi"}) {
    INFO(caps);
    CHECK(getCapability(caps, "boot_mode") == std::nullopt);
  }
  CHECK(getCapability("boot_mode:a:b,boot_mode:bios", "boot_mode") == "bios");
  CHECK(getCapability("nonsense,boot_mode:uefi", "boot_mode") == "uefi");
}

TEST_CASE(
    "parseCapabilities keeps the well-formed items in order and renderCapabilities joins them",
    "[server][model][capabilities]") {
  using V = std::vector<Capability>;
  CHECK(parseCapabilities("") == V{});
  CHECK(parseCapabilities("a:1, b : 2 ,,bad,c:3:4,a:5") == V{{"a", "1"}, {"b", "2"}, {"a", "5"}});
  CHECK(renderCapabilities(parseCapabilities("a:1, b : 2 ,,bad")) == "a:1,b:2");
  CHECK(renderCapabilities({}) == "");
}

TEST_CASE("addCapability appends and keeps an item of the key already there",
          "[server][model][capabilities]") {
  CHECK(addCapability("", "k", "v") == "k:v");
  CHECK(addCapability("a:1", "k", "v") == "a:1,k:v");
  CHECK(addCapability("k:old", "k", "new") == "k:old,k:new");  // as Ironic's add_node_capability
  CHECK(addCapability("a:1,", "k", "v") == "a:1,,k:v");
}

TEST_CASE("setCapability drops the key's and empty items and puts key:value last",
          "[server][model][capabilities]") {
  CHECK(setCapability("", "boot_mode", "uefi") == "boot_mode:uefi");
  CHECK(setCapability("boot_mode:bios,a:1", "boot_mode", "uefi") == "a:1,boot_mode:uefi");
  CHECK(setCapability("a:1,,boot_mode:,b,boot_mode:bios", "boot_mode", "uefi") ==
        "a:1,b,boot_mode:uefi");
  // Only items that begin with "key:" as written are the key's.
  CHECK(setCapability(" boot_mode:bios,boot_modex:1", "boot_mode", "uefi") ==
        " boot_mode:bios,boot_modex:1,boot_mode:uefi");
}

TEST_CASE("unsetCapability drops the items that begin with key: and keeps the rest as written",
          "[server][model][capabilities]") {
  CHECK(unsetCapability("a:1,k:v,b:2", "k") == "a:1,b:2");
  CHECK(unsetCapability("k:v", "k") == "");
  CHECK(unsetCapability("", "k") == "");
  CHECK(unsetCapability(",a:1,,k:1,k:2", "k") == ",a:1,");
  CHECK(unsetCapability(" k:v,kk:v,k", "k") == " k:v,kk:v,k");
  CHECK(unsetCapability(":x,a:1", "") == "a:1");
}
