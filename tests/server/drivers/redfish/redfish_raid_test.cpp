#include "server/drivers/redfish/redfish_raid.h"

#include <set>

#include "server/drivers/driver_registry.h"
#include "server/drivers/interface_registry.h"
#include "server/drivers/raid_validation.h"
#include "server/drivers/redfish/redfish_power.h"
#include "shared/exec/command_runner.h"
#include "tests/server/drivers/redfish/redfish_fixture.h"

using namespace kiln;
using namespace kiln::server;
using kiln::test::kRedfishNode;
using kiln::test::RecordedRequest;
using kiln::test::RedfishDrive;
using kiln::test::RedfishFixture;
using kiln::test::RedfishStorage;
using kiln::test::RedfishSystemState;
using kiln::test::RedfishVolume;
using nlohmann::json;

namespace {

constexpr int64_t kGi = 1024LL * 1024 * 1024;
constexpr const char* kStorage = "/redfish/v1/Systems/1/Storage/RAID.Integrated.1-1";
constexpr const char* kVolumes = "/redfish/v1/Systems/1/Storage/RAID.Integrated.1-1/Volumes";

/// A RAID controller with `count` drives "Disk.Bay.<n>" ("Physical Disk <n>") of `sizeGb` GiB.
RedfishStorage controller(int count, int64_t sizeGb = 500,
                          const std::string& id = "RAID.Integrated.1-1",
                          const std::string& media = "HDD") {
  RedfishStorage st;
  st.id = id;
  for (int i = 0; i < count; ++i) {
    st.drives.push_back({"Disk.Bay." + std::to_string(i), "Physical Disk " + std::to_string(i),
                         sizeGb * kGi, media, "SAS"});
  }
  return st;
}

void giveStorage(RedfishFixture& f, std::vector<RedfishStorage> storage) {
  f.bmc.updateSystem("1", [&](RedfishSystemState& s) { s.storage = std::move(storage); });
}

std::string drivePath(const std::string& storageId, const std::string& drive) {
  return "/redfish/v1/Systems/1/Storage/" + storageId + "/Drives/" + drive;
}

/// The raid interface and a power interface for its reboots, on one task.
struct Raider {
  RedfishFixture& f;
  RedfishRaid raid;
  RedfishPower power;
  NodeDriver driver;
  TaskContext task;

  explicit Raider(RedfishFixture& fixture)
      : f(fixture),
        raid(fixture.http, RedfishRaidTiming{std::chrono::seconds(10), std::chrono::seconds(600)}),
        power(fixture.http),
        task(fixture.task()) {
    driver.power = &power;
    task.driver = &driver;
  }

  void target(const json& config) { task.node.setText(kNodeTargetRaidConfig, config.dump()); }

  const StepDefinition& step(const std::string& name) {
    for (const auto& s : raid.steps()) {
      if (s.name == name) return s;
    }
    FAIL("no step raid." << name);
    return raid.steps()[0];
  }

  Result<StepResult> run(const std::string& name, const json& args = json::object()) {
    return step(name).handler(task, args);
  }

  json raidConfig() const { return objectField(task.node, kNodeRaidConfig); }
};

/// The bodies POSTed to a Volumes collection, in order.
std::vector<json> posts(RedfishFixture& f, const std::string& path = kVolumes) {
  std::vector<json> out;
  for (const auto& r : f.bmc.requests("POST", path)) out.push_back(json::parse(r.body));
  return out;
}

std::vector<std::string> drivesOf(const json& post) {
  std::vector<std::string> out;
  for (const auto& d : post["Links"]["Drives"]) out.push_back(d["@odata.id"].get<std::string>());
  return out;
}

json oneDisk(json disk) { return {{"logical_disks", json::array({std::move(disk)})}}; }

}  // namespace

TEST_CASE("RedfishRaid declares Ironic's RAID steps", "[server][drivers][redfish][raid]") {
  RedfishFixture f;
  RedfishRaid raid(f.http);
  CHECK(raid.type() == InterfaceType::Raid);
  CHECK(raid.name() == "redfish");
  REQUIRE(raid.steps().size() == 3);
  const StepDefinition& create = raid.steps()[0];
  CHECK(create.interface == "raid");
  CHECK(create.name == "create_configuration");
  CHECK(create.cleanPriority == 0);
  CHECK(create.deployPriority == -1);
  CHECK_FALSE(create.abortable);
  CHECK_FALSE(create.requiresRamdisk);  // out-of-band: the BMC builds the volumes
  REQUIRE(create.argsinfo.size() == 3);
  CHECK(create.argsinfo[0].name == "create_root_volume");
  CHECK(create.argsinfo[1].name == "create_nonroot_volumes");
  CHECK(create.argsinfo[2].name == "delete_existing");
  for (const auto& a : create.argsinfo) CHECK_FALSE(a.required);
  const StepDefinition& del = raid.steps()[1];
  CHECK(del.name == "delete_configuration");
  CHECK(del.cleanPriority == 0);
  CHECK(del.deployPriority == 0);
  CHECK(del.argsinfo.empty());
  const StepDefinition& apply = raid.steps()[2];
  CHECK(apply.name == "apply_configuration");
  CHECK(apply.cleanPriority == -1);
  CHECK(apply.deployPriority == 0);
  REQUIRE_FALSE(apply.argsinfo.empty());
  CHECK(apply.argsinfo[0].name == "raid_config");
  CHECK(apply.argsinfo[0].required);
  for (const auto& s : raid.steps()) CHECK(s.handler);
}

TEST_CASE("RedfishRaid creates a volume of a fixed size on the drives it chooses and records it",
          "[server][drivers][redfish][raid]") {
  RedfishFixture f;
  giveStorage(f, {controller(4)});
  Raider r(f);
  r.target(oneDisk(
      {{"size_gb", 100}, {"raid_level", "1"}, {"is_root_volume", true}, {"volume_name", "root"}}));
  auto done = r.run("create_configuration");
  INFO((done ? "" : done.error().message));
  REQUIRE(done);
  CHECK(*done == StepResult::Done);

  auto sent = posts(f);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0]["RAIDType"] == "RAID1");
  CHECK(sent[0]["CapacityBytes"] == 100 * kGi);
  CHECK(sent[0]["Name"] == "root");
  CHECK_FALSE(sent[0].contains("@Redfish.OperationApplyTime"));  // the BMC offers none
  // The fewest drives RAID1 takes, in the BMC's order.
  CHECK(drivesOf(sent[0]) ==
        std::vector<std::string>{drivePath("RAID.Integrated.1-1", "Disk.Bay.0"),
                                 drivePath("RAID.Integrated.1-1", "Disk.Bay.1")});

  const auto volumes = f.bmc.system().storage[0].volumes;
  REQUIRE(volumes.size() == 1);
  CHECK(volumes[0].raidType == "RAID1");

  // Ironic's update_raid_config: what the BMC reports now.
  const json config = r.raidConfig();
  REQUIRE(config["logical_disks"].size() == 1);
  const json& disk = config["logical_disks"][0];
  CHECK(disk["id"] == volumes[0].id);
  CHECK(disk["name"] == "root");
  CHECK(disk["controller"] == "RAID.Integrated.1-1");
  CHECK(disk["size_gb"] == 100);
  CHECK(disk["raid_level"] == "1");
  CHECK_THAT(config["last_updated"].get<std::string>(), Catch::StartsWith("2026-01-01 00:0"));
}

TEST_CASE("RedfishRaid maps Ironic's RAID levels to RAIDType with the drives each needs",
          "[server][drivers][redfish][raid]") {
  struct Case {
    const char* level;
    const char* raidType;
    size_t drives;
  };
  for (const Case c :
       {Case{"0", "RAID0", 1}, Case{"1", "RAID1", 2}, Case{"5", "RAID5", 3}, Case{"6", "RAID6", 4},
        Case{"1+0", "RAID10", 4}, Case{"5+0", "RAID50", 6}, Case{"6+0", "RAID60", 8}}) {
    INFO(c.level);
    RedfishFixture f;
    giveStorage(f, {controller(8)});
    Raider r(f);
    r.target(oneDisk({{"size_gb", 50}, {"raid_level", c.level}}));
    auto done = r.run("create_configuration");
    INFO((done ? "" : done.error().message));
    REQUIRE(done);
    auto sent = posts(f);
    REQUIRE(sent.size() == 1);
    CHECK(sent[0]["RAIDType"] == c.raidType);
    CHECK(drivesOf(sent[0]).size() == c.drives);
    CHECK(r.raidConfig()["logical_disks"][0]["raid_level"] == c.level);
  }
}

TEST_CASE("RedfishRaid leaves CapacityBytes out for MAX, and takes a null size as MAX",
          "[server][drivers][redfish][raid]") {
  RedfishFixture f;
  giveStorage(f, {controller(2)});
  Raider r(f);
  SECTION("MAX") { r.target(oneDisk({{"size_gb", "MAX"}, {"raid_level", "1"}})); }
  SECTION("null, as Metal3 sends for a volume without a size") {
    r.target(oneDisk({{"size_gb", nullptr}, {"raid_level", "1"}}));
  }
  auto done = r.run("create_configuration");
  INFO((done ? "" : done.error().message));
  REQUIRE(done);
  auto sent = posts(f);
  REQUIRE(sent.size() == 1);
  CHECK_FALSE(sent[0].contains("CapacityBytes"));  // the controller sizes it (Ironic's bug 2132936)
  CHECK(drivesOf(sent[0]).size() == 2);
  // The test BMC gives the volume all the drives' space.
  CHECK(r.raidConfig()["logical_disks"][0]["size_gb"] == 500);
}

TEST_CASE("RedfishRaid uses the drives physical_disks names, by Id or Name",
          "[server][drivers][redfish][raid]") {
  RedfishFixture f;
  giveStorage(f, {controller(4)});
  Raider r(f);
  r.target(
      {{"logical_disks",
        {{{"size_gb", 100}, {"raid_level", "1"}, {"physical_disks", {"Disk.Bay.3", "Disk.Bay.2"}}},
         {{"size_gb", "MAX"}, {"raid_level", "0"}, {"physical_disks", {"Physical Disk 0"}}}}}});
  auto done = r.run("create_configuration");
  INFO((done ? "" : done.error().message));
  REQUIRE(done);
  auto sent = posts(f);
  REQUIRE(sent.size() == 2);
  // In the BMC's order, whatever the order of physical_disks.
  CHECK(drivesOf(sent[0]) ==
        std::vector<std::string>{drivePath("RAID.Integrated.1-1", "Disk.Bay.2"),
                                 drivePath("RAID.Integrated.1-1", "Disk.Bay.3")});
  CHECK(sent[1]["RAIDType"] == "RAID0");
  CHECK(drivesOf(sent[1]) ==
        std::vector<std::string>{drivePath("RAID.Integrated.1-1", "Disk.Bay.0")});
  CHECK(r.raidConfig()["logical_disks"].size() == 2);
}

TEST_CASE("RedfishRaid chooses drives by controller, disk type and number of physical disks",
          "[server][drivers][redfish][raid]") {
  RedfishFixture f;
  giveStorage(f, {controller(4, 500, "RAID.Integrated.1-1", "HDD"),
                  controller(4, 400, "RAID.Slot.2-1", "SSD")});
  Raider r(f);
  r.target({{"logical_disks",
             {{{"size_gb", 100},
               {"raid_level", "5"},
               {"disk_type", "ssd"},
               {"number_of_physical_disks", 4}},
              {{"size_gb", 10},
               {"raid_level", "0"},
               {"controller", "RAID.Integrated.1-1"},
               {"number_of_physical_disks", 2}}}}});
  auto done = r.run("create_configuration");
  INFO((done ? "" : done.error().message));
  REQUIRE(done);
  auto ssd = posts(f, "/redfish/v1/Systems/1/Storage/RAID.Slot.2-1/Volumes");
  REQUIRE(ssd.size() == 1);
  CHECK(ssd[0]["RAIDType"] == "RAID5");
  CHECK(drivesOf(ssd[0]).size() == 4);
  for (const auto& d : drivesOf(ssd[0])) CHECK_THAT(d, Catch::Contains("RAID.Slot.2-1/Drives/"));
  auto hdd = posts(f);
  REQUIRE(hdd.size() == 1);
  CHECK(hdd[0]["RAIDType"] == "RAID0");
  CHECK(drivesOf(hdd[0]).size() == 2);
  const json disks = r.raidConfig()["logical_disks"];
  REQUIRE(disks.size() == 2);
  std::set<std::string> controllers;
  for (const auto& d : disks) controllers.insert(d["controller"].get<std::string>());
  CHECK(controllers == std::set<std::string>{"RAID.Integrated.1-1", "RAID.Slot.2-1"});
}

TEST_CASE("RedfishRaid gives each volume drives of its own unless they are shared",
          "[server][drivers][redfish][raid]") {
  RedfishFixture f;
  giveStorage(f, {controller(4)});
  Raider r(f);
  r.target({{"logical_disks",
             {{{"size_gb", 100}, {"raid_level", "1"}, {"is_root_volume", true}},
              {{"size_gb", 100}, {"raid_level", "1"}}}}});
  REQUIRE(r.run("create_configuration"));
  auto sent = posts(f);
  REQUIRE(sent.size() == 2);
  const auto a = drivesOf(sent[0]);
  const auto b = drivesOf(sent[1]);
  for (const auto& d : a) CHECK(std::find(b.begin(), b.end(), d) == b.end());
}

TEST_CASE("RedfishRaid creates the root or the other volumes only when asked to",
          "[server][drivers][redfish][raid]") {
  RedfishFixture f;
  giveStorage(f, {controller(4)});
  Raider r(f);
  r.target(
      {{"logical_disks",
        {{{"size_gb", 100}, {"raid_level", "1"}, {"is_root_volume", true}, {"volume_name", "root"}},
         {{"size_gb", 200}, {"raid_level", "1"}, {"volume_name", "data"}}}}});
  SECTION("create_root_volume false") {
    REQUIRE(r.run("create_configuration", {{"create_root_volume", false}}));
    auto sent = posts(f);
    REQUIRE(sent.size() == 1);
    CHECK(sent[0]["Name"] == "data");
    // The plan still keeps the root volume's drives for it (Ironic filters after planning).
    CHECK(drivesOf(sent[0]) ==
          std::vector<std::string>{drivePath("RAID.Integrated.1-1", "Disk.Bay.2"),
                                   drivePath("RAID.Integrated.1-1", "Disk.Bay.3")});
  }
  SECTION("create_nonroot_volumes false") {
    REQUIRE(r.run("create_configuration", {{"create_nonroot_volumes", false}}));
    auto sent = posts(f);
    REQUIRE(sent.size() == 1);
    CHECK(sent[0]["Name"] == "root");
  }
  SECTION("a non-Boolean argument") {
    auto bad = r.run("create_configuration", {{"create_root_volume", "perhaps"}});
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message ==
          "raid.create_configuration: create_root_volume must be a Boolean, got \"perhaps\"");
    CHECK(posts(f).empty());
  }
}

TEST_CASE("RedfishRaid deletes the RAID volumes the BMC lets it delete",
          "[server][drivers][redfish][raid]") {
  RedfishFixture f;
  RedfishStorage st = controller(4);
  st.volumes = {
      RedfishVolume{"Disk.Virtual.0", "os", "RAID1", 100 * kGi, {"Disk.Bay.0", "Disk.Bay.1"}, true},
      RedfishVolume{"Disk.Virtual.1", "raw", "", 500 * kGi, {"Disk.Bay.2"}, true},
      RedfishVolume{"Disk.Virtual.2", "boss", "RAID0", 200 * kGi, {"Disk.Bay.3"}, false}};
  giveStorage(f, {st});
  Raider r(f);
  auto done = r.run("delete_configuration");
  INFO((done ? "" : done.error().message));
  REQUIRE(done);
  const auto deletes = [&] {
    std::vector<std::string> out;
    for (const auto& q : f.bmc.requests()) {
      if (q.method == "DELETE") out.push_back(q.path);
    }
    return out;
  }();
  CHECK(deletes == std::vector<std::string>{std::string(kVolumes) + "/Disk.Virtual.0"});
  const auto left = f.bmc.system().storage[0].volumes;
  REQUIRE(left.size() == 2);
  CHECK(left[0].id == "Disk.Virtual.1");  // no RAIDType: not a RAID volume (as Ironic)
  CHECK(left[1].id == "Disk.Virtual.2");  // Allow: GET only
  // raid_config lists what is left with a RAID type.
  const json disks = r.raidConfig()["logical_disks"];
  REQUIRE(disks.size() == 1);
  CHECK(disks[0]["id"] == "Disk.Virtual.2");
  CHECK(disks[0]["raid_level"] == "0");
  CHECK(disks[0]["size_gb"] == 200);
}

TEST_CASE("RedfishRaid deletes the existing volumes first when delete_existing is true",
          "[server][drivers][redfish][raid]") {
  RedfishFixture f;
  RedfishStorage st = controller(2);
  st.volumes = {RedfishVolume{
      "Disk.Virtual.0", "old", "RAID0", 1000 * kGi, {"Disk.Bay.0", "Disk.Bay.1"}, true}};
  giveStorage(f, {st});
  Raider r(f);
  r.target(oneDisk({{"size_gb", "MAX"}, {"raid_level", "1"}}));
  auto done = r.run("create_configuration", {{"delete_existing", true}});
  INFO((done ? "" : done.error().message));
  REQUIRE(done);
  const auto requests = f.bmc.requests();
  auto at = [&](const std::string& method) {
    return std::find_if(requests.begin(), requests.end(),
                        [&](const RecordedRequest& q) { return q.method == method; });
  };
  REQUIRE(at("DELETE") != requests.end());
  REQUIRE(at("POST") != requests.end());
  CHECK(at("DELETE") < at("POST"));
  const auto volumes = f.bmc.system().storage[0].volumes;
  REQUIRE(volumes.size() == 1);
  CHECK(volumes[0].raidType == "RAID1");
}

TEST_CASE("RedfishRaid asks for Immediate when the BMC offers it and follows the task",
          "[server][drivers][redfish][raid]") {
  RedfishFixture f;
  RedfishStorage st = controller(2);
  st.applyTimes = {"OnReset", "Immediate"};
  st.taskPolls = 2;
  giveStorage(f, {st});
  Raider r(f);
  r.target(oneDisk({{"size_gb", 100}, {"raid_level", "1"}}));
  auto done = r.run("create_configuration");
  INFO((done ? "" : done.error().message));
  REQUIRE(done);
  auto sent = posts(f);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0]["@Redfish.OperationApplyTime"] == "Immediate");
  // 202 twice, then the ended task.
  CHECK(f.bmc.requests("GET", "/redfish/v1/TaskService/TaskMonitors/raid-1").size() == 3);
  CHECK(f.bmc.system().resets.empty());  // Immediate: no reboot
  CHECK(f.bmc.system().storage[0].volumes.size() == 1);
  CHECK(r.raidConfig()["logical_disks"].size() == 1);
  CHECK(f.elapsedSeconds() == 20);  // two looks at the running task, 10 s apart
}

TEST_CASE("RedfishRaid reboots the node for an OnReset change and waits for its task",
          "[server][drivers][redfish][raid]") {
  RedfishFixture f;
  RedfishStorage st = controller(2);
  st.applyTimes = {"OnReset"};
  st.taskPolls = 1;
  st.volumes = {RedfishVolume{"Disk.Virtual.0", "old", "RAID0", 100 * kGi, {"Disk.Bay.0"}, true}};
  giveStorage(f, {st});
  Raider r(f);
  SECTION("create") {
    r.target(oneDisk({{"size_gb", 100}, {"raid_level", "0"}, {"physical_disks", {"Disk.Bay.1"}}}));
    auto done = r.run("create_configuration");
    INFO((done ? "" : done.error().message));
    REQUIRE(done);
    auto sent = posts(f);
    REQUIRE(sent.size() == 1);
    CHECK(sent[0]["@Redfish.OperationApplyTime"] == "OnReset");
    CHECK(f.bmc.system().storage[0].volumes.size() == 2);
  }
  SECTION("delete") {
    auto done = r.run("delete_configuration");
    INFO((done ? "" : done.error().message));
    REQUIRE(done);
    const auto deletes = f.bmc.requests("DELETE", std::string(kVolumes) + "/Disk.Virtual.0");
    REQUIRE(deletes.size() == 1);
    CHECK(json::parse(deletes[0].body) == json{{"@Redfish.OperationApplyTime", "OnReset"}});
    CHECK(f.bmc.system().storage[0].volumes.empty());
    CHECK(r.raidConfig()["logical_disks"].empty());
  }
  CHECK_FALSE(f.bmc.system().resets.empty());  // the reset that applied the change
  CHECK(r.task.node.str(kNodePowerState) == "power on");
}

TEST_CASE("RedfishRaid sends one request per controller until its task ended",
          "[server][drivers][redfish][raid]") {
  RedfishFixture f;
  RedfishStorage st = controller(4);
  st.taskPolls = 1;
  giveStorage(f, {st});
  Raider r(f);
  r.target({{"logical_disks",
             {{{"size_gb", 10}, {"raid_level", "1"}}, {{"size_gb", 10}, {"raid_level", "1"}}}}});
  auto done = r.run("create_configuration");
  INFO((done ? "" : done.error().message));
  REQUIRE(done);
  std::vector<std::string> order;
  for (const auto& q : f.bmc.requests()) {
    if (q.method == "POST") order.push_back("POST");
    if (q.path.rfind("/redfish/v1/TaskService/TaskMonitors/", 0) == 0) order.push_back(q.path);
  }
  const std::string m1 = "/redfish/v1/TaskService/TaskMonitors/raid-1";
  const std::string m2 = "/redfish/v1/TaskService/TaskMonitors/raid-2";
  CHECK(order == std::vector<std::string>{"POST", m1, m1, "POST", m2, m2});
  CHECK(f.bmc.system().storage[0].volumes.size() == 2);
}

TEST_CASE("RedfishRaid fails the step with Ironic's message when a task fails",
          "[server][drivers][redfish][raid]") {
  RedfishFixture f;
  RedfishStorage st = controller(2);
  st.taskPolls = 0;
  st.taskFails = true;
  giveStorage(f, {st});
  Raider r(f);
  r.target(oneDisk({{"size_gb", 100}, {"raid_level", "1"}}));
  auto failed = r.run("create_configuration");
  REQUIRE_FALSE(failed);
  CHECK(failed.error().message ==
        "Redfish exception occurred. Error: RAID create task "
        "/redfish/v1/TaskService/TaskMonitors/raid-1 to node " +
            std::string(kRedfishNode) +
            " failed; messages: The RAID controller could not apply the configuration.");
  CHECK(f.bmc.system().storage[0].volumes.empty());
}

TEST_CASE("RedfishRaid gives up on a task that does not end within its timeout",
          "[server][drivers][redfish][raid]") {
  RedfishFixture f;
  RedfishStorage st = controller(2);
  st.taskPolls = 1000;
  giveStorage(f, {st});
  Raider r(f);
  r.target(oneDisk({{"size_gb", 100}, {"raid_level", "1"}}));
  auto failed = r.run("create_configuration");
  REQUIRE_FALSE(failed);
  CHECK(failed.error().code == ErrorCode::DeadlineExceeded);
  CHECK_THAT(failed.error().message, Catch::Contains("did not finish within 600 seconds"));
}

TEST_CASE("RedfishRaid refuses what it cannot build, with Ironic's messages",
          "[server][drivers][redfish][raid]") {
  RedfishFixture f;
  giveStorage(f, {controller(2)});
  Raider r(f);
  const std::string node = kRedfishNode;
  struct Case {
    json target;
    std::string message;
  };
  const Case cases[] = {
      {oneDisk({{"size_gb", 100}, {"raid_level", "5"}}),
       "Redfish exception occurred. Error: failed to find matching physical disks for all logical "
       "disks"},
      {oneDisk({{"size_gb", 600},
                {"raid_level", "1"},
                {"physical_disks", {"Disk.Bay.0", "Disk.Bay.1"}}}),
       "Redfish exception occurred. Error: The physical disk space (536870912000 bytes) is not "
       "enough for the size of the logical disk (644245094400 bytes)"},
      {oneDisk({{"size_gb", 100}, {"raid_level", "1"}, {"physical_disks", {"Disk.Bay.0"}}}),
       "Redfish exception occurred. Error: The number of physical drives (1) is too few for the "
       "required number of overhead drives (1)"},
      {oneDisk({{"size_gb", 100}, {"raid_level", "1"}, {"physical_disks", {"Disk.Bay.9"}}}),
       "Redfish exception occurred. Error: physical disk Disk.Bay.9 of logical disk 0 was not "
       "found "
       "among the drives of the RAID controllers of node " +
           node},
      {oneDisk({{"size_gb", 100}, {"raid_level", "1"}, {"controller", "RAID.Slot.7-1"}}),
       "Redfish exception occurred. Error: RAID controller RAID.Slot.7-1 of logical disk 0 was not "
       "found on node " +
           node + " (RAID controllers: RAID.Integrated.1-1)"},
      {oneDisk({{"size_gb", 100}, {"raid_level", "JBOD"}}),
       "RAID level JBOD is not supported by the driver. Supported RAID levels: 0, 1, 5, 6, 1+0, "
       "5+0, 6+0"},
      {oneDisk({{"size_gb", 100}, {"raid_level", "1"}, {"interface_type", "scsi"}}),
       "interface type `scsi` not supported by Redfish RAID"},
      {oneDisk({{"size_gb", 100}, {"raid_level", "7"}}),
       "RAID config validation error: \"7\" is not one of ['JBOD', '0', '1', '2', '5', '6', '1+0', "
       "'5+0', '6+0']"},
  };
  for (const auto& c : cases) {
    INFO(c.target.dump());
    r.target(c.target);
    auto failed = r.run("create_configuration");
    REQUIRE_FALSE(failed);
    CHECK(failed.error().message == c.message);
  }
  CHECK(posts(f).empty());

  // No target at all.
  r.task.node.setNull(kNodeTargetRaidConfig);
  auto none = r.run("create_configuration");
  REQUIRE_FALSE(none);
  CHECK(none.error().message == "Node " + node + " has no target RAID configuration.");
}

TEST_CASE("RedfishRaid reports the BMC's refusal of a volume", "[server][drivers][redfish][raid]") {
  RedfishFixture f;
  giveStorage(f, {controller(3)});
  Raider r(f);
  // Three named drives for RAID1: Ironic's arithmetic allows it, the controller does not.
  r.target(oneDisk({{"size_gb", 100},
                    {"raid_level", "1"},
                    {"physical_disks", {"Disk.Bay.0", "Disk.Bay.1", "Disk.Bay.2"}}}));
  auto failed = r.run("create_configuration");
  REQUIRE_FALSE(failed);
  CHECK_THAT(failed.error().message,
             Catch::StartsWith("Redfish driver failed to create virtual disk for node " +
                               std::string(kRedfishNode) + ". Reason: ") &&
                 Catch::Contains("does not suit RAID1"));
}

TEST_CASE("RedfishRaid needs the System's Storage and skips controllers without RAID",
          "[server][drivers][redfish][raid]") {
  RedfishFixture f;
  Raider r(f);
  r.target(oneDisk({{"size_gb", 100}, {"raid_level", "1"}}));
  SECTION("no Storage") {
    auto failed = r.run("create_configuration");
    REQUIRE_FALSE(failed);
    CHECK(failed.error().message ==
          "Cannot get the list of physical disks for node " + std::string(kRedfishNode) +
              ". Reason: The attribute Storage is missing from the resource "
              "/redfish/v1/Systems/1.");
    auto del = r.run("delete_configuration");
    REQUIRE_FALSE(del);
    CHECK_THAT(del.error().message,
               Catch::StartsWith("Cannot get the list of volumes to delete for node "));
  }
  SECTION("a controller without RAID is not used") {
    RedfishStorage hba = controller(4, 500, "AHCI.Embedded.1-1");
    hba.supportedRaidTypes.clear();
    giveStorage(f, {hba, controller(2, 500, "RAID.Slot.1-1")});
    auto done = r.run("create_configuration");
    INFO((done ? "" : done.error().message));
    REQUIRE(done);
    CHECK(posts(f, "/redfish/v1/Systems/1/Storage/AHCI.Embedded.1-1/Volumes").empty());
    CHECK(posts(f, "/redfish/v1/Systems/1/Storage/RAID.Slot.1-1/Volumes").size() == 1);
  }
}

TEST_CASE("RedfishRaid apply_configuration stores the configuration and creates its root volume",
          "[server][drivers][redfish][raid]") {
  RedfishFixture f;
  giveStorage(f, {controller(4)});
  Raider r(f);
  const json config = {{"logical_disks",
                        {{{"size_gb", 100}, {"raid_level", "1"}, {"is_root_volume", true}},
                         {{"size_gb", 100}, {"raid_level", "1"}}}}};
  auto done = r.run("apply_configuration", {{"raid_config", config}});
  INFO((done ? "" : done.error().message));
  REQUIRE(done);
  CHECK(objectField(r.task.node, kNodeTargetRaidConfig) == config);
  CHECK(posts(f).size() == 1);  // Ironic's redfish default: create_nonroot_volumes false
}

TEST_CASE("RedfishRaid validates driver_info and the target RAID configuration",
          "[server][drivers][redfish][raid]") {
  RedfishFixture f;
  RedfishRaid raid(f.http);
  TaskContext task = f.task();
  CHECK_FALSE(raid.validate(task));
  task.node.setText(
      kNodeTargetRaidConfig,
      oneDisk({{"size_gb", 10}, {"raid_level", "1"}, {"interface_type", "scsi"}}).dump());
  CHECK(raid.validate(task) ==
        std::optional<std::string>("interface type `scsi` not supported by Redfish RAID"));
  task.node.setText(
      kNodeTargetRaidConfig,
      oneDisk({{"size_gb", 10}, {"raid_level", "1"}, {"physical_disks", {{{"size", ">= 100"}}}}})
          .dump());
  CHECK_THAT(*raid.validate(task), Catch::Contains("only software RAID takes"));
  task.driverInfo = json::object();
  CHECK_THAT(*raid.validate(task), Catch::Contains("redfish_address"));
  CHECK(f.bmc.requests().empty());  // validation does not contact the BMC
}

TEST_CASE("validateRaidConfigFor applies the checks of the node's raid interface",
          "[server][drivers][redfish][raid]") {
  const json scsi = oneDisk({{"size_gb", 10}, {"raid_level", "1"}, {"interface_type", "scsi"}});
  const json jbod = oneDisk({{"size_gb", 10}, {"raid_level", "JBOD"}});
  CHECK_FALSE(validateRaidConfigFor("redfish", scsi));
  CHECK_FALSE(validateRaidConfigFor("idrac-redfish", scsi));  // an alias of redfish
  CHECK_FALSE(validateRaidConfigFor("idrac-redfish", jbod));
  CHECK(validateRaidConfigFor("agent", scsi));
  CHECK(validateRaidConfigFor("fake", jbod));
  auto bad = validateRaidConfigFor("agent", json{{"logical_disks", json::array()}});
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == ErrorCode::InvalidArgument);
}

TEST_CASE("the idrac-redfish names are the redfish implementations",
          "[server][drivers][redfish][raid][idrac]") {
  InterfaceRegistry registry;
  REQUIRE(registerBuiltinInterfaces(registry,
                                    {std::make_shared<ProcessCommandRunner>(), makeHttpClient()}));
  REQUIRE(registry.checkComplete());
  for (auto type : {InterfaceType::Raid, InterfaceType::Power, InterfaceType::Management,
                    InterfaceType::Bios, InterfaceType::Inspect}) {
    INFO(interfaceInfo(type).name);
    HardwareInterface* alias = registry.find(type, "idrac-redfish");
    REQUIRE(alias);
    CHECK(alias == registry.find(type, "redfish"));
    CHECK(alias->name() == "redfish");
  }
  CHECK(registry.find(InterfaceType::Boot, "idrac-redfish-virtual-media") ==
        registry.find(InterfaceType::Boot, "redfish-virtual-media"));
  CHECK(registry.find(InterfaceType::Vendor, "idrac-redfish") ==
        registry.find(InterfaceType::Vendor, "redfish"));
  // A name is taken once, as an implementation or as an alias.
  auto twice = registry.addAlias(InterfaceType::Raid, "idrac-redfish", "redfish");
  REQUIRE_FALSE(twice);
  CHECK(twice.error().code == ErrorCode::AlreadyExists);
  auto nowhere = registry.addAlias(InterfaceType::Raid, "dell", "megaraid");
  REQUIRE_FALSE(nowhere);
  CHECK(nowhere.error().code == ErrorCode::Internal);
}

TEST_CASE("the idrac hardware type offers Ironic's idrac interface names",
          "[server][drivers][redfish][raid][idrac]") {
  auto parsed = parseConfig("[DEFAULT]\nenabled_hardware_types = ipmi, redfish, idrac\n", "t");
  REQUIRE(parsed);
  auto reg = DriverRegistry::create(*parsed);
  REQUIRE(reg);
  const auto* idrac = reg->find("idrac");
  REQUIRE(idrac);
  auto at = [&](InterfaceType t) { return idrac->enabled[static_cast<size_t>(t)]; };
  using V = std::vector<std::string>;
  CHECK(at(InterfaceType::Power) == V{"idrac-redfish", "redfish"});
  CHECK(at(InterfaceType::Management) == V{"idrac-redfish"});
  CHECK(at(InterfaceType::Bios) == V{"no-bios", "idrac-redfish", "redfish"});
  CHECK(at(InterfaceType::Boot) == V{"ipxe", "pxe", "idrac-redfish-virtual-media"});
  CHECK(at(InterfaceType::Raid) == V{"no-raid", "idrac-redfish", "agent"});
  CHECK(at(InterfaceType::Vendor) == V{"idrac-redfish", "redfish", "no-vendor"});
  CHECK(at(InterfaceType::Firmware) == V{"redfish", "no-firmware"});
  const auto inspect = at(InterfaceType::Inspect);
  CHECK(std::find(inspect.begin(), inspect.end(), "agent") != inspect.end());
  CHECK(std::find(inspect.begin(), inspect.end(), "idrac-redfish") != inspect.end());
  CHECK(*idrac->defaults[static_cast<size_t>(InterfaceType::Power)] == "idrac-redfish");
  CHECK(*idrac->defaults[static_cast<size_t>(InterfaceType::Raid)] == "no-raid");
  // The redfish hardware type offers the redfish RAID interface, no-raid by default.
  const auto* redfish = reg->find("redfish");
  REQUIRE(redfish);
  CHECK(redfish->enabled[static_cast<size_t>(InterfaceType::Raid)] ==
        V{"no-raid", "redfish", "agent"});
  CHECK(*redfish->defaults[static_cast<size_t>(InterfaceType::Raid)] == "no-raid");
  // As in Ironic, idrac is not enabled by default.
  auto defaults = parseConfig("", "t");
  REQUIRE(defaults);
  CHECK(defaults->enabledHardwareTypes == std::vector<std::string>{"ipmi", "redfish"});
}
