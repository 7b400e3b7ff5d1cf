// Virtual media through the test BMC, the agent ISO built with Debian's real tools, and the
// redfish-virtual-media boot interface over both (its ISO builder replaced by a fake runner).
#include "server/drivers/redfish/redfish_virtual_media.h"

#include <filesystem>
#include <fstream>

#include "server/drivers/ramdisk/ramdisk_deploy.h"
#include "server/drivers/redfish/redfish_management.h"
#include "server/drivers/vmedia/boot_iso.h"
#include "server/drivers/vmedia/vmedia_boot.h"
#include "shared/core/file.h"
#include "tests/server/drivers/redfish/redfish_fixture.h"
#include "tests/support/temp_dir.h"

using namespace kiln;
using namespace kiln::server;
using kiln::test::RedfishFixture;
using kiln::test::RedfishSystemState;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

void withManager(RedfishFixture& f, bool actions = true) {
  f.bmc.updateSystem("1", [&](RedfishSystemState& s) {
    s.manager = true;
    s.cdActions = actions;
  });
}

Result<VirtualMediaSlot> slotOf(RedfishFixture& f, RedfishTarget& target) {
  const json system = KILN_TRY(target.client->get(target.systemPath));
  return findVirtualMediaSlot(target, system, "CD");
}

/// Stands in for grub-mkstandalone, mkfs.vfat, mtools and xorriso: records each command and
/// writes the files they would (GRUB's -o, xorriso's -o).
class FakeIsoTools final : public CommandRunner {
 public:
  std::vector<std::vector<std::string>> commands;
  Result<CommandOutput> run(const Command& command) override {
    commands.push_back(command.argv);
    for (size_t i = 0; i + 1 < command.argv.size(); ++i) {
      if (command.argv[i] == "-o") std::ofstream(command.argv[i + 1]) << "built by " << command.argv[0];
    }
    return CommandOutput{};
  }
};

}  // namespace

TEST_CASE("virtual media: find the CD slot, insert, eject", "[server][drivers][redfish][vmedia]") {
  RedfishFixture f;
  withManager(f);
  auto task = f.task();
  auto target = connectRedfish(f.http, task);
  REQUIRE(target);
  auto slot = slotOf(f, *target);
  REQUIRE(slot);
  CHECK(slot->path == "/redfish/v1/Managers/1/VirtualMedia/Cd");
  CHECK_FALSE(virtualMediaInserted(slot->resource));
  REQUIRE(insertVirtualMedia(*target, *slot, "http://kiln.example/v1/vmedia/a.iso"));
  CHECK(f.bmc.system().cdImage == "http://kiln.example/v1/vmedia/a.iso");
  CHECK(f.bmc.system().cdInserted);
  const auto inserts = f.bmc.requests("POST", "/redfish/v1/Managers/1/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia");
  REQUIRE(inserts.size() == 1);
  CHECK(json::parse(inserts[0].body) ==
        json{{"Image", "http://kiln.example/v1/vmedia/a.iso"}, {"Inserted", true}, {"WriteProtected", true}});

  // Inserting again ejects the first medium before.
  slot = slotOf(f, *target);
  REQUIRE(slot);
  REQUIRE(insertVirtualMedia(*target, *slot, "http://kiln.example/v1/vmedia/b.iso"));
  CHECK(f.bmc.system().cdHistory ==
        std::vector<std::string>{"http://kiln.example/v1/vmedia/a.iso", "eject", "http://kiln.example/v1/vmedia/b.iso"});
  slot = slotOf(f, *target);
  REQUIRE(slot);
  REQUIRE(ejectVirtualMedia(*target, *slot));
  CHECK_FALSE(f.bmc.system().cdInserted);
  // Nothing in the slot: no request.
  slot = slotOf(f, *target);
  REQUIRE(slot);
  f.bmc.clearRequests();
  REQUIRE(ejectVirtualMedia(*target, *slot));
  CHECK(f.bmc.requests().empty());
}

TEST_CASE("virtual media: BMCs without the actions get a PATCH", "[server][drivers][redfish][vmedia]") {
  RedfishFixture f;
  withManager(f, false);
  auto task = f.task();
  auto target = connectRedfish(f.http, task);
  REQUIRE(target);
  auto slot = slotOf(f, *target);
  REQUIRE(slot);
  REQUIRE(insertVirtualMedia(*target, *slot, "http://kiln.example/x.iso"));
  const auto patches = f.bmc.requests("PATCH", "/redfish/v1/Managers/1/VirtualMedia/Cd");
  REQUIRE(patches.size() == 1);
  CHECK(json::parse(patches[0].body) ==
        json{{"Image", "http://kiln.example/x.iso"}, {"Inserted", true}, {"WriteProtected", true}});
  slot = slotOf(f, *target);
  REQUIRE(slot);
  REQUIRE(ejectVirtualMedia(*target, *slot));
  CHECK(json::parse(f.bmc.requests("PATCH", "/redfish/v1/Managers/1/VirtualMedia/Cd").back().body) ==
        json{{"Image", nullptr}, {"Inserted", false}});
  CHECK_FALSE(f.bmc.system().cdInserted);
}

TEST_CASE("virtual media: a System without a manager has no slot", "[server][drivers][redfish][vmedia]") {
  RedfishFixture f;
  auto task = f.task();
  auto target = connectRedfish(f.http, task);
  REQUIRE(target);
  auto slot = slotOf(f, *target);
  REQUIRE_FALSE(slot);
  CHECK(slot.error().code == ErrorCode::InvalidArgument);
  CHECK_THAT(slot.error().message, Catch::Contains("no virtual media slot for CD"));
}

TEST_CASE("the agent ISO's boot configurations", "[server][drivers][vmedia]") {
  const std::string cmdline = "kiln.api_url=http://10.0.2.2:6385 console=ttyS0,115200n8";
  const std::string iso = vmedia::isolinuxConfig(cmdline);
  CHECK_THAT(iso, Catch::Contains("append initrd=/initrd " + cmdline + "\n"));
  CHECK_THAT(iso, Catch::Contains("kernel /vmlinuz\n"));
  const std::string grub = vmedia::grubIsoConfig("kiln-vmedia-x", cmdline);
  CHECK_THAT(grub, Catch::Contains("search --no-floppy --set=root --file /kiln-vmedia-x\n"));
  CHECK_THAT(grub, Catch::Contains("linux /vmlinuz " + cmdline + "\n"));
  CHECK_THAT(grub, Catch::Contains("initrd /initrd\n"));
}

TEST_CASE("the agent ISO, built with Debian's tools, boots from BIOS and UEFI", "[server][drivers][vmedia]") {
  test::TempDir dir("kiln-iso");
  REQUIRE(writeFile(dir.file("kernel"), std::string(4096, 'K')));
  REQUIRE(writeFile(dir.file("ramdisk=odd name"), std::string(8192, 'R')));
  ProcessCommandRunner runner;
  vmedia::BootIsoSpec spec{dir.file("kernel"), dir.file("ramdisk=odd name"), "kiln.api_url=http://h:1 x=y",
                           "kiln-vmedia-test", dir.file("agent.iso")};
  auto built = vmedia::buildBootIso(runner, spec);
  REQUIRE(built);
  CHECK_FALSE(fs::exists(dir.file("agent.iso.partial")));
  // The El Torito catalogue: a BIOS (ISOLINUX) and a UEFI entry.
  Command report{.argv = {"xorriso", "-indev", dir.file("agent.iso"), "-report_el_torito", "plain"}};
  auto out = runner.run(report);
  REQUIRE(out);
  REQUIRE(out->exitCode == 0);
  CHECK_THAT(out->out, Catch::Contains("BIOS"));
  CHECK_THAT(out->out, Catch::Contains("UEFI"));
  // The files, with the command line baked in.
  Command extract{.argv = {"xorriso", "-osirrox", "on", "-indev", dir.file("agent.iso"), "-extract", "/",
                           dir.file("tree")}};
  out = runner.run(extract);
  REQUIRE(out);
  REQUIRE(out->exitCode == 0);
  CHECK(readFile(dir.file("tree/vmlinuz")) == std::optional<std::string>(std::string(4096, 'K')));
  CHECK(readFile(dir.file("tree/initrd")) == std::optional<std::string>(std::string(8192, 'R')));
  CHECK(fs::exists(dir.file("tree/kiln-vmedia-test")));
  CHECK(fs::exists(dir.file("tree/efiboot.img")));
  CHECK_THAT(readFile(dir.file("tree/isolinux/isolinux.cfg")).value_or(""),
             Catch::Contains("append initrd=/initrd kiln.api_url=http://h:1 x=y"));
  // A marker that is not a plain name is refused before any tool runs.
  spec.marker = "../x";
  auto refused = vmedia::buildBootIso(runner, spec);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::InvalidArgument);
}

TEST_CASE("ISO names and URLs", "[server][drivers][vmedia]") {
  const std::string name = "boot-1be26c0b-03f2-4d2e-ae87-c02d7f33c123-" + std::string(43, 'a') + ".iso";
  CHECK(vmedia::isBootIsoName(name));
  CHECK_FALSE(vmedia::isBootIsoName("boot-../../etc/passwd.iso"));
  CHECK_FALSE(vmedia::isBootIsoName(name.substr(1)));
  std::string dotted = name;
  dotted[50] = '.';
  CHECK_FALSE(vmedia::isBootIsoName(dotted));
  Config config;
  CHECK(vmedia::bootIsoUrl(config, name).empty());
  config.apiUrl = "http://10.0.2.2:6385";
  CHECK(vmedia::bootIsoUrl(config, name) == "http://10.0.2.2:6385/v1/vmedia/" + name);
  config.externalHttpUrl = "http://files.example:8080/httpboot";
  CHECK(vmedia::bootIsoUrl(config, name) == "http://files.example:8080/httpboot/" + name);
}

TEST_CASE("the redfish-virtual-media boot interface", "[server][drivers][redfish][vmedia]") {
  RedfishFixture f;
  withManager(f);
  test::TempDir dir("kiln-vmedia-boot");
  fs::create_directories(dir.file("images"));
  REQUIRE(writeFile(dir.file("images/kernel"), "K"));
  REQUIRE(writeFile(dir.file("images/ramdisk"), "R"));
  Config config;
  config.fileUrlAllowedPaths = {dir.file("images")};
  config.deployKernel = dir.file("images/kernel");
  config.deployRamdisk = dir.file("images/ramdisk");
  config.httpRoot = dir.file("httpboot");
  config.apiUrl = "http://10.0.2.2:6385";
  config.externalHttpUrl = "http://127.0.0.1:6385/v1/vmedia";
  auto tools = std::make_shared<FakeIsoTools>();
  auto interfaces = vmedia::makeVirtualMediaInterfaces(f.http, tools);
  auto* boot = dynamic_cast<BootInterface*>(interfaces.front().get());
  REQUIRE(boot);
  CHECK(boot->name() == "redfish-virtual-media");
  RedfishManagement management(f.http);
  NodeDriver driver;
  driver.management = &management;
  driver.boot = boot;
  auto task = f.task();
  task.config = &config;
  task.driver = &driver;
  CHECK(boot->validate(task) == std::nullopt);

  REQUIRE(boot->prepareRamdisk(task));
  const std::string name = task.internalInfo.value("vmedia_boot_iso", "");
  REQUIRE(vmedia::isBootIsoName(name));
  CHECK(fs::exists(dir.file("httpboot/" + name)));
  CHECK(f.bmc.system().cdImage == "http://127.0.0.1:6385/v1/vmedia/" + name);
  CHECK(f.bmc.system().bootTarget == "Cd");
  CHECK(f.bmc.system().bootEnabled == "Once");
  CHECK(task.internalInfo["boot_target"] == "agent");
  // The ISO carries the agent's API URL and the configured kernel arguments.
  bool sawXorriso = false;
  for (const auto& argv : tools->commands) {
    if (argv.front() == "xorriso") sawXorriso = true;
  }
  CHECK(sawXorriso);

  REQUIRE(boot->prepareInstance(task));
  CHECK_FALSE(f.bmc.system().cdInserted);
  CHECK_FALSE(fs::exists(dir.file("httpboot/" + name)));
  CHECK_FALSE(task.internalInfo.contains("vmedia_boot_iso"));
  CHECK(f.bmc.system().bootTarget == "Hdd");
  CHECK(f.bmc.system().bootEnabled == "Continuous");
  CHECK(task.internalInfo["boot_target"] == "disk");

  SECTION("a deploy_iso URL goes to the BMC as it is, nothing is built") {
    tools->commands.clear();
    auto withIso = f.task({{"deploy_iso", "http://images.example/agent.iso"}});
    withIso.config = &config;
    withIso.driver = &driver;
    REQUIRE(boot->prepareRamdisk(withIso));
    CHECK(f.bmc.system().cdImage == "http://images.example/agent.iso");
    CHECK(tools->commands.empty());
    CHECK_FALSE(withIso.internalInfo.contains("vmedia_boot_iso"));
    REQUIRE(boot->cleanUpRamdisk(withIso));
    CHECK_FALSE(f.bmc.system().cdInserted);
  }
  SECTION("validation names what is missing") {
    Config bare = config;
    bare.apiUrl.clear();
    bare.externalHttpUrl.clear();
    task.config = &bare;
    auto problem = boot->validate(task);
    REQUIRE(problem);
    CHECK_THAT(*problem, Catch::Contains("api_url"));
    bare = config;
    bare.deployKernel = "http://images.example/kernel";
    problem = boot->validate(task);
    REQUIRE(problem);
    CHECK_THAT(*problem, Catch::Contains("deploy_iso"));
  }
  SECTION("a BMC without virtual media fails the preparation") {
    f.bmc.updateSystem("1", [](RedfishSystemState& s) { s.manager = false; });
    auto failed = boot->prepareRamdisk(task);
    REQUIRE_FALSE(failed);
    CHECK_THAT(failed.error().message, Catch::Contains("no virtual media slot"));
  }
}

TEST_CASE(
    "the redfish-virtual-media boot interface boots a ramdisk deployment's boot_iso or an "
    "ISO of its kernel and ramdisk",
    "[server][drivers][redfish][vmedia][ramdisk_deploy]") {
  RedfishFixture f;
  withManager(f);
  test::TempDir dir("kiln-vmedia-ramdisk");
  fs::create_directories(dir.file("images"));
  REQUIRE(writeFile(dir.file("images/vmlinuz"), "K"));
  REQUIRE(writeFile(dir.file("images/initrd"), "R"));
  Config config;
  config.fileUrlAllowedPaths = {dir.file("images")};
  config.deployKernel = dir.file("images/vmlinuz");
  config.deployRamdisk = dir.file("images/initrd");
  config.httpRoot = dir.file("httpboot");
  config.apiUrl = "http://10.0.2.2:6385";
  auto tools = std::make_shared<FakeIsoTools>();
  auto interfaces = vmedia::makeVirtualMediaInterfaces(f.http, tools);
  auto* boot = dynamic_cast<BootInterface*>(interfaces.front().get());
  REQUIRE(boot);
  CHECK(boot->ramdiskBoot());
  RedfishManagement management(f.http);
  NodeDriver driver;
  driver.management = &management;
  driver.boot = boot;
  auto task = f.task();
  task.config = &config;
  task.driver = &driver;
  task.node.setText(kNodeDeployInterface, "ramdisk");

  SECTION("boot_iso: inserted as it is, the node boots the CD every time") {
    task.instanceInfo = {{"boot_iso", "https://images.example/live.iso"}};
    CHECK(boot->validateRamdiskBoot(task) == std::nullopt);
    REQUIRE(boot->prepareInstance(task));
    CHECK(f.bmc.system().cdInserted);
    CHECK(f.bmc.system().cdImage == "https://images.example/live.iso");
    CHECK(f.bmc.system().bootTarget == "Cd");
    CHECK(f.bmc.system().bootEnabled == "Continuous");
    CHECK(task.internalInfo["boot_target"] == "ramdisk");
    CHECK(tools->commands.empty());
    REQUIRE(boot->cleanUpInstance(task));
    CHECK_FALSE(f.bmc.system().cdInserted);
    CHECK_FALSE(task.internalInfo.contains("boot_target"));
  }
  SECTION("kernel and ramdisk: an ISO built into http_root, removed on clean-up") {
    task.instanceInfo = {{"kernel", dir.file("images/vmlinuz")},
                         {"ramdisk", dir.file("images/initrd")},
                         {"ramdisk_kernel_arguments", "ip=dhcp"}};
    REQUIRE(boot->prepareInstance(task));
    const std::string name = task.internalInfo.value("vmedia_boot_iso", "");
    REQUIRE(vmedia::isBootIsoName(name));
    CHECK(fs::exists(dir.file("httpboot/" + name)));
    CHECK(f.bmc.system().cdImage == "http://10.0.2.2:6385/v1/vmedia/" + name);
    CHECK(f.bmc.system().bootTarget == "Cd");
    CHECK(task.internalInfo["boot_target"] == "ramdisk");
    bool sawXorriso = false;
    for (const auto& argv : tools->commands) {
      if (argv.front() != "xorriso") continue;
      sawXorriso = true;
      CHECK(std::find(argv.begin(), argv.end(), "vmlinuz=" + dir.file("images/vmlinuz")) !=
            argv.end());
    }
    CHECK(sawXorriso);
    REQUIRE(boot->cleanUpInstance(task));
    CHECK_FALSE(fs::exists(dir.file("httpboot/" + name)));
    CHECK_FALSE(f.bmc.system().cdInserted);
  }
  SECTION("URLs of a kernel and ramdisk cannot be built into an ISO") {
    task.instanceInfo = {{"kernel", "http://x/k"}, {"ramdisk", "http://x/r"}};
    auto problem = boot->validateRamdiskBoot(task);
    REQUIRE(problem);
    CHECK_THAT(*problem, Catch::Contains("builds the instance's ISO from local files"));
    auto failed = boot->prepareInstance(task);
    REQUIRE_FALSE(failed);
    CHECK_FALSE(f.bmc.system().cdInserted);
  }
  CHECK(boot->name() == "redfish-virtual-media");
  CHECK(ramdisk::isoCommandLine({"k", "r", "", "ip=dhcp"}).value() ==
        "root=/dev/ram0 text ip=dhcp");
}
