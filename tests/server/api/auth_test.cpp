#include <catch2/catch.hpp>

#include <set>
#include <openssl/evp.h>

#include <cstdio>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "server/api/auth.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TestApi;

namespace {

// bcrypt hashes (cost 4) of "s3cret" and "watch", made with `htpasswd -nbB -C 4`.
constexpr const char* kHtpasswd =
    "admin:$2y$04$yNagjehOdvxOluZFDAQywegpKCB1ps1nWXjNykcOaEKe6JrnNyI.W\n"
    "viewer:$2y$04$Ut1kUByzwUQqb1kDwemubuDPq4.nQ6YTJBQlQW.7NJxJy1CZssEoi\n";

std::string basic(const std::string& user, const std::string& pass) {
  const std::string raw = user + ":" + pass;
  std::string out(4 * ((raw.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(raw.data()), static_cast<int>(raw.size()));
  out.resize(static_cast<size_t>(n));
  return "Basic " + out;
}

struct BasicAuthApi {
  std::filesystem::path file;
  std::unique_ptr<TestApi> api;
  BasicAuthApi() {
    char tmpl[] = "/tmp/kiln-htpasswd-XXXXXX";
    const int fd = mkstemp(tmpl);
    REQUIRE(fd >= 0);
    close(fd);
    file = tmpl;
    std::ofstream(file) << kHtpasswd;
    api = std::make_unique<TestApi>("[DEFAULT]\nauth_strategy = http_basic\nhttp_basic_auth_user_file = " +
                                    file.string() + "\n[http_basic_roles]\nviewer = observer\n");
  }
  ~BasicAuthApi() { std::filesystem::remove(file); }
};

}  // namespace

TEST_CASE("bcrypt hashes from htpasswd verify", "[server][api][auth]") {
  auto users = kiln::server::parseHtpasswd(kHtpasswd);
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
  auto wrong = api.call("GET", "/v1/nodes", "", {{"Authorization", basic("admin", "nope")}});
  CHECK(wrong.status == 401);
  auto unknown = api.call("GET", "/v1/nodes", "", {{"Authorization", basic("mallory", "s3cret")}});
  CHECK(unknown.status == 401);
  CHECK(api.call("GET", "/v1/nodes", "", {{"Authorization", "Bearer abc"}}).status == 400);
  CHECK(api.call("GET", "/v1/nodes", "", {{"Authorization", "Basic !!!"}}).status == 400);
  CHECK(api.call("GET", "/v1/nodes", "", {{"Authorization", "Basic"}}).status == 400);
  CHECK(api.call("GET", "/v1/nodes", "", {{"Authorization", basic("admin", "s3cret")}}).status == 200);
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
  api.extraHeaders = {{"authorization", basic("admin", "s3cret")}};
  auto node = api.createNode({{"name", "watched"}});
  REQUIRE(api.post("/v1/deploy_templates", Json::parse(R"({"name": "CUSTOM_T", "steps": [
      {"interface": "bios", "step": "apply_configuration", "args": {}, "priority": 10}]})")).status == 201);

  api.extraHeaders = {{"authorization", basic("viewer", "watch")}};
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
  api.extraHeaders = {{"authorization", basic("admin", "s3cret")}};
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
