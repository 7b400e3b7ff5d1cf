#include <catch2/catch.hpp>

#include <filesystem>
#include <set>

#include <stdlib.h>

#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TestApi;

TEST_CASE("drivers list the enabled hardware types", "[server][api][drivers]") {
  TestApi api;
  auto drivers = api.get("/v1/drivers").json()["drivers"];
  std::set<std::string> names;
  for (const auto& d : drivers) {
    names.insert(d["name"].get<std::string>());
    CHECK(d["hosts"] == Json{"test-conductor"});
    CHECK(d["type"] == "dynamic");
    CHECK_FALSE(d.contains("default_power_interface"));
  }
  CHECK(names == std::set<std::string>{"fake-hardware", "ipmi", "redfish", "manual-management"});
  auto detailed = api.get("/v1/drivers?detail=true").json()["drivers"][0];
  CHECK(detailed.contains("default_power_interface"));
  CHECK(api.get("/v1/drivers?type=classic").json()["drivers"].empty());
  CHECK(api.get("/v1/drivers?type=dynamic").json()["drivers"].size() == 4);
  CHECK(api.get("/v1/drivers?type=bogus").status == 400);
  api.version = "1.29";
  CHECK(api.get("/v1/drivers?type=dynamic").status == 406);
  CHECK_FALSE(api.get("/v1/drivers").json()["drivers"][0].contains("type"));
}

TEST_CASE("driver show reports default and enabled interfaces", "[server][api][drivers]") {
  TestApi api;
  auto d = api.get("/v1/drivers/ipmi").json();
  CHECK(d["name"] == "ipmi");
  CHECK(d["default_power_interface"] == "ipmitool");
  CHECK(d["enabled_power_interfaces"] == Json{"ipmitool"});
  CHECK(d["default_boot_interface"] == "ipxe");
  CHECK(d["enabled_boot_interfaces"] == Json{"ipxe", "pxe"});
  CHECK(d["default_raid_interface"] == "no-raid");
  CHECK(d["enabled_raid_interfaces"] == Json{"no-raid", "agent"});
  CHECK(d.contains("default_bios_interface"));
  api.version = "1.39";
  CHECK_FALSE(api.get("/v1/drivers/ipmi").json().contains("default_bios_interface"));
  api.version = "1.78";
  auto missing = api.get("/v1/drivers/nope");
  CHECK(missing.status == 404);
  CHECK_THAT(missing.fault(), Catch::Contains("nope"));
}

TEST_CASE("driver properties are those of the default interfaces", "[server][api][drivers]") {
  TestApi api;
  auto props = api.get("/v1/drivers/ipmi/properties").json();
  CHECK(props.contains("ipmi_address"));
  CHECK(props.contains("deploy_kernel"));
  CHECK_FALSE(props.contains("redfish_address"));
  CHECK(api.get("/v1/drivers/redfish/properties").json().contains("redfish_address"));
  CHECK(api.get("/v1/drivers/fake-hardware/raid/logical_disk_properties").json().contains("raid_level"));
  CHECK(api.get("/v1/drivers/ipmi/raid/logical_disk_properties").status == 404);
}

TEST_CASE("node validate reports each interface", "[server][api][drivers]") {
  TestApi api;
  api.createNode({{"name", "ok"}});
  auto v = api.get("/v1/nodes/ok/validate").json();
  for (const char* iface : {"bios", "boot", "console", "deploy", "inspect", "management", "network",
                            "power", "raid", "rescue", "storage"}) {
    INFO(iface);
    CHECK(v[iface]["result"] == true);
  }
  CHECK_FALSE(v.contains("vendor"));
  CHECK(api.get("/v1/nodes/validate?node=ok").json() == v);

  api.createNode({{"name", "bare"}, {"driver", "ipmi"}});
  v = api.get("/v1/nodes/bare/validate").json();
  CHECK(v["power"]["result"] == false);
  CHECK_THAT(v["power"]["reason"].get<std::string>(), Catch::Contains("ipmi_address"));
  CHECK(v["deploy"]["result"] == false);
  CHECK_THAT(v["deploy"]["reason"].get<std::string>(), Catch::Contains("image_source"));
  CHECK(v["boot"]["result"] == false);
  CHECK(v["raid"]["result"] == false);
  CHECK_THAT(v["raid"]["reason"].get<std::string>(), Catch::Contains("does not support raid"));
  CHECK(v["network"]["result"] == true);
}

TEST_CASE("validate fails when instance traits are not node traits", "[server][api][drivers]") {
  TestApi api;
  api.createNode({{"name", "it"}, {"instance_info", {{"traits", {"CUSTOM_GOLD"}}}}});
  auto v = api.get("/v1/nodes/it/validate").json();
  CHECK(v["deploy"]["result"] == false);
  CHECK_THAT(v["deploy"]["reason"].get<std::string>(), Catch::Contains("missing traits ['CUSTOM_GOLD']"));
  REQUIRE(api.putRaw("/v1/nodes/it/traits/CUSTOM_GOLD").status == 204);
  CHECK(api.get("/v1/nodes/it/validate").json()["deploy"]["result"] == true);
  REQUIRE(api.patch("/v1/nodes/it", Json::parse(R"([{"op":"add","path":"/instance_info/traits","value":"CUSTOM_GOLD"}])")).status == 200);
  CHECK_THAT(api.get("/v1/nodes/it/validate").json()["deploy"]["reason"].get<std::string>(),
             Catch::Contains("A list of strings is expected"));
}

TEST_CASE("validate reports an interface disabled after enrollment", "[server][api][drivers]") {
  char tmpl[] = "/tmp/kiln-validate-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string db = "[database]\nconnection = sqlite:///" + dir + "/kiln.sqlite\n";
  {
    TestApi api(db);
    api.createNode({{"name", "later"}, {"deploy_interface", "direct"}});
  }
  // The same database under a server that no longer enables the direct deploy interface.
  TestApi api(db + "[DEFAULT]\nenabled_deploy_interfaces = fake\n");
  auto r = api.get("/v1/nodes/later/validate");
  REQUIRE(r.status == 200);
  auto v = r.json();
  CHECK(v["deploy"]["result"] == false);
  CHECK_THAT(v["deploy"]["reason"].get<std::string>(),
             Catch::Contains("Could not find the following deploy interface: direct"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("conductors list this server", "[server][api][drivers]") {
  TestApi api;
  auto list = api.get("/v1/conductors").json()["conductors"];
  REQUIRE(list.size() == 1);
  CHECK(list[0]["hostname"] == "test-conductor");
  CHECK(list[0]["alive"] == true);
  CHECK(api.get("/v1/conductors/test-conductor?fields=drivers").json()["drivers"].size() == 4);
  CHECK(api.get("/v1/conductors/other").status == 404);
  api.version = "1.48";
  CHECK(api.get("/v1/conductors").status == 404);
}

TEST_CASE("driver properties are not empty for any enabled hardware type",
          "[server][api][drivers]") {
  TestApi api;
  auto keys = [&](const std::string& driver) {
    auto r = api.get("/v1/drivers/" + driver + "/properties");
    REQUIRE(r.status == 200);
    std::set<std::string> out;
    const Json props = r.json();
    for (auto it = props.begin(); it != props.end(); ++it) {
      INFO(driver << " " << it.key());
      const std::string description = it.value().get<std::string>();
      // Ironic's style: what the key is, then whether it is required.
      CHECK((description.find("Required") != std::string::npos ||
             description.find("Optional") != std::string::npos));
      out.insert(it.key());
    }
    return out;
  };
  using S = std::set<std::string>;
  for (const auto& d : api.get("/v1/drivers").json()["drivers"]) {
    INFO(d["name"]);
    CHECK_FALSE(keys(d["name"]).empty());
  }
  // fake-hardware's defaults are fake implementations; only the fake vendor interface has
  // properties, Ironic's two placeholders.
  CHECK(keys("fake-hardware") == S{"B1", "B2"});
  // The real implementations list the driver_info keys they read.
  const S netboot{"deploy_kernel", "deploy_ramdisk", "kernel_append_params"};
  S ipmi = netboot;
  ipmi.insert({"ipmi_address", "ipmi_username", "ipmi_password", "ipmi_port", "ipmi_priv_level",
               "ipmi_protocol_version", "ipmi_cipher_suite"});
  CHECK(keys("ipmi") == ipmi);
  S redfish = netboot;
  redfish.insert({"redfish_address", "redfish_system_id", "redfish_username", "redfish_password",
                  "redfish_verify_ca", "redfish_auth_type"});
  CHECK(keys("redfish") == redfish);
  CHECK(keys("manual-management") == netboot);
}

TEST_CASE(
    "fake-hardware properties follow its default implementations when the config changes them",
    "[server][api][drivers]") {
  TestApi api("[DEFAULT]\ndefault_boot_interface = ipxe\n");
  auto props = api.get("/v1/drivers/fake-hardware/properties").json();
  CHECK(props.contains("B1"));
  CHECK(props.contains("deploy_kernel"));
}
