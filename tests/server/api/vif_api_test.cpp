// VIFs (API 1.28, 1.67): the flat network interface records a VIF on a free port or port group
// as Ironic's does without a network service; noop records nothing.
#include <catch2/catch.hpp>

#include "server/model/node.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TestApi;

namespace {

const char* kVif1 = "1a2b3c4d-0000-4000-8000-000000000001";
const char* kVif2 = "1a2b3c4d-0000-4000-8000-000000000002";
const char* kVif3 = "1a2b3c4d-0000-4000-8000-000000000003";

std::string addPort(TestApi& api, const std::string& node, const std::string& mac,
                    Json extra = Json::object()) {
  extra["address"] = mac;
  extra["node_uuid"] = node;
  auto r = api.post("/v1/ports", extra);
  INFO(r.body);
  REQUIRE(r.status == 201);
  return r.json()["uuid"];
}

Json vifs(TestApi& api, const std::string& node) {
  auto r = api.get("/v1/nodes/" + node + "/vifs");
  INFO(r.body);
  REQUIRE(r.status == 200);
  return r.json()["vifs"];
}

Json internalInfo(TestApi& api, const std::string& port) {
  return api.get("/v1/ports/" + port + "?fields=internal_info").json()["internal_info"];
}

}  // namespace

TEST_CASE("flat VIFs land on free ports, PXE-enabled first, and detach", "[server][api][vifs]") {
  TestApi api;
  const std::string node = api.createNode({{"name", "v1"}, {"network_interface", "flat"}})["uuid"];
  const std::string plain = addPort(api, node, "52:54:00:00:00:01", {{"pxe_enabled", false}});
  const std::string pxe = addPort(api, node, "52:54:00:00:00:02");
  CHECK(vifs(api, "v1").empty());

  REQUIRE(api.post("/v1/nodes/v1/vifs", {{"id", kVif1}}).status == 204);
  CHECK(internalInfo(api, pxe)["tenant_vif_port_id"] == kVif1);
  CHECK(vifs(api, "v1") == Json::array({{{"id", kVif1}}}));

  // The same VIF twice is a conflict naming the port.
  auto again = api.post("/v1/nodes/v1/vifs", {{"id", kVif1}});
  CHECK(again.status == 409);
  CHECK(again.fault() == std::string("Unable to attach VIF because VIF ") + kVif1 +
                             " is already attached to Ironic Port " + pxe);

  REQUIRE(api.post("/v1/nodes/v1/vifs", {{"id", kVif2}, {"extra_key", 1}}).status == 204);
  CHECK(internalInfo(api, plain)["tenant_vif_port_id"] == kVif2);
  auto full = api.post("/v1/nodes/v1/vifs", {{"id", kVif3}});
  CHECK(full.status == 400);
  CHECK(full.fault() ==
        std::string("Unable to attach VIF ") + kVif3 + ", not enough free physical ports.");

  // A port with a VIF cannot be deleted outside maintenance.
  auto del = api.del("/v1/ports/" + pxe);
  CHECK(del.status == 409);
  CHECK(del.fault() ==
        "Cannot delete the port " + pxe + " as it is bound to VIF " + kVif1 + " for tenant use.");

  REQUIRE(api.del(std::string("/v1/nodes/v1/vifs/") + kVif1).status == 204);
  CHECK_FALSE(internalInfo(api, pxe).contains("tenant_vif_port_id"));
  CHECK(vifs(api, "v1") == Json::array({{{"id", kVif2}}}));
  auto missing = api.del(std::string("/v1/nodes/v1/vifs/") + kVif1);
  CHECK(missing.status == 400);
  CHECK(missing.fault() == std::string("Unable to detach VIF ") + kVif1 + " from node " + node +
                               " because it is not attached to it.");
  CHECK(api.del("/v1/ports/" + pxe).status == 204);
}

TEST_CASE("flat VIFs prefer port groups and honour port_uuid and portgroup_uuid",
          "[server][api][vifs]") {
  TestApi api;
  const std::string node = api.createNode({{"name", "v2"}, {"network_interface", "flat"}})["uuid"];
  const std::string lone = addPort(api, node, "52:54:00:00:01:01");
  auto pgr = api.post("/v1/portgroups", {{"node_uuid", node}, {"name", "bond0"}});
  REQUIRE(pgr.status == 201);
  const std::string group = pgr.json()["uuid"];
  const std::string member = addPort(api, node, "52:54:00:00:01:02", {{"portgroup_uuid", group}});

  REQUIRE(api.post("/v1/nodes/v2/vifs", {{"id", kVif1}}).status == 204);
  CHECK(api.get("/v1/portgroups/" + group + "?fields=internal_info")
            .json()["internal_info"]["tenant_vif_port_id"] == kVif1);

  auto both = api.post("/v1/nodes/v2/vifs",
                       {{"id", kVif2}, {"port_uuid", lone}, {"portgroup_uuid", group}});
  CHECK(both.status == 400);
  CHECK(both.fault() == "Cannot specify both port_uuid and portgroup_uuid");

  // A port in a group is never chosen by port_uuid: grouped ports serve their group (Ironic).
  auto onMember = api.post("/v1/nodes/v2/vifs", {{"id", kVif2}, {"port_uuid", member}});
  CHECK(onMember.status == 400);
  REQUIRE(api.post("/v1/nodes/v2/vifs", {{"id", kVif2}, {"port_uuid", lone}}).status == 204);
  CHECK(internalInfo(api, lone)["tenant_vif_port_id"] == kVif2);
  CHECK(vifs(api, "v2").size() == 2);

  // With the group free again, portgroup_uuid picks it.
  REQUIRE(api.del(std::string("/v1/nodes/v2/vifs/") + kVif1).status == 204);
  CHECK(api.post("/v1/nodes/v2/vifs", {{"id", kVif3}, {"port_uuid", member}}).status == 400);
  REQUIRE(api.post("/v1/nodes/v2/vifs", {{"id", kVif3}, {"portgroup_uuid", group}}).status == 204);
  CHECK(api.get("/v1/portgroups/" + group + "?fields=internal_info")
            .json()["internal_info"]["tenant_vif_port_id"] == kVif3);
}

TEST_CASE("VIF requests are validated, versioned and respect the node lock",
          "[server][api][vifs]") {
  TestApi api;
  const std::string node = api.createNode({{"name", "v3"}, {"network_interface", "flat"}})["uuid"];
  addPort(api, node, "52:54:00:00:02:01");
  auto noId = api.post("/v1/nodes/v3/vifs", Json::object());
  CHECK(noId.status == 400);
  CHECK(noId.fault() == "Schema error for vif: 'id' is a required property");
  CHECK(api.post("/v1/nodes/v3/vifs", {{"id", 5}}).status == 400);
  auto badId = api.post("/v1/nodes/v3/vifs", {{"id", "not valid!"}});
  CHECK(badId.status == 400);
  CHECK(badId.fault() == "Expected UUID or name for vif.id: not valid!");
  CHECK(api.call("POST", "/v1/nodes/v3/vifs", "{").status == 400);
  CHECK(api.post("/v1/nodes/nope/vifs", {{"id", kVif1}}).status == 404);
  CHECK(vifs(api, "v3").empty());

  api.version = "1.27";
  CHECK(api.get("/v1/nodes/v3/vifs").status == 404);
  CHECK(api.post("/v1/nodes/v3/vifs", {{"id", kVif1}}).status == 404);
  api.version = "1.78";

  {
    auto tx = api.app().storage().begin(kiln::server::Storage::Mode::Write).value();
    auto rec = *tx->nodes().findBy(1, kiln::server::Value::text(node)).value();
    rec.setText(kiln::server::kNodeReservation, "other-host");
    REQUIRE(tx->nodes().update(rec));
    REQUIRE(tx->commit());
  }
  // As Ironic, the request waits for the lock ([conductor] node_locked_retry_attempts = 3 tries,
  // node_locked_retry_interval = 1 s apart), then gives up with 409.
  const auto before = api.clock().monotonic();
  auto locked = api.post("/v1/nodes/v3/vifs", {{"id", kVif1}});
  CHECK(api.clock().monotonic() - before == std::chrono::seconds(2));
  CHECK(locked.status == 409);
  CHECK(locked.fault() == "Node " + node +
                              " is locked by host other-host, please retry after the current "
                              "operation is completed.");
  CHECK(vifs(api, "v3").empty());  // listing takes no lock
}

TEST_CASE("the noop network interface accepts VIFs and lists none", "[server][api][vifs]") {
  TestApi api;
  const std::string node = api.createNode({{"name", "v4"}, {"network_interface", "noop"}})["uuid"];
  addPort(api, node, "52:54:00:00:03:01");
  CHECK(api.post("/v1/nodes/v4/vifs", {{"id", kVif1}}).status == 204);
  CHECK(vifs(api, "v4").empty());
  CHECK(api.del(std::string("/v1/nodes/v4/vifs/") + kVif1).status == 204);
}
