#include <catch2/catch.hpp>

#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TestApi;

namespace {

Json bindPort() {
  return {{"event", "network.bind_port"},
          {"port_id", "11111111-2222-4333-8444-555555555555"},
          {"mac_address", "52:54:00:AA:BB:CC"},
          {"status", "ACTIVE"},
          {"device_id", "aaaaaaaa-2222-4333-8444-555555555555"},
          {"binding:host_id", nullptr},
          {"binding:vnic_type", "baremetal"}};
}

}  // namespace

TEST_CASE("external network events are validated and accepted from 1.54", "[server][api][events]") {
  TestApi api;
  CHECK(api.post("/v1/events", {{"events", {bindPort()}}}).status == 204);
  Json unbind = bindPort();
  unbind["event"] = "network.unbind_port";
  unbind.erase("device_id");
  CHECK(api.post("/v1/events", {{"events", {bindPort(), unbind}}}).status == 204);
  CHECK(api.get("/v1").json().contains("events"));

  api.version = "1.53";
  CHECK(api.post("/v1/events", {{"events", {bindPort()}}}).status == 404);
  CHECK_FALSE(api.get("/v1").json().contains("events"));
}

TEST_CASE("external events with a bad shape are a 400 naming the problem",
          "[server][api][events]") {
  TestApi api;
  auto with = [](const char* key, Json value) {
    Json e = bindPort();
    if (value.is_null() && std::string(key) != "binding:host_id") {
      e.erase(key);
    } else {
      e[key] = value;
    }
    return Json{{"events", {e}}};
  };
  struct Case {
    Json body;
    std::string fault;
  };
  for (const auto& c : std::vector<Case>{
           {Json::array(), "is not of type 'object'"},
           {Json::object(), "'events' is a required property"},
           {{{"events", Json::array()}}, "[] is too short"},
           {{{"events", {bindPort()}}, {"more", 1}},
            "Additional properties are not allowed ('more'"},
           {with("event", "network.rename_port"), "is not one of ['network.bind_port'"},
           {with("port_id", "not-a-uuid"), "Expected UUID for port_id: not-a-uuid"},
           {with("mac_address", "zz:zz"), "Expected valid MAC address for mac_address: zz:zz"},
           {with("status", nullptr), "'status' is a required property"},
           {with("status", 5), "5 is not of type 'string'"},
           {with("extra", "x"), "Additional properties are not allowed ('extra'"},
       }) {
    INFO(c.body.dump());
    auto r = api.post("/v1/events", c.body);
    CHECK(r.status == 400);
    CHECK_THAT(r.fault(), Catch::Contains(c.fault));
  }
}
