#include <catch2/catch.hpp>

#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TestApi;

TEST_CASE("vendor passthru lists and runs the fake vendor interface's methods",
          "[server][api][vendor]") {
  TestApi api;
  api.createNode({{"name", "v1"}});
  auto methods = api.get("/v1/nodes/v1/vendor_passthru/methods");
  REQUIRE(methods.status == 200);
  Json m = methods.json();
  CHECK(m.size() == 3);
  CHECK(m["third_method_sync"] == Json{{"http_methods", {"POST"}},
                                       {"async", false},
                                       {"description", "Test if the value of bar is meow"},
                                       {"attach", false},
                                       {"require_exclusive_lock", true}});
  CHECK(m["fourth_method_shared_lock"]["require_exclusive_lock"] == false);

  // Synchronous: 200 with the result.
  auto sync = api.post("/v1/nodes/v1/vendor_passthru?method=third_method_sync", {{"bar", "meow"}});
  CHECK(sync.status == 200);
  CHECK(sync.json() == true);
  CHECK(api.post("/v1/nodes/v1/vendor_passthru?method=third_method_sync", {{"bar", "x"}}).json() ==
        false);
  // python-ironicclient names the method in the path.
  auto inPath = api.post("/v1/nodes/v1/vendor_passthru/third_method_sync", {{"bar", "meow"}});
  CHECK(inPath.status == 200);
  CHECK(inPath.json() == true);
  CHECK(api.post("/v1/nodes/v1/vendor_passthru/nope", Json::object()).fault() ==
        "No handler for method nope");
  // Asynchronous: 202, run by a worker, the lock released afterwards.
  auto async = api.post("/v1/nodes/v1/vendor_passthru?method=second_method", {{"bar", "kazoo"}});
  CHECK(async.status == 202);
  CHECK(async.body.empty());
  api.settle();
  CHECK(api.get("/v1/nodes/v1").json()["reservation"].is_null());
}

TEST_CASE("vendor passthru refuses bad calls with 400 or 409", "[server][api][vendor]") {
  TestApi api;
  api.createNode({{"name", "v2"}});
  const std::string base = "/v1/nodes/v2/vendor_passthru";
  auto none = api.post(base, {{"bar", "x"}});
  CHECK(none.status == 400);
  CHECK(none.fault() == "Method not specified");
  auto unknown = api.post(base + "?method=first_method", Json::object());
  CHECK(unknown.status == 400);
  CHECK(unknown.fault() == "No handler for method first_method");
  auto http = api.call("PUT", base + "?method=second_method", R"({"bar": "kazoo"})");
  CHECK(http.status == 400);
  CHECK(http.fault() == "The method second_method does not support HTTP PUT");
  auto missing = api.post(base + "?method=second_method", Json::object());
  CHECK(missing.status == 400);
  CHECK(missing.fault() == "Parameter 'bar' not passed to method 'second_method'.");
  CHECK(api.call("POST", base + "?method=second_method", "[1]").status == 400);

  // no-vendor: the interface takes no calls.
  api.createNode({{"name", "plain"}, {"vendor_interface", "no-vendor"}});
  auto unsupported = api.get("/v1/nodes/plain/vendor_passthru/methods");
  CHECK(unsupported.status == 400);
  CHECK(unsupported.fault() ==
        "Driver fake-hardware does not support vendor (disabled or not implemented).");
}

TEST_CASE("driver vendor passthru answers for the default vendor interface",
          "[server][api][vendor]") {
  TestApi api;
  CHECK(api.get("/v1/drivers/fake-hardware/vendor_passthru/methods").json() == Json::object());
  auto call = api.post("/v1/drivers/fake-hardware/vendor_passthru?method=x", Json::object());
  CHECK(call.status == 400);
  CHECK(call.fault() == "No handler for method x");
  CHECK(api.get("/v1/drivers/ipmi/vendor_passthru/methods").status == 400);
  CHECK(api.get("/v1/drivers/nope/vendor_passthru/methods").status == 404);
}
