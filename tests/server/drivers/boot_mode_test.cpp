// Boot modes (server/drivers/boot_mode.h): what a node asks for, the default, and how the
// machine is aligned before it boots, as Ironic's boot_mode_utils decides.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "server/config.h"
#include "server/drivers/boot_mode.h"
#include "server/model/node.h"

using nlohmann::json;
using namespace kiln;
using namespace kiln::server;

namespace {

/// A management interface whose boot mode is a member; `supported` false makes get/set
/// unsupported (like ipmitool's).
class ModeManagement final : public ManagementInterface {
 public:
  std::optional<std::string> mode;
  bool supported = true;
  bool failSet = false;
  std::vector<std::string> sets;

  std::string_view name() const override { return "test"; }
  Result<BootDevice> getBootDevice(TaskContext&) override { return BootDevice{"pxe", false}; }
  Result<void> setBootDevice(TaskContext&, std::string_view, bool) override { return {}; }
  std::vector<std::string> supportedBootDevices(const TaskContext&) const override { return {"pxe"}; }
  Result<std::optional<std::string>> getBootMode(TaskContext& task) override {
    if (!supported) return unsupported(task, "get_boot_mode");
    return mode;
  }
  Result<void> setBootMode(TaskContext& task, std::string_view m) override {
    if (!supported) return unsupported(task, "set_boot_mode");
    if (failSet) return internalError("BMC said no");
    sets.emplace_back(m);
    mode = std::string(m);
    return {};
  }
};

struct Fixture {
  Fixture() {
    task.node = defaultRecord(nodeSchema());
    task.node.setText(kNodeUuid, "0c7b2a4e-1a4e-4f51-9c1c-6b8f0f5c0a01");
    task.node.setText(kNodeDriver, "fake-hardware");
    driver.management = &management;
    task.driver = &driver;
    task.config = &config;
  }
  Fixture& capabilities(const std::string& caps) {
    task.node.setText(kNodeProperties, json{{"capabilities", caps}}.dump());
    return *this;
  }
  Config config;
  ModeManagement management;
  NodeDriver driver;
  TaskContext task;
};

}  // namespace

TEST_CASE("nodeCapability reads Ironic's key:value capability string", "[server][boot_mode]") {
  const json props{{"capabilities", "cpu_vt:true, boot_mode : bios ,bad,also:bad:x,:x"}};
  CHECK(nodeCapability(props, "boot_mode") == "bios");
  CHECK(nodeCapability(props, "cpu_vt") == "true");
  CHECK_FALSE(nodeCapability(props, "also"));
  CHECK_FALSE(nodeCapability(props, "missing"));
  CHECK_FALSE(nodeCapability(json{{"capabilities", 3}}, "boot_mode"));
  CHECK_FALSE(nodeCapability(json::object(), "boot_mode"));
}

TEST_CASE("requestedBootMode follows Ironic's order and refuses contradictions",
          "[server][boot_mode]") {
  Fixture f;
  CHECK(requestedBootMode(f.task).value() == std::nullopt);
  CHECK(effectiveBootMode(f.task).value() == "uefi");
  f.config.defaultBootMode = "bios";
  CHECK(effectiveBootMode(f.task).value() == "bios");

  f.task.internalInfo["deploy_boot_mode"] = "uefi";
  CHECK(requestedBootMode(f.task).value() == "uefi");
  f.capabilities("boot_mode:BIOS");  // the node's capability beats the remembered mode
  CHECK(requestedBootMode(f.task).value() == "bios");
  f.task.instanceInfo["capabilities"] = json{{"boot_mode", "bios"}};
  CHECK(requestedBootMode(f.task).value() == "bios");

  // The instance asks for what the node cannot do.
  f.task.instanceInfo["capabilities"] = R"({"boot_mode": "uefi"})";  // JSON text works too
  auto clash = requestedBootMode(f.task);
  REQUIRE_FALSE(clash);
  CHECK(clash.error().code == ErrorCode::InvalidArgument);
  CHECK_THAT(clash.error().message, Catch::Contains("violates node properties/capabilities bios"));

  // secure_boot requested: uefi whatever else says.
  f.capabilities("");
  f.task.instanceInfo["capabilities"] = json{{"secure_boot", "True"}, {"boot_mode", "bios"}};
  CHECK(requestedBootMode(f.task).value() == "uefi");

  f.task.instanceInfo["capabilities"] = json{{"boot_mode", "legacy"}};
  CHECK_FALSE(requestedBootMode(f.task));
  f.task.instanceInfo["capabilities"] = "not json";
  auto bad = requestedBootMode(f.task);
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("A dictionary or a \"jsonified\" dictionary"));
}

TEST_CASE("syncBootMode: nothing known anywhere sets the default and remembers it",
          "[server][boot_mode]") {
  Fixture f;
  f.management.mode.reset();
  REQUIRE(syncBootMode(f.task));
  CHECK(f.management.sets == std::vector<std::string>{"uefi"});
  CHECK(f.task.internalInfo["deploy_boot_mode"] == "uefi");
  CHECK(f.task.node.optStr(kNodeBootMode) == "uefi");
}

TEST_CASE("syncBootMode: only the machine knows, so the machine's mode is kept",
          "[server][boot_mode]") {
  Fixture f;
  f.management.mode = "bios";
  REQUIRE(syncBootMode(f.task));
  CHECK(f.management.sets.empty());
  CHECK(f.task.internalInfo["deploy_boot_mode"] == "bios");
  CHECK(f.task.node.optStr(kNodeBootMode) == "bios");
}

TEST_CASE("syncBootMode: a requested mode is set when the machine differs; unsupported is fatal "
          "only then",
          "[server][boot_mode]") {
  Fixture f;
  f.capabilities("boot_mode:uefi");
  f.management.mode = "bios";
  REQUIRE(syncBootMode(f.task));
  CHECK(f.management.sets == std::vector<std::string>{"uefi"});
  CHECK(f.task.node.optStr(kNodeBootMode) == "uefi");

  // Same mode already: nothing set.
  f.management.sets.clear();
  REQUIRE(syncBootMode(f.task));
  CHECK(f.management.sets.empty());

  // A management interface that cannot tell or set: assumed right (ipmitool).
  Fixture g;
  g.capabilities("boot_mode:bios");
  g.management.supported = false;
  REQUIRE(syncBootMode(g.task));
  CHECK_FALSE(g.task.internalInfo.contains("deploy_boot_mode"));

  // A BMC that refuses the change: a clear error.
  Fixture h;
  h.capabilities("boot_mode:uefi");
  h.management.mode = "bios";
  h.management.failSet = true;
  auto refused = syncBootMode(h.task);
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message, Catch::Contains("Attempt to set uefi boot mode") &&
                                          Catch::Contains("BMC said no"));
}
