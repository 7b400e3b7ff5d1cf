// Fuzz target agent_answers (docs/fuzzing.md): kiln-agent talking to a server that answers
// with the input. The input is a list of HTTP answers separated by lines "@@":
//
//   [NNN ]body\n@@\n[NNN ]body ...
//
// NNN is the status (default 200 for a lookup, 202 for a heartbeat). A real Agent (run by
// hand, the real step catalogue, one 1 MiB temporary file as its only device, a CommandRunner
// that runs nothing, downloads that fail) looks up with the first answer and heartbeats with
// the others, running the commands they carry: HttpServerClient turns the bodies into
// messages (LookupResponse / HeartbeatResponse::parse, faultOf), the agent executes steps on
// their parameters (image_info, configdrive, raid_config, root device hints). Every answer is
// also parsed directly: what a message parser accepts must survive toJson() and parse() again.
// The agent's own heartbeats must be valid JSON.
#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/agent.h"
#include "agent/hardware/hardware_manager.h"
#include "agent/server_client.h"
#include "shared/core/log.h"
#include "shared/exec/command_runner.h"
#include "shared/http/http_client.h"
#include "shared/json/json_util.h"
#include "shared/protocol/messages.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/support/fake_clock.h"

namespace {

using namespace kiln;
using nlohmann::json;

constexpr size_t kMaxAnswers = 8;

struct Answer {
  int status = 0;  ///< 0 = the expected one
  std::string body;
};

std::vector<Answer> splitAnswers(std::string_view input) {
  std::vector<Answer> answers;
  fuzz::InputReader reader(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  while (!reader.empty() && answers.size() < kMaxAnswers) {
    std::string_view piece = reader.until("\n@@\n");
    Answer a;
    if (piece.size() >= 4 && piece[3] == ' ' && std::isdigit(static_cast<unsigned char>(piece[0])) &&
        std::isdigit(static_cast<unsigned char>(piece[1])) &&
        std::isdigit(static_cast<unsigned char>(piece[2]))) {
      a.status = std::atoi(std::string(piece.substr(0, 3)).c_str());
      piece.remove_prefix(4);
    }
    a.body = std::string(piece);
    answers.push_back(std::move(a));
  }
  return answers;
}

/// The server: answers each request with the next answer; downloads fail.
class AnswerHttpClient final : public HttpClient {
 public:
  explicit AnswerHttpClient(std::vector<Answer> answers) : answers_(std::move(answers)) {}

  Result<HttpResponse> send(const HttpRequest& request) override {
    if (!request.body.empty()) fuzz::checkJsonText(request.body, "the agent's " + request.method + " body");
    std::lock_guard<std::mutex> lock(mutex_);
    if (next_ >= answers_.size()) return std::unexpected(Error{ErrorCode::Unavailable, "no more answers"});
    const Answer& a = answers_[next_++];
    HttpResponse r;
    r.status = a.status != 0 ? a.status : (request.method == "GET" ? 200 : 202);
    r.headers = {{"content-type", "application/json"}};
    r.body = a.body;
    return r;
  }
  Result<HttpResponse> stream(const HttpRequest& request, const BodySink& sink) override {
    return std::unexpected(Error{ErrorCode::Unavailable, "connection refused (fuzzing)"});
  }
  bool exhausted() {
    std::lock_guard<std::mutex> lock(mutex_);
    return next_ >= answers_.size();
  }

 private:
  std::mutex mutex_;
  std::vector<Answer> answers_;
  size_t next_ = 0;
};

/// Every tool fails as if it were missing: nothing runs.
class NoCommandRunner final : public CommandRunner {
 public:
  Result<CommandOutput> run(const Command& command) override {
    return CommandOutput{127, "", command.argv.empty() ? "" : command.argv[0] + ": not found\n"};
  }
};

/// No /sys, no /proc.
class EmptySysfs final : public agent::SysfsReader {
 public:
  std::optional<std::string> read(std::string_view) override { return std::nullopt; }
  std::vector<std::string> list(std::string_view) override { return {}; }
  bool exists(std::string_view) override { return false; }
  std::optional<std::string> readLink(std::string_view) override { return std::nullopt; }
};

/// The 1 MiB file the agent may touch (erase steps write into it), removed at exit.
class DeviceFile {
 public:
  DeviceFile() {
    std::string dir = (std::filesystem::temp_directory_path() / "kiln-fuzz-agent-XXXXXX").string();
    if (!mkdtemp(dir.data())) fuzz::fail("cannot create a temporary directory");
    dir_ = dir;
    path_ = dir + "/disk.img";
    { std::ofstream create(path_, std::ios::binary); }
    std::filesystem::resize_file(path_, 1 << 20);
  }
  ~DeviceFile() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_;
  std::string path_;
};

const std::string& deviceFile() {
  static const DeviceFile file;
  return file.path();
}

template <typename Message>
void roundTrip(const std::string& body, const char* name) {
  auto parsed = parseJson(body);
  if (!parsed) return;
  auto message = Message::parse(*parsed);
  if (!message) return;
  const json again = message->toJson();
  auto reparsed = Message::parse(again);
  if (!reparsed) {
    fuzz::fail(std::string(name) + "::parse refuses its own toJson(): " + reparsed.error().message,
               again.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  if (reparsed->toJson() != again) {
    fuzz::fail(std::string(name) + " changes on a second round trip",
               again.dump(-1, ' ', false, json::error_handler_t::replace));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = [] {
    Logger::setSink([](std::string_view) {});
    return true;
  }();
  (void)quiet;
  std::vector<Answer> answers =
      splitAnswers(std::string_view(reinterpret_cast<const char*>(data), size));
  if (answers.empty()) return -1;

  for (const Answer& a : answers) {
    roundTrip<protocol::LookupResponse>(a.body, "LookupResponse");
    roundTrip<protocol::HeartbeatResponse>(a.body, "HeartbeatResponse");
    if (!fuzz::isValidUtf8(agent::faultOf(a.body)) && fuzz::isValidUtf8(a.body)) {
      fuzz::fail("faultOf made invalid UTF-8 of a valid body", a.body);
    }
  }

  AnswerHttpClient http(std::move(answers));
  agent::HttpServerClient server(http, "http://192.0.2.1:6385");
  NoCommandRunner runner;
  test::FakeClock clock;
  EmptySysfs sysfs;
  agent::AgentConfig config;
  config.apiUrl = "http://192.0.2.1:6385";
  config.macs = {"52:54:00:12:34:56"};
  config.devices = {deviceFile()};
  config.byHand = true;
  agent::Agent agent(config, agent::AgentDeps{server, runner, http, clock, sysfs},
                     agent::genericHardwareSteps(sysfs));
  bool session = static_cast<bool>(agent.lookupOnce());
  while (!http.exhausted()) {
    if (!session) {
      session = static_cast<bool>(agent.lookupOnce());
      continue;
    }
    auto after = agent.heartbeatOnce();
    agent.waitIdle();
    if (!after) continue;
    if (*after == agent::Agent::After::Stop) break;
    if (*after == agent::Agent::After::LookUpAgain) session = false;
  }
  return 0;
}
