#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <type_traits>
#include <variant>

#include "server/config.h"
#include "shared/core/strings.h"
#include "tests/support/log_capture.h"
#include "tests/support/replay_command_runner.h"

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
                              Case{"[DEFAULT]\nlog_level = chatty\n", "[DEFAULT] log_level"},
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

TEST_CASE("parseConfig takes a log level's name in any case and refuses other text",
          "[server][config]") {
  CHECK(parseConfig("", "f.conf")->logLevel == "info");
  CHECK(parseConfig("[DEFAULT]\nlog_level = DEBUG\n", "f.conf")->logLevel == "debug");
  CHECK(parseConfig("[DEFAULT]\nlog_level = warn\n", "f.conf")->logLevel == "warning");
  CHECK(parseConfig("[DEFAULT]\nlog_level = error\ndebug = true\n", "f.conf")->logLevel ==
        "debug");
  // Unknown text was read as info (review row 22): now start-up stops, naming the option.
  for (const char* bad : {"verbose", "", "info,debug", "0"}) {
    INFO(bad);
    auto c = parseConfig(std::string("[DEFAULT]\nlog_level = ") + bad + "\n", "f.conf");
    REQUIRE_FALSE(c);
    CHECK(c.error().message == std::string("f.conf: [DEFAULT] log_level must be trace, debug, "
                                           "info, warning or error, got '") +
                                   bad + "'");
  }
}

TEST_CASE("parseConfig warns about options that are not in the option table",
          "[server][config]") {
  std::string every;
  std::string section;
  for (const ConfigOption& option : configOptions()) {
    if (option.section != section) every += "[" + (section = option.section) + "]\n";
    // A value every kind takes (Custom readers of lists and overrides take an empty one).
    std::string value = option.defaultValue.value_or("");
    if (option.kind == OptionKind::Int && value.empty()) value = std::to_string(option.min);
    every += option.key + " = " + value + "\n";
  }
  {
    kiln::test::LogCapture log;
    REQUIRE(parseConfig(every, "every.conf"));
    CHECK(log.text().find("unknown option") == std::string::npos);
  }
  kiln::test::LogCapture log;
  REQUIRE(parseConfig("[api]\nprot = 1\n[DEFAULT]\nLOG_LEVEL = info\n[nosuch]\nx = 1\n", "f.conf"));
  CHECK_THAT(log.text(), Catch::Contains("option=\"[api] prot\""));
  CHECK_THAT(log.text(), Catch::Contains("option=\"[nosuch] x\""));
  CHECK_THAT(log.text(), !Catch::Contains("log_level"));
}

TEST_CASE("the option table's defaults are the configuration's defaults", "[server][config]") {
  const auto defaults = parseConfig("", "empty");
  REQUIRE(defaults);
  for (const ConfigOption& option : configOptions()) {
    if (!option.defaultValue) continue;
    INFO("[" << option.section << "] " << option.key << " = " << *option.defaultValue);
    const auto c = parseConfig("[" + option.section + "]\n" + option.key + " = " +
                                   *option.defaultValue + "\n",
                               "defaults.conf");
    REQUIRE(c);
    std::visit(
        [&](auto member) {
          if constexpr (!std::is_same_v<decltype(member), std::monostate>) {
            CHECK((*c).*member == (*defaults).*member);
          }
        },
        option.member);
  }
  CHECK(parseConfig("[ipmi]\ncommand_retry_interval = 2\ncommand_timeout = 30\ncommand_attempts = 3\n",
                    "f.conf")
            ->ipmi.commandTimeout == defaults->ipmi.commandTimeout);
}

namespace {

std::string readSource(const std::string& relative) {
  std::ifstream in(kiln::test::sourceDir() / relative);
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// docs/configuration.md's option tables: section -> option name -> its Default cell.
std::map<std::string, std::map<std::string, std::string>> documentedOptions() {
  std::map<std::string, std::map<std::string, std::string>> out;
  std::istringstream docs(readSource("docs/configuration.md"));
  std::string section;
  bool inTable = false;
  for (std::string line; std::getline(docs, line);) {
    if (line.starts_with("## [")) section = line.substr(4, line.find(']') - 4);
    if (line.starts_with("| Option |")) {
      inTable = true;
      continue;
    }
    if (!line.starts_with("|")) inTable = false;
    if (!inTable || line.starts_with("| ---")) continue;
    // | `name`, `other` | default | meaning |
    const size_t firstEnd = line.find(" |", 1);
    const size_t secondEnd = line.find(" |", firstEnd + 2);
    const std::string names = line.substr(1, firstEnd - 1);
    const std::string defaultCell = line.substr(firstEnd + 2, secondEnd - firstEnd - 2);
    for (size_t open = names.find('`'); open != std::string::npos;
         open = names.find('`', names.find('`', open + 1) + 1)) {
      const size_t close = names.find('`', open + 1);
      out[section][names.substr(open + 1, close - open - 1)] = defaultCell;
    }
  }
  return out;
}

/// etc/kiln.conf.sample's options: section -> key -> the value a commented line shows
/// (nullopt for a line that sets the option).
std::map<std::string, std::map<std::string, std::optional<std::string>>> sampleOptions() {
  std::map<std::string, std::map<std::string, std::optional<std::string>>> out;
  std::istringstream sample(readSource("etc/kiln.conf.sample"));
  std::string section;
  for (std::string line; std::getline(sample, line);) {
    if (line.starts_with("[")) {
      section = line.substr(1, line.find(']') - 1);
      continue;
    }
    const bool commented = line.starts_with("#");
    const std::string body = commented ? line.substr(1) : line;
    const size_t eq = body.find(" =");
    if (eq == std::string::npos || eq == 0 ||
        body.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != eq) {
      continue;
    }
    std::optional<std::string> shown;
    if (commented) shown = kiln::trim(body.substr(eq + 2));
    out[section][body.substr(0, eq)] = shown;
  }
  return out;
}

}  // namespace

TEST_CASE("every option of the table is in docs/configuration.md and etc/kiln.conf.sample",
          "[server][config][docs]") {
  auto documented = documentedOptions();
  auto sample = sampleOptions();
  std::set<std::string> tableNames;
  for (const ConfigOption& option : configOptions()) {
    const std::string docName = option.docName.empty() ? option.key : option.docName;
    const std::string name = "[" + option.section + "] " + option.key;
    tableNames.insert("[" + option.section + "] " + docName);
    tableNames.insert(name);
    INFO(name);
    const auto doc = documented[option.section].find(docName);
    CHECK(doc != documented[option.section].end());
    if (doc != documented[option.section].end() && option.defaultValue &&
        !option.defaultValue->empty()) {
      CHECK_THAT(doc->second, Catch::Contains("`" + *option.defaultValue + "`"));
    }
    const auto shown = sample[option.section].find(option.key);
    CHECK(shown != sample[option.section].end());
    if (shown != sample[option.section].end() && shown->second && !shown->second->empty() &&
        option.defaultValue) {
      CHECK(*shown->second == *option.defaultValue);  // "Every option is shown with its default"
    }
  }
  // And nothing is documented or sampled that the table does not have.
  for (const auto& [section, names] : documented) {
    if (section == "http_basic_roles") continue;  // user names, not options
    for (const auto& [name, defaultCell] : names) {
      CHECK(tableNames.count("[" + section + "] " + name));
    }
  }
  for (const auto& [section, keys] : sample) {
    if (section == "http_basic_roles") continue;
    for (const auto& [key, shown] : keys) CHECK(tableNames.count("[" + section + "] " + key));
  }
}

TEST_CASE(
    "parseConfig reads the ramdisk log options with Ironic's names and refuses other back ends",
    "[server][config][ramdisk_logs]") {
  auto defaults = parseConfig("", "f.conf");
  REQUIRE(defaults);
  CHECK(defaults->deployLogsCollect == "on_failure");
  CHECK(defaults->deployLogsStorageBackend == "local");
  CHECK(defaults->deployLogsLocalPath == "/var/log/kiln/deploy");
  auto set = parseConfig(
      "[agent]\ndeploy_logs_collect = always\ndeploy_logs_local_path = /srv/logs\n", "f.conf");
  REQUIRE(set);
  CHECK(set->deployLogsCollect == "always");
  CHECK(set->deployLogsLocalPath == "/srv/logs");
  for (auto [text, says] : {std::pair<const char*, const char*>{
                                "[agent]\ndeploy_logs_storage_backend = swift\n",
                                "f.conf: [agent] deploy_logs_storage_backend must be 'local' (the "
                                "only storage back end of ramdisk logs in Kiln), got 'swift'"},
                            {"[agent]\ndeploy_logs_collect = sometimes\n",
                             "[agent] deploy_logs_collect must be always, on_failure or never"},
                            {"[agent]\ndeploy_logs_local_path =\n",
                             "[agent] deploy_logs_local_path must name a directory"}}) {
    INFO(text);
    auto c = parseConfig(text, "f.conf");
    REQUIRE_FALSE(c);
    CHECK_THAT(c.error().message, Catch::Contains(says));
  }
  CHECK(parseConfig("[agent]\ndeploy_logs_collect = never\ndeploy_logs_local_path =\n", "f.conf"));
}
