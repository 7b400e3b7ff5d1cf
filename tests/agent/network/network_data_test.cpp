// network_data.json -> the ramdisk's static network (agent/network/network_data.h).
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "agent/network/network_data.h"
#include "shared/core/file.h"
#include "tests/support/temp_dir.h"

using kiln::agent::Nic;
using kiln::agent::planNetwork;
using kiln::agent::prefixLength;
using Json = nlohmann::json;
using Lines = std::vector<std::string>;

namespace {

const std::vector<Nic> kNics = {{"eno1", "52:54:00:aa:00:01"}, {"eno2", "52:54:00:aa:00:02"},
                                {"enp65s0f0", "52:54:00:aa:00:03"}};

/// The plan's actions as shell-like lines ("ip ..." or "/sys/PATH < VALUE").
Lines lines(const kiln::agent::NetworkPlan& plan) {
  Lines out;
  for (const auto& a : plan.actions) {
    if (a.argv.empty()) {
      out.push_back("/sys/" + a.path + " < " + a.value);
      continue;
    }
    std::string line;
    for (const auto& w : a.argv) line += (line.empty() ? "" : " ") + w;
    out.push_back(line);
  }
  return out;
}

struct RecordingRunner final : kiln::CommandRunner {
  std::vector<std::vector<std::string>> commands;
  int exitCode = 0;
  kiln::Result<kiln::CommandOutput> run(const kiln::Command& c) override {
    commands.push_back(c.argv);
    return kiln::CommandOutput{exitCode, "", exitCode ? "RTNETLINK answers: File exists" : ""};
  }
};

}  // namespace

TEST_CASE("netmasks and prefixes", "[agent][network]") {
  CHECK(prefixLength("255.255.255.0") == 24);
  CHECK(prefixLength("255.255.254.0") == 23);
  CHECK(prefixLength("0.0.0.0") == 0);
  CHECK(prefixLength("255.255.255.255") == 32);
  CHECK(prefixLength("ffff:ffff:ffff:ffff::") == 64);
  CHECK(prefixLength("::") == 0);
  CHECK(prefixLength("24") == 24);
  CHECK_FALSE(prefixLength("255.0.255.0"));  // not contiguous
  CHECK_FALSE(prefixLength("255.255.255.1"));
  CHECK_FALSE(prefixLength("ffff::ffff"));
  CHECK_FALSE(prefixLength("mask"));
  CHECK_FALSE(prefixLength("129"));
  CHECK_FALSE(prefixLength("+24"));
  CHECK_FALSE(prefixLength("-0"));
  CHECK_FALSE(prefixLength(""));
}

TEST_CASE("a static IPv4 address, a default route and DNS on the NIC with that MAC",
          "[agent][network]") {
  // The shape Metal3 (preprovisioningNetworkDataName) and Nova write.
  const Json data = Json::parse(R"({
    "links": [{"id": "enp2s0", "type": "phy", "ethernet_mac_address": "52:54:00:AA:00:02", "mtu": 9000}],
    "networks": [{"id": "provisioning", "type": "ipv4", "link": "enp2s0",
                  "ip_address": "192.168.111.20", "netmask": "255.255.255.0",
                  "routes": [{"network": "0.0.0.0", "netmask": "0.0.0.0", "gateway": "192.168.111.1"},
                             {"network": "10.20.0.0", "netmask": "255.255.0.0", "gateway": "192.168.111.254"}]}],
    "services": [{"type": "dns", "address": "192.168.111.1"}, {"type": "ntp", "address": "x"}]
  })");
  auto plan = planNetwork(data, kNics);
  REQUIRE(plan);
  CHECK(lines(*plan) == Lines{"ip link set dev eno2 mtu 9000",
                              "ip link set dev eno2 up",
                              "ip -4 addr add 192.168.111.20/24 dev eno2",
                              "ip -4 route add default via 192.168.111.1 dev eno2",
                              "ip -4 route add 10.20.0.0/16 via 192.168.111.254 dev eno2"});
  CHECK(plan->staticInterfaces == Lines{"eno2"});
  CHECK(plan->dhcpInterfaces.empty());
  CHECK(plan->nameservers == Lines{"192.168.111.1"});
}

TEST_CASE("IPv6 with a prefix in the address, a network gateway, DHCP on another link",
          "[agent][network]") {
  const Json data = Json::parse(R"({
    "links": [{"id": "a", "ethernet_mac_address": "52:54:00:aa:00:01"},
              {"id": "b", "type": "ethernet", "ethernet_mac_address": "52:54:00:aa:00:03"}],
    "networks": [{"id": "v6", "type": "ipv6", "link": "a", "ip_address": "fd00:1::20/64",
                  "gateway": "fd00:1::1", "dns_nameservers": ["fd00:1::53"]},
                 {"id": "d", "type": "ipv4_dhcp", "link": "b"}]
  })");
  auto plan = planNetwork(data, kNics);
  REQUIRE(plan);
  CHECK(lines(*plan) == Lines{"ip link set dev eno1 up", "ip -6 addr add fd00:1::20/64 dev eno1",
                              "ip -6 route add default via fd00:1::1 dev eno1",
                              "ip link set dev enp65s0f0 up"});
  CHECK(plan->staticInterfaces == Lines{"eno1"});
  CHECK(plan->dhcpInterfaces == Lines{"enp65s0f0"});
  CHECK(plan->nameservers == Lines{"fd00:1::53"});
}

TEST_CASE("a bond of two NICs with a VLAN on it", "[agent][network]") {
  const Json data = Json::parse(R"({
    "links": [{"id": "p1", "type": "phy", "ethernet_mac_address": "52:54:00:aa:00:01"},
              {"id": "p2", "type": "phy", "ethernet_mac_address": "52:54:00:aa:00:02"},
              {"id": "bond", "type": "bond", "bond_links": ["p1", "p2"], "bond_mode": "802.3ad",
               "bond_miimon": 100, "bond_xmit_hash_policy": "layer3+4",
               "ethernet_mac_address": "52:54:00:aa:00:01"},
              {"id": "v", "type": "vlan", "vlan_link": "bond", "vlan_id": 120}],
    "networks": [{"id": "n", "type": "ipv4", "link": "v", "ip_address": "10.1.20.5", "netmask": "255.255.255.0"}]
  })");
  auto plan = planNetwork(data, kNics);
  REQUIRE(plan);
  CHECK(lines(*plan) == Lines{"/sys/class/net/bonding_masters < +bond0",
                              "/sys/class/net/bond0/bonding/mode < 802.3ad",
                              "/sys/class/net/bond0/bonding/miimon < 100",
                              "/sys/class/net/bond0/bonding/xmit_hash_policy < layer3+4",
                              "ip link set dev eno1 down",
                              "/sys/class/net/bond0/bonding/slaves < +eno1",
                              "ip link set dev eno2 down",
                              "/sys/class/net/bond0/bonding/slaves < +eno2",
                              "ip link set dev bond0 address 52:54:00:aa:00:01",
                              "ip link set dev bond0 up",
                              "ip link add link bond0 name bond0.120 type vlan id 120",
                              "ip link set dev bond0.120 up",
                              "ip -4 addr add 10.1.20.5/24 dev bond0.120"});
  CHECK(plan->enslaved == Lines{"eno1", "eno2"});
  CHECK(plan->staticInterfaces == Lines{"bond0.120"});
}

TEST_CASE("network_data that cannot be applied names the entry", "[agent][network]") {
  auto error = [](const char* text) {
    auto plan = planNetwork(Json::parse(text), kNics);
    REQUIRE_FALSE(plan);
    CHECK(plan.error().code == kiln::ErrorCode::InvalidArgument);
    return plan.error().message;
  };
  CHECK(error(R"([])") == "network_data is not a JSON object");
  CHECK(error(R"({"links": {}})") == "network_data: links, networks and services must be lists");
  CHECK(error(R"({"links": [{"id": "x", "ethernet_mac_address": "52:54:00:00:00:99"}]})") ==
        "network_data link 'x': no NIC has the address 52:54:00:00:00:99");
  CHECK(error(R"({"links": [{"type": "phy"}]})") == "network_data link {\"type\":\"phy\"} has no id");
  CHECK(error(R"({"links": [{"id": "x", "ethernet_mac_address": "52:54:00:aa:00:01", "mtu": 10}]})") ==
        "network_data link 'x': mtu 10 is not valid");
  CHECK(error(R"({"networks": [{"id": "n", "type": "ipv4", "link": "nope"}]})") ==
        "network_data network 'n': link \"nope\" is not a link of the file");
  const std::string link = R"("links": [{"id": "l", "ethernet_mac_address": "52:54:00:aa:00:01"}])";
  CHECK(error(("{" + link + R"(, "networks": [{"id": "n", "type": "ipv4", "link": "l", "ip_address": "10.0.0.300", "netmask": "255.0.0.0"}]})").c_str()) ==
        "network_data network 'n': '10.0.0.300' is not an IPv4 address");
  CHECK(error(("{" + link + R"(, "networks": [{"id": "n", "type": "ipv4", "link": "l", "ip_address": "10.0.0.3"}]})").c_str()) ==
        "network_data network 'n': no netmask for 10.0.0.3");
  CHECK(error(("{" + link + R"(, "networks": [{"id": "n", "type": "ipv4", "link": "l", "ip_address": "10.0.0.3", "netmask": "255.0.255.0"}]})").c_str()) ==
        "network_data network 'n': '255.0.255.0' is not a netmask");
  CHECK(error(("{" + link + R"(, "networks": [{"id": "n", "type": "ipv4", "link": "l", "ip_address": "10.0.0.3", "netmask": "8", "routes": [{"network": "0.0.0.0"}]}]})").c_str()) ==
        "network_data network 'n': route {\"network\":\"0.0.0.0\"} needs network, netmask and gateway");
  CHECK(error(("{" + link + R"(, "networks": [{"id": "n", "type": "ipv9", "link": "l"}]})").c_str()) ==
        "network_data network 'n': unknown type 'ipv9'");
  CHECK(error(("{" + link + R"(, "services": [{"type": "dns", "address": "dns.example"}]})").c_str()) ==
        "network_data dns service {\"address\":\"dns.example\",\"type\":\"dns\"} has no valid address");
  CHECK(error(R"({"links": [{"id": "b", "type": "bond", "bond_links": ["p"]}]})") ==
        "network_data bond 'b': bond link \"p\" is not a physical link of the file");
  CHECK(error(R"({"links": [{"id": "p", "ethernet_mac_address": "52:54:00:aa:00:01"},
                             {"id": "b", "type": "bond", "bond_links": ["p"], "bond_mode": "x y"}]})") ==
        "network_data bond 'b': bond_mode \"x y\" is not a bonding option");
  CHECK(error(R"({"links": [{"id": "p", "ethernet_mac_address": "52:54:00:aa:00:01"},
                             {"id": "b", "type": "bond", "bond_links": ["p"], "ethernet_mac_address": "--all"}]})") ==
        "network_data bond 'b': '--all' is not a MAC address");
  CHECK(error(R"({"links": [{"id": "p", "ethernet_mac_address": "52:54:00:aa:00:01"},
                             {"id": "v", "type": "vlan", "vlan_link": "p", "vlan_id": 7, "vlan_mac_address": "52:54:00:aa:00"}]})") ==
        "network_data vlan 'v': '52:54:00:aa:00' is not a MAC address");
  CHECK(error(("{\"links\": [{\"id\": \"l\", \"ethernet_mac_address\": \"52:54:00:aa:00:01\"}, "
               "{\"id\": \"v\", \"type\": \"vlan\", \"vlan_link\": \"l\", \"vlan_id\": 5000}]}")) ==
        "network_data vlan 'v' has no vlan_id between 1 and 4094");
}

TEST_CASE("long VLAN interface names and listing NICs from sysfs", "[agent][network]") {
  const Json data = Json::parse(R"({
    "links": [{"id": "p", "ethernet_mac_address": "52:54:00:aa:00:03"},
              {"id": "q", "ethernet_mac_address": "52:54:00:aa:00:04"},
              {"id": "v", "type": "vlan", "vlan_link": "p", "vlan_id": 3001},
              {"id": "w", "type": "vlan", "vlan_link": "q", "vlan_id": 3002}],
    "networks": [{"id": "n", "type": "ipv4_dhcp", "link": "v"},
                 {"id": "m", "type": "ipv4_dhcp", "link": "w"}]})");
  std::vector<Nic> nics = kNics;
  nics.push_back({"enp129s0f1np1", "52:54:00:aa:00:04"});
  auto plan = planNetwork(data, nics);
  REQUIRE(plan);
  // enp65s0f0.3001 fits Linux's 15 characters, enp129s0f1np1.3002 does not.
  CHECK(plan->dhcpInterfaces == Lines{"enp65s0f0.3001", "vlan3002"});

  kiln::test::TempDir sys("kiln-sysfs");
  namespace fs = std::filesystem;
  for (const char* nic : {"eth1", "eth0"}) {
    fs::create_directories(sys.path / "class/net" / nic / "device");
    REQUIRE(kiln::writeFile(sys.path / "class/net" / nic / "address",
                            std::string("52:54:00:AA:00:0") + (nic[3] == '0' ? "1" : "2") + "\n"));
  }
  fs::create_directories(sys.path / "class/net/lo");
  REQUIRE(kiln::writeFile(sys.path / "class/net/lo/address", "00:00:00:00:00:00\n"));
  const auto listed = kiln::agent::listNics(sys.path.string());
  REQUIRE(listed.size() == 2);
  CHECK(listed[0].name == "eth0");
  CHECK(listed[0].mac == "52:54:00:aa:00:01");
  CHECK(listed[1].name == "eth1");
}

TEST_CASE("applying a plan runs the commands and writes sysfs in order", "[agent][network]") {
  kiln::test::TempDir sys("kiln-sysfs");
  std::filesystem::create_directories(sys.path / "class/net/bond0/bonding");
  REQUIRE(kiln::writeFile(sys.path / "class/net/bond0/bonding/slaves", ""));  // sysfs has it
  kiln::agent::NetworkPlan plan;
  plan.actions.push_back({{"ip", "link", "set", "dev", "eno1", "down"}, "", ""});
  plan.actions.push_back({{}, "class/net/bond0/bonding/slaves", "+eno1"});
  plan.actions.push_back({{"ip", "link", "set", "dev", "bond0", "up"}, "", ""});
  RecordingRunner runner;
  REQUIRE(kiln::agent::applyNetworkPlan(plan, runner, sys.path.string()));
  CHECK(runner.commands.size() == 2);
  CHECK(kiln::readFile((sys.path / "class/net/bond0/bonding/slaves").string()) ==
        std::optional<std::string>("+eno1\n"));
  runner.exitCode = 2;
  auto failed = kiln::agent::applyNetworkPlan(plan, runner, sys.path.string());
  REQUIRE_FALSE(failed);
  CHECK(failed.error().message == "ip link set dev eno1 down failed (exit 2): RTNETLINK answers: File exists");
  plan.actions.erase(plan.actions.begin());
  plan.actions[0].path = "class/net/bond9/bonding/slaves";  // no such bond: nothing created
  auto missing = kiln::agent::applyNetworkPlan(plan, runner, sys.path.string());
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message, Catch::Contains("is the bonding module loaded?"));
  CHECK_FALSE(std::filesystem::exists(sys.path / "class/net/bond9"));
}
