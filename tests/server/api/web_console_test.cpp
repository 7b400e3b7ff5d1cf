// The web console's server side: its static files under /ui/ (server/api/web_console.h), the
// refusal of cross-site writes (server/api/web_security.h), and the API extensions the console
// reads: GET /v1/whoami, GET /v1/fleet, ?name_contains=, the ramdisk log bundles
// (server/api/fleet_handlers.h, ramdisk_log_handlers.h).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "server/api/web_console.h"
#include "server/api/web_security.h"
#include "server/drivers/agent/ramdisk_log_files.h"
#include "tests/support/basic_auth.h"
#include "tests/support/test_api.h"

namespace fs = std::filesystem;
using kiln::test::Json;
using kiln::test::Response;
using kiln::test::TestApi;

namespace {

/// A temporary directory, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/kiln-console-test-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() { fs::remove_all(path); }
  void write(const std::string& name, const std::string& text) const {
    fs::create_directories((path / name).parent_path());
    std::ofstream(path / name) << text;
  }
};

std::string consoleConfig(const TempDir& dir) {
  return "[console]\nstatic_dir = " + dir.path.string() + "\n";
}

/// The ApiResponse itself (TestApi's Response leaves out the Content-Type).
kiln::server::ApiResponse handle(TestApi& api, const std::string& path) {
  kiln::server::ApiRequest req;
  req.method = "GET";
  req.path = path;
  req.headers = {{"host", "kiln.test:6385"}};
  return api.app().api().handle(req);
}

int nodeCount(TestApi& api) { return static_cast<int>(api.get("/v1/nodes").json()["nodes"].size()); }

}  // namespace

TEST_CASE("console paths name only index.html and the files directly in assets/",
          "[server][api][console]") {
  using kiln::server::consoleFileFor;
  CHECK(consoleFileFor("/ui/") == "index.html");
  CHECK(consoleFileFor("/ui/index.html") == "index.html");
  CHECK(consoleFileFor("/ui/assets/app-3f2a.js") == "assets/app-3f2a.js");
  for (const char* bad : {"/ui", "/ui/assets/", "/ui/assets/../../etc/passwd", "/ui/assets/..",
                          "/ui/assets/.hidden", "/ui/assets/a/b.js", "/ui/assets/%2e%2e",
                          "/ui/other.html", "/ui/assets/a b.js", "/uix/", "/v1/nodes"}) {
    INFO(bad);
    CHECK_FALSE(consoleFileFor(bad));
  }
  CHECK(kiln::server::consoleContentType("assets/app.js") == "text/javascript; charset=utf-8");
  CHECK(kiln::server::consoleContentType("index.html") == "text/html; charset=utf-8");
  CHECK(kiln::server::consoleContentType("assets/blob.bin") == "application/octet-stream");
}

TEST_CASE("the console's files are served under /ui/ with its security headers when installed",
          "[server][api][console]") {
  TempDir dir;
  dir.write("index.html", "<!doctype html><title>Kiln</title>");
  dir.write("assets/app-1.js", "console.log(1)");
  dir.write("secret.txt", "not for you");
  dir.write(".hidden", "nor this");
  TestApi api(consoleConfig(dir));

  const Response index = api.get("/ui/");
  REQUIRE(index.status == 200);
  CHECK(index.body == "<!doctype html><title>Kiln</title>");
  CHECK(handle(api, "/ui/").contentType == "text/html; charset=utf-8");
  CHECK(index.header("Cache-Control") == "no-cache");
  const std::string csp = index.header("Content-Security-Policy");
  CHECK_THAT(csp, Catch::Contains("script-src 'self'"));
  CHECK_THAT(csp, Catch::Contains("frame-ancestors 'none'"));
  CHECK_THAT(csp, !Catch::Contains("unsafe-inline"));
  CHECK(index.header("X-Frame-Options") == "DENY");
  CHECK(index.header("X-Content-Type-Options") == "nosniff");

  const Response js = api.get("/ui/assets/app-1.js");
  REQUIRE(js.status == 200);
  CHECK(js.body == "console.log(1)");
  CHECK(handle(api, "/ui/assets/app-1.js").contentType == "text/javascript; charset=utf-8");
  CHECK_THAT(js.header("Cache-Control"), Catch::Contains("immutable"));

  // Public: no credentials are needed, and no API version header either.
  api.version = "";
  CHECK(api.get("/ui/").status == 200);

  const Response redirect = api.get("/ui");
  CHECK(redirect.status == 301);
  CHECK(redirect.header("Location") == "/ui/");

  for (const char* path : {"/ui/secret.txt", "/ui/.hidden", "/ui/assets/../secret.txt",
                           "/ui/assets/missing.js", "/ui/assets/", "/ui/nodes"}) {
    INFO(path);
    const Response r = api.get(path);
    CHECK(r.status == 404);
    CHECK(r.fault() == "The resource could not be found.");
    CHECK_FALSE(r.header("Content-Security-Policy").empty());
    CHECK_THAT(r.body, !Catch::Contains("not for you"));
  }
  const Response post = api.post("/ui/", Json::object());
  CHECK(post.status == 405);
  CHECK(post.header("Allow") == "GET, HEAD");
}

TEST_CASE("the console answers 404 when it is not installed or turned off", "[server][api][console]") {
  TempDir dir;
  {
    TestApi api(consoleConfig(dir));  // no index.html
    const Response r = api.get("/ui/");
    CHECK(r.status == 404);
    CHECK(r.fault() == "The web console is not installed on this server.");
    CHECK_THAT(r.body, !Catch::Contains(dir.path.string()));
  }
  dir.write("index.html", "<!doctype html>");
  TestApi off(consoleConfig(dir) + "enabled = false\n");
  const Response r = off.get("/ui/");
  CHECK(r.status == 404);
  CHECK(r.header("Content-Security-Policy").empty());  // an ordinary unknown path
}

TEST_CASE("origins are compared by scheme, host and port without the default port",
          "[server][api][console][security]") {
  using kiln::server::normalizeOrigin;
  CHECK(normalizeOrigin("http://Kiln.Example:6385") == "http://kiln.example:6385");
  CHECK(normalizeOrigin("https://kiln.example:443") == "https://kiln.example");
  CHECK(normalizeOrigin("http://kiln.example:80/v1/x?y") == "http://kiln.example");
  CHECK(normalizeOrigin("http://[2001:db8::1]:6385") == "http://[2001:db8::1]:6385");
  for (const char* bad : {"null", "", "file:///etc", "ftp://x", "http://", "http://a b",
                          "http://user@host", "http://host:", "javascript:alert(1)"}) {
    INFO(bad);
    CHECK_FALSE(normalizeOrigin(bad));
  }
  using kiln::server::isFormContentType;
  CHECK(isFormContentType("text/plain"));
  CHECK(isFormContentType("Text/Plain; charset=UTF-8"));
  CHECK(isFormContentType("application/x-www-form-urlencoded"));
  CHECK(isFormContentType(" multipart/form-data; boundary=x"));
  CHECK_FALSE(isFormContentType("application/json"));
  CHECK_FALSE(isFormContentType("application/json; charset=utf-8"));
  const auto own = kiln::server::ownOrigins("https", "kiln.test:443", "http://api.example:6385/");
  CHECK(own == std::vector<std::string>{"https://kiln.test", "http://api.example:6385"});
}

TEST_CASE("a write from another origin or in a form's content type changes nothing",
          "[server][api][console][security]") {
  TestApi api;
  api.createNode({{"name", "n1"}});
  const Json node = {{"driver", "fake-hardware"}, {"name", "n2"}};

  SECTION("a foreign Origin is refused for every write method") {
    for (const char* origin : {"http://evil.example", "null", "http://kiln.test:6386",
                               "https://kiln.test:6385"}) {
      INFO(origin);
      const Response post = api.call("POST", "/v1/nodes", node.dump(), {{"Origin", origin}});
      CHECK(post.status == 403);
      CHECK_THAT(post.fault(), Catch::Contains("Cross-origin write refused"));
      const Response patch = api.call(
          "PATCH", "/v1/nodes/n1",
          R"([{"op": "add", "path": "/extra/x", "value": 1}])", {{"Origin", origin}});
      CHECK(patch.status == 403);
      CHECK(api.call("DELETE", "/v1/nodes/n1", "", {{"Origin", origin}}).status == 403);
      CHECK(api.call("PUT", "/v1/nodes/n1/states/power", R"({"target": "power on"})",
                     {{"Origin", origin}})
                .status == 403);
    }
    CHECK(nodeCount(api) == 1);
    CHECK(api.get("/v1/nodes/n1").json()["extra"] == Json::object());
    CHECK(api.get("/v1/nodes/n1").json()["power_state"].is_null());
  }
  SECTION("a form's content type is refused whatever the body looks like") {
    for (const char* type : {"text/plain", "text/plain;charset=UTF-8",
                             "application/x-www-form-urlencoded", "multipart/form-data; boundary=b"}) {
      INFO(type);
      const Response r = api.call("POST", "/v1/nodes", node.dump(), {{"Content-Type", type}});
      CHECK(r.status == 415);
      CHECK_THAT(r.fault(), Catch::Contains("application/json"));
    }
    CHECK(nodeCount(api) == 1);
  }
  SECTION("reads from anywhere and writes from the server's own origin go through") {
    CHECK(api.call("GET", "/v1/nodes", "", {{"Origin", "http://evil.example"}}).status == 200);
    const Response r = api.call("POST", "/v1/nodes", node.dump(),
                                {{"Origin", "http://kiln.test:6385"}, {"Content-Type", "application/json"}});
    CHECK(r.status == 201);
    CHECK(nodeCount(api) == 2);
  }
  SECTION("the public endpoint's origin is the server's own too") {
    TestApi proxied("[api]\npublic_endpoint = https://kiln.example.com/\n");
    const Response r = proxied.call("POST", "/v1/nodes", node.dump(),
                                    {{"Origin", "https://kiln.example.com"}});
    CHECK(r.status == 201);
  }
}

TEST_CASE("GET /v1/whoami names the user and role of the credentials", "[server][api][console]") {
  SECTION("noauth: everyone is an anonymous admin") {
    TestApi api;
    const Json me = api.get("/v1/whoami").json();
    CHECK(me == Json{{"user", nullptr}, {"role", "admin"}, {"auth_strategy", "noauth"}});
  }
  SECTION("http_basic: the user, their role, and 401 without credentials") {
    char tmpl[] = "/tmp/kiln-htpasswd-XXXXXX";
    const int fd = mkstemp(tmpl);
    REQUIRE(fd >= 0);
    close(fd);
    const fs::path file = tmpl;
    std::ofstream(file) << kiln::test::kTestHtpasswd;
    {
      TestApi api("[DEFAULT]\nauth_strategy = http_basic\nhttp_basic_auth_user_file = " +
                  file.string() + "\n[http_basic_roles]\nviewer = observer\n");
      CHECK(api.get("/v1/whoami").status == 401);
      api.extraHeaders = {{"authorization", kiln::test::basicAuthorization("viewer", "watch")}};
      CHECK(api.get("/v1/whoami").json() ==
            Json{{"user", "viewer"}, {"role", "observer"}, {"auth_strategy", "http_basic"}});
      api.extraHeaders = {{"authorization", kiln::test::basicAuthorization("admin", "s3cret")}};
      CHECK(api.get("/v1/whoami").json()["role"] == "admin");
      api.extraHeaders = {{"authorization", kiln::test::basicAuthorization("admin", "wrong")}};
      CHECK(api.get("/v1/whoami").status == 401);
    }
    fs::remove(file);
  }
}

TEST_CASE("GET /v1/fleet counts the whole fleet by state, class, traits and conductor",
          "[server][api][console]") {
  TestApi api;
  api.version = "1.115";
  api.createNode({{"name", "a"}, {"resource_class", "gold"}});
  api.createNode({{"name", "b"}, {"resource_class", "gold"}});
  api.createNode({{"name", "c"}});
  REQUIRE(api.provision("b", "manage").status == 202);
  REQUIRE(api.put("/v1/nodes/c/maintenance", Json{{"reason", "disk"}}).status == 202);
  REQUIRE(api.put("/v1/nodes/a/traits", Json{{"traits", {"CUSTOM_GPU", "CUSTOM_NVME"}}}).status == 204);
  REQUIRE(api.put("/v1/nodes/b/traits/CUSTOM_GPU", Json()).status == 204);
  api.settle();

  const Json fleet = api.get("/v1/fleet").json();
  INFO(fleet.dump());
  CHECK(fleet["nodes"] == 3);
  CHECK(fleet["provision_state"] == Json{{"enroll", 2}, {"manageable", 1}});
  CHECK(fleet["maintenance"] == Json{{"false", 2}, {"true", 1}});
  CHECK(fleet["resource_class"] == Json{{"gold", 2}});  // c has none
  CHECK(fleet["fault"] == Json::object());
  CHECK(fleet["traits"] == Json{{"CUSTOM_GPU", 2}, {"CUSTOM_NVME", 1}});
  // One server: it owns every node, as ?conductor= lists them.
  CHECK(fleet["conductor"] == Json{{"test-conductor", 3}});
  CHECK(api.get("/v1/nodes?conductor=test-conductor").json()["nodes"].size() == 3);
  int powered = 0, withPower = 0;
  for (const auto& [state, n] : fleet["power_state"].items()) powered += n.get<int>();
  const Json detail = api.get("/v1/nodes/detail").json()["nodes"];
  for (const auto& n : detail) withPower += !n["power_state"].is_null();
  CHECK(powered == withPower);
}

TEST_CASE("?name_contains= finds nodes by a part of their name, whatever its case",
          "[server][api][console]") {
  TestApi api;
  for (const char* name : {"web-01", "web-02", "db-01", "WEBSTER"}) api.createNode({{"name", name}});
  auto names = [&](const std::string& query) {
    std::set<std::string> out;
    const Json nodes = api.get("/v1/nodes?" + query).json()["nodes"];
    for (const auto& n : nodes) out.insert(n["name"]);
    return out;
  };
  CHECK(names("name_contains=web") == std::set<std::string>{"web-01", "web-02", "WEBSTER"});
  CHECK(names("name_contains=-01") == std::set<std::string>{"web-01", "db-01"});
  CHECK(names("name_contains=%25") .empty());  // '%' is literal, not a wildcard
  CHECK(names("name_contains=_").empty());
  CHECK(names("name_contains=web&sort_key=name&sort_dir=desc&limit=2") ==
        std::set<std::string>{"web-02", "web-01"});
}

TEST_CASE("a node's ramdisk log bundles are listed and downloaded, and nothing else is",
          "[server][api][console][ramdisk_logs]") {
  TempDir dir;
  TestApi api("[agent]\ndeploy_logs_local_path = " + dir.path.string() + "\n");
  const std::string a = api.createNode({{"name", "a"}})["uuid"];
  const std::string b = api.createNode({{"name", "b"}})["uuid"];
  const std::string instance = "5f1e7c2a-9b3d-4e6f-8a1b-2c3d4e5f6a7b";
  const std::string older = a + "_2026-12-06-14-02-31.tar.gz";
  const std::string newer = a + "_" + instance + "_2026-12-06-15-00-00.tar.gz";
  dir.write(older, "old bundle");
  dir.write(newer, "new bundle!");
  dir.write(b + "_2026-12-06-14-02-31.tar.gz", "b's bundle");
  dir.write("." + a + "_2026-12-06-16-00-00.tar.gz", "half written");
  dir.write(a + "_2026-12-06-17-00-00.tar.gz.tmp", "not a bundle");
  fs::create_directories(dir.path / (a + "_2026-12-06-18-00-00.tar.gz"));  // a directory
  fs::create_symlink("/etc/passwd", dir.path / (a + "_2026-12-06-19-00-00.tar.gz"));

  const Json list = api.get("/v1/nodes/a/ramdisk_logs").json()["ramdisk_logs"];
  REQUIRE(list.size() == 2);
  CHECK(list[0] == Json{{"name", newer}, {"size", 11}, {"time", "2026-12-06T15:00:00+00:00"}});
  CHECK(list[1]["name"] == older);
  const Response tarball = api.get("/v1/nodes/a/ramdisk_logs/" + older);
  REQUIRE(tarball.status == 200);
  CHECK(tarball.body == "old bundle");
  CHECK(handle(api, "/v1/nodes/" + a + "/ramdisk_logs/" + older).contentType == "application/gzip");
  CHECK(tarball.header("Content-Disposition") == "attachment; filename=\"" + older + "\"");

  for (const std::string& name :
       {b + "_2026-12-06-14-02-31.tar.gz", "." + a + "_2026-12-06-16-00-00.tar.gz",
        a + "_2026-12-06-19-00-00.tar.gz", a + "_2026-12-06-18-00-00.tar.gz",
        std::string("..%2F..%2Fetc%2Fpasswd"), a + "_2026-12-06-14-02-31.tar.gz%2F..%2F..%2Fx"}) {
    INFO(name);
    CHECK(api.get("/v1/nodes/a/ramdisk_logs/" + name).status == 404);
  }
  CHECK(api.get("/v1/nodes/b/ramdisk_logs").json()["ramdisk_logs"].size() == 1);
  CHECK(api.get("/v1/nodes/missing/ramdisk_logs").status == 404);

  using kiln::server::agent::logFileTime;
  CHECK(logFileTime(older, a) == "2026-12-06T14:02:31+00:00");
  CHECK_FALSE(logFileTime(older, b));
  CHECK_FALSE(logFileTime(a + "_2026-12-06-14-02-3x.tar.gz", a));
  CHECK_FALSE(logFileTime(a + "_" + instance + "x_2026-12-06-14-02-31.tar.gz", a));
}

TEST_CASE("a node's ramdisk logs list is empty when the directory does not exist",
          "[server][api][console][ramdisk_logs]") {
  TestApi api("[agent]\ndeploy_logs_local_path = /nonexistent/kiln-deploy-logs\n");
  api.createNode({{"name", "a"}});
  const Response r = api.get("/v1/nodes/a/ramdisk_logs");
  REQUIRE(r.status == 200);
  CHECK(r.json()["ramdisk_logs"] == Json::array());
}
