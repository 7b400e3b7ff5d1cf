// The redfish vendor interface (redfish_vendor.h): eject_vmedia and the EventService
// subscriptions Metal3's operator creates (metal3-call-surface.md §3.14), against the test BMC,
// then through the API's vendor passthru with BMO's bodies.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "server/drivers/redfish/redfish_vendor.h"
#include "server/model/versions.h"
#include "tests/server/drivers/redfish/redfish_fixture.h"
#include "tests/support/test_api.h"

using kiln::server::RedfishVendor;
using kiln::test::Json;
using kiln::test::RedfishFixture;
using kiln::test::RedfishSystemState;
using kiln::test::RedfishTestServer;
using kiln::test::TestApi;
namespace ver = kiln::server::ver;

TEST_CASE("redfish vendor: create, read, list and delete an event subscription",
          "[server][redfish][vendor]") {
  RedfishFixture f;
  RedfishVendor vendor(f.http);
  auto task = f.task();
  const Json args{{"Destination", "https://hooks.example.com:8443/events"},
                  {"Context", "metal3/worker-0"},
                  {"HttpHeaders", Json::array({{{"Authorization", "Bearer s3cret"}}})}};
  REQUIRE_FALSE(vendor.validateCall(task, "create_subscription", args));
  auto created = vendor.call(task, "create_subscription", "POST", args);
  REQUIRE(created);
  const Json expected{{"Id", "1"},
                      {"Context", "metal3/worker-0"},
                      {"Destination", "https://hooks.example.com:8443/events"},
                      {"EventTypes", Json::array({"Alert"})},
                      {"Protocol", "Redfish"}};
  CHECK(*created == expected);  // only Ironic's five fields: no HttpHeaders back
  const auto subs = f.bmc.subscriptions();
  REQUIRE(subs.size() == 1);
  CHECK(subs[0].eventTypes == std::vector<std::string>{"Alert"});
  CHECK(subs[0].httpHeaders == R"([{"Authorization":"Bearer s3cret"}])");

  auto one = vendor.call(task, "get_subscription", "GET", {{"id", "1"}});
  REQUIRE(one);
  CHECK(*one == expected);
  auto all = vendor.call(task, "get_all_subscriptions", "GET", Json::object());
  REQUIRE(all);
  CHECK((*all)["Members"].size() == 1);
  CHECK((*all)["Members"][0]["@odata.id"] == "/redfish/v1/EventService/Subscriptions/1");

  REQUIRE(vendor.call(task, "delete_subscription", "DELETE", {{"id", "1"}}));
  CHECK(f.bmc.subscriptions().empty());
  CHECK(f.bmc.requests("DELETE", "/redfish/v1/EventService/Subscriptions/1").size() == 1);
  // A second delete: the BMC's 404 stays a 404, with Ironic's message.
  auto again = vendor.call(task, "delete_subscription", "DELETE", {{"id", "1"}});
  REQUIRE_FALSE(again);
  CHECK(again.error().code == kiln::ErrorCode::NotFound);
  CHECK(again.error().message.find("Redfish delete_subscription failed for subscription 1 on node") !=
        std::string::npos);
}

TEST_CASE("redfish vendor: EventTypes must be ones the BMC offers", "[server][redfish][vendor]") {
  RedfishFixture f;
  f.bmc.setEventTypes({"Alert", "StatusChange"});
  RedfishVendor vendor(f.http);
  auto task = f.task();
  auto ok = vendor.call(task, "create_subscription", "POST",
                        {{"Destination", "http://10.0.0.1/e"}, {"EventTypes", {"StatusChange"}},
                         {"Protocol", "Redfish"}});
  REQUIRE(ok);
  CHECK((*ok)["EventTypes"] == Json::array({"StatusChange"}));
  auto bad = vendor.call(task, "create_subscription", "POST",
                         {{"Destination", "http://10.0.0.1/e"}, {"EventTypes", {"MetricReport"}}});
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == kiln::ErrorCode::InvalidArgument);
  CHECK(bad.error().message.find("EventTypes [\"MetricReport\"] is not a valid value") == 0);
  CHECK(f.bmc.subscriptions().size() == 1);  // nothing created for the refused one
}

TEST_CASE("redfish vendor: argument checks before the BMC is contacted",
          "[server][redfish][vendor]") {
  RedfishFixture f;
  RedfishVendor vendor(f.http);
  const auto task = f.task();
  auto reason = [&](std::string_view method, const Json& args) {
    return vendor.validateCall(task, method, args).value_or("");
  };
  CHECK(reason("create_subscription", Json::object()) == "Destination None is not a valid URI");
  CHECK(reason("create_subscription", {{"Destination", "not a uri"}}) ==
        "Destination \"not a uri\" is not a valid URI");
  CHECK(reason("create_subscription", {{"Destination", "http:///path"}}) ==
        "Destination \"http:///path\" is not a valid URI");
  CHECK(reason("create_subscription", {{"Destination", 42}}) == "Destination 42 is not a valid URI");
  CHECK(reason("create_subscription", {{"Destination", "http://h/"}, {"Context", 1}}) ==
        "Context 1 is not a valid string");
  CHECK(reason("create_subscription", {{"Destination", "http://h/"}, {"Protocol", false}}) ==
        "Protocol false is not a string");
  CHECK(reason("create_subscription", {{"Destination", "http://h/"}, {"HttpHeaders", "x"}}) ==
        "HttpHeaders \"x\" is not a list of headers");
  CHECK(reason("create_subscription", {{"Destination", "http://h/"}, {"EventTypes", "Alert"}}) ==
        "EventTypes \"Alert\" is not a valid value");
  CHECK(reason("create_subscription", {{"Destination", "https://user@[fd00::1]:8443/x"}}).empty());
  CHECK(reason("delete_subscription", Json::object()) == "id can't be None");
  CHECK(reason("delete_subscription", {{"id", ""}}) == "id can't be None");
  CHECK(reason("get_subscription", {{"id", "../../Systems/1"}}) ==
        "id \"../../Systems/1\" is not a subscription id");
  CHECK(reason("delete_subscription", {{"id", 7}}) == "id 7 is not a subscription id");
  CHECK(reason("eject_vmedia", Json::object()).empty());
  CHECK(reason("eject_vmedia", {{"boot_device", "cd"}}).empty());
  CHECK(reason("eject_vmedia", {{"boot_device", "tape"}}) == "Boot device \"tape\" is not a valid value");
  CHECK(f.bmc.requests().empty());
}

TEST_CASE("redfish vendor: eject_vmedia takes the CD out", "[server][redfish][vendor]") {
  RedfishFixture f;
  f.bmc.updateSystem("1", [](RedfishSystemState& s) {
    s.manager = true;
    s.cdImage = "http://10.0.0.2/boot.iso";
    s.cdInserted = true;
  });
  RedfishVendor vendor(f.http);
  auto task = f.task();
  SECTION("a kind the slot does not take leaves it") {
    REQUIRE(vendor.call(task, "eject_vmedia", "POST", {{"boot_device", "floppy"}}));
    CHECK(f.bmc.system().cdInserted);
  }
  SECTION("cd, or every kind") {
    const Json args = GENERATE(Json{{"boot_device", "cd"}}, Json::object());
    REQUIRE(vendor.call(task, "eject_vmedia", "POST", args));
    CHECK_FALSE(f.bmc.system().cdInserted);
    CHECK(f.bmc.system().cdHistory == std::vector<std::string>{"eject"});
  }
}

TEST_CASE("vendor passthru on a redfish node: Metal3's subscription calls",
          "[server][api][vendor][redfish][metal3]") {
  RedfishTestServer bmc;
  REQUIRE(bmc.start());
  TestApi api;
  api.version = "1." + std::to_string(ver::k110DeploywaitAbort);
  auto created = api.post("/v1/nodes", {{"driver", "redfish"},
                                        {"name", "rf"},
                                        {"driver_info", {{"redfish_address", bmc.address()},
                                                         {"redfish_system_id", "/redfish/v1/Systems/1"}}}});
  REQUIRE(created.status == 201);
  CHECK(created.json()["vendor_interface"] == "redfish");  // Ironic's default for the type

  auto methods = api.get("/v1/nodes/rf/vendor_passthru/methods");
  REQUIRE(methods.status == 200);
  CHECK(methods.json()["create_subscription"]["http_methods"] == Json::array({"POST"}));
  CHECK(methods.json()["create_subscription"]["async"] == false);
  CHECK(methods.json()["delete_subscription"]["http_methods"] == Json::array({"DELETE"}));
  CHECK(methods.json()["eject_vmedia"]["async"] == true);

  // BMO's body (bmceventsubscription_controller.go): the answer is 200 with the Id it stores.
  auto sub = api.post("/v1/nodes/rf/vendor_passthru?method=create_subscription",
                      {{"Destination", "https://events.example.com/hook"},
                       {"Context", "ns/sub"},
                       {"HttpHeaders", Json::array({{{"X-Token", "abc"}}})}});
  INFO(sub.body);
  REQUIRE(sub.status == 200);
  CHECK(sub.json()["Id"] == "1");
  CHECK(sub.json()["Protocol"] == "Redfish");
  CHECK_FALSE(sub.json().contains("HttpHeaders"));
  CHECK(sub.body.find("abc") == std::string::npos);

  auto bad = api.post("/v1/nodes/rf/vendor_passthru?method=create_subscription",
                      {{"Destination", "nowhere"}});
  CHECK(bad.status == 400);
  CHECK(bad.fault() == "Destination \"nowhere\" is not a valid URI");
  CHECK(api.get("/v1/nodes/rf/vendor_passthru?method=create_subscription").status == 400);

  // DELETE with a JSON body, as BMO sends it.
  auto gone = api.call("DELETE", "/v1/nodes/rf/vendor_passthru?method=delete_subscription",
                       Json{{"id", "1"}}.dump());
  INFO(gone.body);
  CHECK(gone.status == 200);
  CHECK(bmc.subscriptions().empty());
  CHECK(api.call("DELETE", "/v1/nodes/rf/vendor_passthru?method=delete_subscription",
                 Json{{"id", "1"}}.dump()).status == 404);
  // The node is not left reserved by the synchronous calls.
  CHECK(api.get("/v1/nodes/rf").json()["reservation"].is_null());
}
