#include <catch2/catch.hpp>

#include <map>

#include "server/drivers/fake/fake_firmware.h"
#include "server/model/firmware_component.h"
#include "server/model/node.h"
#include "server/storage/queries/firmware_components.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TestApi;
using namespace kiln::server;

namespace {

/// fake-hardware nodes get the fake firmware interface (the API version of these tests is
/// below 1.86, where a client cannot name it).
constexpr const char* kFakeFirmware = "[DEFAULT]\ndefault_firmware_interface = fake\n";

Json node(TestApi& api, const std::string& ident) {
  api.settle();
  return api.get("/v1/nodes/" + ident).json();
}

kiln::test::Response provision(TestApi& api, const std::string& ident, Json body) {
  auto r = api.put("/v1/nodes/" + ident + "/states/provision", body);
  api.settle();
  return r;
}

Json update(std::initializer_list<std::pair<const char*, const char*>> settings) {
  Json list = Json::array();
  for (const auto& [component, url] : settings)
    list.push_back({{"component", component}, {"url", url}});
  return {{"interface", "firmware"}, {"step", "update"}, {"args", {{"settings", list}}}};
}

/// The node's cached components by name (straight from storage).
std::map<std::string, Record> cached(TestApi& api, const std::string& name) {
  auto tx = api.app().storage().begin(Storage::Mode::Read).value();
  auto n = tx->nodes().findBy(kNodeName, Value::text(name)).value();
  REQUIRE(n);
  std::map<std::string, Record> out;
  // Held in a variable: a range-for over .value() of a temporary would dangle.
  const auto rows = listFirmwareComponents(*tx, n->id()).value();
  for (const auto& r : rows) out[r.str(kFwComponent)] = r;
  return out;
}

}  // namespace

TEST_CASE("manual cleaning runs firmware.update on fake hardware and caches the components",
          "[server][conductor][flows][firmware]") {
  TestApi api(kFakeFirmware);
  api.createNode({{"name", "fw"}});
  REQUIRE(provision(api, "fw", {{"target", "manage"}}).status == 202);
  REQUIRE(provision(api, "fw",
                    {{"target", "clean"},
                     {"clean_steps", {update({{"bmc", "http://fw.test/bmc-5.1.bin"}})}}})
              .status == 202);
  Json n = node(api, "fw");
  INFO(n["last_error"]);
  REQUIRE(n["provision_state"] == "manageable");
  CHECK(n["driver_internal_info"]["fake_firmware"]["bmc"] == "bmc-5.1.bin");
  auto c = cached(api, "fw");
  REQUIRE(c.size() == 2);
  CHECK(c["bios"].str(kFwCurrentVersion) == kFakeBiosVersion);
  CHECK(c["bios"][kFwLastVersionFlashed].isNull());
  CHECK(c["bmc"].str(kFwCurrentVersion) == "bmc-5.1.bin");
  CHECK(c["bmc"].str(kFwModel) == kFakeBmcModel);
  const std::string initial = c["bmc"].str(kFwInitialVersion);

  // A second update keeps the first version seen and records the one flashed.
  api.clock().advance(std::chrono::seconds(60));
  REQUIRE(
      provision(
          api, "fw",
          {{"target", "clean"},
           {"clean_steps",
            {update({{"bmc", "http://fw.test/bmc-5.2.bin"}, {"nic:X1", "http://fw.test/x1-3"}})}}})
          .status == 202);
  REQUIRE(node(api, "fw")["provision_state"] == "manageable");
  c = cached(api, "fw");
  REQUIRE(c.size() == 3);
  CHECK(c["bmc"].str(kFwInitialVersion) == initial);
  CHECK(c["bmc"].str(kFwCurrentVersion) == "bmc-5.2.bin");
  CHECK(c["bmc"].str(kFwLastVersionFlashed) == "bmc-5.2.bin");
  CHECK(c["bmc"].str(kFwUpdatedAt) == kiln::formatIsoTime(api.clock().now()));
  CHECK(c["nic:X1"].str(kFwInitialVersion) == "x1-3");
  CHECK(c["nic:X1"][kFwUpdatedAt].isNull());
  CHECK(c["bios"][kFwUpdatedAt].isNull());  // unchanged rows keep their timestamps
}

TEST_CASE("firmware.update with bad settings fails cleaning with Ironic's message",
          "[server][conductor][flows][firmware]") {
  TestApi api(kFakeFirmware);
  api.createNode({{"name", "bad"}});
  REQUIRE(provision(api, "bad", {{"target", "manage"}}).status == 202);
  REQUIRE(provision(api, "bad",
                    {{"target", "clean"},
                     {"clean_steps", {update({{"cpld", "http://fw.test/cpld.bin"}})}}})
              .status == 202);
  Json n = node(api, "bad");
  CHECK(n["provision_state"] == "clean failed");
  CHECK_THAT(n["last_error"].get<std::string>(),
             Catch::Contains("firmware.update: Invalid firmware update [{'component': 'cpld', "
                             "'url': 'http://fw.test/cpld.bin'}]. Errors: 'cpld' is not valid "
                             "under any of the given schemas"));
  // Verify and the start of cleaning cached the components; the failed update added none.
  CHECK(cached(api, "bad").count("cpld") == 0);
  // Without settings the step is refused before it runs (its argsinfo).
  REQUIRE(provision(api, "bad", {{"target", "manage"}}).status == 202);
  REQUIRE(
      provision(api, "bad",
                {{"target", "clean"},
                 {"clean_steps", Json::parse(R"([{"interface": "firmware", "step": "update"}])")}})
          .status == 202);
  CHECK_THAT(node(api, "bad")["last_error"].get<std::string>(),
             Catch::Contains("missing these required arguments: settings"));
}

TEST_CASE("firmware.update runs as a user deploy step", "[server][conductor][flows][firmware]") {
  TestApi api(kFakeFirmware);
  api.createNode({{"name", "d"}});
  for (const char* target : {"manage", "provide"}) {
    REQUIRE(provision(api, "d", {{"target", target}}).status == 202);
  }
  REQUIRE(node(api, "d")["provision_state"] == "available");
  Json step = update({{"bios", "http://fw.test/bios-2.0"}});
  step["priority"] = 85;
  REQUIRE(provision(api, "d", {{"target", "active"}, {"deploy_steps", {step}}}).status == 202);
  Json n = node(api, "d");
  INFO(n["last_error"]);
  CHECK(n["provision_state"] == "active");
  CHECK(cached(api, "d")["bios"].str(kFwCurrentVersion) == "bios-2.0");
}

TEST_CASE("the cleaning steps of a fake-firmware node list firmware.update",
          "[server][conductor][cleaning][firmware]") {
  TestApi api(kFakeFirmware);
  api.createNode({{"name", "cs"}});
  bool found = false;
  for (const auto& s : api.get("/v1/nodes/cs/cleaning/steps").json()) {
    if (s["interface"] != "firmware") continue;
    found = true;
    CHECK(s["step"] == "update");
    CHECK(s["priority"] == 0);
    CHECK(s["abortable"] == false);
    CHECK(s["args"][0]["name"] == "settings");
    CHECK(s["args"][0]["required"] == true);
  }
  CHECK(found);
  // A no-firmware node (the fake-hardware default) offers no firmware steps.
  TestApi plain;
  plain.createNode({{"name", "p"}});
  for (const auto& s : plain.get("/v1/nodes/p/cleaning/steps").json())
    CHECK(s["interface"] != "firmware");
}
