#include <catch2/catch.hpp>

#include <set>

#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TestApi;

TEST_CASE("node create needs only a driver and fills the interfaces", "[server][api][nodes]") {
  TestApi api;
  auto r = api.post("/v1/nodes", {{"driver", "fake-hardware"}});
  REQUIRE(r.status == 201);
  auto n = r.json();
  CHECK(r.header("Location") == "http://kiln.test:6385/v1/nodes/" + n["uuid"].get<std::string>());
  CHECK(n["provision_state"] == "enroll");
  CHECK(n["power_state"].is_null());
  CHECK(n["maintenance"] == false);
  CHECK(n["name"].is_null());
  CHECK(n["conductor_group"] == "");
  CHECK(n["deploy_interface"] == "fake");
  CHECK(n["network_interface"] == "flat");
  CHECK(n["raid_interface"] == "fake");
  CHECK(n["traits"] == Json::array());
  CHECK(n["conductor"] == "test-conductor");
  CHECK(n["created_at"] == "2026-01-01T00:00:00+00:00");
  CHECK(n["updated_at"].is_null());
  CHECK(n["links"][0]["href"] == "http://kiln.test:6385/v1/nodes/" + n["uuid"].get<std::string>());
  CHECK(n["ports"][0]["rel"] == "self");
  // Every field of the advertised version is present.
  for (const char* f : {"allocation_uuid", "automated_clean", "bios_interface", "boot_mode", "chassis_uuid",
                        "clean_step", "deploy_step", "description", "driver_internal_info", "fault",
                        "inspection_started_at", "lessee", "network_data", "owner", "protected",
                        "protected_reason", "raid_config", "rescue_interface", "retired",
                        "retired_reason", "secure_boot", "storage_interface", "target_raid_config"}) {
    INFO(f);
    CHECK(n.contains(f));
  }
}

TEST_CASE("node create below 1.11 starts in available", "[server][api][nodes]") {
  TestApi api;
  api.version = "1.5";
  auto r = api.post("/v1/nodes", {{"driver", "fake-hardware"}});
  REQUIRE(r.status == 201);
  CHECK(r.json()["provision_state"] == "available");
}

TEST_CASE("node create rejects bad input with 400 and stores nothing", "[server][api][nodes]") {
  TestApi api;
  struct Case { std::string body; std::string fault; };
  for (const auto& c : std::vector<Case>{
           {"{\"driver\": ", "Invalid JSON"},
           {"", "request body is empty"},
           {"[]", "is not of type 'object'"},
           {"{}", "'driver' is a required property"},
           {R"({"driver": "fake-hardware", "bogus": 1})", "Additional properties are not allowed ('bogus'"},
           {R"({"driver": 5})", "Expected a string"},
           {R"({"driver": "fake-hardware", "maintenance": "perhaps"})", "Expected a boolean"},
           {R"({"driver": "fake-hardware", "properties": []})", "Expected a object"},
           {R"({"driver": "fake-hardware", "name": "bad name"})", "invalid name"},
           {R"({"driver": "fake-hardware", "uuid": "not-a-uuid"})", "Expected UUID for uuid"},
           {R"({"driver": "fake-hardware", "provision_state": "active"})", "Additional properties"},
           {R"({"driver": "wrongdriver"})",
            "No valid host was found. Reason: No conductor service registered which supports driver wrongdriver."},
           {R"({"driver": "fake-hardware", "power_interface": "ipmitool"})", "not supported by hardware type fake-hardware"},
           {R"({"driver": "fake-hardware", "power_interface": "snmp"})", "Could not find the following power interface"},
           {R"({"driver": "fake-hardware", "chassis_uuid": "8221f906-208b-44a5-b575-f8e8a59c4a84"})", "Chassis"},
           {R"({"driver": "fake-hardware", "description": ")" + std::string(4097, 'd') + R"("})", "maximum"},
       }) {
    INFO(c.body.substr(0, 80));
    auto r = api.call("POST", "/v1/nodes", c.body);
    CHECK(r.status == 400);
    CHECK_THAT(r.fault(), Catch::Contains(c.fault));
  }
  CHECK(api.get("/v1/nodes").json()["nodes"].empty());
}

TEST_CASE("fields newer than the requested version are refused on create", "[server][api][nodes]") {
  TestApi api;
  api.version = "1.49";
  auto r = api.post("/v1/nodes", {{"driver", "fake-hardware"}, {"owner", "p1"}});
  CHECK(r.status == 406);
  api.version = "1.50";
  CHECK(api.post("/v1/nodes", {{"driver", "fake-hardware"}, {"owner", "p1"}}).status == 201);
}

TEST_CASE("duplicate node names and UUIDs are 409", "[server][api][nodes]") {
  TestApi api;
  auto n = api.createNode({{"name", "dup"}});
  auto r = api.post("/v1/nodes", {{"driver", "fake-hardware"}, {"name", "dup"}});
  CHECK(r.status == 409);
  CHECK(r.fault() == "A node with name dup already exists.");
  r = api.post("/v1/nodes", {{"driver", "fake-hardware"}, {"uuid", n["uuid"]}});
  CHECK(r.status == 409);
}

TEST_CASE("nodes are shown by UUID or by name", "[server][api][nodes]") {
  TestApi api;
  auto n = api.createNode({{"name", "by-name"}});
  const std::string uuid = n["uuid"];
  CHECK(api.get("/v1/nodes/by-name").json()["uuid"] == uuid);
  CHECK(api.get("/v1/nodes/" + uuid).json()["name"] == "by-name");
  std::string upper = uuid;
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  CHECK(api.get("/v1/nodes/" + upper).status == 200);
  auto bad = api.get("/v1/nodes/bad%20name");
  CHECK(bad.status == 400);
  CHECK_THAT(bad.fault(), Catch::Contains("Expected a logical name or UUID"));
  api.version = "1.4";
  CHECK(api.get("/v1/nodes/by-name").status == 404);
}

TEST_CASE("fields= selects node fields in show and list", "[server][api][nodes]") {
  TestApi api;
  auto n = api.createNode({{"name", "f1"}});
  auto shown = api.get("/v1/nodes/f1?fields=uuid,traits,name").json();
  CHECK(shown.size() == 4);  // plus links
  CHECK(shown.contains("traits"));
  CHECK(shown.contains("links"));
  auto listed = api.get("/v1/nodes?fields=uuid,driver").json()["nodes"][0];
  CHECK(listed.contains("driver"));
  CHECK_FALSE(listed.contains("provision_state"));
  CHECK(api.get("/v1/nodes?fields=uuid,bogus").status == 400);
  CHECK(api.get("/v1/nodes?fields=ports").status == 400);
  CHECK(api.get("/v1/nodes/detail?fields=uuid").status == 400);
  CHECK(api.get("/v1/nodes?detail=true&fields=uuid").status == 400);
  api.version = "1.36";
  CHECK(api.get("/v1/nodes/f1?fields=traits").status == 406);
}

TEST_CASE("node list shows default fields, detail shows everything", "[server][api][nodes]") {
  TestApi api;
  api.createNode({{"name", "a"}});
  auto list = api.get("/v1/nodes").json()["nodes"];
  REQUIRE(list.size() == 1);
  std::set<std::string> keys;
  for (auto it = list[0].begin(); it != list[0].end(); ++it) keys.insert(it.key());
  CHECK(keys == std::set<std::string>{"uuid", "name", "instance_uuid", "power_state",
                                      "provision_state", "maintenance", "links"});
  auto detail = api.get("/v1/nodes/detail").json()["nodes"][0];
  CHECK(detail.contains("driver_info"));
  CHECK(detail.contains("traits"));
  CHECK(detail.contains("ports"));
  auto viaParam = api.get("/v1/nodes?detail=true").json()["nodes"][0];
  CHECK(viaParam == detail);
  api.version = "1.42";
  CHECK(api.get("/v1/nodes?detail=true").status == 400);
}

TEST_CASE("pagination follows next links that keep every filter", "[server][api][nodes]") {
  TestApi api;
  for (int i = 0; i < 7; ++i) api.createNode({{"name", "p" + std::to_string(i)}, {"owner", i % 2 ? "odd" : "even"}});
  std::vector<std::string> names;
  std::string url = "/v1/nodes?owner=even&sort_key=name&sort_dir=desc&limit=2";
  int pages = 0;
  while (!url.empty()) {
    auto body = api.get(url).json();
    for (const auto& n : body["nodes"]) names.push_back(n["name"]);
    ++pages;
    if (!body.contains("next")) break;
    std::string next = body["next"];
    REQUIRE(next.rfind("http://kiln.test:6385/v1/nodes?", 0) == 0);
    CHECK_THAT(next, Catch::Contains("owner=even"));
    CHECK_THAT(next, Catch::Contains("sort_key=name"));
    CHECK_THAT(next, Catch::Contains("sort_dir=desc"));
    CHECK_THAT(next, Catch::Contains("limit=2"));
    url = next.substr(std::string("http://kiln.test:6385").size());
  }
  CHECK(names == std::vector<std::string>{"p6", "p4", "p2", "p0"});
  CHECK(pages == 3);  // 2 + 2 + an empty last page
}

TEST_CASE("list parameters are validated", "[server][api][nodes]") {
  TestApi api;
  api.createNode();
  CHECK(api.get("/v1/nodes?limit=0").status == 400);
  CHECK(api.get("/v1/nodes?limit=abc").status == 400);
  CHECK(api.get("/v1/nodes?sort_dir=up").status == 400);
  CHECK(api.get("/v1/nodes?sort_key=driver_info").status == 400);
  CHECK(api.get("/v1/nodes?sort_key=nonsense").status == 400);
  CHECK(api.get("/v1/nodes?marker=8221f906-208b-44a5-b575-f8e8a59c4a84").status == 404);
  CHECK(api.get("/v1/nodes?marker=xyz").status == 400);
  CHECK(api.get("/v1/nodes?provision_state=bogus").status == 400);
  CHECK(api.get("/v1/nodes?maintenance=sometimes").status == 400);
  CHECK(api.get("/v1/nodes?fault=bad").status == 400);
  CHECK(api.get("/v1/nodes?unknown_param=1").status == 200);  // ignored, as in Ironic
}

TEST_CASE("node list filters", "[server][api][nodes]") {
  TestApi api;
  api.createNode({{"name", "f-a"}, {"owner", "o1"}, {"lessee", "l1"}, {"resource_class", "gold"},
                  {"conductor_group", "Rack1"}, {"description", "Fast machine"}});
  api.createNode({{"name", "f-b"}, {"driver", "ipmi"}, {"maintenance", true}, {"owner", "o2"},
                  {"instance_uuid", "6b6d6a1c-0000-4000-8000-000000000001"}});
  auto names = [&](const std::string& query) {
    std::set<std::string> out;
    auto r = api.get("/v1/nodes?" + query);
    INFO(query << " -> " << r.body);
    REQUIRE(r.status == 200);
    const Json body = r.json();
    for (const auto& n : body["nodes"]) out.insert(n["name"].get<std::string>());
    return out;
  };
  using S = std::set<std::string>;
  CHECK(names("driver=ipmi") == S{"f-b"});
  CHECK(names("maintenance=true") == S{"f-b"});
  CHECK(names("maintenance=false") == S{"f-a"});
  CHECK(names("associated=true") == S{"f-b"});
  CHECK(names("associated=False") == S{"f-a"});
  CHECK(names("provision_state=enroll") == S{"f-a", "f-b"});
  CHECK(names("resource_class=gold") == S{"f-a"});
  CHECK(names("conductor_group=rack1") == S{"f-a"});
  CHECK(names("owner=o2") == S{"f-b"});
  CHECK(names("lessee=l1") == S{"f-a"});
  CHECK(names("description_contains=fast") == S{"f-a"});
  CHECK(names("conductor=test-conductor") == S{"f-a", "f-b"});
  CHECK(names("conductor=elsewhere").empty());
  CHECK(names("power_interface=ipmitool") == S{"f-b"});
  CHECK(names("deploy_interface=fake") == S{"f-a"});
  api.version = "1.30";
  CHECK(api.get("/v1/nodes?power_interface=fake").status == 406);
  api.version = "1.49";
  CHECK(api.get("/v1/nodes?owner=o1").status == 406);
}

TEST_CASE("driver_info secrets are masked on output", "[server][api][nodes]") {
  TestApi api;
  auto n = api.createNode({{"driver", "ipmi"},
                           {"driver_info", {{"ipmi_address", "10.0.0.1"}, {"ipmi_password", "pw"}}},
                           {"instance_info", {{"image_source", "http://img"}, {"configdrive", "x"}}}});
  CHECK(n["driver_info"]["ipmi_password"] == "******");
  CHECK(n["driver_info"]["ipmi_address"] == "10.0.0.1");
  CHECK(n["instance_info"]["configdrive"] == "******");
  auto detail = api.get("/v1/nodes/detail").json()["nodes"][0];
  CHECK(detail["driver_info"]["ipmi_password"] == "******");
}

TEST_CASE("node deletion follows Ironic's state rules", "[server][api][nodes]") {
  TestApi api;
  auto n = api.createNode({{"name", "del"}});
  CHECK(api.del("/v1/nodes/del").status == 204);
  CHECK(api.get("/v1/nodes/del").status == 404);
  CHECK(api.del("/v1/nodes/del").status == 404);

  api.createNode({{"name", "assoc"}, {"instance_uuid", "6b6d6a1c-0000-4000-8000-000000000002"}});
  auto r = api.del("/v1/nodes/assoc");
  CHECK(r.status == 409);
  CHECK_THAT(r.fault(), Catch::Contains("is associated with instance"));
  REQUIRE(api.putRaw("/v1/nodes/assoc/maintenance").status == 202);
  CHECK(api.del("/v1/nodes/assoc").status == 204);
}

TEST_CASE("maintenance is set and cleared with a reason", "[server][api][nodes]") {
  TestApi api;
  api.createNode({{"name", "m"}});
  auto r = api.put("/v1/nodes/m/maintenance", {{"reason", "disk swap"}});
  CHECK(r.status == 202);
  CHECK(r.body.empty());
  auto n = api.get("/v1/nodes/m").json();
  CHECK(n["maintenance"] == true);
  CHECK(n["maintenance_reason"] == "disk swap");
  CHECK(api.put("/v1/nodes/m/maintenance", {{"reason", 5}}).status == 400);
  CHECK(api.del("/v1/nodes/m/maintenance").status == 202);
  n = api.get("/v1/nodes/m").json();
  CHECK(n["maintenance"] == false);
  CHECK(n["maintenance_reason"].is_null());
}

TEST_CASE("target RAID config is set via states/raid and validated", "[server][api][nodes]") {
  TestApi api;
  api.createNode({{"name", "r"}});
  Json cfg = Json::parse(R"({"logical_disks": [{"size_gb": "MAX", "raid_level": "1", "is_root_volume": true}]})");
  CHECK(api.put("/v1/nodes/r/states/raid", cfg).status == 204);
  CHECK(api.get("/v1/nodes/r").json()["target_raid_config"] == cfg);
  CHECK(api.get("/v1/nodes/r/states").json()["target_raid_config"] == cfg);
  auto bad = api.put("/v1/nodes/r/states/raid", Json::parse(R"({"logical_disks": [{"raid_level": "7", "size_gb": 1}]})"));
  CHECK(bad.status == 400);
  CHECK_THAT(bad.fault(), Catch::Contains("RAID config validation error"));
  CHECK(api.put("/v1/nodes/r/states/raid", Json::array()).status == 400);
  CHECK(api.put("/v1/nodes/r/states/raid", Json::object()).status == 204);
  CHECK(api.get("/v1/nodes/r").json()["target_raid_config"] == Json::object());
  api.createNode({{"name", "noraid"}, {"driver", "ipmi"}});
  CHECK(api.put("/v1/nodes/noraid/states/raid", cfg).status == 404);
}

TEST_CASE("states/raid rejects invalid physical_disks hints and keeps the old config",
          "[server][api][nodes]") {
  TestApi api;
  api.createNode({{"name", "r"}});
  Json cfg = Json::parse(R"({"logical_disks": [{"size_gb": "MAX", "raid_level": "1",
      "physical_disks": [{"name": "/dev/vda"}, {"serial": "<in> QM0002"}]}]})");
  REQUIRE(api.put("/v1/nodes/r/states/raid", cfg).status == 204);
  for (const char* entry : {R"({"size": "-3"})", R"({"colour": "red"})", R"({"rotational": "maybe"})",
                            R"({"model": "<all-in> a b"})", R"({})"}) {
    INFO(entry);
    Json bad = cfg;
    bad["logical_disks"][0]["physical_disks"][1] = Json::parse(entry);
    auto r = api.put("/v1/nodes/r/states/raid", bad);
    CHECK(r.status == 400);
    CHECK_THAT(r.fault(), Catch::StartsWith("RAID config validation error: physical_disks entry"));
    auto patched = api.patch("/v1/nodes/r", Json::array({{{"op", "replace"},
                                                          {"path", "/target_raid_config"},
                                                          {"value", bad}}}));
    CHECK(patched.status == 400);
  }
  CHECK(api.get("/v1/nodes/r").json()["target_raid_config"] == cfg);
}

TEST_CASE("node states are reported", "[server][api][nodes]") {
  TestApi api;
  api.createNode({{"name", "s"}});
  auto s = api.get("/v1/nodes/s/states").json();
  CHECK(s["provision_state"] == "enroll");
  CHECK(s.contains("power_state"));
  CHECK(s.contains("boot_mode"));
  CHECK_FALSE(s.contains("uuid"));
}
