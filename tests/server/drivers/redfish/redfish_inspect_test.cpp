#include "server/drivers/redfish/redfish_inspect.h"

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "server/drivers/fake/fake_interfaces.h"
#include "server/model/node.h"
#include "server/model/resources.h"
#include "shared/json/json_util.h"
#include "tests/server/drivers/redfish/redfish_fixture.h"
#include "tests/support/microversion_helpers.h"
#include "tests/support/test_api.h"

using namespace kiln;
using namespace kiln::server;
using kiln::test::InjectedError;
using kiln::test::kRedfishNode;
using kiln::test::RedfishDrive;
using kiln::test::RedfishEthernetInterface;
using kiln::test::RedfishFixture;
using kiln::test::RedfishProcessor;
using kiln::test::RedfishSimpleStorage;
using kiln::test::RedfishSimpleStorageDevice;
using kiln::test::RedfishStorage;
using kiln::test::RedfishSystemState;
using kiln::test::RedfishVolume;
using nlohmann::json;

namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

/// A RedfishInspect and a task for kRedfishNode on the fixture's BMC.
struct Inspector {
  RedfishInspect inspect;
  TaskContext task;

  explicit Inspector(RedfishFixture& f, const json& properties = json::object())
      : inspect(f.http), task(f.task()) {
    task.node.setText(kNodeProperties, properties.dump());
  }

  /// Runs the inspection; REQUIREs that it finished (Done) with an inventory.
  json run() {
    auto r = inspect.inspectHardware(task);
    INFO((r ? std::string("ok") : r.error().message));
    REQUIRE(r);
    CHECK(*r == StepResult::Done);
    REQUIRE(task.inventory);
    return *task.inventory;
  }

  json properties() const { return objectField(task.node, kNodeProperties); }
};

/// A Storage (no RAID needed) with drives of these sizes and, when given, volumes.
RedfishStorage storageWith(std::vector<int64_t> driveSizes, std::vector<int64_t> volumeSizes = {},
                           bool hasVolumes = true) {
  RedfishStorage st;
  st.id = "RAID.1";
  st.hasVolumes = hasVolumes;
  for (size_t i = 0; i < driveSizes.size(); ++i) {
    RedfishDrive d;
    d.id = "Disk." + std::to_string(i);
    d.name = "Physical Disk " + std::to_string(i);
    d.capacityBytes = driveSizes[i];
    d.mediaType = i % 2 == 0 ? "HDD" : "SSD";
    st.drives.push_back(d);
  }
  for (size_t i = 0; i < volumeSizes.size(); ++i) {
    RedfishVolume v;
    v.id = "Volume." + std::to_string(i);
    v.name = "Volume " + std::to_string(i);
    v.capacityBytes = volumeSizes[i];
    st.volumes.push_back(v);
  }
  return st;
}

RedfishSimpleStorage simpleWith(std::vector<RedfishSimpleStorageDevice> devices) {
  RedfishSimpleStorage st;
  st.devices = std::move(devices);
  return st;
}

/// The keys of every object in `fake` (recursively, the first element standing for a list)
/// that `actual` lacks, as paths. A null in `actual` stands for everything below it.
void missingKeys(const json& fake, const json& actual, const std::string& at,
                 std::vector<std::string>& out) {
  if (actual.is_null()) return;
  if (fake.is_array() && !fake.empty() && actual.is_array() && !actual.empty()) {
    missingKeys(fake[0], actual[0], at + "[0]", out);
    return;
  }
  if (!fake.is_object()) return;
  for (auto it = fake.begin(); it != fake.end(); ++it) {
    if (!actual.is_object() || !actual.contains(it.key())) {
      out.push_back(at + "/" + it.key());
      continue;
    }
    missingKeys(it.value(), actual[it.key()], at + "/" + it.key(), out);
  }
}

}  // namespace

TEST_CASE("RedfishInspect is the redfish inspect interface and checks driver_info only",
          "[server][drivers][redfish][inspect]") {
  RedfishFixture f;
  RedfishInspect inspect(f.http);
  CHECK(inspect.type() == InterfaceType::Inspect);
  CHECK(inspect.name() == "redfish");
  CHECK_FALSE(inspect.isNoop());
  TaskContext task = f.task();
  CHECK_FALSE(inspect.validate(task));
  task.driverInfo = json::object();
  auto reason = inspect.validate(task);
  REQUIRE(reason);
  CHECK_THAT(*reason, Catch::Contains("redfish_address"));
  CHECK(f.bmc.requests().empty());
}

TEST_CASE("RedfishInspect records the BMC's inventory and sets the node's properties",
          "[server][drivers][redfish][inspect]") {
  RedfishFixture f;
  f.bmc.updateSystem("1", [](RedfishSystemState& s) {
    s.biosVersion = "2.19.1";
    s.bootMode = "UEFI";
    s.storage = {storageWith({2 * kGiB, 200 * kGiB, 100 * kGiB}, {}, false)};
    s.hardware.ethernetInterfaces = {{"NIC.1", "52:54:00:AB:CD:01", "", 25000, "LinkUp"},
                                     {"NIC.2", "52:54:00:ab:cd:02", "", 0, "LinkDown"}};
  });
  Inspector in(f, {{"capabilities", "cpu_vt:true"}});
  const json inv = in.run();

  // cpu: two processors of 8 threads each; the first one's model and speed; x86-64.
  CHECK(inv["cpu"]["count"] == 16);
  CHECK(inv["cpu"]["architecture"] == "x86_64");
  CHECK(inv["cpu"]["model_name"] == "Kiln Test CPU 2000");
  CHECK(inv["cpu"]["frequency"] == "2000");  // a string, as ironic-python-agent's
  CHECK(inv["memory"]["physical_mb"] == 32 * 1024);
  // Storage drives, in order, with what Redfish says of them.
  REQUIRE(inv["disks"].size() == 3);
  CHECK(inv["disks"][0]["name"] == "Physical Disk 0");
  CHECK(inv["disks"][0]["size"] == 2 * kGiB);
  CHECK(inv["disks"][0]["rotational"] == true);
  CHECK(inv["disks"][1]["size"] == 200 * kGiB);
  CHECK(inv["disks"][1]["rotational"] == false);
  CHECK(inv["disks"][2]["size"] == 100 * kGiB);
  CHECK(inv["root_disk"].is_null());
  // NICs: the member's Id as name, the MAC lower-cased.
  REQUIRE(inv["interfaces"].size() == 2);
  CHECK(inv["interfaces"][0]["name"] == "NIC.1");
  CHECK(inv["interfaces"][0]["mac_address"] == "52:54:00:ab:cd:01");
  CHECK(inv["interfaces"][0]["speed_mbps"] == 25000);
  CHECK(inv["interfaces"][0]["has_carrier"] == true);
  CHECK(inv["interfaces"][1]["mac_address"] == "52:54:00:ab:cd:02");
  CHECK(inv["interfaces"][1]["speed_mbps"].is_null());
  CHECK(inv["interfaces"][1]["has_carrier"] == false);
  CHECK(inv["system_vendor"]["manufacturer"] == "Kiln");
  CHECK(inv["system_vendor"]["product_name"] == "Test Server");
  CHECK(inv["system_vendor"]["serial_number"] == "KILN-0001");
  CHECK(inv["system_vendor"]["firmware"]["version"] == "2.19.1");
  CHECK(inv["system_vendor"]["system_uuid"] == f.bmc.system().uuid);
  CHECK(inv["boot"]["current_boot_mode"] == "uefi");
  CHECK(inv["boot"]["pxe_interface"].is_null());

  const json props = in.properties();
  CHECK(props["cpus"] == 16);
  CHECK(props["cpu_arch"] == "x86_64");
  CHECK(props["memory_mb"] == 32 * 1024);
  CHECK(props["local_gb"] == 99);  // the smallest disk of at least 4 GiB, minus one
  CHECK(props["capabilities"] == "cpu_vt:true,boot_mode:uefi");

  // Out-of-band and read-only: no reset, no PATCH, no power change.
  CHECK(f.bmc.system().resets.empty());
  CHECK(f.bmc.system().powerState == "Off");
  for (const auto& r : f.bmc.requests()) {
    INFO(r.method << " " << r.path);
    CHECK((r.method == "GET" || r.path.rfind("/redfish/v1/SessionService", 0) == 0));
  }
}

TEST_CASE("RedfishInspect's inventory has every key of the fake inspect interface's",
          "[server][drivers][redfish][inspect]") {
  RedfishFixture f;
  f.bmc.updateSystem("1", [](RedfishSystemState& s) { s.storage = {storageWith({100 * kGiB})}; });
  Inspector in(f);
  const json inv = in.run();

  std::unique_ptr<HardwareInterface> fake;
  for (auto& impl : makeFakeInterfaces()) {
    if (impl->type() == InterfaceType::Inspect) fake = std::move(impl);
  }
  REQUIRE(fake);
  TaskContext fakeTask = f.task();
  fakeTask.node.setText(kNodeProperties, "{}");
  fakeTask.ports.push_back(defaultRecord(schemaOf(Resource::Port)));
  fakeTask.ports.back().setText(kPortAddress, "52:54:00:00:00:01");
  REQUIRE(static_cast<InspectInterface&>(*fake).inspectHardware(fakeTask));
  REQUIRE(fakeTask.inventory);
  std::vector<std::string> missing;
  missingKeys(*fakeTask.inventory, inv, "", missing);
  CHECK(missing == std::vector<std::string>{});
}

TEST_CASE("RedfishInspect computes local_gb as Ironic and prefers Storage to SimpleStorage",
          "[server][drivers][redfish][inspect]") {
  RedfishFixture f;
  auto localGb = [&](const std::function<void(RedfishSystemState&)>& change) {
    f.bmc.updateSystem("1", change);
    Inspector in(f);
    const json inv = in.run();
    return std::pair{in.properties()["local_gb"], inv["disks"]};
  };

  SECTION("Storage volumes count before drives") {
    auto [gb, disks] = localGb([](RedfishSystemState& s) {
      s.storage = {storageWith({100 * kGiB, 200 * kGiB}, {3 * kGiB, 50 * kGiB})};
    });
    CHECK(gb == 49);
    CHECK(disks.size() == 2);  // the disks are the drives, not the volumes
  }
  SECTION("volumes all under 4 GiB leave the drives to count") {
    auto [gb, disks] = localGb([](RedfishSystemState& s) {
      s.storage = {storageWith({300 * kGiB, 120 * kGiB}, {2 * kGiB})};
    });
    CHECK(gb == 119);
  }
  SECTION("a fraction of a GiB is dropped") {
    auto [gb, disks] = localGb(
        [](RedfishSystemState& s) { s.storage = {storageWith({9 * kGiB / 2}, {}, false)}; });
    CHECK(gb == 3);
  }
  SECTION("with Storage and SimpleStorage the smaller disk wins, the disks are Storage's") {
    auto [gb, disks] = localGb([](RedfishSystemState& s) {
      s.storage = {storageWith({100 * kGiB}, {}, false)};
      s.hardware.simpleStorage = {simpleWith({{"SATA 0", 40 * kGiB, "Enabled"}})};
    });
    CHECK(gb == 39);
    REQUIRE(disks.size() == 1);
    CHECK(disks[0]["name"] == "Physical Disk 0");
    CHECK(disks[0]["size"] == 100 * kGiB);
  }
  SECTION("without Storage the disks are SimpleStorage's; disabled devices do not count") {
    auto [gb, disks] = localGb([](RedfishSystemState& s) {
      s.storage.clear();
      s.hardware.simpleStorage = {simpleWith({{"USB", 1 * kGiB, "Enabled"},
                                              {"SATA 0", 30 * kGiB, "Disabled"},
                                              {"SATA 1", 80 * kGiB, "Enabled"},
                                              {"SATA 2", 60 * kGiB, "Enabled"}})};
    });
    CHECK(gb == 59);
    REQUIRE(disks.size() == 4);
    CHECK(disks[1]["name"] == "SATA 0");
    CHECK(disks[1]["size"] == 30 * kGiB);
    CHECK(disks[1]["rotational"].is_null());
  }
  SECTION("a node without a disk of 4 GiB gets 0") {
    auto [gb, disks] = localGb([](RedfishSystemState& s) {
      s.storage.clear();
      s.hardware.simpleStorage = {simpleWith({{"SD card", 4 * kGiB - 1, "Enabled"}})};
    });
    CHECK(gb == 0);
    CHECK(disks.size() == 1);
  }
  SECTION("no storage at all is a disk-less node") {
    auto [gb, disks] = localGb([](RedfishSystemState& s) { s.storage.clear(); });
    CHECK(gb == 0);
    CHECK(disks == json::array());
  }
}

TEST_CASE("RedfishInspect maps the processor's instruction set or architecture as Ironic",
          "[server][drivers][redfish][inspect]") {
  struct Case {
    std::string instructionSet, architecture, expected;
  };
  const std::vector<Case> cases = {
      {"x86-64", "x86", "x86_64"},  {"x86", "x86", "i686"},        {"ARM-A64", "ARM", "aarch64"},
      {"ARM-A32", "ARM", "arm"},    {"IA-64", "", "ia64"},         {"MIPS32", "", "mips"},
      {"MIPS64", "MIPS", "mips64"}, {"", "x86", "x86_64"},         {"", "ARM", "arm"},
      {"OEM", "x86", "x86_64"},     {"PowerISA", "IA-64", "ia64"},
  };
  for (const auto& c : cases) {
    INFO(c.instructionSet << " / " << c.architecture);
    RedfishFixture f;
    f.bmc.updateSystem("1", [&](RedfishSystemState& s) {
      for (auto& p : s.hardware.processors) {
        p.instructionSet = c.instructionSet;
        p.architecture = c.architecture;
      }
    });
    Inspector in(f);
    const json inv = in.run();
    CHECK(inv["cpu"]["architecture"] == c.expected);
    CHECK(in.properties()["cpu_arch"] == c.expected);
  }
}

TEST_CASE("RedfishInspect counts logical CPUs, else the BMC's processor count",
          "[server][drivers][redfish][inspect]") {
  RedfishFixture f;
  auto count = [&](const std::function<void(RedfishSystemState&)>& change) {
    f.bmc.updateSystem("1", change);
    Inspector in(f);
    const json inv = in.run();
    CHECK(in.properties()["cpus"] == inv["cpu"]["count"]);
    return inv["cpu"]["count"];
  };
  SECTION("TotalThreads summed over the processors; a GPU is not a CPU") {
    CHECK(count([](RedfishSystemState& s) {
            s.hardware.processors[1].totalThreads = 16;
            RedfishProcessor gpu;
            gpu.id = "GPU1";
            gpu.processorType = "GPU";
            gpu.totalThreads = 1024;
            s.hardware.processors.push_back(gpu);
          }) == 24);
  }
  SECTION("no TotalThreads: ProcessorSummary.Count") {
    CHECK(count([](RedfishSystemState& s) {
            for (auto& p : s.hardware.processors) p.totalThreads = 0;
            s.hardware.processorCount = 6;
          }) == 6);
  }
  SECTION("neither: the number of processors") {
    CHECK(count([](RedfishSystemState& s) {
            for (auto& p : s.hardware.processors) p.totalThreads = 0;
            s.hardware.processorCount = -1;
          }) == 2);
  }
}

TEST_CASE("RedfishInspect fails without memory, CPU count or architecture, changing nothing",
          "[server][drivers][redfish][inspect]") {
  RedfishFixture f;
  SECTION("no memory") {
    f.bmc.updateSystem("1", [](RedfishSystemState& s) { s.hardware.memoryGiB = -1; });
    Inspector in(f, {{"cpu_arch", ""}});
    auto r = in.inspect.inspectHardware(in.task);
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message,
               Catch::StartsWith("Failed to discover the following properties: memory_mb") &&
                   Catch::Contains("MemorySummary.TotalSystemMemoryGiB") &&
                   Catch::Contains("/redfish/v1/Systems/1"));
    CHECK_THAT(r.error().message, !Catch::Contains("cpus") && !Catch::Contains("cpu_arch"));
    CHECK_FALSE(in.task.inventory);
    CHECK(in.properties() == json{{"cpu_arch", ""}});
  }
  SECTION("a memory size already on the node is kept, as Ironic") {
    f.bmc.updateSystem("1", [](RedfishSystemState& s) { s.hardware.memoryGiB = -1; });
    Inspector in(f, {{"memory_mb", 4096}});
    const json inv = in.run();
    CHECK(inv["memory"]["physical_mb"].is_null());
    CHECK(in.properties()["memory_mb"] == 4096);
  }
  SECTION("no processors, no count and no architecture") {
    f.bmc.updateSystem("1", [](RedfishSystemState& s) {
      s.hardware.processors.clear();
      s.hardware.processorCount = -1;
    });
    Inspector in(f);
    auto r = in.inspect.inspectHardware(in.task);
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("cpus (") && Catch::Contains("cpu_arch (") &&
                                      !Catch::Contains("memory_mb"));
  }
  SECTION("an unknown architecture, and none on the node") {
    f.bmc.updateSystem("1", [](RedfishSystemState& s) {
      for (auto& p : s.hardware.processors) {
        p.instructionSet = "OEM";
        p.architecture = "OEM";
      }
    });
    Inspector in(f, {{"cpu_arch", ""}});
    auto r = in.inspect.inspectHardware(in.task);
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("cpu_arch ("));
  }
  SECTION("a BMC error names the request") {
    f.bmc.injectError(InjectedError{"GET", "/redfish/v1/Systems/1/Processors", 500});
    Inspector in(f);
    auto r = in.inspect.inspectHardware(in.task);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::Unavailable);
    CHECK_THAT(r.error().message, Catch::Contains("/redfish/v1/Systems/1/Processors") &&
                                      Catch::Contains("Injected failure"));
    CHECK(in.properties() == json::object());
  }
}

TEST_CASE("RedfishInspect sets the boot_mode capability only when the node has none",
          "[server][drivers][redfish][inspect]") {
  RedfishFixture f;
  f.bmc.updateSystem("1", [](RedfishSystemState& s) { s.bootMode = "Legacy"; });
  SECTION("none yet: the BMC's mode") {
    Inspector in(f);
    const json inv = in.run();
    CHECK(inv["boot"]["current_boot_mode"] == "bios");
    CHECK(in.properties()["capabilities"] == "boot_mode:bios");
  }
  SECTION("one already (Metal3 sets it): kept") {
    Inspector in(f, {{"capabilities", "boot_mode:uefi,secure_boot:true"}});
    const json inv = in.run();
    CHECK(inv["boot"]["current_boot_mode"] == "bios");
    CHECK(in.properties()["capabilities"] == "boot_mode:uefi,secure_boot:true");
  }
  SECTION("the BMC does not say") {
    f.bmc.updateSystem("1", [](RedfishSystemState& s) { s.bootMode = ""; });
    Inspector in(f);
    const json inv = in.run();
    CHECK(inv["boot"]["current_boot_mode"].is_null());
    CHECK_FALSE(in.properties().contains("capabilities"));
  }
}

TEST_CASE("RedfishInspect takes a NIC's permanent MAC when its MACAddress is not valid",
          "[server][drivers][redfish][inspect]") {
  RedfishFixture f;
  f.bmc.updateSystem("1", [](RedfishSystemState& s) {
    s.hardware.ethernetInterfaces = {
        {"NIC.1", "not-a-mac", "AA:BB:CC:DD:EE:01", 0, ""},
        {"NIC.2", "", "", 0, ""},                      // no MAC at all: left out
        {"NIC.3", "aa-bb-cc-dd-ee-03", "", 1000, ""},  // dashes, as oslo accepts
    };
  });
  Inspector in(f);
  const json nics = in.run()["interfaces"];
  REQUIRE(nics.size() == 2);
  CHECK(nics[0]["name"] == "NIC.1");
  CHECK(nics[0]["mac_address"] == "aa:bb:cc:dd:ee:01");
  CHECK(nics[0]["has_carrier"].is_null());
  CHECK(nics[1]["name"] == "NIC.3");
  CHECK(nics[1]["mac_address"] == "aa:bb:cc:dd:ee:03");
}

// Through the API, as Metal3's fast inspection: a redfish node with inspect_interface redfish.
TEST_CASE("a redfish node inspected out-of-band becomes manageable with its inventory",
          "[server][api][drivers][redfish][inspect]") {
  using namespace kiln::test::mv;
  namespace ver = kiln::server::ver;
  kiln::test::RedfishTestServer bmc;
  REQUIRE(bmc.start());
  bmc.updateSystem(
      "1", [](RedfishSystemState& s) { s.storage = {storageWith({500 * kGiB}, {}, false)}; });
  kiln::test::TestApi api;
  api.version = v(ver::k81NodeInventory);
  const json n = api.createNode({{"name", "r1"},
                                 {"driver", "redfish"},
                                 {"inspect_interface", "redfish"},
                                 {"driver_info", {{"redfish_address", bmc.address()}}},
                                 {"properties", {{"cpu_arch", ""}}}});
  const std::string uuid = n["uuid"];
  createPort(api, uuid, "52:54:00:12:34:56");  // the BMC's NIC.1, PXE-enabled
  REQUIRE(api.provision("r1", "manage").status == 202);
  REQUIRE(node(api, "r1")["provision_state"] == "manageable");

  REQUIRE(api.provision("r1", "inspect").status == 202);
  json after = node(api, "r1");
  INFO(after["last_error"]);
  REQUIRE(after["provision_state"] == "manageable");
  CHECK(after["properties"]["cpus"] == 16);
  CHECK(after["properties"]["cpu_arch"] == "x86_64");
  CHECK(after["properties"]["memory_mb"] == 32768);
  CHECK(after["properties"]["local_gb"] == 499);
  CHECK(after["properties"]["capabilities"] == "boot_mode:uefi");
  CHECK(bmc.system().resets.empty());  // no power change

  kiln::test::Response r = api.get("/v1/nodes/" + uuid + "/inventory");
  INFO(r.body);
  REQUIRE(r.status == 200);
  const json body = r.json();
  CHECK(body["inventory"]["cpu"]["count"] == 16);
  CHECK(body["inventory"]["memory"]["physical_mb"] == 32768);
  CHECK(body["inventory"]["disks"][0]["size"] == 500 * kGiB);
  CHECK(body["inventory"]["system_vendor"]["manufacturer"] == "Kiln");
  CHECK(body["plugin_data"]["all_interfaces"]["NIC.1"]["pxe_enabled"] == true);
  CHECK(body["plugin_data"]["macs"] == json{"52:54:00:12:34:56"});
}

TEST_CASE("a redfish inspection that misses essential data fails the node with the reason",
          "[server][api][drivers][redfish][inspect]") {
  using namespace kiln::test::mv;
  kiln::test::RedfishTestServer bmc;
  REQUIRE(bmc.start());
  bmc.updateSystem("1", [](RedfishSystemState& s) { s.hardware.memoryGiB = -1; });
  kiln::test::TestApi api;
  const json n = api.createNode({{"name", "r1"},
                                 {"driver", "redfish"},
                                 {"inspect_interface", "redfish"},
                                 {"driver_info", {{"redfish_address", bmc.address()}}}});
  const std::string uuid = n["uuid"];
  REQUIRE(api.provision("r1", "manage").status == 202);
  REQUIRE(api.provision("r1", "inspect").status == 202);
  const json after = node(api, "r1");
  CHECK(after["provision_state"] == "inspect failed");
  CHECK_THAT(text(after["last_error"]),
             Catch::StartsWith("Failed to inspect node " + uuid +
                               ": Failed to discover the following properties: memory_mb"));
  CHECK_FALSE(after["properties"].contains("cpus"));
  api.version = v(kiln::server::ver::k81NodeInventory);
  CHECK(api.get("/v1/nodes/" + uuid + "/inventory").status == 404);
}

TEST_CASE("a redfish inspection caches the firmware components while it still holds the node",
          "[server][api][drivers][redfish][inspect]") {
  using namespace kiln::test::mv;
  namespace ver = kiln::server::ver;
  kiln::test::RedfishTestServer bmc;
  REQUIRE(bmc.start());
  bmc.updateSystem(
      "1", [](RedfishSystemState& s) { s.storage = {storageWith({500 * kGiB}, {}, false)};
        s.biosVersion = "2.19.1";
      });
  kiln::test::TestApi api;
  api.version = v(ver::k86FirmwareInterface);
  const json n = api.createNode({{"name", "r2"},
                                 {"driver", "redfish"},
                                 {"inspect_interface", "redfish"},
                                 {"firmware_interface", "redfish"},
                                 {"driver_info", {{"redfish_address", bmc.address()}}},
                                 {"properties", {{"cpu_arch", ""}}}});
  const std::string uuid = n["uuid"];
  REQUIRE(api.provision("r2", "manage").status == 202);
  REQUIRE(node(api, "r2")["provision_state"] == "manageable");

  // Who holds the node each time the system is read (the last time: for its BIOS version).
  std::mutex seenMutex;
  std::vector<std::string> heldBy;
  bmc.setRequestObserver([&](const kiln::test::RecordedRequest& request) {
    if (request.method != "GET" || request.path != "/redfish/v1/Systems/1") return;
    auto tx = api.app().storage().begin(Storage::Mode::Read);
    REQUIRE(tx);
    auto row = (*tx)->nodes().findBy(kNodeUuid, Value::text(uuid));
    REQUIRE(row);
    REQUIRE(*row);
    std::lock_guard lock(seenMutex);
    heldBy.push_back((**row)[kNodeReservation].isNull() ? "(free)" : (*row)->str(kNodeReservation));
  });
  REQUIRE(api.provision("r2", "inspect").status == 202);
  const json after = node(api, "r2");
  bmc.setRequestObserver({});
  INFO(after["last_error"]);
  REQUIRE(after["provision_state"] == "manageable");
  // Ironic caches before the inspection's "done" event: never on a node given up already.
  REQUIRE_FALSE(heldBy.empty());
  for (const auto& holder : heldBy) CHECK(holder == after["conductor"].get<std::string>());
  CHECK(heldBy.size() >= 2);  // inspection, then the firmware cache
  const json firmware = api.get("/v1/nodes/" + uuid + "/firmware").json();
  REQUIRE_FALSE(firmware["firmware"].empty());
  CHECK(firmware["firmware"][0]["component"] == "bios");
}
