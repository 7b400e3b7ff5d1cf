// kiln-agent's loop against a scripted server: lookup, token, heartbeats carrying results,
// commands run once by id, session end on 401, power commands by hand; and its configuration.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <atomic>
#include <mutex>

#include "agent/agent.h"
#include "agent/agent_config.h"
#include "agent/hardware/hardware_manager.h"
#include "shared/core/base64.h"
#include "shared/core/gzip.h"
#include "shared/core/tar.h"
#include "tests/support/fake_clock.h"
#include "tests/support/protocol_golden.h"
#include "tests/support/replay_command_runner.h"
#include "tests/support/temp_dir.h"

using namespace kiln;
using namespace kiln::agent;
using nlohmann::json;

namespace {

const std::string kToken(43, 't');

/// A ServerClient that records what the agent sends and answers from a script.
class ScriptedServer final : public ServerClient {
 public:
  std::deque<Result<protocol::LookupResponse>> lookups;
  std::deque<Result<protocol::HeartbeatResponse>> beats;
  std::vector<protocol::HeartbeatRequest> received;
  std::vector<std::vector<std::string>> lookedUpWith;

  Result<protocol::LookupResponse> lookup(const std::vector<std::string>& macs, const std::string&) override {
    lookedUpWith.push_back(macs);
    REQUIRE_FALSE(lookups.empty());
    auto r = lookups.front();
    lookups.pop_front();
    return r;
  }
  Result<protocol::HeartbeatResponse> heartbeat(const std::string&, const protocol::HeartbeatRequest& beat) override {
    received.push_back(beat);
    if (beats.empty()) return protocol::HeartbeatResponse{};
    auto r = beats.front();
    beats.pop_front();
    return r;
  }
};

protocol::LookupResponse lookupAnswer(const std::string& token = kToken) {
  protocol::LookupResponse r;
  r.nodeUuid = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123";
  r.node = {{"uuid", r.nodeUuid}, {"properties", json::object()}};
  r.agentToken = token;
  r.heartbeatInterval = 7;
  return r;
}

protocol::AgentCommand stepCommand(const std::string& id, const std::string& iface, const std::string& step,
                                   json args = json::object()) {
  return {id, "execute_step", {{"kind", "clean"}, {"step", {{"interface", iface}, {"step", step}, {"args", args}}}}};
}

protocol::HeartbeatResponse answer(std::vector<protocol::AgentCommand> commands,
                                   std::vector<std::string> acked = {}) {
  protocol::HeartbeatResponse r;
  r.commands = std::move(commands);
  r.acknowledged = std::move(acked);
  r.heartbeatInterval = 2;
  return r;
}

/// An HttpClient for loops whose steps download nothing.
class NoHttp final : public HttpClient {
 public:
  Result<HttpResponse> send(const HttpRequest&) override { return fail(ErrorCode::Unavailable, "no network in this test"); }
  Result<HttpResponse> stream(const HttpRequest& r, const BodySink&) override { return send(r); }
};

/// Stands in for dmesg, ip and lsblk in the log bundle; hold() makes them wait for release().
class ToolStub final : public CommandRunner {
 public:
  void hold() {
    std::lock_guard<std::mutex> lock(mutex_);
    held_ = true;
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      held_ = false;
    }
    released_.notify_all();
  }
  Result<CommandOutput> run(const Command& command) override {
    std::unique_lock<std::mutex> lock(mutex_);
    released_.wait(lock, [this] { return !held_; });
    return CommandOutput{0, command.display() + " output\n", ""};
  }

 private:
  std::mutex mutex_;
  std::condition_variable released_;
  bool held_ = false;
};

/// The bundle of a collect_logs result, unpacked: the tar archive.
std::string bundleTar(const json& result) {
  REQUIRE(result.contains("system_logs"));
  auto bytes = base64Decode(result["system_logs"].get<std::string>());
  REQUIRE(bytes);
  auto tar = gunzip(*bytes, 64 << 20);
  REQUIRE(tar);
  return *tar;
}

/// agent.log's text in the bundle of a result.
std::string bundledAgentLog(const json& result) {
  auto log = tarMemberContent(bundleTar(result), "agent.log");
  REQUIRE(log);
  return *log;
}

/// A step table with counting test steps instead of the hardware ones.
struct Fixture {
  test::TempDir dir{"kiln-agent-loop"};
  std::string disk;
  ScriptedServer server;
  test::ReplayCommandRunner runner;
  test::FakeClock clock;
  RootedSysfsReader sysfs{"/nonexistent-sysfs-root"};
  NoHttp http;
  RamdiskRecord record;
  LogOutbox outbox;
  ToolStub tools;
  std::atomic<int> runs{0};
  std::atomic<bool> sawOneDevice{true};
  std::atomic<bool> sawByHand{true};
  std::unique_ptr<Agent> agent;

  explicit Fixture(bool byHand = true) {
    disk = dir.file("disk.img");
    std::ofstream(disk).close();
    std::filesystem::resize_file(disk, 8 << 20);
    AgentConfig config;
    config.apiUrl = "http://127.0.0.1:1";
    config.byHand = byHand;
    config.macs = {"52:54:00:12:34:56"};
    config.devices = {disk};
    std::vector<AgentStepDefinition> steps;
    steps.push_back({"deploy", "count", 5, -1, true, {}, [this](StepContext& ctx, const json& args) -> Result<json> {
                       ++runs;  // (no Catch2 assertions on the worker thread)
                       if (ctx.devices.size() != 1) sawOneDevice = false;
                       if (!ctx.byHand) sawByHand = false;
                       if (args.value("fail", false)) return invalid("asked to fail");
                       ctx.progress->report(512, 1024);
                       return json{{"runs", runs.load()}};
                     }});
    agent = std::make_unique<Agent>(
        config, AgentDeps{server, runner, http, clock, sysfs, &record, &tools, &outbox},
        std::move(steps));
    Logger::setTap([this](std::string_view line) {
      record.appendLogLine(line);
      outbox.append(line);
    });
  }
  ~Fixture() {
    tools.release();  // a failed check must not leave the worker waiting
    Logger::setTap({});
    agent.reset();
    CHECK(sawOneDevice);
    CHECK(sawByHand);
  }
};

}  // namespace

TEST_CASE("agent: lookup takes the token and heartbeats carry the catalogue and inventory", "[agent][loop]") {
  Fixture f;
  f.server.lookups.push_back(lookupAnswer());
  REQUIRE(f.agent->lookupOnce());
  CHECK(f.agent->hasSession());
  CHECK(f.agent->heartbeatInterval() == 7);
  CHECK(f.server.lookedUpWith.at(0) == std::vector<std::string>{"52:54:00:12:34:56"});

  f.server.beats.push_back(answer({}));
  REQUIRE(f.agent->heartbeatOnce() == Agent::After::Continue);
  REQUIRE(f.server.received.size() == 1);
  const auto& beat = f.server.received[0];
  CHECK(beat.agentToken == kToken);
  CHECK(beat.agentVersion.rfind("kiln-agent", 0) == 0);
  CHECK(beat.steps["clean"]["deploy"][0]["step"] == "count");
  CHECK(beat.steps["clean"]["deploy"][0]["priority"] == 5);
  REQUIRE(beat.inventory.has_value());
  CHECK(beat.inventory->at("disks").size() == 1);
  CHECK(beat.inventory->at("interfaces")[0]["mac_address"] == "52:54:00:12:34:56");
  CHECK(f.agent->heartbeatInterval() == 2);
  // The inventory goes once per session.
  REQUIRE(f.agent->heartbeatOnce());
  CHECK_FALSE(f.server.received[1].inventory.has_value());
}

TEST_CASE("agent: a command runs once, its result is resent until acknowledged", "[agent][loop]") {
  Fixture f;
  f.server.lookups.push_back(lookupAnswer());
  REQUIRE(f.agent->lookupOnce());
  f.server.beats.push_back(answer({stepCommand("c1", "deploy", "count")}));
  REQUIRE(f.agent->heartbeatOnce());
  f.agent->waitIdle();
  CHECK(f.runs == 1);

  // The server did not get the answer (say the reply was lost): the same command again.
  f.server.beats.push_back(answer({stepCommand("c1", "deploy", "count")}));
  REQUIRE(f.agent->heartbeatOnce());
  f.agent->waitIdle();
  CHECK(f.runs == 1);
  REQUIRE(f.server.received.size() == 2);
  REQUIRE(f.server.received[1].results.size() == 1);
  CHECK(f.server.received[1].results[0].id == "c1");
  CHECK(f.server.received[1].results[0].status == "SUCCEEDED");
  CHECK(f.server.received[1].results[0].result["runs"] == 1);

  // Resent until acknowledged, then no more.
  f.server.beats.push_back(answer({}, {"c1"}));
  REQUIRE(f.agent->heartbeatOnce());
  CHECK(f.server.received[2].results.size() == 1);
  REQUIRE(f.agent->heartbeatOnce());
  CHECK(f.server.received[3].results.empty());
  // Even after acknowledgement the id is never run again.
  f.server.beats.push_back(answer({stepCommand("c1", "deploy", "count")}));
  REQUIRE(f.agent->heartbeatOnce());
  f.agent->waitIdle();
  CHECK(f.runs == 1);
}

TEST_CASE("agent: failures and unknown steps are reported as FAILED", "[agent][loop]") {
  Fixture f;
  f.server.lookups.push_back(lookupAnswer());
  REQUIRE(f.agent->lookupOnce());
  f.server.beats.push_back(answer({stepCommand("c1", "deploy", "count", {{"fail", true}}),
                                   stepCommand("c2", "raid", "nonexistent"),
                                   protocol::AgentCommand{"c3", "dance", json::object()}}));
  REQUIRE(f.agent->heartbeatOnce());
  f.agent->waitIdle();
  REQUIRE(f.agent->heartbeatOnce());
  const auto& results = f.server.received.back().results;
  REQUIRE(results.size() == 3);
  for (const auto& r : results) CHECK(r.status == "FAILED");
  CHECK(results[0].error == "asked to fail");
  CHECK_THAT(results[1].error, Catch::Contains("raid.nonexistent"));
  CHECK_THAT(results[2].error, Catch::Contains("dance"));
}

TEST_CASE("agent: a refused token ends the session; \"******\" without a token is fatal", "[agent][loop]") {
  Fixture f;
  f.server.lookups.push_back(lookupAnswer());
  REQUIRE(f.agent->lookupOnce());
  f.server.beats.push_back(std::unexpected(Error{ErrorCode::Unauthenticated, "401"}));
  REQUIRE(f.agent->heartbeatOnce() == Agent::After::LookUpAgain);
  CHECK_FALSE(f.agent->hasSession());
  CHECK_FALSE(f.agent->heartbeatOnce());

  f.server.lookups.push_back(lookupAnswer("******"));
  auto r = f.agent->lookupOnce();
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::PermissionDenied);

  // Unreachable: an error for the caller to back off on, the session stays.
  f.server.lookups.push_back(lookupAnswer());
  REQUIRE(f.agent->lookupOnce());
  f.server.beats.push_back(std::unexpected(Error{ErrorCode::Unavailable, "connection refused"}));
  auto beat = f.agent->heartbeatOnce();
  REQUIRE_FALSE(beat);
  CHECK(f.agent->hasSession());
}

TEST_CASE("agent: by hand, power_off is answered and then stops the agent", "[agent][loop]") {
  Fixture f;
  f.server.lookups.push_back(lookupAnswer());
  REQUIRE(f.agent->lookupOnce());
  f.server.beats.push_back(answer({protocol::AgentCommand{"p1", "power_off", json::object()}}));
  REQUIRE(f.agent->heartbeatOnce() == Agent::After::Continue);
  f.server.beats.push_back(answer({}, {"p1"}));
  REQUIRE(f.agent->heartbeatOnce() == Agent::After::Stop);
  CHECK(f.server.received[1].results.at(0).id == "p1");
  CHECK(f.server.received[1].results.at(0).status == "SUCCEEDED");
  CHECK(f.agent->exitCode() == 0);
  CHECK(f.runner.received().empty());  // nothing was powered off
}

TEST_CASE("agent: run() stops on a by-hand power_off after the whole exchange", "[agent][loop]") {
  Fixture f;
  f.server.lookups.push_back(lookupAnswer());
  f.server.beats.push_back(answer({stepCommand("c1", "deploy", "count")}));
  // The next beats answer the step's result by queuing power_off, then acknowledge it.
  f.server.beats.push_back(answer({protocol::AgentCommand{"p1", "power_off", json::object()}}, {"c1"}));
  f.server.beats.push_back(answer({}, {"p1"}));
  // Every wait of run() here is cut short: by the finished command, then by the power answer.
  CHECK(f.agent->run() == 0);
  CHECK(f.runs == 1);
  CHECK(f.server.lookedUpWith.size() == 1);
  CHECK(f.server.received.size() == 3);
}

TEST_CASE("agent: collect_logs answers with the bundle, before a power_off sent after it",
          "[agent][loop][ramdisk_logs]") {
  Fixture f;
  f.server.lookups.push_back(lookupAnswer());
  REQUIRE(f.agent->lookupOnce());
  f.record.appendLogLine("INFO  agent: a line of this boot\n");
  f.tools.hold();  // the bundle's first tool waits until released
  f.server.beats.push_back(answer({protocol::AgentCommand{"l1", "collect_logs", json::object()},
                                   protocol::AgentCommand{"p1", "power_off", json::object()}}));
  REQUIRE(f.agent->heartbeatOnce() == Agent::After::Continue);
  // While the logs are being collected the power command is not answered: were it answered,
  // the server could acknowledge it and the agent power off before the logs went out.
  REQUIRE(f.agent->heartbeatOnce() == Agent::After::Continue);
  CHECK(f.server.received.back().results.empty());
  auto running = f.server.received.back().running;  // queued or running, in either order
  std::sort(running.begin(), running.end());
  CHECK(running == std::vector<std::string>{"l1", "p1"});
  f.tools.release();
  f.agent->waitIdle();
  REQUIRE(f.agent->heartbeatOnce() == Agent::After::Continue);
  // Both answered in one heartbeat; the agent's token is in no bundle.
  const auto& results = f.server.received.back().results;
  REQUIRE(results.size() == 2);
  CHECK(results[0].id == "l1");
  CHECK(results[0].status == "SUCCEEDED");
  CHECK_THAT(bundledAgentLog(results[0].result), Catch::Contains("a line of this boot"));
  CHECK(bundleTar(results[0].result).find(kToken) == std::string::npos);
  CHECK(results[1].id == "p1");
  f.server.beats.push_back(answer({}, {"l1", "p1"}));
  REQUIRE(f.agent->heartbeatOnce() == Agent::After::Stop);
}

TEST_CASE("agent: a failed step carries the bundle when the server asks for it",
          "[agent][loop][ramdisk_logs]") {
  Fixture f;
  f.server.lookups.push_back(lookupAnswer());
  REQUIRE(f.agent->lookupOnce());
  auto asked = stepCommand(
      "c1", "deploy", "count",
      {{"fail", true}, {"image_info", {{"urls", {"http://svc:pa55word@10.0.0.1/img.raw"}}}}});
  asked.params["collect_logs_on_failure"] = true;
  auto notAsked = stepCommand("c2", "deploy", "count", {{"fail", true}});
  auto succeeded = stepCommand("c3", "deploy", "count");
  succeeded.params["collect_logs_on_failure"] = true;
  f.server.beats.push_back(answer({asked, notAsked, succeeded}));
  REQUIRE(f.agent->heartbeatOnce());
  f.agent->waitIdle();
  REQUIRE(f.agent->heartbeatOnce());
  const auto& results = f.server.received.back().results;
  REQUIRE(results.size() == 3);
  CHECK(results[0].status == "FAILED");
  CHECK(results[0].error == "asked to fail");
  CHECK_THAT(bundledAgentLog(results[0].result), Catch::Contains("command failed"));
  CHECK_FALSE(results[1].result.contains("system_logs"));
  CHECK(results[2].status == "SUCCEEDED");
  CHECK_FALSE(results[2].result.contains("system_logs"));
  CHECK(f.record.mask("pa55word and svc:pa55word") == "****** and ******");
}

TEST_CASE("agent: heartbeats carry new log lines, masked, until the server acknowledges them",
          "[agent][loop][log]") {
  Fixture f;
  f.server.lookups.push_back(lookupAnswer());
  REQUIRE(f.agent->lookupOnce());
  Logger("agent").info(std::string("the token is ") + kToken);
  // First beat: not acknowledged (an older server), so the lines come again.
  REQUIRE(f.agent->heartbeatOnce());
  REQUIRE(f.server.received.back().log);
  const protocol::LogBatch first = *f.server.received.back().log;
  CHECK(first.firstSeq == 1);
  REQUIRE(first.lines.size() >= 2);
  CHECK(first.lines.back().find("the token is ******") != std::string::npos);
  for (const auto& line : first.lines) CHECK(line.find(kToken) == std::string::npos);
  protocol::HeartbeatResponse ack;
  ack.logAcknowledged = first.firstSeq + first.lines.size() - 1;
  f.server.beats.push_back(ack);
  REQUIRE(f.agent->heartbeatOnce());
  CHECK(f.server.received.back().log->lines == first.lines);
  // Acknowledged: the next beat has only what was logged since.
  Logger("agent").info("after the acknowledgement");
  REQUIRE(f.agent->heartbeatOnce());
  const auto& third = f.server.received.back().log;
  REQUIRE(third);
  CHECK(third->firstSeq == *ack.logAcknowledged + 1);
  REQUIRE(third->lines.size() == 1);
  CHECK(third->lines[0].find("after the acknowledgement") != std::string::npos);
}

TEST_CASE("agent config: by hand, from the kernel command line, bad input", "[agent][config]") {
  auto parse = [](std::vector<std::string> args, std::string cmdline = "") {
    return parseAgentArgs(args, cmdline);
  };
  auto c = parse({"--api-url", "http://127.0.0.1:6385/", "--mac", "52:54:00:00:00:01", "--device", "/tmp/a",
                  "--device", "/tmp/b", "--max-backoff", "5"});
  REQUIRE(c);
  CHECK(c->byHand);
  CHECK(c->apiUrl == "http://127.0.0.1:6385");
  CHECK(c->devices == std::vector<std::string>{"/tmp/a", "/tmp/b"});
  CHECK(c->maxBackoff == std::chrono::seconds(5));

  c = parse({}, "BOOT_IMAGE=/vmlinuz console=ttyS0 kiln.api_url=http://10.0.2.2:6385 quiet\n");
  REQUIRE(c);
  CHECK_FALSE(c->byHand);
  CHECK(c->apiUrl == "http://10.0.2.2:6385");
  c = parse({}, "ipa-api-url=http://10.0.2.2:6385");
  REQUIRE(c);
  CHECK(c->apiUrl == "http://10.0.2.2:6385");

  CHECK_FALSE(parse({}, "console=ttyS0"));                                     // no URL anywhere
  CHECK_FALSE(parse({"--api-url", "http://x:1"}));                             // by hand needs --device
  CHECK_FALSE(parse({"--api-url", "ftp://x", "--device", "/tmp/a"}));          // scheme
  CHECK_FALSE(parse({"--api-url"}));                                           // missing value
  CHECK_FALSE(parse({"--bogus"}, "kiln.api_url=http://x"));                    // unknown option
  CHECK_FALSE(parse({"--device", "/dev/sda"}, "kiln.api_url=http://x"));       // --device alone
  CHECK_FALSE(parse({"--api-url", "http://x", "--device", "d", "--max-backoff", "0"}));
  CHECK(parse({"--log-level", "WARN"}, "kiln.api_url=http://x"));
  const auto level = parse({"--log-level", "verbose"}, "kiln.api_url=http://x");
  REQUIRE_FALSE(level);  // unknown levels were read as info
  CHECK(level.error().message == "--log-level must be trace, debug, info, warning or error, got 'verbose'");
  CHECK(kernelParameter("a=1 b=2 a=3", "a") == "3");
  CHECK_FALSE(kernelParameter("ab=1", "a"));
}

TEST_CASE("the generic step catalogue has ironic-python-agent's names and priorities", "[agent][steps]") {
  RootedSysfsReader sysfs("/nonexistent");
  const auto steps = genericHardwareSteps(sysfs);
  const json catalogue = stepCatalogue(steps);
  auto priority = [&](const char* kind, const char* iface, const char* name) {
    for (const auto& s : catalogue[kind][iface]) {
      if (s["step"] == name) return s["priority"].get<int>();
    }
    return -1;
  };
  CHECK(priority("clean", "deploy", "erase_devices_metadata") == 99);
  CHECK(priority("clean", "deploy", "erase_devices") == 10);
  CHECK(priority("clean", "raid", "create_configuration") == 0);
  CHECK(priority("clean", "raid", "delete_configuration") == 0);
  CHECK(priority("deploy", "raid", "apply_configuration") == 0);
  CHECK(priority("deploy", "deploy", "write_image") == 0);
  CHECK(priority("deploy", "deploy", "erase_devices_metadata") == 0);
  CHECK(priority("deploy", "deploy", "erase_devices") == -1);
  CHECK(catalogue["hardware_manager_version"]["generic"] == "1");
  for (const auto& s : catalogue["deploy"]["raid"]) {
    if (s["step"] == "apply_configuration") CHECK(s["argsinfo"]["raid_config"]["required"] == true);
  }
}

TEST_CASE("the agent's messages carry the golden files' fields", "[agent][loop][protocol]") {
  using kiln::test::goldenMessage;
  using kiln::test::keysOf;
  Fixture f;
  // The agent takes the golden lookup response and heartbeat response as they are.
  auto lookup = protocol::LookupResponse::parse(goldenMessage("lookup_response"));
  REQUIRE(lookup);
  lookup->node["properties"] = json::object();  // the golden hints name /dev/vda; ours is a file
  f.server.lookups.push_back(*lookup);
  REQUIRE(f.agent->lookupOnce());
  auto answerDoc = goldenMessage("heartbeat_response");
  answerDoc["commands"] = json::array({stepCommand("c1", "deploy", "count").toJson()});
  auto parsedAnswer = protocol::HeartbeatResponse::parse(answerDoc);
  REQUIRE(parsedAnswer);
  f.server.beats.push_back(*parsedAnswer);
  REQUIRE(f.agent->heartbeatOnce());
  f.agent->waitIdle();
  REQUIRE(f.agent->heartbeatOnce());

  const json golden = goldenMessage("heartbeat_request");
  const json first = f.server.received[0].toJson();
  for (const auto& key : keysOf(golden)) {
    if (key != "progress") CHECK(first.contains(key));
  }
  for (const auto& key : keysOf(golden["inventory"])) {
    INFO("inventory key " << key);
    CHECK(first["inventory"].contains(key));
  }
  CHECK(keysOf(first["steps"]) == keysOf(golden["steps"]));
  CHECK(keysOf(first["steps"]["clean"]["deploy"][0]) == keysOf(golden["steps"]["clean"]["deploy"][0]));
  const json second = f.server.received[1].toJson();
  REQUIRE(second["results"].size() == 1);
  CHECK(keysOf(second["results"][0]) == keysOf(golden["results"][1]));
}
