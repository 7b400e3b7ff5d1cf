// The ramdisk and autodetect deploy interfaces (server/drivers/ramdisk/ramdisk_deploy.h) on
// fake-hardware nodes booting with ipxe or pxe: validation, the deployment to active, the iPXE
// script and the pxelinux/GRUB files that boot the instance's ramdisk, undeploy.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "server/config.h"
#include "server/drivers/driver_registry.h"
#include "server/drivers/ramdisk/ramdisk_deploy.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TempDir;
using kiln::test::TestApi;
namespace fs = std::filesystem;
namespace ramdisk = kiln::server::ramdisk;

namespace {

constexpr const char* kMac = "52:54:00:ab:cd:ef";
constexpr const char* kScript = "/boot/52-54-00-ab-cd-ef.ipxe";

std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The agent's images, an instance kernel and initramfs, and a TFTP root in a temporary
/// directory, and kiln-server's configuration using them.
struct Files {
  Files() : dir("kiln-ramdisk-deploy") {
    std::ofstream(dir.file("agent-kernel")) << "AK";
    std::ofstream(dir.file("agent-initramfs")) << "AR";
    std::ofstream(dir.file("vmlinuz")) << "INSTANCE-KERNEL";
    std::ofstream(dir.file("initrd")) << "INSTANCE-INITRD";
    fs::create_directory(tftp);
  }
  std::string config() const {
    return "[conductor]\ndeploy_kernel = " + dir.file("agent-kernel") +
           "\ndeploy_ramdisk = " + dir.file("agent-initramfs") +
           "\nfile_url_allowed_paths = " + dir.path.string() +
           "\napi_url = http://10.0.0.1:6385/\n[pxe]\ntftp_root = " + tftp + "\n";
  }
  TempDir dir;
  const std::string tftp = dir.file("tftp");
};

/// A fake-hardware node "rd" with one port, without automated cleaning (undeploy goes straight
/// back to available), moved to available.
std::string availableNode(TestApi& api, const std::string& boot, const std::string& deploy,
                          const Json& instanceInfo, Json extra = Json::object()) {
  extra["name"] = "rd";
  extra["boot_interface"] = boot;
  extra["deploy_interface"] = deploy;
  extra["automated_clean"] = false;
  extra["instance_info"] = instanceInfo;
  const std::string uuid = api.createNode(extra)["uuid"];
  REQUIRE(api.post("/v1/ports", {{"address", kMac}, {"node_uuid", uuid}}).status == 201);
  REQUIRE(api.provision("rd", "manage").status == 202);
  REQUIRE(api.provision("rd", "provide").status == 202);
  REQUIRE(api.get("/v1/nodes/rd").json()["provision_state"] == "available");
  return uuid;
}

Json nodeJson(TestApi& api) { return api.get("/v1/nodes/rd").json(); }

std::string ipxeScript(TestApi& api) {
  const std::string version = api.version;
  api.version = "";  // iPXE sends no microversion
  auto r = api.call("GET", kScript);
  api.version = version;
  REQUIRE(r.status == 200);
  return r.body;
}

/// PUT provision "active" and the fault of its answer, which must be a 400.
std::string refusedDeploy(TestApi& api) {
  auto r = api.put("/v1/nodes/rd/states/provision", {{"target", "active"}});
  INFO(r.body);
  CHECK(r.status == 400);
  api.settle();
  CHECK(nodeJson(api)["provision_state"] == "available");
  return r.fault();
}

}  // namespace

TEST_CASE(
    "ramdisk deploy with ipxe boots the instance kernel and ramdisk, reaches active, and "
    "undeploy returns the node to its disk",
    "[server][ramdisk_deploy][netboot]") {
  Files files;
  TestApi api(files.config());
  const std::string uuid = availableNode(api, "ipxe", "ramdisk",
                                         {{"kernel", files.dir.file("vmlinuz")},
                                          {"ramdisk", "http://images.example/initrd?x=1"},
                                          {"ramdisk_kernel_arguments", "ip=dhcp rd.live.image"}});
  auto validate = api.get("/v1/nodes/rd/validate").json();
  INFO(validate.dump());
  CHECK(validate["deploy"]["result"] == true);
  CHECK(validate["boot"]["result"] == true);
  // Not deployed yet: the local disk.
  CHECK_THAT(ipxeScript(api), Catch::Contains("sanboot") && !Catch::Contains("kernel "));

  REQUIRE(api.provision("rd", "active").status == 202);
  auto node = nodeJson(api);
  INFO(node.dump());
  REQUIRE(node["provision_state"] == "active");
  CHECK(node["power_state"] == "power on");
  CHECK(node["driver_internal_info"]["boot_target"] == "ramdisk");
  // One deploy step, and no agent was booted for it.
  CHECK(node["driver_internal_info"]["deploy_steps"].size() == 1);
  CHECK_FALSE(node["driver_internal_info"].contains("agent_secret_token"));

  // The MAC's script boots the instance's kernel (local: served by kiln-server) and initramfs
  // (a URL: as it is) with Ironic's arguments, the configured ones and the node's own.
  const std::string script = ipxeScript(api);
  CHECK_THAT(script,
             Catch::Contains("kernel http://kiln.test:6385/boot/" + uuid +
                             "/instance_kernel root=/dev/ram0 text console=tty0 ") &&
                 Catch::Contains(" ip=dhcp rd.live.image initrd=ramdisk || goto failed") &&
                 Catch::Contains("initrd --name ramdisk http://images.example/initrd?x=1 ") &&
                 !Catch::Contains("kiln.api_url") && !Catch::Contains("agent-kernel"));
  api.version = "";
  auto kernel = api.call("GET", "/boot/" + uuid + "/instance_kernel");
  CHECK(kernel.status == 200);
  CHECK(kernel.body == "INSTANCE-KERNEL");
  CHECK(api.call("GET", "/boot/" + uuid + "/instance_ramdisk").status == 404);  // a URL
  api.version = "1.78";

  // The node's kernel_append_params in instance_info replace the configured ones (Ironic's
  // order: instance_info, driver_info, [pxe] kernel_append_params).
  REQUIRE(api.patch("/v1/nodes/rd", Json::array({{{"op", "add"},
                                                  {"path", "/instance_info/kernel_append_params"},
                                                  {"value", "nomodeset"}}}))
              .status == 200);
  CHECK_THAT(ipxeScript(api), Catch::Contains("root=/dev/ram0 text nomodeset ip=dhcp") &&
                                  !Catch::Contains("console=tty0"));

  REQUIRE(api.provision("rd", "deleted").status == 202);
  node = nodeJson(api);
  CHECK(node["provision_state"] == "available");
  CHECK(node["power_state"] == "power off");
  CHECK_FALSE(node["driver_internal_info"].contains("boot_target"));
  CHECK_THAT(ipxeScript(api), Catch::Contains("sanboot") && !Catch::Contains("kernel "));
  api.version = "";
  CHECK(api.call("GET", "/boot/" + uuid + "/instance_kernel").status == 404);
}

TEST_CASE("ramdisk deploy with ipxe sanboots instance_info boot_iso",
          "[server][ramdisk_deploy][netboot]") {
  Files files;
  TestApi api(files.config());
  // boot_iso wins over kernel and ramdisk, as in Ironic.
  availableNode(api, "ipxe", "ramdisk",
                {{"boot_iso", "https://images.example/live.iso"}, {"kernel", "http://x/k"}});
  REQUIRE(api.provision("rd", "active").status == 202);
  REQUIRE(nodeJson(api)["provision_state"] == "active");
  const std::string script = ipxeScript(api);
  CHECK_THAT(script, Catch::Contains("sanboot https://images.example/live.iso || goto failed") &&
                         !Catch::Contains("kernel "));
}

TEST_CASE("ramdisk deploy refuses bad instance_info with a 400, at validate and at deploy time",
          "[server][ramdisk_deploy][netboot]") {
  Files files;
  TestApi api(files.config());
  availableNode(api, "ipxe", "ramdisk", Json::object());
  auto set = [&](const Json& info) {
    REQUIRE(
        api.patch("/v1/nodes/rd",
                  Json::array({{{"op", "replace"}, {"path", "/instance_info"}, {"value", info}}}))
            .status == 200);
  };
  auto deployReason = [&] {
    auto v = api.get("/v1/nodes/rd/validate").json();
    CHECK(v["deploy"]["result"] == false);
    return v["deploy"]["reason"].is_string() ? v["deploy"]["reason"].get<std::string>() : "";
  };

  // Nothing to boot (image_source is not used by the ramdisk deploy).
  set({{"image_source", "http://images.example/disk.img"}});
  CHECK_THAT(deployReason(),
             Catch::Contains("is missing the following properties: kernel, ramdisk"));
  CHECK_THAT(refusedDeploy(api), Catch::Contains("Failed to validate deploy for node") &&
                                     Catch::Contains("kernel, ramdisk"));
  set({{"kernel", "http://x/k"}});
  CHECK_THAT(refusedDeploy(api),
             Catch::Contains("Image None is missing the following properties: ramdisk"));

  // Neither a URL nor a local file, or a file outside file_url_allowed_paths.
  set({{"kernel", "images/vmlinuz"}, {"ramdisk", "http://x/r"}});
  CHECK_THAT(refusedDeploy(api),
             Catch::Contains("instance_info.kernel 'images/vmlinuz' is neither an "
                             "http(s) URL nor a local file"));
  set({{"kernel", "ftp://x/k"}, {"ramdisk", "http://x/r"}});
  CHECK_THAT(refusedDeploy(api), Catch::Contains("is neither an http(s) URL nor a local file"));
  set({{"kernel", "/srv/elsewhere/vmlinuz"}, {"ramdisk", "http://x/r"}});
  CHECK_THAT(refusedDeploy(api), Catch::Contains("file_url_allowed_paths"));

  // What would change the boot script: a newline in the arguments, a space in a URL.
  set({{"kernel", "http://x/k"},
       {"ramdisk", "http://x/r"},
       {"ramdisk_kernel_arguments", "quiet\nchain http://evil/"}});
  CHECK_THAT(refusedDeploy(api),
             Catch::Contains("ramdisk_kernel_arguments must not contain control"));
  set({{"kernel", "http://x/k ||"}, {"ramdisk", "http://x/r"}});
  CHECK_THAT(refusedDeploy(api), Catch::Contains("must not contain whitespace"));
  set({{"kernel", "http://x/k"}, {"ramdisk", "http://x/r"}, {"ramdisk_kernel_arguments", 7}});
  CHECK_THAT(refusedDeploy(api), Catch::Contains("ramdisk_kernel_arguments must be a string"));

  // boot_iso with image_source (Ironic's rule), and as a local file with ipxe (sanboot needs
  // a URL).
  set({{"boot_iso", "http://x/live.iso"}, {"image_source", "http://x/disk.img"}});
  CHECK_THAT(refusedDeploy(api), Catch::Contains("An 'image_source' and 'boot_iso' parameter may "
                                                 "not be specified at the same time"));
  set({{"boot_iso", files.dir.file("vmlinuz")}});
  CHECK_THAT(refusedDeploy(api), Catch::Contains("must be an http(s) URL"));

  // A boot interface without Ironic's ramdisk_boot capability.
  set({{"kernel", "http://x/k"}, {"ramdisk", "http://x/r"}});
  REQUIRE(
      api.patch("/v1/nodes/rd",
                Json::array({{{"op", "replace"}, {"path", "/boot_interface"}, {"value", "fake"}}}))
          .status == 200);
  CHECK_THAT(refusedDeploy(api), Catch::Contains("must have the `ramdisk_boot` capability"));
}

TEST_CASE("ramdisk deploy with pxe writes pxelinux and GRUB files for the instance's ramdisk",
          "[server][ramdisk_deploy][netboot]") {
  Files files;
  TestApi api(files.config());
  const bool bios = GENERATE(true, false);
  INFO((bios ? "bios" : "uefi"));
  Json extra = Json::object();
  if (bios) extra["properties"] = {{"capabilities", "boot_mode:bios"}};
  const std::string uuid = availableNode(api, "pxe", "ramdisk",
                                         {{"kernel", files.dir.file("vmlinuz")},
                                          {"ramdisk", "file://" + files.dir.file("initrd")},
                                          {"ramdisk_kernel_arguments", "ip=dhcp"}},
                                         extra);
  REQUIRE(api.provision("rd", "active").status == 202);
  auto node = nodeJson(api);
  INFO(node.dump());
  REQUIRE(node["provision_state"] == "active");
  CHECK(node["driver_internal_info"]["boot_target"] == "ramdisk");
  const std::string& tftp = files.tftp;
  CHECK(readText(tftp + "/" + uuid + "/kernel") == "INSTANCE-KERNEL");
  CHECK(readText(tftp + "/" + uuid + "/ramdisk") == "INSTANCE-INITRD");
  std::vector<std::string> configs;
  if (bios) {
    configs = {tftp + "/pxelinux.cfg/01-52-54-00-ab-cd-ef"};
    CHECK_THAT(readText(configs[0]),
               Catch::Contains("kernel " + uuid + "/kernel\n") &&
                   Catch::Contains("append initrd=" + uuid +
                                   "/ramdisk root=/dev/ram0 text console=tty0") &&
                   Catch::EndsWith(" ip=dhcp\n") && !Catch::Contains("kiln.api_url"));
    CHECK_FALSE(fs::exists(tftp + "/grub.cfg-01-52-54-00-ab-cd-ef"));
  } else {
    configs = {tftp + "/grub.cfg-01-52-54-00-ab-cd-ef", tftp + "/52:54:00:ab:cd:ef.conf"};
    for (const auto& config : configs) {
      CHECK_THAT(readText(config),
                 Catch::Contains("linux /" + uuid + "/kernel root=/dev/ram0 text ") &&
                     Catch::Contains(" ip=dhcp\n") &&
                     Catch::Contains("initrd /" + uuid + "/ramdisk\n"));
    }
  }

  REQUIRE(api.provision("rd", "deleted").status == 202);
  CHECK(nodeJson(api)["provision_state"] == "available");
  for (const auto& config : configs) CHECK_FALSE(fs::exists(config));
  CHECK_FALSE(fs::exists(tftp + "/" + uuid));

  // pxe cannot boot an ISO, and serves files by TFTP only.
  REQUIRE(api.patch("/v1/nodes/rd", Json::array({{{"op", "replace"},
                                                  {"path", "/instance_info"},
                                                  {"value", {{"boot_iso", "http://x/live.iso"}}}}}))
              .status == 200);
  CHECK_THAT(refusedDeploy(api),
             Catch::Contains("The pxe boot interface cannot boot instance_info.boot_iso"));
  REQUIRE(
      api.patch("/v1/nodes/rd",
                Json::array({{{"op", "replace"},
                              {"path", "/instance_info"},
                              {"value", {{"kernel", "http://x/k"}, {"ramdisk", "http://x/r"}}}}}))
          .status == 200);
  CHECK_THAT(refusedDeploy(api), Catch::Contains("must be a local file"));
}

TEST_CASE("autodetect picks ramdisk or direct per deployment and switches back after cleaning",
          "[server][ramdisk_deploy][autodetect]") {
  Files files;
  TestApi api(files.config());
  SECTION("a live ramdisk (Ironic's sentinel) deploys with ramdisk") {
    availableNode(
        api, "ipxe", "autodetect",
        {{"kernel", "http://x/k"}, {"ramdisk", "http://x/r"}, {"ironic_ramdisk_deploy", true}});
    CHECK(api.get("/v1/nodes/rd/validate").json()["deploy"]["result"] == true);
    REQUIRE(api.provision("rd", "active").status == 202);
    auto node = nodeJson(api);
    INFO(node.dump());
    REQUIRE(node["provision_state"] == "active");
    CHECK(node["deploy_interface"] == "ramdisk");
    CHECK(node["driver_internal_info"]["original_deploy_interface"] == "autodetect");
    CHECK(node["driver_internal_info"]["boot_target"] == "ramdisk");
    CHECK_THAT(ipxeScript(api), Catch::Contains("kernel http://x/k root=/dev/ram0 text"));
    // Undeploy and (here, skipped) cleaning: autodetect again.
    REQUIRE(api.provision("rd", "deleted").status == 202);
    node = nodeJson(api);
    CHECK(node["provision_state"] == "available");
    CHECK(node["deploy_interface"] == "autodetect");
    CHECK_FALSE(node["driver_internal_info"].contains("original_deploy_interface"));
  }
  SECTION("a disk image deploys with direct") {
    availableNode(
        api, "ipxe", "autodetect",
        {{"image_source", "http://x/disk.img"}, {"image_checksum", std::string(64, 'a')}});
    REQUIRE(api.provision("rd", "active").status == 202);
    auto node = nodeJson(api);
    INFO(node.dump());
    CHECK(node["deploy_interface"] == "direct");
    CHECK(node["provision_state"] == "wait call-back");  // the agent boots to write the image
    CHECK(node["driver_internal_info"]["boot_target"] == "agent");
  }
  SECTION("kernel and ramdisk without the sentinel are a partition image: direct") {
    availableNode(api, "ipxe", "autodetect", {{"kernel", "http://x/k"}, {"ramdisk", "http://x/r"}});
    auto r = api.put("/v1/nodes/rd/states/provision", {{"target", "active"}});
    CHECK(r.status == 400);  // direct validates: no image_source
    CHECK_THAT(r.fault(), Catch::Contains("image_source"));
    api.settle();
    auto node = nodeJson(api);
    CHECK(node["deploy_interface"] == "autodetect");  // a refused request changes nothing
    CHECK(node["provision_state"] == "available");
  }
}

TEST_CASE("autodetect's choice follows Ironic's supports_deploy",
          "[server][ramdisk_deploy][autodetect]") {
  const std::vector<std::string> order = {"ramdisk", "direct"};
  CHECK(ramdisk::detectDeployInterface(
            order, {{"boot_iso", "http://x/i.iso"}, {"ironic_ramdisk_deploy", true}}) == "ramdisk");
  CHECK(ramdisk::detectDeployInterface(
            order, {{"kernel", "k"}, {"ramdisk", "r"}, {"ironic_ramdisk_deploy", "True"}}) ==
        "ramdisk");
  CHECK(ramdisk::detectDeployInterface(order, {{"boot_iso", "http://x/i.iso"}}) == "direct");
  CHECK(ramdisk::detectDeployInterface(order, {{"kernel", "k"}, {"ironic_ramdisk_deploy", true}}) ==
        "direct");
  CHECK(ramdisk::detectDeployInterface(order, {{"boot_iso", ""}, {"ironic_ramdisk_deploy", 1}}) ==
        "direct");
  CHECK(ramdisk::detectDeployInterface(order, {{"image_source", "http://x/d.img"}}) == "direct");
  // None supports it: the last one.
  CHECK(ramdisk::detectDeployInterface({"ramdisk"}, Json::object()) == "ramdisk");

  // Every interface autodetect may switch to must be enabled (start-up fails otherwise).
  kiln::server::Config config;
  config.enabledHardwareTypes = {"fake-hardware"};
  config.enabledInterfaces[static_cast<size_t>(kiln::server::InterfaceType::Deploy)] =
      std::vector<std::string>{"autodetect", "direct"};
  auto registry = kiln::server::DriverRegistry::create(config);
  REQUIRE_FALSE(registry);
  CHECK_THAT(registry.error().message,
             Catch::Contains("'ramdisk' is configured in [DEFAULT] autodetect_deploy_interfaces"));
  config.autodetectDeployInterfaces = {"direct"};
  CHECK(kiln::server::DriverRegistry::create(config));
}

TEST_CASE("the ramdisk and autodetect deploy interfaces are in the driver API",
          "[server][ramdisk_deploy][drivers]") {
  TestApi api;
  auto driver = api.get("/v1/drivers/fake-hardware?detail=true").json();
  INFO(driver.dump());
  const auto enabled = driver["enabled_deploy_interfaces"].get<std::vector<std::string>>();
  CHECK(std::find(enabled.begin(), enabled.end(), "ramdisk") != enabled.end());
  CHECK(std::find(enabled.begin(), enabled.end(), "autodetect") != enabled.end());
  CHECK(driver["default_deploy_interface"] == "fake");
  CHECK(api.get("/v1/drivers/fake-hardware/properties").status == 200);
  // A node may name them.
  auto created = api.createNode({{"deploy_interface", "ramdisk"}});
  CHECK(created["deploy_interface"] == "ramdisk");
}
