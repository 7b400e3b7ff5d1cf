#include "server/drivers/redfish/redfish_client.h"

#include <filesystem>

#include "server/drivers/redfish/redfish_common.h"
#include "tests/server/drivers/redfish/redfish_fixture.h"

using namespace kiln;
using namespace kiln::server;
using kiln::test::kRedfishNode;
using kiln::test::RedfishFixture;
using kiln::test::RedfishSystemState;
using nlohmann::json;

namespace {

Result<RedfishConfig> parse(const json& info) { return parseRedfishConfig(info, kRedfishNode); }

std::string parseError(const json& info) {
  auto c = parse(info);
  REQUIRE_FALSE(c);
  CHECK(c.error().code == ErrorCode::InvalidArgument);
  return c.error().message;
}

RedfishConfig configFor(const RedfishFixture& f, const json& extra = json::object()) {
  json info = {{"redfish_address", f.bmc.address()}};
  info.update(extra);
  auto c = parse(info);
  REQUIRE(c);
  return *c;
}

}  // namespace

TEST_CASE("parseRedfishConfig requires redfish_address", "[server][drivers][redfish]") {
  CHECK(parseError(json::object()) ==
        "Missing the following Redfish properties in node "
        "1be26c0b-03f2-4d2e-ae87-c02d7f33c123 driver_info: redfish_address");
  CHECK_THAT(parseError({{"redfish_address", ""}}), Catch::Contains("redfish_address"));
}

TEST_CASE("parseRedfishConfig defaults the scheme to https and reads every property",
          "[server][drivers][redfish]") {
  auto c = parse({{"redfish_address", "bmc.example.com:8443"},
                  {"redfish_system_id", "/redfish/v1/Systems/abc"},
                  {"redfish_username", "admin"},
                  {"redfish_password", "pw"},
                  {"redfish_auth_type", "session"},
                  {"redfish_verify_ca", "False"}});
  REQUIRE(c);
  CHECK(c->address.origin() == "https://bmc.example.com:8443");
  CHECK(c->systemId == "/redfish/v1/Systems/abc");
  CHECK(c->username == "admin");
  CHECK(c->password == "pw");
  CHECK(c->authType == RedfishAuthType::Session);
  CHECK_FALSE(c->verifyCa);

  c = parse({{"redfish_address", "http://10.1.2.3/"}});
  REQUIRE(c);
  CHECK(c->address.origin() == "http://10.1.2.3");
  CHECK(c->authType == RedfishAuthType::Auto);
  CHECK(c->verifyCa);
  CHECK(c->caBundle.empty());
}

TEST_CASE("parseRedfishConfig explains invalid values", "[server][drivers][redfish]") {
  const std::string node = kRedfishNode;
  SECTION("address") {
    CHECK(parseError({{"redfish_address", "ftp://bmc"}}) ==
          "Invalid Redfish address ftp://bmc set in driver_info/redfish_address on node " + node +
              ": the scheme must be http or https");
    CHECK_THAT(parseError({{"redfish_address", "https://bmc:99999"}}),
               Catch::Contains("the port must be a number"));
    CHECK_THAT(parseError({{"redfish_address", "https://bmc/redfish/v1"}}),
               Catch::Contains("without a path"));
    CHECK(parseError({{"redfish_address", 42}}) ==
          "Invalid value type set in driver_info/redfish_address on node " + node +
              ": a string is expected, not integer");
  }
  SECTION("system id") {
    CHECK_THAT(parseError({{"redfish_address", "bmc"}, {"redfish_system_id", "Systems/1"}}),
               Catch::StartsWith("Invalid value \"Systems/1\" set in "
                                 "driver_info/redfish_system_id on node " +
                                 node));
  }
  SECTION("verify_ca") {
    CHECK(parseError({{"redfish_address", "bmc"}, {"redfish_verify_ca", "/no/such/bundle.pem"}}) ==
          "Invalid value \"/no/such/bundle.pem\" set in driver_info/redfish_verify_ca on node " +
              node +
              ": the value should be a Boolean or the path to an existing CA bundle file "
              "or directory");
    CHECK_THAT(parseError({{"redfish_address", "bmc"}, {"redfish_verify_ca", 3}}),
               Catch::StartsWith("Invalid value type set in driver_info/redfish_verify_ca on "
                                 "node " +
                                 node));
    auto c = parse({{"redfish_address", "bmc"},
                    {"redfish_verify_ca", std::filesystem::temp_directory_path().string()}});
    REQUIRE(c);
    CHECK(c->verifyCa);
    CHECK(c->caBundle == std::filesystem::temp_directory_path().string());
    c = parse({{"redfish_address", "bmc"}, {"redfish_verify_ca", false}});
    REQUIRE(c);
    CHECK_FALSE(c->verifyCa);
  }
  SECTION("auth type") {
    CHECK(parseError({{"redfish_address", "bmc"}, {"redfish_auth_type", "digest"}}) ==
          "Invalid value \"digest\" set in driver_info/redfish_auth_type on node " + node +
              ": the value should be one of \"basic\", \"session\", \"auto\"");
  }
}

TEST_CASE("redfishErrorMessage prefers the extended info messages", "[server][drivers][redfish]") {
  CHECK(redfishErrorMessage(R"({"error": {"code": "Base.1.8.GeneralError", "message": "general",
      "@Message.ExtendedInfo": [{"Message": "first"}, {"Message": "second"}]}})") ==
        "first; second");
  CHECK(redfishErrorMessage(R"({"error": {"code": "x", "message": "only this"}})") == "only this");
  CHECK(redfishErrorMessage("<html>oops</html>").empty());
  CHECK(redfishErrorMessage("").empty());
}

TEST_CASE("RedfishClient finds the only system of the BMC", "[server][drivers][redfish]") {
  RedfishFixture f;
  RedfishClient client(f.http, configFor(f));
  auto path = client.systemPath(kRedfishNode);
  REQUIRE(path);
  CHECK(*path == "/redfish/v1/Systems/1");
}

TEST_CASE("RedfishClient asks for redfish_system_id when the BMC has several systems",
          "[server][drivers][redfish]") {
  RedfishFixture f;
  RedfishSystemState second;
  second.id = "2";
  f.bmc.addSystem(second);
  RedfishClient client(f.http, configFor(f));
  auto path = client.systemPath(kRedfishNode);
  REQUIRE_FALSE(path);
  CHECK(path.error().code == ErrorCode::InvalidArgument);
  CHECK(path.error().message ==
        "The Redfish BMC at " + f.bmc.address() +
            " manages 2 systems (/redfish/v1/Systems/1, /redfish/v1/Systems/2): set "
            "driver_info/redfish_system_id on node " +
            std::string(kRedfishNode) + " to the one to use");

  RedfishClient chosen(f.http, configFor(f, {{"redfish_system_id", "/redfish/v1/Systems/2"}}));
  CHECK(chosen.systemPath(kRedfishNode) == "/redfish/v1/Systems/2");
}

TEST_CASE("RedfishClient reports a BMC without systems as NotFound", "[server][drivers][redfish]") {
  RedfishFixture f;
  f.bmc.setSystems({});
  RedfishClient client(f.http, configFor(f));
  auto path = client.systemPath(kRedfishNode);
  REQUIRE_FALSE(path);
  CHECK(path.error().code == ErrorCode::NotFound);
}

TEST_CASE("RedfishClient uses a session token and logs out when done",
          "[server][drivers][redfish]") {
  RedfishFixture f;
  f.bmc.requireCredentials("admin", "pw");
  {
    RedfishClient client(f.http, configFor(f, {{"redfish_username", "admin"},
                                               {"redfish_password", "pw"},
                                               {"redfish_auth_type", "session"}}));
    REQUIRE(client.get("/redfish/v1/Systems/1"));
    REQUIRE(client.get("/redfish/v1/Systems"));
    CHECK(f.bmc.activeSessions() == 1);
  }
  CHECK(f.bmc.activeSessions() == 0);
  const auto requests = f.bmc.requests();
  REQUIRE(requests.size() == 4);
  CHECK(requests[0].method == "POST");
  CHECK(requests[0].path == "/redfish/v1/SessionService/Sessions");
  CHECK(json::parse(requests[0].body) == json{{"UserName", "admin"}, {"Password", "pw"}});
  for (size_t i = 1; i < 4; ++i) {
    CHECK(requests[i].header("x-auth-token") == "kiln-test-token-1");
    CHECK_FALSE(requests[i].header("authorization"));
  }
  CHECK(requests[3].method == "DELETE");
  CHECK(requests[3].path == "/redfish/v1/SessionService/Sessions/1");
}

TEST_CASE("RedfishClient opens a new session when the BMC drops the old one",
          "[server][drivers][redfish]") {
  RedfishFixture f;
  f.bmc.requireCredentials("admin", "pw");
  RedfishClient client(f.http, configFor(f, {{"redfish_username", "admin"},
                                             {"redfish_password", "pw"},
                                             {"redfish_auth_type", "session"}}));
  REQUIRE(client.get("/redfish/v1/Systems/1"));
  f.bmc.dropSessions();
  auto again = client.get("/redfish/v1/Systems/1");
  REQUIRE(again);
  CHECK(f.bmc.requests("POST", "/redfish/v1/SessionService/Sessions").size() == 2);
  CHECK(f.bmc.requests().back().header("x-auth-token") == "kiln-test-token-2");
}

TEST_CASE("RedfishClient in auto mode prefers sessions and falls back to basic auth",
          "[server][drivers][redfish]") {
  RedfishFixture f;
  f.bmc.requireCredentials("admin", "pw");
  const json creds = {{"redfish_username", "admin"}, {"redfish_password", "pw"}};
  SECTION("sessions available") {
    RedfishClient client(f.http, configFor(f, creds));
    REQUIRE(client.get("/redfish/v1/Systems/1"));
    CHECK(f.bmc.requests().back().header("x-auth-token").has_value());
  }
  SECTION("no SessionService") {
    f.bmc.setSessionsEnabled(false);
    RedfishClient client(f.http, configFor(f, creds));
    REQUIRE(client.get("/redfish/v1/Systems/1"));
    CHECK(f.bmc.requests().back().header("authorization") == "Basic YWRtaW46cHc=");
  }
  SECTION("session mode does not fall back") {
    f.bmc.setSessionsEnabled(false);
    RedfishClient client(f.http, configFor(f, {{"redfish_username", "admin"},
                                               {"redfish_password", "pw"},
                                               {"redfish_auth_type", "session"}}));
    auto r = client.get("/redfish/v1/Systems/1");
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::NotFound);
    CHECK_THAT(r.error().message,
               Catch::Contains("POST " + f.bmc.address() + "/redfish/v1/SessionService/Sessions"));
  }
}

TEST_CASE("RedfishClient reports rejected basic credentials with the BMC's message",
          "[server][drivers][redfish]") {
  RedfishFixture f;
  f.bmc.requireCredentials("admin", "pw");
  RedfishClient client(f.http, configFor(f, {{"redfish_username", "admin"},
                                             {"redfish_password", "wrong"},
                                             {"redfish_auth_type", "basic"}}));
  auto r = client.get("/redfish/v1/Systems/1");
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::PermissionDenied);
  CHECK(r.error().message ==
        "Redfish GET " + f.bmc.address() +
            "/redfish/v1/Systems/1 failed with HTTP 401 (the BMC rejected the credentials of "
            "user 'admin'): While accessing the resource at /redfish/v1/Systems/1, the service "
            "received an authorization error: invalid username or password.");
  CHECK(f.bmc.requests("POST", "/redfish/v1/SessionService/Sessions").empty());
}

TEST_CASE("RedfishClient without credentials says which properties to set",
          "[server][drivers][redfish]") {
  RedfishFixture f;
  f.bmc.requireCredentials("admin", "pw");
  RedfishClient client(f.http, configFor(f));
  auto r = client.get("/redfish/v1/Systems/1");
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Catch::Contains("set driver_info/redfish_username"));
  CHECK_THAT(r.error().message,
             Catch::Contains("There is no valid session established with the implementation."));
}

TEST_CASE("RedfishClient maps BMC failures to error codes", "[server][drivers][redfish]") {
  RedfishFixture f;
  RedfishClient client(f.http, configFor(f));
  f.bmc.injectError({"GET", "/redfish/v1/Systems/1", 500, "The BMC is on fire.", 1});
  auto r = client.get("/redfish/v1/Systems/1");
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::Unavailable);
  CHECK(r.error().message == "Redfish GET " + f.bmc.address() +
                                 "/redfish/v1/Systems/1 failed with HTTP 500: The BMC is on fire.");

  r = client.get("/redfish/v1/Systems/nope");
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::NotFound);
  CHECK_THAT(r.error().message, Catch::Contains("The resource at the URI "
                                                "/redfish/v1/Systems/nope was not found."));

  r = client.patch("/redfish/v1/Systems/1", json{{"Name", "x"}});
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::InvalidArgument);
  CHECK_THAT(r.error().message, Catch::Contains("HTTP 400: The property Name is a read only"));
}

TEST_CASE("connectRedfish fails on an unreachable BMC with Unavailable",
          "[server][drivers][redfish]") {
  RedfishFixture f;
  auto task = f.task();
  const std::string address = f.bmc.address();
  f.bmc.stop();
  task.driverInfo["redfish_address"] = address;
  auto target = connectRedfish(f.http, task);
  REQUIRE_FALSE(target);
  CHECK(target.error().code == ErrorCode::Unavailable);
}
