#include <catch2/catch.hpp>

#include <set>

#include <cstdio>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "server/api/auth.h"
#include "tests/support/basic_auth.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TestApi;

using kiln::test::basicAuthorization;
using kiln::test::kTestHtpasswd;

namespace {

struct BasicAuthApi {
  std::filesystem::path file;
  std::unique_ptr<TestApi> api;
  BasicAuthApi() {
    char tmpl[] = "/tmp/kiln-htpasswd-XXXXXX";
    const int fd = mkstemp(tmpl);
    REQUIRE(fd >= 0);
    close(fd);
    file = tmpl;
    std::ofstream(file) << kTestHtpasswd;
    api = std::make_unique<TestApi>("[DEFAULT]\nauth_strategy = http_basic\nhttp_basic_auth_user_file = " +
                                    file.string() + "\n[http_basic_roles]\nviewer = observer\n");
  }
  ~BasicAuthApi() { std::filesystem::remove(file); }
};

}  // namespace

TEST_CASE("bcrypt hashes from htpasswd verify", "[server][api][auth]") {
  auto users = kiln::server::parseHtpasswd(kTestHtpasswd);
  REQUIRE(users);
  CHECK(kiln::server::checkBcrypt("s3cret", users->at("admin")));
  CHECK_FALSE(kiln::server::checkBcrypt("wrong", users->at("admin")));
  CHECK(kiln::server::checkBcrypt("watch", users->at("viewer")));
  auto md5 = kiln::server::parseHtpasswd("u:$apr1$abc$def\n");
  REQUIRE_FALSE(md5);
  CHECK_THAT(md5.error().message, Catch::Contains("Only bcrypt"));
}

TEST_CASE("http_basic rejects missing, malformed and wrong credentials", "[server][api][auth]") {
  BasicAuthApi b;
  auto& api = *b.api;
  auto none = api.get("/v1/nodes");
  CHECK(none.status == 401);
  CHECK(none.header("WWW-Authenticate") == "Basic realm=\"Baremetal API\"");
  CHECK(none.json()["error"]["code"] == 401);
  auto wrong = api.call("GET", "/v1/nodes", "", {{"Authorization", basicAuthorization("admin", "nope")}});
  CHECK(wrong.status == 401);
  auto unknown = api.call("GET", "/v1/nodes", "", {{"Authorization", basicAuthorization("mallory", "s3cret")}});
  CHECK(unknown.status == 401);
  CHECK(api.call("GET", "/v1/nodes", "", {{"Authorization", "Bearer abc"}}).status == 400);
  CHECK(api.call("GET", "/v1/nodes", "", {{"Authorization", "Basic !!!"}}).status == 400);
  CHECK(api.call("GET", "/v1/nodes", "", {{"Authorization", "Basic"}}).status == 400);
  CHECK(api.call("GET", "/v1/nodes", "", {{"Authorization", basicAuthorization("admin", "s3cret")}}).status == 200);
}

TEST_CASE("http_basic leaves Ironic's public routes open", "[server][api][auth]") {
  BasicAuthApi b;
  auto& api = *b.api;
  CHECK(api.get("/").status == 200);
  CHECK(api.get("/v1").status == 200);
  CHECK(api.get("/v1/").status == 200);
  CHECK(api.get("/v1/nodes").status == 401);
}

TEST_CASE("an observer reads everything and gets 403 on every write", "[server][api][auth]") {
  BasicAuthApi b;
  auto& api = *b.api;
  api.extraHeaders = {{"authorization", basicAuthorization("admin", "s3cret")}};
  auto node = api.createNode({{"name", "watched"}});
  REQUIRE(api.post("/v1/deploy_templates", Json::parse(R"({"name": "CUSTOM_T", "steps": [
      {"interface": "bios", "step": "apply_configuration", "args": {}, "priority": 10}]})")).status == 201);

  api.extraHeaders = {{"authorization", basicAuthorization("viewer", "watch")}};
  CHECK(api.get("/v1/nodes").status == 200);
  CHECK(api.get("/v1/nodes/watched").status == 200);
  CHECK(api.get("/v1/nodes/watched/traits").status == 200);
  CHECK(api.get("/v1/deploy_templates").status == 200);
  CHECK(api.get("/v1/drivers").status == 200);
  CHECK(api.get("/v1/nodes/watched/validate").status == 200);
  struct Write { std::string method, path, body; };
  for (const auto& w : std::vector<Write>{
           {"POST", "/v1/nodes", R"({"driver": "fake-hardware"})"},
           {"PATCH", "/v1/nodes/watched", R"([{"op":"add","path":"/extra/x","value":1}])"},
           {"DELETE", "/v1/nodes/watched", ""},
           {"PUT", "/v1/nodes/watched/traits", R"({"traits": []})"},
           {"PUT", "/v1/nodes/watched/traits/CUSTOM_X", ""},
           {"DELETE", "/v1/nodes/watched/traits", ""},
           {"PUT", "/v1/nodes/watched/maintenance", ""},
           {"PUT", "/v1/nodes/watched/states/raid", "{}"},
           {"POST", "/v1/deploy_templates", R"({"name": "CUSTOM_Y", "steps": []})"},
           {"PATCH", "/v1/deploy_templates/CUSTOM_T", "[]"},
           {"DELETE", "/v1/deploy_templates/CUSTOM_T", ""},
           {"POST", "/v1/ports", R"({"address": "52:54:00:00:00:01", "node_uuid": "x"})"},
           {"POST", "/v1/chassis", "{}"},
       }) {
    INFO(w.method << " " << w.path);
    auto r = api.call(w.method, w.path, w.body);
    CHECK(r.status == 403);
    CHECK_THAT(r.fault(), Catch::Contains("Access was denied"));
  }
  api.extraHeaders = {{"authorization", basicAuthorization("admin", "s3cret")}};
  auto after = api.get("/v1/nodes/watched").json();
  CHECK(after["extra"] == Json::object());
  CHECK(after["maintenance"] == false);
  CHECK(api.get("/v1/deploy_templates").json()["deploy_templates"].size() == 1);
}

TEST_CASE("start-up refuses a missing or non-bcrypt user file", "[server][api][auth]") {
  auto config = kiln::server::parseConfig(
      "[DEFAULT]\nauth_strategy = http_basic\nhttp_basic_auth_user_file = /nonexistent/htpasswd\n", "t");
  REQUIRE(config);
  auto auth = kiln::server::Authenticator::create(*config);
  REQUIRE_FALSE(auth);
  CHECK_THAT(auth.error().message, Catch::Contains("http_basic_auth_user_file"));
}
