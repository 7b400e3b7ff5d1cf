// Image server credentials on the server side: [deploy] image_server_auth_strategy and its
// user and password go to the agent in write_image's image_info as Ironic sends them, and
// kiln-server's own downloads (virtual media with image_download_source local) use them too.
// Credentials, whether configured or in an image URL, never show in API answers (node, lookup)
// or log lines. Every secret here contains "pw-", so a leak anywhere is one substring check.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "server/model/versions.h"
#include "tests/support/basic_auth.h"
#include "tests/support/http_file_server.h"
#include "tests/support/log_capture.h"
#include "tests/support/redfish_test_server.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_api.h"

using kiln::LogLevel;
using kiln::test::basicAuthorization;
using kiln::test::Json;
using kiln::test::LogCapture;
using kiln::test::RedfishSystemState;
using kiln::test::RedfishTestServer;
using kiln::test::Response;
using kiln::test::TestApi;
namespace fs = std::filesystem;

namespace {

constexpr const char* kMac = "52:54:00:12:34:56";
constexpr const char* kServerCredentials =
    "[deploy]\nimage_server_auth_strategy = http_basic\nimage_server_user = svc\n"
    "image_server_password = pw-svc\n";

bool leaks(const std::string& text) { return text.find("pw-") != std::string::npos; }

Json node(TestApi& api, const std::string& ident) {
  api.settle();
  return api.get("/v1/nodes/" + ident).json();
}

Response verb(TestApi& api, const std::string& ident, const std::string& target) {
  auto r = api.put("/v1/nodes/" + ident + "/states/provision", {{"target", target}});
  api.settle();
  return r;
}

/// A direct-deploy node waiting for its agent at write_image, with `instanceInfo`.
std::string deployingNode(TestApi& api, const Json& instanceInfo) {
  auto created = api.createNode({{"name", "n1"},
                                 {"deploy_interface", "direct"},
                                 {"automated_clean", false},
                                 {"instance_info", instanceInfo}});
  REQUIRE(api.post("/v1/ports", {{"address", kMac}, {"node_uuid", created["uuid"]}}).status == 201);
  REQUIRE(verb(api, "n1", "manage").status == 202);
  REQUIRE(verb(api, "n1", "provide").status == 202);
  REQUIRE(verb(api, "n1", "active").status == 202);
  REQUIRE(node(api, "n1")["provision_state"] == "wait call-back");
  return created["uuid"];
}

/// The agent's lookup and first heartbeat: (lookup answer, the write_image command).
std::pair<Response, Json> agentArrives(TestApi& api, const std::string& uuid) {
  auto lookup = api.get("/v1/lookup?addresses=" + std::string(kMac));
  REQUIRE(lookup.status == 200);
  auto beat =
      api.post("/v1/heartbeat/" + uuid, {{"callback_url", ""},
                                         {"agent_version", "test"},
                                         {"agent_token", lookup.json()["config"]["agent_token"]},
                                         {"protocol_version", 1},
                                         {"steps", Json::object()},
                                         {"results", Json::array()},
                                         {"running", Json::array()}});
  api.settle();
  REQUIRE(beat.status == 202);
  const Json commands = beat.json()["commands"];
  REQUIRE(commands.size() == 1);
  REQUIRE(commands[0]["params"]["step"]["step"] == "write_image");
  return {lookup, commands[0]};
}

}  // namespace

TEST_CASE(
    "write_image hands the agent the image server credentials as Ironic does; answers and "
    "logs show them masked",
    "[server][api][secrets][images][credentials]") {
  TestApi api(kServerCredentials);
  LogCapture log(LogLevel::Trace);
  const std::string image = "http://alice:pw-alice@images.example/disk.raw";
  const std::string sums = "https://alice:pw-alice@images.example/SHA256SUMS";
  const std::string drive = "http://alice:pw-alice@images.example/configdrive";
  const std::string uuid = deployingNode(
      api, {{"image_source", image}, {"image_checksum", sums}, {"configdrive", drive}});
  auto [lookup, write] = agentArrives(api, uuid);

  // The agent receives what it needs to download: the URLs as given and the credentials.
  const Json& args = write["params"]["step"]["args"];
  const Json& info = args["image_info"];
  CHECK(info["urls"] == Json::array({image}));
  CHECK(info["checksum"] == sums);
  CHECK(info["image_server_auth_strategy"] == "http_basic");
  CHECK(info["image_server_user"] == "svc");
  CHECK(info["image_server_password"] == "pw-svc");
  CHECK(args["configdrive"] == drive);

  // Lookup is public: the node it shows carries no credentials.
  CHECK_FALSE(leaks(lookup.body));
  CHECK(lookup.json()["node"]["instance_info"]["image_source"] == "http://images.example/******");
  // The API shows the node, its pending agent command included, masked.
  const auto shown = api.get("/v1/nodes/n1");
  CHECK_FALSE(leaks(shown.body));
  const Json internal = shown.json()["driver_internal_info"];
  REQUIRE(internal.contains("agent_command"));
  const Json& queued = internal["agent_command"]["params"]["step"]["args"]["image_info"];
  CHECK(queued["image_server_password"] == "******");
  CHECK(queued["urls"] == Json::array({"http://images.example/******"}));
  CHECK(shown.json()["instance_info"]["image_source"] == "http://images.example/******");
  CHECK_FALSE(leaks(api.get("/v1/nodes/detail").body));

  // The agent's failure quoting its URLs reaches last_error masked.
  auto failed = api.post("/v1/heartbeat/" + uuid,
                         {{"callback_url", ""},
                          {"agent_version", "test"},
                          {"agent_token", lookup.json()["config"]["agent_token"]},
                          {"protocol_version", 1},
                          {"steps", Json::object()},
                          {"results", Json::array({{{"id", write["id"]},
                                                    {"name", write["name"]},
                                                    {"status", "FAILED"},
                                                    {"result", Json::object()},
                                                    {"error", "Cannot download " + image}}})},
                          {"running", Json::array()}});
  REQUIRE(failed.status == 202);
  const Json after = node(api, "n1");
  CHECK(after["provision_state"] == "deploy failed");
  CHECK_FALSE(leaks(after.dump()));
  CHECK_FALSE(leaks(log.text()));
}

TEST_CASE("without image_server_auth_strategy the agent gets no credential fields, as in Ironic",
          "[server][api][images][credentials]") {
  TestApi api;
  const std::string uuid = deployingNode(api, {{"image_source", "http://images.example/d.raw"},
                                               {"image_os_hash_algo", "sha256"},
                                               {"image_os_hash_value", std::string(64, 'a')}});
  const Json info = agentArrives(api, uuid).second["params"]["step"]["args"]["image_info"];
  CHECK_FALSE(info.contains("image_server_auth_strategy"));
  CHECK_FALSE(info.contains("image_server_user"));
  CHECK_FALSE(info.contains("image_server_password"));
}

TEST_CASE("virtual media downloaded by kiln-server uses the URL's or the configured credentials",
          "[server][api][images][credentials][vmedia]") {
  RedfishTestServer bmc;
  REQUIRE(bmc.start());
  bmc.updateSystem("1", [](RedfishSystemState& s) { s.manager = true; });
  kiln::test::HttpFileServer images;
  REQUIRE(images.start());
  kiln::test::ServedPath iso;
  iso.data = "ISO-BYTES";
  iso.authorization = basicAuthorization("svc", "pw-svc");
  images.serve("/svc/live.iso", iso);
  iso.authorization = basicAuthorization("alice", "pw-alice");
  images.serve("/own/live.iso", iso);
  kiln::test::TempDir dir("kiln-vmedia-creds");
  TestApi api(std::string(kServerCredentials) + "http_root = " + dir.file("httpboot") +
              "\nexternal_http_url = http://files.example/httpboot\n");
  LogCapture log(LogLevel::Trace);
  api.version = "1.93";
  api.createNode({{"name", "vm"},
                  {"driver", "redfish"},
                  {"driver_info", {{"redfish_address", bmc.address()}}}});

  auto attach = [&](const std::string& url) {
    auto r = api.post(
        "/v1/nodes/vm/vmedia",
        {{"device_type", "cdrom"}, {"image_url", url}, {"image_download_source", "local"}});
    api.settle();
    return r;
  };
  auto served = [&]() {
    const std::string image = bmc.system("1").cdImage;
    REQUIRE(image.rfind("http://files.example/httpboot/", 0) == 0);
    std::ifstream in(dir.file("httpboot/" + image.substr(image.rfind('/') + 1)), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };

  REQUIRE(attach(images.url("/svc/live.iso")).status == 204);
  CHECK(node(api, "vm")["last_error"].is_null());
  CHECK(served() == "ISO-BYTES");
  CHECK(images.authorizations("/svc/live.iso") ==
        std::vector<std::string>{basicAuthorization("svc", "pw-svc")});

  const std::string own = "http://alice:pw-alice@" + images.url("/own/live.iso").substr(7);
  REQUIRE(attach(own).status == 204);
  CHECK(node(api, "vm")["last_error"].is_null());
  CHECK(served() == "ISO-BYTES");
  CHECK(images.authorizations("/own/live.iso") ==
        std::vector<std::string>{basicAuthorization("alice", "pw-alice")});
  CHECK_FALSE(leaks(api.get("/v1/nodes/vm").body));

  // Handed to the BMC as it is (image_download_source http), the URL is listed masked.
  auto direct =
      api.post("/v1/nodes/vm/vmedia",
               {{"device_type", "cdrom"}, {"image_url", own}, {"image_download_source", "http"}});
  api.settle();
  REQUIRE(direct.status == 204);
  CHECK(bmc.system("1").cdImage == own);
  auto listed = api.get("/v1/nodes/vm/vmedia");
  REQUIRE(listed.status == 200);
  CHECK(listed.json()[0]["image"] ==
        "http://127.0.0.1:" + std::to_string(images.port()) + "/******");
  CHECK_FALSE(leaks(listed.body));
  CHECK_FALSE(leaks(log.text()));
}
