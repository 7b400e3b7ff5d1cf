// Network boot and TLS: [agent] api_ca_file reaches booting agents as kiln.api_ca= on the
// kernel command line of the ipxe script and the pxelinux file; a CA that would overflow the
// x86 kernel command line, or that cannot be read, fails the boot interface's validation.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "server/config.h"
#include "server/drivers/netboot/netboot.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_api.h"
#include "tests/support/test_cas.h"

using kiln::test::Json;
using kiln::test::TempDir;
using kiln::test::TestApi;
using kiln::test::kCaA;
using kiln::test::kCaB;
namespace netboot = kiln::server::netboot;

namespace {

constexpr const char* kMac = "52:54:00:ab:cd:ef";

// The base64 of their DER, as kiln.api_ca= carries them.
const std::string kDerA = kiln::test::derBase64(kCaA);
const std::string kDerB = kiln::test::derBase64(kCaB);

std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void verb(TestApi& api, const std::string& target) {
  REQUIRE(api.put("/v1/nodes/nb/states/provision", {{"target", target}}).status == 202);
  api.settle();
}

void createNode(TestApi& api, const std::string& bootInterface) {
  auto created = api.createNode({{"name", "nb"},
                                 {"boot_interface", bootInterface},
                                 {"deploy_interface", "direct"},
                                 {"instance_info",
                                  {{"image_source", "http://10.0.2.2:8080/img.raw"},
                                   {"image_checksum", std::string(64, 'a')}}}});
  REQUIRE(api.post("/v1/ports", {{"address", kMac}, {"node_uuid", created["uuid"]}}).status == 201);
}

std::string validateReason(TestApi& api) {
  auto boot = api.get("/v1/nodes/nb/validate").json()["boot"];
  return boot["result"] == true ? "" : boot["reason"].get<std::string>();
}

}  // namespace

TEST_CASE("netboot: kiln.api_ca carries the DER of [agent] api_ca_file's certificates in base64",
          "[server][netboot][tls]") {
  TempDir dir("kiln-netboot-tls");
  kiln::server::Config config;
  CHECK(netboot::agentCaParam(config).value() == "");  // unset: nothing added
  config.kernelAppendParams = "console=ttyS0";
  CHECK(netboot::agentAppendParams(config, Json::object()).value() == "console=ttyS0");

  config.agentApiCaFile = dir.file("bundle.pem");
  std::ofstream(config.agentApiCaFile) << "# site CA bundle\nsubject=CN = A\n"
                                       << kCaA << "\n"
                                       << kCaB;
  CHECK(netboot::agentCaParam(config).value() == "kiln.api_ca=" + kDerA + "," + kDerB);
  // Last on the line, after the configured and the node's own arguments.
  CHECK(netboot::agentAppendParams(config, Json::object()).value() ==
        "console=ttyS0 kiln.api_ca=" + kDerA + "," + kDerB);
  CHECK(netboot::agentAppendParams(config, {{"kernel_append_params", ""}}).value() ==
        "kiln.api_ca=" + kDerA + "," + kDerB);

  config.agentApiCaFile = dir.file("missing.pem");
  auto missing = netboot::agentCaParam(config);
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message,
             Catch::Contains("Cannot read [agent] api_ca_file " + dir.file("missing.pem")));
  config.agentApiCaFile = dir.file("key.pem");
  std::ofstream(config.agentApiCaFile)
      << "-----BEGIN PRIVATE KEY-----\nMIGH\n-----END PRIVATE KEY-----\n";
  auto noCert = netboot::agentCaParam(config);
  REQUIRE_FALSE(noCert);
  CHECK_THAT(noCert.error().message, Catch::Contains("holds no PEM certificate"));
  CHECK_FALSE(netboot::agentAppendParams(config, Json::object()));
  // A block cut short (a bad copy and paste), one without its END line, one that is base64 of
  // something else: refused here, rather than by every booting agent.
  const std::string body = kCaB.substr(28, kCaB.size() - 28 - 26);  // between BEGIN and END
  for (const auto& [text, why] : std::vector<std::pair<std::string, std::string>>{
           {kCaA + "-----BEGIN CERTIFICATE-----\n" + body.substr(0, body.size() - 66) +
                "-----END CERTIFICATE-----\n",
            "CERTIFICATE block 2 is not the DER of a certificate"},
           {kCaA + kCaB.substr(0, kCaB.size() - 26), "CERTIFICATE block 2 has no END line"},
           {"-----BEGIN CERTIFICATE-----\naGVsbG8sIHdvcmxkIQ==\n-----END CERTIFICATE-----\n",
            "CERTIFICATE block 1 is not the DER of a certificate"},
           {"-----BEGIN CERTIFICATE-----\nProc-Type: 4,ENCRYPTED\n" + body +
                "-----END CERTIFICATE-----\n",
            "CERTIFICATE block 1 is not base64"}}) {
    config.agentApiCaFile = dir.file("broken.pem");
    std::ofstream(config.agentApiCaFile, std::ios::trunc) << text;
    auto broken = netboot::agentCaParam(config);
    REQUIRE_FALSE(broken);
    CHECK_THAT(broken.error().message, Catch::Contains(why));
  }

  // 2048 bytes at most on an x86 kernel command line, with what the boot loader adds.
  CHECK_FALSE(
      netboot::agentCmdlineTooLong("https://10.0.0.1:6385", "console=ttyS0 kiln.api_ca=" + kDerA));
  CHECK_FALSE(netboot::agentCmdlineTooLong("", std::string(1700, 'x')));
  auto tooLong = netboot::agentCmdlineTooLong("https://10.0.0.1:6385", std::string(1900, 'x'));
  REQUIRE(tooLong);
  CHECK_THAT(*tooLong, Catch::Contains("more than the 2048 an x86 kernel accepts") &&
                           Catch::Contains("api_ca_file") && Catch::Contains("--ca-file"));
}

TEST_CASE("ipxe and pxe hand booting agents the API's CA on the kernel command line",
          "[server][netboot][tls]") {
  TempDir dir("kiln-netboot-tls");
  const std::string kernel = dir.file("kernel");
  const std::string ramdisk = dir.file("initramfs");
  std::ofstream(kernel) << "K";
  std::ofstream(ramdisk) << "R";
  const std::string ca = dir.file("ca.pem");
  std::ofstream(ca) << kCaA;
  const std::string tftp = dir.file("tftp");
  std::filesystem::create_directory(tftp);
  const std::string common =
      "[conductor]\ndeploy_kernel = " + kernel + "\ndeploy_ramdisk = " + ramdisk +
      "\nfile_url_allowed_paths = " + dir.path.string() + "\n[agent]\napi_ca_file = " + ca + "\n";

  SECTION("ipxe") {
    TestApi api(common);
    createNode(api, "ipxe");
    CHECK(validateReason(api) == "");
    verb(api, "manage");
    verb(api, "provide");
    api.version = "";
    auto script = api.call("GET", "/boot/52-54-00-ab-cd-ef.ipxe");
    REQUIRE(script.status == 200);
    CHECK_THAT(script.body, Catch::Contains("kiln.api_url=http://kiln.test:6385 ") &&
                                Catch::Contains(" cryptomgr.notests kiln.api_ca=" + kDerA +
                                                " || goto failed\n"));
  }
  SECTION("pxe") {
    TestApi api(common +
                "[conductor]\napi_url = https://10.0.0.1:6385\n[pxe]\ntftp_root = " + tftp + "\n");
    createNode(api, "pxe");
    CHECK(validateReason(api) == "");
    verb(api, "manage");
    verb(api, "provide");
    // UEFI (the default boot mode): GRUB's configuration carries the CA last as well.
    const std::string config = readText(tftp + "/grub.cfg-01-52-54-00-ab-cd-ef");
    CHECK_THAT(config,
               Catch::Contains("kiln.api_url=https://10.0.0.1:6385 ") &&
                   Catch::Contains(" cryptomgr.notests kiln.api_ca=" + kDerA + "\n    initrd "));
  }
}

TEST_CASE(
    "netboot validation fails for an unreadable CA or a kernel command line that would not fit",
    "[server][netboot][tls]") {
  TempDir dir("kiln-netboot-tls");
  const std::string kernel = dir.file("kernel");
  const std::string ramdisk = dir.file("initramfs");
  std::ofstream(kernel) << "K";
  std::ofstream(ramdisk) << "R";
  const std::string images = "[conductor]\ndeploy_kernel = " + kernel +
                             "\ndeploy_ramdisk = " + ramdisk +
                             "\nfile_url_allowed_paths = " + dir.path.string() + "\n";

  SECTION("missing CA file") {
    TestApi api(images + "[agent]\napi_ca_file = " + dir.file("gone.pem") + "\n");
    createNode(api, "ipxe");
    CHECK_THAT(validateReason(api), Catch::Contains("Cannot read [agent] api_ca_file"));
    // Nothing boots with it: cleaning fails while preparing the ramdisk boot.
    verb(api, "manage");
    verb(api, "provide");
    auto node = api.get("/v1/nodes/nb").json();
    CHECK(node["provision_state"] == "clean failed");
    CHECK_THAT(node["last_error"].get<std::string>(), Catch::Contains("[agent] api_ca_file"));
  }
  SECTION("a bundle too large for 2048 bytes") {
    // Four EC CAs: about 2,200 bytes of base64 (an RSA-4096 CA alone takes 1,750 or more).
    const std::string ca = dir.file("big.pem");
    std::ofstream(ca) << kCaA << kCaB << kCaA << kCaB;
    TestApi api(images + "[agent]\napi_ca_file = " + ca + "\n");
    createNode(api, "ipxe");
    CHECK_THAT(validateReason(api), Catch::Contains("an x86 kernel accepts"));
    // Three fit (about 1,650 bytes, plus about 100 of default arguments).
    std::ofstream(ca, std::ios::trunc) << kCaA << kCaB << kCaA;
    CHECK(validateReason(api) == "");
  }
}
