// The provisioning network's DHCP: [dnsmasq] values, the answers a node gets, the files the
// dnsmasq provider writes and the managed dnsmasq's configuration. The real dnsmasq answering a
// DHCP client is tests/integration/dhcp_dnsmasq_test.py.
#include <catch2/catch.hpp>

#include <filesystem>

#include "server/config.h"
#include "server/config/dnsmasq_options.h"
#include "server/drivers/dhcp/dhcp_provider.h"
#include "server/drivers/dhcp/dnsmasq_process.h"
#include "server/model/node.h"
#include "server/model/resources.h"
#include "shared/core/file.h"
#include "tests/support/temp_dir.h"

namespace kiln::server {
namespace {

namespace fs = std::filesystem;

Config dnsmasqConfigIn(const test::TempDir& dir) {
  auto c = parseConfig(
      "[dhcp]\ndhcp_provider = dnsmasq\n[conductor]\napi_url = http://192.0.2.1:6385\n"
      "[dnsmasq]\ndhcp_hostsdir = " + dir.file("hosts") + "\ndhcp_optsdir = " + dir.file("opts") +
          "\ndhcp_leasefile = " + dir.file("leases") + "\nconfig_file = " + dir.file("dnsmasq.conf") +
          "\ninterface = prov0\ndhcp_range = 192.0.2.100,192.0.2.150\n",
      "test.conf");
  REQUIRE(c);
  return *c;
}

DhcpNode bootingNode(std::string bootInterface = "ipxe") {
  DhcpNode n;
  n.uuid = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123";
  n.provisionState = "clean wait";
  n.bootInterface = std::move(bootInterface);
  n.bootTarget = "agent";
  n.macs = {"52:54:00:12:34:56"};
  return n;
}

std::string fileText(const std::string& path) { return readFile(path).value_or("<missing>"); }

}  // namespace

TEST_CASE("dhcp_range accepts ranges with netmask and lease and refuses anything else", "[dhcp]") {
  auto ranges = parseDhcpRanges(" 192.0.2.100,192.0.2.150 ; 198.51.100.10, 198.51.100.20, 255.255.255.0, 12h");
  REQUIRE(ranges);
  REQUIRE(ranges->size() == 2);
  CHECK((*ranges)[0].dnsmasqValue() == "192.0.2.100,192.0.2.150");
  CHECK((*ranges)[1].dnsmasqValue() == "198.51.100.10,198.51.100.20,255.255.255.0,12h");
  CHECK(parseDhcpRanges("192.0.2.1,192.0.2.9,infinite"));
  for (const char* bad : {"192.0.2.100", "192.0.2.150,192.0.2.100", "192.0.2.1,192.0.2.9,set:x",
                          "192.0.2.1,192.0.2.9\ndhcp-option=3,203.0.113.1", "192.0.2.1,300.0.2.9",
                          "192.0.2.1,198.51.100.1,255.255.255.0", "192.0.2.1,192.0.2.9,1m",
                          "192.0.2.1,192.0.2.9,255.0.255.0", "192.0.2.1,192.0.2.9,12h,255.255.255.0",
                          "2001:db8::1,2001:db8::9", "192.0.2.1,192.0.2.9,,12h"}) {
    INFO(bad);
    auto parsed = parseDhcpRanges(bad);
    CHECK_FALSE(parsed);
  }
}

TEST_CASE("interface names and dnsmasq values are refused when they could smuggle a line", "[dhcp]") {
  CHECK_FALSE(interfaceNameProblem("br-prov.10"));
  for (const char* bad : {"", "eth0\nport=53", "eth 0", "..", "a-very-long-interface-name", "eth0,lo"}) {
    CHECK(interfaceNameProblem(bad));
  }
  CHECK(dnsmasqSafeValue("http://192.0.2.1:6385/boot.ipxe"));
  for (const char* bad : {"", "a,b", "a b", "a\nb", "a#b", "a\"b", "\x7f"}) CHECK_FALSE(dnsmasqSafeValue(bad));
}

TEST_CASE("config refuses dnsmasq settings that cannot work, naming the option", "[dhcp]") {
  auto noUrl = parseConfig("[dhcp]\ndhcp_provider = dnsmasq\n", "t.conf");
  REQUIRE_FALSE(noUrl);
  CHECK_THAT(noUrl.error().message, Catch::Contains("[dhcp] dhcp_provider") && Catch::Contains("api_url"));
  auto noInterface = parseConfig(
      "[dhcp]\ndhcp_provider = dnsmasq\n[conductor]\napi_url = http://192.0.2.1:6385\n"
      "[dnsmasq]\nmanage = true\ndhcp_range = 192.0.2.100,192.0.2.150\n",
      "t.conf");
  REQUIRE_FALSE(noInterface);
  CHECK_THAT(noInterface.error().message, Catch::Contains("[dnsmasq] interface"));
  auto badRange = parseConfig("[dnsmasq]\ndhcp_range = 192.0.2.100,192.0.2.150,set:evil\n", "t.conf");
  REQUIRE_FALSE(badRange);
  CHECK_THAT(badRange.error().message, Catch::Contains("dhcp_range"));
  auto badUrl = parseConfig(
      "[dhcp]\ndhcp_provider = dnsmasq\n[conductor]\napi_url = http://192.0.2.1:6385/a,b\n", "t.conf");
  REQUIRE_FALSE(badUrl);
  CHECK_THAT(badUrl.error().message, Catch::Contains("api_url"));
}

TEST_CASE("a node gets DHCP answers only while it boots its agent or a ramdisk", "[dhcp]") {
  test::TempDir dir;
  const Config config = dnsmasqConfigIn(dir);
  auto node = bootingNode();
  CHECK(dhcpAnswerFor(node, config));
  node.maintenance = true;
  CHECK_FALSE(dhcpAnswerFor(node, config));
  node.maintenance = false;
  for (const char* failed : {"clean failed", "deploy failed", "inspect failed", "error", "enroll", "active"}) {
    node.provisionState = failed;
    INFO(failed);
    CHECK_FALSE(dhcpAnswerFor(node, config));
  }
  node.provisionState = "available";  // fast track keeps the agent
  CHECK(dhcpAnswerFor(node, config));
  node.bootTarget = "disk";
  CHECK_FALSE(dhcpAnswerFor(node, config));
  node.provisionState = "active";
  node.bootTarget = "ramdisk";  // a ramdisk deploy's instance
  CHECK(dhcpAnswerFor(node, config));
  node.bootTarget = "agent";
  CHECK_FALSE(dhcpAnswerFor(node, config));
  node = bootingNode();
  node.macs = {"not-a-mac"};
  CHECK_FALSE(dhcpAnswerFor(node, config));
}

TEST_CASE("the boot file follows the boot interface and the firmware's class", "[dhcp]") {
  test::TempDir dir;
  const Config config = dnsmasqConfigIn(dir);
  auto ipxe = dhcpAnswerFor(bootingNode("ipxe"), config);
  REQUIRE(ipxe);
  REQUIRE(ipxe->tag.starts_with("kiln-"));
  const std::string t = "tag:" + ipxe->tag + ",";
  CHECK(ipxe->options == std::vector<std::string>{
                             t + "tag:!ipxe,tag:!efi64,tag:!httpclient,option:bootfile-name,undionly.kpxe",
                             t + "tag:!ipxe,tag:efi64,tag:!httpclient,option:bootfile-name,snponly.efi",
                             t + "tag:ipxe,option:bootfile-name,http://192.0.2.1:6385/boot.ipxe",
                             t + "tag:!ipxe,tag:httpclient,option:bootfile-name,http://192.0.2.1:6385/boot/loaders/snponly.efi"});
  auto pxe = dhcpAnswerFor(bootingNode("pxe"), config);
  REQUIRE(pxe);
  CHECK_THAT(pxe->options.at(0), Catch::EndsWith("pxelinux.0"));
  CHECK_THAT(pxe->options.at(1), Catch::EndsWith("bootx64.efi"));
  auto http = bootingNode("http");
  http.httpBootIso = "boot-1be26c0b-03f2-4d2e-ae87-c02d7f33c123-abc.iso";
  auto httpAnswer = dhcpAnswerFor(http, config);
  REQUIRE(httpAnswer);
  CHECK_THAT(httpAnswer->options.back(),
             Catch::EndsWith("tag:httpclient,option:bootfile-name,http://192.0.2.1:6385/v1/vmedia/" + http.httpBootIso));
  CHECK(httpAnswer->tag != ipxe->tag);  // other options, another tag
  auto vmedia = dhcpAnswerFor(bootingNode("redfish-virtual-media"), config);
  REQUIRE(vmedia);  // an address for the ramdisk, no boot file
  CHECK(vmedia->tag.empty());
  CHECK(vmedia->options.empty());
}

TEST_CASE("the dnsmasq provider writes host and option files and ignores MACs after the boot", "[dhcp]") {
  test::TempDir dir;
  const Config config = dnsmasqConfigIn(dir);
  int forgotten = 0;
  auto provider = makeDhcpProvider(config, [&] { ++forgotten; });
  REQUIRE(provider);
  auto node = bootingNode();
  REQUIRE((*provider)->syncNode(node));
  const auto answer = dhcpAnswerFor(node, config);
  const std::string host = dir.file("hosts/kiln-52-54-00-12-34-56");
  CHECK(fileText(host) == "52:54:00:12:34:56,set:kiln,set:" + answer->tag + "\n");
  const std::string opts = dir.file("opts/" + answer->tag);
  CHECK_THAT(fileText(opts), Catch::Contains("tag:" + answer->tag + ",tag:ipxe,option:bootfile-name,"));

  node.provisionState = "clean failed";
  REQUIRE((*provider)->syncNode(node));
  CHECK(fileText(host) == "52:54:00:12:34:56,ignore\n");

  // A port moved to another MAC while booting: the old one is ignored.
  node = bootingNode();
  REQUIRE((*provider)->syncNode(node));
  node.macs = {"52:54:00:12:34:57"};
  REQUIRE((*provider)->syncNode(node));
  CHECK(fileText(host) == "52:54:00:12:34:56,ignore\n");
  CHECK_THAT(fileText(dir.file("hosts/kiln-52-54-00-12-34-57")), Catch::StartsWith("52:54:00:12:34:57,set:kiln,"));

  // The database no longer has the node: a new process (the files of the last one) ignores it
  // and deletes the options no node uses, then asks dnsmasq to forget them.
  auto restarted = makeDhcpProvider(config, [&] { ++forgotten; });
  REQUIRE(restarted);
  REQUIRE((*restarted)->syncAll({}));
  CHECK(fileText(dir.file("hosts/kiln-52-54-00-12-34-57")) == "52:54:00:12:34:57,ignore\n");
  CHECK_FALSE(fs::exists(opts));
  CHECK(forgotten == 1);
  // Nothing left to delete: no second reload.
  REQUIRE((*restarted)->syncAll({}));
  CHECK(forgotten == 1);
}

TEST_CASE("syncAll writes the entries of nodes another server prepared", "[dhcp]") {
  test::TempDir dir;
  const Config config = dnsmasqConfigIn(dir);
  auto provider = makeDhcpProvider(config);
  REQUIRE(provider);
  auto node = bootingNode("http-ipxe");
  REQUIRE((*provider)->syncAll({node}));
  CHECK_THAT(fileText(dir.file("hosts/kiln-52-54-00-12-34-56")), Catch::StartsWith("52:54:00:12:34:56,set:kiln,set:kiln-"));
  node.provisionState = "available";
  node.bootTarget = "";
  REQUIRE((*provider)->syncAll({node}));
  CHECK(fileText(dir.file("hosts/kiln-52-54-00-12-34-56")) == "52:54:00:12:34:56,ignore\n");
}

TEST_CASE("a port moved to another booting node keeps that node's entry", "[dhcp]") {
  test::TempDir dir;
  const Config config = dnsmasqConfigIn(dir);
  auto provider = makeDhcpProvider(config);
  REQUIRE(provider);
  auto a = bootingNode();
  REQUIRE((*provider)->syncNode(a));
  auto b = bootingNode("pxe");
  b.uuid = "2be26c0b-03f2-4d2e-ae87-c02d7f33c124";
  REQUIRE((*provider)->syncNode(b));  // the port now belongs to b
  a.macs.clear();
  a.provisionState = "clean failed";
  REQUIRE((*provider)->syncNode(a));
  const auto answer = dhcpAnswerFor(b, config);
  CHECK(fileText(dir.file("hosts/kiln-52-54-00-12-34-56")) ==
        "52:54:00:12:34:56,set:kiln,set:" + answer->tag + "\n");
}

TEST_CASE("no DHCP provider writes nothing", "[dhcp]") {
  auto c = parseConfig("", "t.conf");
  REQUIRE(c);
  auto provider = makeDhcpProvider(*c);
  REQUIRE(provider);
  CHECK((*provider)->name() == "none");
  CHECK((*provider)->syncNode(bootingNode()));
}

TEST_CASE("the managed dnsmasq's configuration and its start-up checks", "[dhcp]") {
  test::TempDir dir;
  Config config = dnsmasqConfigIn(dir);
  config.dnsmasqDhcpRange = "192.0.2.100,192.0.2.150;198.51.100.10,198.51.100.20,255.255.255.0";
  auto text = dnsmasqConfig(config);
  REQUIRE(text);
  for (const char* line : {"port=0\n", "interface=prov0\n", "bind-interfaces\n",
                           "dhcp-range=192.0.2.100,192.0.2.150\n",
                           "dhcp-range=198.51.100.10,198.51.100.20,255.255.255.0\n", "dhcp-option=3\n",
                           "dhcp-ignore=tag:!known\n", "dhcp-userclass=set:ipxe,iPXE\n",
                           "dhcp-vendorclass=set:httpclient,HTTPClient\n", "enable-tftp\n"}) {
    CHECK_THAT(*text, Catch::Contains(line));
  }
  CHECK_THAT(*text, Catch::Contains("dhcp-hostsdir=" + config.dnsmasqHostsDir + "\n"));
  config.dnsmasqIgnoreUnknownHosts = false;
  CHECK_THAT(*dnsmasqConfig(config), !Catch::Contains("dhcp-ignore"));

  // The loopback interface exists everywhere: a local range on it passes, one outside it only
  // with the netmask a DHCP relay's subnet needs.
  config.dnsmasqInterface = "lo";
  config.dnsmasqDhcpRange = "127.0.0.10,127.0.0.20";
  CHECK(checkManagedDnsmasq(config, {"127.0.0.1/255.0.0.0"}));
  config.dnsmasqDhcpRange = "192.0.2.100,192.0.2.150";
  auto outside = checkManagedDnsmasq(config, {"127.0.0.1/255.0.0.0"});
  REQUIRE_FALSE(outside);
  CHECK_THAT(outside.error().message, Catch::Contains("[dnsmasq] dhcp_range") && Catch::Contains("relay"));
  config.dnsmasqDhcpRange = "192.0.2.100,192.0.2.150,255.255.255.0";
  CHECK(checkManagedDnsmasq(config, {"127.0.0.1/255.0.0.0"}));
  config.dnsmasqInterface = "kiln-no-such0";
  auto missing = checkManagedDnsmasq(config, {});
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message, Catch::Contains("[dnsmasq] interface"));
}

}  // namespace kiln::server
