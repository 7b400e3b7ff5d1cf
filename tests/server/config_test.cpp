#include <catch2/catch.hpp>

#include "server/config.h"

using namespace kiln::server;

TEST_CASE("parseConfig reads Ironic's option names", "[server][config]") {
  auto c = parseConfig(R"(
[DEFAULT]
auth_strategy = http_basic
http_basic_auth_user_file = /tmp/htpasswd
enabled_hardware_types = ipmi, fake-hardware
enabled_power_interfaces = ipmitool,fake
default_power_interface = fake
[api]
host_ip = 127.0.0.2
port = 7000
max_limit = 50
[database]
connection = sqlite:////var/lib/kiln/kiln.sqlite
[http_basic_roles]
alice = admin
bob = observer
default_role = observer
)", "test.conf");
  REQUIRE(c);
  CHECK(c->authStrategy == "http_basic");
  CHECK(c->httpBasicAuthUserFile == "/tmp/htpasswd");
  CHECK(c->enabledHardwareTypes == std::vector<std::string>{"ipmi", "fake-hardware"});
  CHECK(*c->enabledInterfaces[static_cast<size_t>(InterfaceType::Power)] ==
        std::vector<std::string>{"ipmitool", "fake"});
  CHECK(*c->defaultInterfaces[static_cast<size_t>(InterfaceType::Power)] == "fake");
  CHECK_FALSE(c->enabledInterfaces[static_cast<size_t>(InterfaceType::Boot)].has_value());
  CHECK(c->hostIp == "127.0.0.2");
  CHECK(c->port == 7000);
  CHECK(c->maxLimit == 50);
  CHECK(c->connection == "sqlite:////var/lib/kiln/kiln.sqlite");
  CHECK(c->userRoles.at("alice") == Role::Admin);
  CHECK(c->userRoles.at("bob") == Role::Observer);
  CHECK(c->defaultRole == Role::Observer);
}

TEST_CASE("parseConfig defaults match Ironic's", "[server][config]") {
  auto c = parseConfig("", "empty");
  REQUIRE(c);
  CHECK(c->authStrategy == "noauth");
  CHECK(c->hostIp == "127.0.0.1");
  CHECK(c->port == 6385);
  CHECK(c->maxLimit == 1000);
  CHECK(c->enabledHardwareTypes == std::vector<std::string>{"ipmi", "redfish"});
}

TEST_CASE("parseConfig rejects bad values naming the option", "[server][config]") {
  struct Case { const char* text; const char* option; };
  for (auto [text, option] : {Case{"[DEFAULT]\nauth_strategy = keystone\n", "[DEFAULT] auth_strategy"},
                              Case{"[api]\nport = http\n", "[api] port"},
                              Case{"[api]\nport = 70000\n", "[api] port"},
                              Case{"[api]\nmax_limit = 0\n", "[api] max_limit"},
                              Case{"[conductor]\nallow_deleting_available_nodes = maybe\n",
                                   "[conductor] allow_deleting_available_nodes"},
                              Case{"[http_basic_roles]\nbob = root\n", "[http_basic_roles] bob"}}) {
    INFO(text);
    auto c = parseConfig(text, "f.conf");
    REQUIRE_FALSE(c);
    CHECK_THAT(c.error().message, Catch::Contains(option));
    CHECK_THAT(c.error().message, Catch::Contains("f.conf"));
  }
}

TEST_CASE("parseConfig reads ipmitool's attempts, retry interval and timeout from [ipmi]",
          "[server][config]") {
  auto defaults = parseConfig("", "empty");
  REQUIRE(defaults);
  CHECK(defaults->ipmi.attempts == 3);
  CHECK(defaults->ipmi.retryDelay == std::chrono::seconds(2));
  CHECK(defaults->ipmi.commandTimeout == std::chrono::seconds(30));
  auto c = parseConfig(
      "[ipmi]\ncommand_attempts = 1\ncommand_retry_interval = 0\n"
      "command_timeout = 5\n",
      "ipmi.conf");
  REQUIRE(c);
  CHECK(c->ipmi.attempts == 1);
  CHECK(c->ipmi.retryDelay == std::chrono::seconds(0));
  CHECK(c->ipmi.commandTimeout == std::chrono::seconds(5));
  for (const char* bad : {"[ipmi]\ncommand_attempts = 0\n", "[ipmi]\ncommand_retry_interval = -1\n",
                          "[ipmi]\ncommand_timeout = 0\n", "[ipmi]\ncommand_timeout = soon\n"}) {
    INFO(bad);
    auto rejected = parseConfig(bad, "f.conf");
    REQUIRE_FALSE(rejected);
    CHECK_THAT(rejected.error().message, Catch::Contains("f.conf: [ipmi] command_"));
  }
}

TEST_CASE("loadConfig fails clearly for a missing file", "[server][config]") {
  auto c = loadConfig("/nonexistent/kiln.conf");
  REQUIRE_FALSE(c);
  CHECK_THAT(c.error().message, Catch::Contains("/nonexistent/kiln.conf"));
}

TEST_CASE("parseConfig reads the image server credentials with Ironic's names and defaults",
          "[server][config][credentials]") {
  auto defaults = parseConfig("", "empty");
  REQUIRE(defaults);
  CHECK(defaults->imageServerAuthStrategy == "noauth");
  CHECK(defaults->imageServerUser.empty());
  CHECK(defaults->imageServerPassword.empty());

  auto c = parseConfig(
      "[deploy]\nimage_server_auth_strategy = http_basic\nimage_server_user = svc\n"
      "image_server_password = s3cret\n",
      "f.conf");
  REQUIRE(c);
  CHECK(c->imageServerAuthStrategy == "http_basic");
  CHECK(c->imageServerUser == "svc");
  CHECK(c->imageServerPassword == "s3cret");

  // noauth ignores credentials that are set (Ironic sends nothing then).
  auto noauth = parseConfig("[deploy]\nimage_server_user = svc\n", "f.conf");
  REQUIRE(noauth);
  CHECK(noauth->imageServerAuthStrategy == "noauth");
}

TEST_CASE("parseConfig refuses an unknown image server strategy or http_basic without credentials",
          "[server][config][credentials]") {
  struct Case {
    const char* text;
    const char* says;
  };
  for (auto [text, says] :
       {Case{"[deploy]\nimage_server_auth_strategy = digest\n",
             "[deploy] image_server_auth_strategy must be noauth or http_basic, got 'digest'"},
        Case{"[deploy]\nimage_server_auth_strategy = http_basic\n",
             "image_server_user and image_server_password are not set"},
        Case{"[deploy]\nimage_server_auth_strategy = http_basic\nimage_server_password = s3cret\n",
             "image_server_user is not set"},
        Case{"[deploy]\nimage_server_auth_strategy = http_basic\nimage_server_user = svc\n"
             "image_server_password =\n",
             "image_server_password is not set"}}) {
    INFO(text);
    auto c = parseConfig(text, "f.conf");
    REQUIRE_FALSE(c);
    CHECK_THAT(c.error().message, Catch::Contains("f.conf: [deploy] image_server_auth_strategy"));
    CHECK_THAT(c.error().message, Catch::Contains(says));
    CHECK_THAT(c.error().message, !Catch::Contains("s3cret"));
  }
}
