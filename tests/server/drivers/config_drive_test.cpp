// Config drives built from JSON (server/drivers/agent/config_drive.h): the files and their
// layout as openstacksdk's configdrive.build writes them, the validation, and xorrisofs.
#include <catch2/catch.hpp>

#include <map>

#include <nlohmann/json.hpp>

#include "server/drivers/agent/config_drive.h"

using nlohmann::json;
using namespace kiln;
using namespace kiln::server;

namespace {

std::map<std::string, std::string> filesOf(const json& cd, const std::string& name = "node-1") {
  std::map<std::string, std::string> out;
  for (auto& [path, content] : configDriveFiles(cd, "1be26c0b-03f2-4d2e-ae87-c02d7f33c123", name)) {
    REQUIRE(out.emplace(path, content).second);
  }
  return out;
}

}  // namespace

TEST_CASE("configDriveFiles writes both metadata versions with Ironic's names",
          "[server][configdrive]") {
  const json cd{{"meta_data", {{"hostname", "h1"}}},
                {"user_data", "#!/bin/sh\necho hi\n"},
                {"network_data", {{"links", json::array()}}},
                {"vendor_data", {{"v", 1}}}};
  auto files = filesOf(cd);
  CHECK(files.size() == 8);
  for (const char* version : {"2012-08-10", "latest"}) {
    const std::string dir = std::string("openstack/") + version + "/";
    auto meta = json::parse(files.at(dir + "meta_data.json"));
    CHECK(meta["hostname"] == "h1");
    // uuid and name default to the node's.
    CHECK(meta["uuid"] == "1be26c0b-03f2-4d2e-ae87-c02d7f33c123");
    CHECK(meta["name"] == "node-1");
    CHECK(files.at(dir + "user_data") == "#!/bin/sh\necho hi\n");
    CHECK(json::parse(files.at(dir + "network_data.json")) == cd["network_data"]);
    CHECK(json::parse(files.at(dir + "vendor_data2.json")) == cd["vendor_data"]);
  }
}

TEST_CASE("configDriveFiles keeps given uuid and name, encodes object user_data as JSON and "
          "leaves out what is empty",
          "[server][configdrive]") {
  const json cd{{"meta_data", {{"uuid", "given"}, {"name", "given-name"}}},
                {"user_data", {{"ignition", {{"version", "3.2.0"}}}}},
                {"network_data", json::object()}};
  auto files = filesOf(cd);
  CHECK(files.size() == 4);
  auto meta = json::parse(files.at("openstack/latest/meta_data.json"));
  CHECK(meta["uuid"] == "given");
  CHECK(meta["name"] == "given-name");
  CHECK(json::parse(files.at("openstack/latest/user_data")) == cd["user_data"]);
  CHECK_FALSE(files.contains("openstack/latest/network_data.json"));

  // No node name: no "name" key; an empty string user_data writes no file.
  auto bare = filesOf(json{{"user_data", ""}}, "");
  CHECK(bare.size() == 2);
  CHECK_FALSE(json::parse(bare.at("openstack/latest/meta_data.json")).contains("name"));
}

TEST_CASE("validateConfigDrive follows Ironic's schema", "[server][configdrive]") {
  CHECK(validateConfigDrive(json::object()));
  CHECK(validateConfigDrive(nullptr));
  CHECK(validateConfigDrive("https://example.com/cd.iso.gz?sig=a:b"));
  CHECK(validateConfigDrive("H4sIAAAAAAAA/+3B\nAQ0AAADCoPdP=="));
  CHECK(validateConfigDrive(json{{"user_data", nullptr}}));
  CHECK(validateConfigDrive(json{{"user_data", json::array({1, 2})}}));
  CHECK_FALSE(validateConfigDrive("{not base64}"));
  CHECK_FALSE(validateConfigDrive(json::array()));
  CHECK_FALSE(validateConfigDrive(json{{"vendor_data", "x"}}));
  auto extra = validateConfigDrive(json{{"metadata", json::object()}});
  REQUIRE_FALSE(extra);
  CHECK(extra.error().code == ErrorCode::InvalidArgument);
  CHECK_THAT(extra.error().message, Catch::StartsWith("Invalid configdrive format: ") &&
                                        Catch::Contains("'metadata' was unexpected"));
  CHECK(isEmptyConfigDrive(json::object()));
  CHECK(isEmptyConfigDrive(""));
  CHECK(isEmptyConfigDrive(nullptr));
  CHECK_FALSE(isEmptyConfigDrive(json{{"meta_data", json::object()}}));
}

TEST_CASE("buildConfigDrive runs xorrisofs as openstacksdk does and reports its failure",
          "[server][configdrive]") {
  // The temporary paths differ per run, so this runner records the argv instead of replaying.
  struct Recorder final : CommandRunner {
    std::vector<std::vector<std::string>> argvs;
    Result<CommandOutput> run(const Command& command) override {
      argvs.push_back(command.argv);
      return CommandOutput{.exitCode = 1, .out = "", .err = "xorriso : FAILURE : boom"};
    }
  } runner;
  auto built = buildConfigDrive(runner, json{{"meta_data", {{"a", 1}}}}, "u", "n");
  REQUIRE_FALSE(built);
  CHECK(built.error().code == ErrorCode::Internal);
  CHECK_THAT(built.error().message, Catch::Contains("cannot build the config drive") &&
                                        Catch::Contains("boom"));
  REQUIRE(runner.argvs.size() == 1);
  const auto& argv = runner.argvs[0];
  REQUIRE(argv.size() == 15);
  CHECK(argv[0] == "xorrisofs");
  CHECK(std::vector<std::string>(argv.begin() + 3, argv.end() - 1) ==
        std::vector<std::string>{"-ldots", "-allow-lowercase", "-allow-multidot", "-l",
                                 "-publisher", "kiln", "-quiet", "-J", "-r", "-V", "config-2"});
  // Only JSON is built; a string is not handed to xorrisofs.
  CHECK_FALSE(buildConfigDrive(runner, json("H4sI"), "u", "n"));
  CHECK(runner.argvs.size() == 1);
}
