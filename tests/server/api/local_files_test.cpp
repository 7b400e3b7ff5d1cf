// The rule for local files a node names ([conductor] file_url_allowed_paths, server/local_files.h):
// the option, the rule itself, the unauthenticated GET /boot/<uuid>/kernel|ramdisk route (the
// class of Ironic's CVE-2024-44082), and what node validate and failed flows say.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "server/config.h"
#include "server/local_files.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_api.h"

using kiln::ErrorCode;
using kiln::server::Config;
using kiln::test::Json;
using kiln::test::TempDir;
using kiln::test::TestApi;
namespace fs = std::filesystem;

namespace {

// An htpasswd file as kiln-server reads it (bcrypt, cost 4, of "s3cret").
constexpr const char* kHtpasswd = "admin:$2y$04$yNagjehOdvxOluZFDAQywegpKCB1ps1nWXjNykcOaEKe6JrnNyI.W\n";
constexpr const char* kAdmin = "Basic YWRtaW46czNjcmV0";  // admin:s3cret

/// A scratch tree: <root>/images (the allowed directory) and <root>/outside.
struct Tree {
  TempDir root{"kiln-local-files"};
  std::string images = root.file("images");
  std::string outside = root.file("outside");
  Tree() {
    fs::create_directory(images);
    fs::create_directory(outside);
  }
  std::string write(const std::string& path, const std::string& bytes) const {
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
};

Config allowing(std::vector<std::string> dirs) {
  Config c;
  c.fileUrlAllowedPaths = std::move(dirs);
  c.connection = "sqlite://";
  return c;
}

std::string message(const kiln::Result<std::string>& r) {
  REQUIRE_FALSE(r);
  return r.error().message;
}

std::string allBytes() {
  std::string bytes;
  for (int round = 0; round < 64; ++round) {
    for (int b = 0; b < 256; ++b) bytes += static_cast<char>(b);
  }
  return bytes;
}

constexpr const char* kNotInAllowed = "is not in [conductor] file_url_allowed_paths";

}  // namespace

TEST_CASE("file_url_allowed_paths defaults to Kiln's image directory and takes explicit absolute paths",
          "[server][config][local_files]") {
  auto defaults = kiln::server::parseConfig("", "t");
  REQUIRE(defaults);
  CHECK(defaults->fileUrlAllowedPaths == std::vector<std::string>{"/var/lib/kiln/images"});

  auto listed = kiln::server::parseConfig("[conductor]\nfile_url_allowed_paths = /srv/images/, /var/lib/kiln/images\n", "t");
  REQUIRE(listed);
  CHECK(listed->fileUrlAllowedPaths == std::vector<std::string>{"/srv/images", "/var/lib/kiln/images"});

  auto empty = kiln::server::parseConfig("[conductor]\nfile_url_allowed_paths =\n", "t");
  REQUIRE(empty);
  CHECK(empty->fileUrlAllowedPaths.empty());

  // Listing a system directory is accepted (and warned about), but allows nothing there.
  auto system = kiln::server::parseConfig("[conductor]\nfile_url_allowed_paths = /etc\n", "t");
  REQUIRE(system);
  CHECK(system->fileUrlAllowedPaths == std::vector<std::string>{"/etc"});

  for (const auto& [entry, why] : std::vector<std::pair<std::string, std::string>>{
           {"images", "'images' is not an absolute path"},
           {"/srv/../etc", "'/srv/../etc' has a '..' component"},
           {"/srv/./images", "has a '.' component"},
           {"/srv//images", "has an empty path component"},
           {"/", "'/' would allow every file"}}) {
    auto bad = kiln::server::parseConfig("[conductor]\nfile_url_allowed_paths = /ok, " + entry + "\n", "kiln.conf");
    REQUIRE_FALSE(bad);
    CHECK_THAT(bad.error().message, Catch::StartsWith("kiln.conf: [conductor] file_url_allowed_paths: ") &&
                                        Catch::Contains(why));
  }
}

TEST_CASE("a local image inside an allowed directory resolves to its real path", "[server][local_files]") {
  Tree t;
  const auto kernel = t.write(t.images + "/kernel", "K");
  fs::create_directory(t.images + "/sub");
  fs::create_symlink(kernel, t.images + "/sub/link");  // a link that stays inside is fine
  const Config c = allowing({t.images});
  const std::string real = fs::canonical(kernel).string();
  CHECK(kiln::server::checkLocalFile(c, kernel) == real);
  CHECK(kiln::server::checkLocalFile(c, "file://" + kernel) == real);
  CHECK(kiln::server::checkLocalFile(c, "file://localhost" + kernel) == real);
  CHECK(kiln::server::checkLocalFile(c, t.images + "/sub/link") == real);
  CHECK(kiln::server::readLocalFile(c, "file://" + kernel) == "K");
}

TEST_CASE("a local image outside the allowed directories is refused whether or not it exists",
          "[server][local_files]") {
  Tree t;
  const auto secret = t.write(t.outside + "/htpasswd", kHtpasswd);
  const Config c = allowing({t.images});
  const auto refused = message(kiln::server::checkLocalFile(c, secret));
  CHECK(refused == "'" + secret + "' " + kNotInAllowed + " (" + t.images + ")");
  // A missing file outside gets the same answer: the check tells nothing about what exists.
  CHECK(message(kiln::server::checkLocalFile(c, t.outside + "/missing")) ==
        "'" + t.outside + "/missing' " + kNotInAllowed + " (" + t.images + ")");
  // A directory whose name starts like the allowed one is not inside it.
  fs::create_directory(t.images + "-evil");
  t.write(t.images + "-evil/kernel", "K");
  CHECK_THAT(message(kiln::server::checkLocalFile(c, t.images + "-evil/kernel")), Catch::Contains(kNotInAllowed));
  CHECK_FALSE(kiln::server::readLocalFile(c, secret));
}

TEST_CASE("a symbolic link in an allowed directory cannot lead out of it", "[server][local_files]") {
  Tree t;
  const auto secret = t.write(t.outside + "/htpasswd", kHtpasswd);
  fs::create_symlink(secret, t.images + "/kernel");
  fs::create_directory_symlink(t.outside, t.images + "/dir");
  fs::create_directory_symlink("/etc", t.images + "/etc");
  const Config c = allowing({t.images});
  const std::string real = fs::canonical(secret).string();
  CHECK(message(kiln::server::checkLocalFile(c, t.images + "/kernel")) ==
        "'" + t.images + "/kernel' resolves to '" + real + "', which " + kNotInAllowed + " (" + t.images + ")");
  CHECK_THAT(message(kiln::server::checkLocalFile(c, t.images + "/dir/htpasswd")), Catch::Contains(kNotInAllowed));
  CHECK_THAT(message(kiln::server::checkLocalFile(c, t.images + "/etc/passwd")),
             Catch::Contains("resolves to '/etc/passwd', which is in /etc, a system directory"));
  CHECK_FALSE(kiln::server::readLocalFile(c, t.images + "/kernel"));
  // copyLocalFile (the pxe boot interface) refuses it too, and creates nothing.
  CHECK_FALSE(kiln::server::copyLocalFile(c, t.images + "/kernel", t.root.file("copy")));
  CHECK_FALSE(fs::exists(t.root.file("copy")));
}

TEST_CASE("local image paths with '..', '.' or empty components, or relative ones, are refused",
          "[server][local_files]") {
  Tree t;
  t.write(t.outside + "/htpasswd", kHtpasswd);
  t.write(t.images + "/kernel", "K");
  const Config c = allowing({t.images});
  CHECK_THAT(message(kiln::server::checkLocalFile(c, t.images + "/../outside/htpasswd")),
             Catch::Contains("has a '..' component (paths that could traverse directories are refused)"));
  CHECK_THAT(message(kiln::server::checkLocalFile(c, "file://" + t.images + "/../outside/htpasswd")),
             Catch::Contains("'..' component"));
  CHECK_THAT(message(kiln::server::checkLocalFile(c, t.images + "/./kernel")), Catch::Contains("'.' component"));
  CHECK_THAT(message(kiln::server::checkLocalFile(c, t.images + "//kernel")), Catch::Contains("empty path component"));
  CHECK_THAT(message(kiln::server::checkLocalFile(c, "images/kernel")), Catch::Contains("is not an absolute path"));
  CHECK_THAT(message(kiln::server::checkLocalFile(c, "file://server.example" + t.images + "/kernel")),
             Catch::Contains("is not a file:// URL of a local path"));
  CHECK_THAT(message(kiln::server::checkLocalFile(c, t.images + "/kernel" + std::string(1, '\0') + "/../x")),
             Catch::Contains("NUL"));
}

TEST_CASE("files in system directories are refused even when the directory is listed as allowed",
          "[server][local_files]") {
  const Config c = allowing({"/etc", "/proc", "/boot", "/dev"});
  for (const char* location : {"/etc/passwd", "file:///etc/passwd", "/proc/self/environ", "/dev/zero"}) {
    const auto refused = message(kiln::server::checkLocalFile(c, location));
    CHECK_THAT(refused, Catch::Contains("a system directory kiln-server never reads files from (whatever "
                                        "[conductor] file_url_allowed_paths lists)"));
  }
  CHECK(kiln::server::forbiddenDirectoryOf("/etc") == "/etc");
  CHECK(kiln::server::forbiddenDirectoryOf("/etcetera/x").empty());
  CHECK(kiln::server::forbiddenDirectoryOf("/var/run/secrets") == "/var/run");
}

TEST_CASE("an empty file_url_allowed_paths disables local files", "[server][local_files]") {
  Tree t;
  const auto kernel = t.write(t.images + "/kernel", "K");
  CHECK(message(kiln::server::checkLocalFile(allowing({}), kernel)) ==
        "'" + kernel + "' is a local file, and local files are disabled ([conductor] file_url_allowed_paths is empty)");
}

TEST_CASE("kiln-server's own files are refused even inside an allowed directory", "[server][local_files]") {
  Tree t;
  Config c = allowing({t.images});
  c.connection = "sqlite:///" + t.write(t.images + "/kiln.sqlite", "SQLite format 3");
  c.httpBasicAuthUserFile = t.write(t.images + "/htpasswd", kHtpasswd);
  t.write(t.images + "/kiln.sqlite-wal", "WAL");
  for (const char* name : {"/kiln.sqlite", "/kiln.sqlite-wal", "/htpasswd"}) {
    CHECK_THAT(message(kiln::server::checkLocalFile(c, t.images + name)), Catch::Contains("kiln-server's own files"));
  }
}

TEST_CASE("missing files and directories are refused as local images", "[server][local_files]") {
  Tree t;
  const Config c = allowing({t.images});
  auto missing = kiln::server::checkLocalFile(c, t.images + "/missing");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::NotFound);
  CHECK(missing.error().message == "'" + t.images + "/missing' does not exist");
  fs::create_directory(t.images + "/dir");
  CHECK_THAT(message(kiln::server::checkLocalFile(c, t.images + "/dir")), Catch::EndsWith("is not a regular file"));
}

TEST_CASE("local images are read and copied byte for byte", "[server][local_files]") {
  Tree t;
  const std::string bytes = allBytes();
  const auto kernel = t.write(t.images + "/kernel", bytes);
  const Config c = allowing({t.images});
  CHECK(kiln::server::readLocalFile(c, kernel) == bytes);
  REQUIRE(kiln::server::copyLocalFile(c, kernel, t.root.file("copy")));
  std::ifstream in(t.root.file("copy"), std::ios::binary);
  std::stringstream copied;
  copied << in.rdbuf();
  CHECK(copied.str() == bytes);
}

// ---- through the API ------------------------------------------------------------------------------

TEST_CASE("the unauthenticated boot file route serves no file outside file_url_allowed_paths",
          "[server][local_files][netboot][auth]") {
  Tree t;
  const auto htpasswd = t.write(t.outside + "/htpasswd", kHtpasswd);
  const std::string bytes = allBytes();
  t.write(t.images + "/initramfs", bytes);
  fs::create_symlink(htpasswd, t.images + "/link");
  TestApi api("[DEFAULT]\nauth_strategy = http_basic\nhttp_basic_auth_user_file = " + htpasswd +
              "\n[conductor]\nfile_url_allowed_paths = " + t.images + "\n");
  api.extraHeaders = {{"authorization", kAdmin}};
  const std::string uuid = api.createNode({{"name", "nb"},
                                          {"boot_interface", "ipxe"},
                                          {"driver_info", {{"deploy_kernel", htpasswd},
                                                           {"deploy_ramdisk", "file://" + t.images + "/initramfs"}}}})["uuid"];
  REQUIRE(api.post("/v1/ports", {{"address", "52:54:00:00:00:04"}, {"node_uuid", uuid}}).status == 201);
  // No credentials: the route is public, so a refusal must leak nothing.
  api.extraHeaders.clear();
  api.version = "";
  const auto unknown = api.call("GET", "/boot/1be26c0b-03f2-4d2e-ae87-c02d7f33c123/kernel");
  REQUIRE(unknown.status == 404);
  auto refused = [&](const std::string& which) {
    const auto r = api.call("GET", "/boot/" + uuid + "/" + which);
    CHECK(r.status == 404);
    CHECK(r.fault() == "The resource could not be found.");
    CHECK(r.body == unknown.body);  // the same answer as for a node that does not exist
    CHECK_THAT(r.body, !Catch::Contains("admin") && !Catch::Contains("$2y$") && !Catch::Contains("htpasswd") &&
                           !Catch::Contains(t.root.path.string()));
  };
  refused("kernel");
  // The allowed initramfs is served, byte for byte (and with no credentials, as iPXE has none).
  const auto ramdisk = api.call("GET", "/boot/" + uuid + "/ramdisk");
  CHECK(ramdisk.status == 200);
  CHECK(ramdisk.body == bytes);

  // The same for a link out of the allowed directory, for '..', and for /etc even when listed.
  auto setKernel = [&](const std::string& location) {
    api.extraHeaders = {{"authorization", kAdmin}};
    api.version = "1.78";
    REQUIRE(api.patch("/v1/nodes/nb", Json::array({{{"op", "replace"}, {"path", "/driver_info/deploy_kernel"},
                                                     {"value", location}}})).status == 200);
    api.extraHeaders.clear();
    api.version = "";
  };
  setKernel(t.images + "/link");
  refused("kernel");
  setKernel(t.images + "/../outside/htpasswd");
  refused("kernel");
  setKernel("/etc/passwd");
  refused("kernel");
  CHECK(api.call("GET", "/v1/nodes/nb/validate").status == 401);  // the rest still needs credentials

  // With credentials, node validate says why.
  setKernel(htpasswd);
  api.extraHeaders = {{"authorization", kAdmin}};
  api.version = "1.78";
  auto v = api.get("/v1/nodes/nb/validate").json();
  CHECK(v["boot"]["result"] == false);
  CHECK(v["boot"]["reason"] == "The agent image '" + htpasswd + "' " + kNotInAllowed + " (" + t.images + ").");
}

TEST_CASE("file_url_allowed_paths lists /etc: /etc files are still not served", "[server][local_files][netboot]") {
  TestApi api("[conductor]\nfile_url_allowed_paths = /etc\n");
  const std::string uuid = api.createNode({{"name", "nb"},
                                          {"boot_interface", "ipxe"},
                                          {"driver_info", {{"deploy_kernel", "/etc/passwd"},
                                                           {"deploy_ramdisk", "file:///etc/shadow"}}}})["uuid"];
  REQUIRE(api.post("/v1/ports", {{"address", "52:54:00:00:00:03"}, {"node_uuid", uuid}}).status == 201);
  auto v = api.get("/v1/nodes/nb/validate").json();
  CHECK_THAT(v["boot"]["reason"].get<std::string>(), Catch::Contains("'/etc/passwd' is in /etc, a system directory"));
  api.version = "";
  for (const char* which : {"kernel", "ramdisk"}) {
    const auto r = api.call("GET", "/boot/" + uuid + "/" + which);
    CHECK(r.status == 404);
    CHECK_THAT(r.body, !Catch::Contains("root:"));
  }
}

TEST_CASE("a refused agent image fails validate, cleaning and deployment naming file_url_allowed_paths",
          "[server][local_files][netboot]") {
  Tree t;
  const auto outside = t.write(t.outside + "/kernel", "K");
  t.write(t.images + "/initramfs", "R");
  const std::string tftp = t.root.file("tftp");
  fs::create_directory(tftp);
  TestApi api("[conductor]\nautomated_clean = false\napi_url = http://10.0.0.1:6385\nfile_url_allowed_paths = " +
              t.images + "\n[pxe]\ntftp_root = " + tftp + "\n");
  const Json instance = {{"image_source", "http://10.0.2.2:8080/img.raw"}, {"image_checksum", std::string(64, 'a')}};
  const std::string expected = "The agent image '" + outside + "' " + kNotInAllowed + " (" + t.images + ").";
  for (const char* boot : {"ipxe", "pxe"}) {
    INFO(boot);
    const std::string name = std::string("n-") + boot;
    api.createNode({{"name", name},
                    {"boot_interface", boot},
                    {"deploy_interface", "direct"},
                    {"driver_info", {{"deploy_kernel", outside}, {"deploy_ramdisk", t.images + "/initramfs"}}},
                    {"instance_info", instance}});
    const auto uuid = api.get("/v1/nodes/" + name).json()["uuid"].get<std::string>();
    REQUIRE(api.post("/v1/ports", {{"address", std::string(boot) == "ipxe" ? "52:54:00:00:00:01" : "52:54:00:00:00:02"},
                                   {"node_uuid", uuid}}).status == 201);
    const auto reason = api.get("/v1/nodes/" + name + "/validate").json()["boot"]["reason"].get<std::string>();
    CHECK_THAT(reason, Catch::Contains(expected));

    // Manual cleaning with an in-band step boots the agent: the flow fails before any boot.
    REQUIRE(api.put("/v1/nodes/" + name + "/states/provision", {{"target", "manage"}}).status == 202);
    api.settle();
    REQUIRE(api.put("/v1/nodes/" + name + "/states/provision",
                    {{"target", "clean"}, {"clean_steps", Json::parse(R"([{"interface": "deploy", "step": "erase_devices_metadata"}])")}})
                .status == 202);
    api.settle();
    auto n = api.get("/v1/nodes/" + name).json();
    CHECK(n["provision_state"] == "clean failed");
    CHECK(n["reservation"].is_null());
    CHECK_THAT(n["last_error"].get<std::string>(), Catch::Contains("Failed to prepare node " + uuid + " for cleaning: " + expected));
    CHECK_FALSE(n["driver_internal_info"].contains("boot_target"));

    // Deployment: deploy.deploy boots the agent and fails the same way.
    REQUIRE(api.put("/v1/nodes/" + name + "/states/provision", {{"target", "manage"}}).status == 202);
    api.settle();
    REQUIRE(api.put("/v1/nodes/" + name + "/states/provision", {{"target", "provide"}}).status == 202);
    api.settle();
    REQUIRE(api.get("/v1/nodes/" + name).json()["provision_state"] == "available");
    REQUIRE(api.put("/v1/nodes/" + name + "/states/provision", {{"target", "active"}}).status == 202);
    api.settle();
    n = api.get("/v1/nodes/" + name).json();
    CHECK(n["provision_state"] == "deploy failed");
    CHECK(n["reservation"].is_null());
    CHECK_THAT(n["last_error"].get<std::string>(), Catch::Contains("deploy.deploy") && Catch::Contains(expected));
  }
  CHECK(fs::is_empty(tftp));  // the pxe interface copied nothing
}
