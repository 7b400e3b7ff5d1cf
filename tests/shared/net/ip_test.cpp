#include <catch2/catch.hpp>

#include <initializer_list>
#include <string>

#include "shared/net/ip.h"

using namespace kiln::net;

TEST_CASE("parseIpAddress reads IPv4 and IPv6 as inet_pton does", "[shared][net][ip]") {
  const auto v4 = parseIpAddress("10.0.0.1");
  REQUIRE(v4);
  CHECK(v4->family == 4);
  CHECK(v4->bits() == 32);
  CHECK(v4->str() == "10.0.0.1");
  const auto v6 = parseIpAddress("FD00:0:0::1");
  REQUIRE(v6);
  CHECK(v6->family == 6);
  CHECK(v6->bits() == 128);
  CHECK(v6->str() == "fd00::1");  // inet_ntop's canonical form
  const auto mapped = parseIpAddress("::ffff:10.0.0.1");
  REQUIRE(mapped);
  CHECK(mapped->family == 6);
  CHECK(isIpv4("192.168.1.255"));
  CHECK_FALSE(isIpv4("fd00::1"));
  CHECK(isIpv6("::"));
  CHECK_FALSE(isIpv6("10.0.0.1"));
}

TEST_CASE("parseIpAddress refuses zones, brackets, spaces and malformed parts",
          "[shared][net][ip]") {
  for (const std::string& text : std::initializer_list<std::string>{
           "", "fe80::1%eth0", "[fd00::1]", " 10.0.0.1", "10.0.0.1 ", "10.0.0", "10.0.0.256",
           "010.0.0.1", "10.0.0.1/24", "fd00::1::2", "fd00:::1", "g::1", "1.2.3.4.5", "0x0a.0.0.1",
           std::string("10.0.0.1\0junk", 13)}) {
    INFO(text);
    CHECK_FALSE(parseIpAddress(text));
    CHECK_FALSE(isIpv4(text));
    CHECK_FALSE(isIpv6(text));
  }
}

TEST_CASE("netmaskPrefix counts leading ones and refuses a one after a zero", "[shared][net][ip]") {
  CHECK(netmaskPrefix("255.255.255.0") == 24);
  CHECK(netmaskPrefix("255.255.255.255") == 32);
  CHECK(netmaskPrefix("0.0.0.0") == 0);
  CHECK(netmaskPrefix("255.255.254.0") == 23);
  CHECK(netmaskPrefix("ffff:ffff:ffff:ffff::") == 64);
  CHECK(netmaskPrefix("ffff:ffff:ffff:ffff::", 6) == 64);
  CHECK_FALSE(netmaskPrefix("ffff:ffff:ffff:ffff::", 4));
  CHECK_FALSE(netmaskPrefix("255.255.255.0", 6));
  CHECK_FALSE(netmaskPrefix("255.0.255.0"));
  CHECK_FALSE(netmaskPrefix("255.255.253.0"));
  CHECK_FALSE(netmaskPrefix("0.255.255.255"));
  CHECK_FALSE(netmaskPrefix("24"));
  CHECK_FALSE(netmaskPrefix(""));
}

TEST_CASE("parseIpNetwork reads netaddr's prefix, netmask and bare-address forms",
          "[shared][net][ip]") {
  const auto net = parseIpNetwork("10.0.0.7/24");
  REQUIRE(net);
  CHECK(net->prefix == 24);
  CHECK(net->str() == "10.0.0.7/24");  // host bits kept
  CHECK(parseIpNetwork("10.0.0.0/255.255.0.0")->prefix == 16);
  CHECK(parseIpNetwork("10.0.0.1")->prefix == 32);
  CHECK(parseIpNetwork("fd00::1")->prefix == 128);
  CHECK(parseIpNetwork("fd00::/64")->prefix == 64);
  CHECK(parseIpNetwork("0.0.0.0/0")->prefix == 0);
  CHECK(parseIpNetwork("10.0.0.0/032")->prefix == 32);
  for (const char* text :
       {"10.0.0.0/33", "fd00::/129", "fd00::/ffff::", "10.0.0.0/", "10.0.0.0/0024", "10.0.0.0/+8",
        "10.0.0.0/-0", "10.0.0.0/ 8", "10.0.0.0/255.0.255.0", "10.0.0.0/8/8", "/8", "",
        "fe80::1%eth0/64", "10.0.0.0/4294967304"}) {
    INFO(text);
    CHECK_FALSE(parseIpNetwork(text));
  }
}

TEST_CASE("IpNetwork::contains compares the first prefix bits of the same family",
          "[shared][net][ip]") {
  const auto net = *parseIpNetwork("10.1.2.3/16");
  CHECK(net.contains(*parseIpAddress("10.1.255.255")));
  CHECK_FALSE(net.contains(*parseIpAddress("10.2.0.0")));
  CHECK_FALSE(net.contains(*parseIpAddress("::ffff:10.1.0.1")));  // another family
  CHECK(parseIpNetwork("0.0.0.0/0")->contains(*parseIpAddress("203.0.113.9")));
  CHECK_FALSE(parseIpNetwork("0.0.0.0/0")->contains(*parseIpAddress("::1")));
  const auto v6 = *parseIpNetwork("fd00:1::/33");
  CHECK(v6.contains(*parseIpAddress("fd00:1:7fff::1")));
  CHECK_FALSE(v6.contains(*parseIpAddress("fd00:1:8000::1")));
  CHECK(parseIpNetwork("10.0.0.1")->contains(*parseIpAddress("10.0.0.1")));
  CHECK_FALSE(parseIpNetwork("10.0.0.1")->contains(*parseIpAddress("10.0.0.2")));
}
