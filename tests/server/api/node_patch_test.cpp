#include <catch2/catch.hpp>

#include <set>

#include "server/model/node.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TestApi;

namespace {
Json op(const std::string& o, const std::string& path, Json value = nullptr) {
  Json j = {{"op", o}, {"path", path}};
  if (o != "remove") j["value"] = std::move(value);
  return j;
}
}  // namespace

TEST_CASE("PATCH applies RFC 6902 operations to patchable fields", "[server][api][patch]") {
  TestApi api;
  api.createNode({{"name", "p"}, {"properties", {{"cpus", 2}}}});
  auto r = api.patch("/v1/nodes/p", Json::array({op("add", "/properties/memory_mb", 1024),
                                                 op("replace", "/properties/cpus", 8),
                                                 op("add", "/extra/rack", "r1"),
                                                 op("add", "/driver_info/ipmi_password", "secret"),
                                                 op("replace", "/description", "hello")}));
  REQUIRE(r.status == 200);
  auto n = r.json();
  CHECK(n["properties"] == Json{{"cpus", 8}, {"memory_mb", 1024}});
  CHECK(n["extra"]["rack"] == "r1");
  CHECK(n["driver_info"]["ipmi_password"] == "******");
  CHECK(n["description"] == "hello");
  CHECK(n["updated_at"] == "2026-01-01T00:00:00+00:00");
  r = api.patch("/v1/nodes/p", Json::array({op("remove", "/properties/cpus"), op("remove", "/description"),
                                            op("remove", "/extra")}));
  REQUIRE(r.status == 200);
  CHECK(r.json()["properties"] == Json{{"memory_mb", 1024}});
  CHECK(r.json()["description"].is_null());
  CHECK(r.json()["extra"] == Json::object());
}

TEST_CASE("a PATCH is atomic: one failing operation changes nothing", "[server][api][patch]") {
  TestApi api;
  api.createNode({{"name", "atomic"}, {"extra", {{"a", 1}}}});
  auto r = api.patch("/v1/nodes/atomic", Json::array({op("add", "/extra/b", 2),
                                                      op("remove", "/extra/missing")}));
  CHECK(r.status == 400);
  CHECK(r.fault() == "Couldn't apply patch '{'op': 'remove', 'path': '/extra/missing'}'. Reason: "
                     "can't remove a non-existent object 'missing'");
  CHECK(api.get("/v1/nodes/atomic").json()["extra"] == Json{{"a", 1}});
  r = api.patch("/v1/nodes/atomic", Json::array({op("replace", "/name", "renamed"),
                                                 op("replace", "/maintenance", "not-a-bool")}));
  CHECK(r.status == 400);
  CHECK(api.get("/v1/nodes/atomic").status == 200);
  CHECK(api.get("/v1/nodes/renamed").status == 404);
}

TEST_CASE("PATCH refuses read-only paths, traits and malformed patches", "[server][api][patch]") {
  TestApi api;
  api.createNode({{"name", "ro"}});
  for (const auto& path : {"/uuid", "/provision_state", "/last_error", "/driver_internal_info",
                           "/raid_config", "/target_raid_config", "/maintenance_reason", "/created_at"}) {
    INFO(path);
    auto r = api.patch("/v1/nodes/ro", Json::array({op("replace", path, "x")}));
    CHECK(r.status == 400);
    CHECK_THAT(r.fault(), Catch::StartsWith(std::string("Cannot patch ") + path +
                                            ". Only the following can be updated: automated_clean,"));
  }
  auto traits = api.patch("/v1/nodes/ro", Json::array({op("add", "/traits", Json::array({"CUSTOM_A"}))}));
  CHECK(traits.status == 400);
  CHECK_THAT(traits.fault(), Catch::Contains("node traits API"));
  for (const std::string& body : {"{}", "[1]", R"([{"op":"move","path":"/name","value":"x"}])",
                                  R"([{"op":"add","value":"x"}])", R"([{"op":"add","path":"name","value":"x"}])",
                                  R"([{"op":"add","path":"/name"}])", R"([{"op":"add","path":"/name","value":"x","from":"y"}])",
                                  "not json"}) {
    INFO(body);
    CHECK(api.call("PATCH", "/v1/nodes/ro", body).status == 400);
  }
  CHECK(api.patch("/v1/nodes/ro", Json::array({op("remove", "/driver")})).status == 400);
  CHECK(api.patch("/v1/nodes/ro", Json::array({op("replace", "/name", "bad name")})).status == 400);
}

TEST_CASE("PATCH of a field newer than the requested version is 406", "[server][api][patch]") {
  TestApi api;
  api.createNode({{"name", "v"}});
  api.version = "1.49";
  CHECK(api.patch("/v1/nodes/v", Json::array({op("replace", "/owner", "x")})).status == 406);
  api.version = "1.50";
  CHECK(api.patch("/v1/nodes/v", Json::array({op("replace", "/owner", "x")})).status == 200);
}

TEST_CASE("a driver change with the matching interface change in one patch works",
          "[server][api][patch][drivers]") {
  TestApi api;
  api.createNode({{"name", "d"}});
  // fake-hardware's fake power interface is not supported by ipmi: the driver alone fails...
  auto alone = api.patch("/v1/nodes/d", Json::array({op("replace", "/driver", "ipmi")}));
  CHECK(alone.status == 400);
  CHECK_THAT(alone.fault(), Catch::Contains("not supported by hardware type ipmi"));
  CHECK(api.get("/v1/nodes/d").json()["driver"] == "fake-hardware");
  // ...but with every incompatible interface changed in the same patch it succeeds.
  Json patch = Json::array({op("replace", "/driver", "ipmi"), op("replace", "/power_interface", "ipmitool"),
                            op("replace", "/management_interface", "ipmitool"),
                            op("replace", "/boot_interface", "ipxe"), op("replace", "/deploy_interface", "direct"),
                            op("replace", "/bios_interface", "no-bios"), op("replace", "/console_interface", "no-console"),
                            op("replace", "/inspect_interface", "no-inspect"), op("replace", "/raid_interface", "no-raid"),
                            op("replace", "/rescue_interface", "no-rescue"), op("replace", "/storage_interface", "noop"),
                            op("replace", "/vendor_interface", "no-vendor")});
  auto both = api.patch("/v1/nodes/d", patch);
  INFO(both.body);
  REQUIRE(both.status == 200);
  CHECK(both.json()["driver"] == "ipmi");
  CHECK(both.json()["power_interface"] == "ipmitool");
}

TEST_CASE("reset_interfaces resets unspecified interfaces on a driver change", "[server][api][patch][drivers]") {
  TestApi api;
  api.createNode({{"name", "reset"}});
  auto r = api.call("PATCH", "/v1/nodes/reset?reset_interfaces=true",
                    Json::array({op("replace", "/driver", "ipmi")}).dump());
  INFO(r.body);
  REQUIRE(r.status == 200);
  CHECK(r.json()["power_interface"] == "ipmitool");
  CHECK(r.json()["deploy_interface"] == "direct");
  auto noDriver = api.call("PATCH", "/v1/nodes/reset?reset_interfaces=true",
                           Json::array({op("replace", "/description", "x")}).dump());
  CHECK(noDriver.status == 400);
  // Removing an interface resets it to the default.
  auto removed = api.patch("/v1/nodes/reset", Json::array({op("replace", "/boot_interface", "pxe")}));
  CHECK(removed.json()["boot_interface"] == "pxe");
  removed = api.patch("/v1/nodes/reset", Json::array({op("remove", "/boot_interface")}));
  CHECK(removed.json()["boot_interface"] == "ipxe");
}

TEST_CASE("interface and driver changes are refused in busy states", "[server][api][patch][drivers]") {
  TestApi api;
  auto n = api.createNode({{"name", "busy"}});
  {
    auto tx = api.app().storage().begin(kiln::server::Storage::Mode::Write).value();
    auto rec = *tx->nodes().findBy(1, kiln::server::Value::text(n["uuid"])).value();
    rec.setText(kiln::server::kNodeProvisionState, "active");
    REQUIRE(tx->nodes().update(rec));
    REQUIRE(tx->commit());
  }
  auto r = api.patch("/v1/nodes/busy", Json::array({op("replace", "/deploy_interface", "direct")}));
  CHECK(r.status == 409);
  CHECK(api.patch("/v1/nodes/busy", Json::array({op("replace", "/description", "ok")})).status == 200);
  // In maintenance, interfaces (not the driver) may change.
  REQUIRE(api.putRaw("/v1/nodes/busy/maintenance").status == 202);
  CHECK(api.patch("/v1/nodes/busy", Json::array({op("replace", "/deploy_interface", "direct")})).status == 200);
  CHECK(api.patch("/v1/nodes/busy", Json::array({op("replace", "/driver", "ipmi")})).status == 409);
  // An active node can be protected, and then cannot be deleted.
  CHECK(api.patch("/v1/nodes/busy", Json::array({op("replace", "/protected", true),
                                                 op("replace", "/protected_reason", "prod")})).status == 200);
  CHECK(api.del("/v1/nodes/busy").status == 403);
}

TEST_CASE("PATCH keeps names unique and instance associations exclusive", "[server][api][patch]") {
  TestApi api;
  api.createNode({{"name", "one"}});
  api.createNode({{"name", "two"}, {"instance_uuid", "6b6d6a1c-0000-4000-8000-000000000003"}});
  auto r = api.patch("/v1/nodes/two", Json::array({op("replace", "/name", "one")}));
  CHECK(r.status == 409);
  CHECK(r.fault() == "A node with name one already exists.");
  r = api.patch("/v1/nodes/two", Json::array({op("replace", "/instance_uuid", "6b6d6a1c-0000-4000-8000-000000000004")}));
  CHECK(r.status == 409);
  r = api.patch("/v1/nodes/one", Json::array({op("replace", "/instance_uuid", "6b6d6a1c-0000-4000-8000-000000000003")}));
  CHECK(r.status == 409);
  CHECK(api.patch("/v1/nodes/one", Json::array({op("replace", "/instance_uuid", "nope")})).status == 400);
}
