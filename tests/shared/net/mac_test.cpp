#include <catch2/catch.hpp>

#include <string>

#include "shared/net/mac.h"

using namespace kiln::net;

TEST_CASE("parseMac gives the canonical lower-case form when the text is six pairs",
          "[shared][net][mac]") {
  CHECK(parseMac("52:54:00:ab:cd:ef") == "52:54:00:ab:cd:ef");
  CHECK(parseMac("52:54:00:AB:CD:EF") == "52:54:00:ab:cd:ef");
  CHECK(parseMac("00:00:00:00:00:00") == "00:00:00:00:00:00");
  CHECK(parseMac("FF:ff:Ff:fF:FF:ff") == "ff:ff:ff:ff:ff:ff");
}

TEST_CASE("parseMac takes '-' only when the caller accepts it", "[shared][net][mac]") {
  CHECK_FALSE(parseMac("52-54-00-ab-cd-ef"));
  CHECK_FALSE(parseMac("52:54:00-ab:cd:ef"));
  CHECK(parseMac("52-54-00-AB-cd-EF", MacSeparators::ColonOrDash) == "52:54:00:ab:cd:ef");
  CHECK(parseMac("52:54:00:ab:cd:ef", MacSeparators::ColonOrDash) == "52:54:00:ab:cd:ef");
  // Each separator either way, as netboot and Redfish inspection always took them.
  CHECK(parseMac("52:54-00:ab-cd:ef", MacSeparators::ColonOrDash) == "52:54:00:ab:cd:ef");
}

TEST_CASE("parseMac refuses anything but six pairs and five separators", "[shared][net][mac]") {
  for (const auto accepted : {MacSeparators::Colon, MacSeparators::ColonOrDash}) {
    CHECK_FALSE(parseMac("", accepted));
    CHECK_FALSE(parseMac("52:54:00:ab:cd", accepted));
    CHECK_FALSE(parseMac("52:54:00:ab:cd:ef:", accepted));
    CHECK_FALSE(parseMac("52:54:00:ab:cd:ef:01", accepted));
    CHECK_FALSE(parseMac(" 52:54:00:ab:cd:ef", accepted));
    CHECK_FALSE(parseMac("52:54:00:ab:cd:e ", accepted));
    CHECK_FALSE(parseMac("zz:54:00:ab:cd:ef", accepted));
    CHECK_FALSE(parseMac("52_54_00_ab_cd_ef", accepted));
    CHECK_FALSE(parseMac("5254:00:ab:cd:ef:", accepted));
    CHECK_FALSE(parseMac("525400abcdef", accepted));
    CHECK_FALSE(parseMac("52.54.00.ab.cd.ef", accepted));
    CHECK_FALSE(parseMac(std::string("52:54:00:ab:cd:e\0", 17), accepted));
    CHECK_FALSE(parseMac("52:54:00:ab:cd:\xC3\xA9", accepted));
  }
}

TEST_CASE("pxeMac spells the ARP type and the address with dashes", "[shared][net][mac]") {
  CHECK(pxeMac("52:54:00:ab:cd:ef") == "01-52-54-00-ab-cd-ef");
  CHECK(pxeMac("52:54:00:AB:cd:EF") == "01-52-54-00-ab-cd-ef");
  CHECK(pxeMac("52-54-00-ab-cd-ef") == "01-52-54-00-ab-cd-ef");
}
