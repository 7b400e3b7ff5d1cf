#include <catch2/catch.hpp>

#include <set>

#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TestApi;

TEST_CASE("node traits are replaced, added, listed and removed", "[server][api][traits]") {
  TestApi api;
  api.createNode({{"name", "t"}});
  CHECK(api.get("/v1/nodes/t/traits").json() == Json{{"traits", Json::array()}});
  auto put = api.put("/v1/nodes/t/traits", {{"traits", {"CUSTOM_B", "HW_CPU_X86_AVX2", "CUSTOM_B"}}});
  CHECK(put.status == 204);
  CHECK(put.body.empty());
  CHECK(api.get("/v1/nodes/t/traits").json()["traits"] == Json{"CUSTOM_B", "HW_CPU_X86_AVX2"});
  auto add = api.putRaw("/v1/nodes/t/traits/CUSTOM_A");
  CHECK(add.status == 204);
  CHECK(add.header("Location") == "http://kiln.test:6385/v1/nodes/" +
                                      api.get("/v1/nodes/t").json()["uuid"].get<std::string>() +
                                      "/traits/CUSTOM_A");
  CHECK(api.putRaw("/v1/nodes/t/traits/CUSTOM_A").status == 204);  // idempotent
  CHECK(api.get("/v1/nodes/t").json()["traits"] == Json{"CUSTOM_A", "CUSTOM_B", "HW_CPU_X86_AVX2"});
  CHECK(api.get("/v1/nodes/t?fields=traits").json()["traits"].size() == 3);
  CHECK(api.del("/v1/nodes/t/traits/CUSTOM_B").status == 204);
  auto missing = api.del("/v1/nodes/t/traits/CUSTOM_B");
  CHECK(missing.status == 404);
  CHECK_THAT(missing.fault(), Catch::Contains("doesn't have a trait 'CUSTOM_B'"));
  CHECK(api.del("/v1/nodes/t/traits").status == 204);
  CHECK(api.get("/v1/nodes/t/traits").json()["traits"].empty());
}

TEST_CASE("bad, lowercase and too many traits are 400 and change nothing", "[server][api][traits]") {
  TestApi api;
  api.createNode({{"name", "bad"}});
  REQUIRE(api.put("/v1/nodes/bad/traits", {{"traits", {"CUSTOM_KEEP"}}}).status == 204);
  for (const std::string& t : {"custom_lower", "CUSTOM_lower", "NOT_A_TRAIT", "CUSTOM_"}) {
    INFO(t);
    auto r = api.putRaw("/v1/nodes/bad/traits/" + t);
    CHECK(r.status == 400);
    CHECK_THAT(r.fault(), Catch::StartsWith("Invalid trait."));
    CHECK(api.put("/v1/nodes/bad/traits", {{"traits", {"CUSTOM_OK", t}}}).status == 400);
  }
  CHECK(api.put("/v1/nodes/bad/traits", {{"traits", "CUSTOM_A"}}).status == 400);
  CHECK(api.put("/v1/nodes/bad/traits", {{"traits", {1}}}).status == 400);
  CHECK(api.put("/v1/nodes/bad/traits", {{"traits", {"CUSTOM_A"}}, {"other", 1}}).status == 400);
  CHECK(api.putRaw("/v1/nodes/bad/traits").status == 400);
  CHECK(api.putRaw("/v1/nodes/bad/traits/CUSTOM_A", R"({"traits": []})").status == 400);
  CHECK(api.get("/v1/nodes/bad/traits").json()["traits"] == Json{"CUSTOM_KEEP"});

  Json fifty = Json::array();
  for (int i = 0; i < 50; ++i) fifty.push_back("CUSTOM_T" + std::to_string(i));
  REQUIRE(api.put("/v1/nodes/bad/traits", {{"traits", fifty}}).status == 204);
  auto fiftyFirst = api.putRaw("/v1/nodes/bad/traits/CUSTOM_T50");
  CHECK(fiftyFirst.status == 400);
  CHECK_THAT(fiftyFirst.fault(), Catch::Contains("(51 vs. 50)"));
  Json fiftyOne = fifty;
  fiftyOne.push_back("CUSTOM_T50");
  CHECK(api.put("/v1/nodes/bad/traits", {{"traits", fiftyOne}}).status == 400);
  CHECK(api.get("/v1/nodes/bad/traits").json()["traits"].size() == 50);
  CHECK(api.putRaw("/v1/nodes/bad/traits/CUSTOM_T0").status == 204);  // already present: fine
}

TEST_CASE("the node traits spec's list filters select nodes", "[server][api][traits]") {
  TestApi api;
  for (auto [name, traits] : std::vector<std::pair<std::string, Json>>{
           {"red", {"CUSTOM_RED"}}, {"blue", {"CUSTOM_BLUE"}}, {"both", {"CUSTOM_RED", "CUSTOM_BLUE"}},
           {"none", Json::array()}}) {
    api.createNode({{"name", name}});
    REQUIRE(api.put("/v1/nodes/" + name + "/traits", {{"traits", traits}}).status == 204);
  }
  auto names = [&](const std::string& q) {
    std::set<std::string> out;
    auto r = api.get("/v1/nodes?" + q);
    INFO(q << " " << r.body);
    REQUIRE(r.status == 200);
    const Json body = r.json();
    for (const auto& n : body["nodes"]) out.insert(n["name"].get<std::string>());
    return out;
  };
  using S = std::set<std::string>;
  CHECK(names("traits=CUSTOM_RED,CUSTOM_BLUE") == S{"both"});
  CHECK(names("traits=CUSTOM_RED") == S{"red", "both"});
  CHECK(names("traits-any=CUSTOM_RED,CUSTOM_BLUE") == S{"red", "blue", "both"});
  CHECK(names("not-traits=CUSTOM_RED,CUSTOM_BLUE") == S{"red", "blue", "none"});
  CHECK(names("not-traits-any=CUSTOM_RED,CUSTOM_BLUE") == S{"none"});
  CHECK(names("not-traits=CUSTOM_RED&traits=CUSTOM_BLUE") == S{"blue"});
  CHECK(api.get("/v1/nodes?traits=lowercase").status == 400);
  CHECK(api.get("/v1/nodes?traits=").status == 400);
  api.version = "1.36";
  CHECK(api.get("/v1/nodes?traits=CUSTOM_RED").status == 406);
}

TEST_CASE("node traits routes answer as Ironic's node controller when the version is below 1.37",
          "[server][api][traits]") {
  TestApi api;
  api.createNode({{"name", "old"}});
  REQUIRE(api.put("/v1/nodes/old/traits", {{"traits", {"CUSTOM_KEEP"}}}).status == 204);
  api.version = "1.36";
  // GET reads "traits" as a field of the node: the node is looked up first, then 406.
  auto get = api.get("/v1/nodes/old/traits");
  CHECK(get.status == 406);
  CHECK(get.fault() == "Request not acceptable.");
  CHECK(api.get("/v1/nodes/missing/traits").status == 404);
  // PUT has no handler on the node controller: 405.
  for (const auto& r : {api.put("/v1/nodes/old/traits", {{"traits", {"CUSTOM_NEW"}}}),
                        api.putRaw("/v1/nodes/old/traits/CUSTOM_NEW"),
                        api.putRaw("/v1/nodes/old/traits/CUSTOM_NEW", "{}")}) {
    CHECK(r.status == 405);
    CHECK(r.fault() == "The method PUT is not allowed for this resource.");
  }
  // DELETE refuses the extra path segments: 404.
  for (const auto& r :
       {api.del("/v1/nodes/old/traits"), api.del("/v1/nodes/old/traits/CUSTOM_KEEP")}) {
    CHECK(r.status == 404);
    CHECK(r.fault() == "Resource could not be found.");
  }
  api.version = "1.37";
  CHECK(api.get("/v1/nodes/old/traits").json()["traits"] == Json{"CUSTOM_KEEP"});
}

TEST_CASE("a single trait is added when the PUT body is empty, {} or null",
          "[server][api][traits]") {
  TestApi api;
  api.createNode({{"name", "body"}});
  for (const std::string body : {"", "{}", " { } ", "null"}) {
    INFO("body: " << body);
    REQUIRE(api.del("/v1/nodes/body/traits").status == 204);
    auto r = api.putRaw("/v1/nodes/body/traits/CUSTOM_A", body);
    CHECK(r.status == 204);
    CHECK(r.body.empty());
    CHECK_THAT(r.header("Location"), Catch::EndsWith("/traits/CUSTOM_A"));
    CHECK(api.get("/v1/nodes/body/traits").json()["traits"] == Json{"CUSTOM_A"});
  }
  // A body that carries something is still refused, and changes nothing.
  for (const std::string body :
       {R"({"traits": []})", R"({"traits": ["CUSTOM_B"]})", R"({"x": 1})", "[]", "{", "\"\""}) {
    INFO("body: " << body);
    auto r = api.putRaw("/v1/nodes/body/traits/CUSTOM_B", body);
    CHECK(r.status == 400);
  }
  CHECK(api.get("/v1/nodes/body/traits").json()["traits"] == Json{"CUSTOM_A"});
}
