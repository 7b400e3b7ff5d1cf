// Regressions found by the agent fuzzers (docs/fuzzing.md); their inputs are in
// tests/fuzz/regressions/agent_tool_output/ and tests/fuzz/regressions/agent_answers/.
#include <catch2/catch.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/hardware/inventory.h"
#include "agent/hardware/sysfs.h"
#include "agent/server_client.h"
#include "shared/http/http_client.h"

using namespace kiln;
using namespace kiln::agent;

namespace {

/// Keeps the last request's body; the server is unreachable.
class RecordingHttpClient final : public HttpClient {
 public:
  Result<HttpResponse> send(const HttpRequest& request) override {
    body = request.body;
    return fail(ErrorCode::Unavailable, "no server in this test");
  }
  Result<HttpResponse> stream(const HttpRequest& request, const BodySink&) override {
    return send(request);
  }
  std::string body;
};

/// A /proc tree of one file.
class OneFileSysfs final : public SysfsReader {
 public:
  OneFileSysfs(std::string path, std::string content) : path_(std::move(path)), content_(std::move(content)) {}
  std::optional<std::string> read(std::string_view path) override {
    if (path == path_) return content_;
    return std::nullopt;
  }
  std::vector<std::string> list(std::string_view) override { return {}; }
  bool exists(std::string_view path) override { return path == path_; }
  std::optional<std::string> readLink(std::string_view) override { return std::nullopt; }

 private:
  std::string path_;
  std::string content_;
};

bool isValidUtf8(const std::string& text) {
  return nlohmann::json::accept("\"" + text + "\"");
}

}  // namespace

TEST_CASE("HttpServerClient heartbeats an inventory with bytes that are not UTF-8",
          "[agent][server_client][fuzz]") {
  // The agent_tool_output fuzzer's find: a /proc/cpuinfo model name (or a DMI string, a disk
  // serial) that is not UTF-8 made nlohmann's dump() throw, and the agent ended.
  OneFileSysfs sysfs("/proc/cpuinfo", "processor\t: 0\nmodel name\t: Intel\xff\xfe CPU \xc3\n");
  protocol::HeartbeatRequest beat;
  beat.agentVersion = "kiln-agent test";
  beat.inventory = collectInventory(sysfs, {}, "x86_64");
  RecordingHttpClient http;
  HttpServerClient server(http, "http://192.0.2.1:6385");
  CHECK_FALSE(server.heartbeat("1be26c0b-03f2-4d2e-ae87-c02d7f33c123", beat).has_value());
  const auto sent = nlohmann::json::parse(http.body, nullptr, false);
  REQUIRE(sent.is_object());
  CHECK(sent["inventory"]["cpu"]["model_name"] == "Intel\xef\xbf\xbd\xef\xbf\xbd CPU \xef\xbf\xbd");
}

TEST_CASE("faultOf shortens a long body between UTF-8 characters", "[agent][server_client][fuzz]") {
  // The agent_answers fuzzer's find: a long error body was cut after byte 300, inside a
  // character.
  for (size_t ascii : {298, 299, 300}) {
    CAPTURE(ascii);
    const std::string body = std::string(ascii, 'x') + "\xe2\x82\xac\xe2\x82\xac" + std::string(50, 'y');
    const std::string fault = faultOf(body);
    CHECK(isValidUtf8(fault));
    CHECK(fault.ends_with("..."));
    CHECK(fault.size() <= 303);
  }
  CHECK(faultOf(std::string(299, 'x') + "\xc3\xa9" + "z") == std::string(299, 'x') + "...");
  CHECK(faultOf(std::string(300, 'x') + "z") == std::string(300, 'x') + "...");
  CHECK(faultOf("short \xc3\xa9") == "short \xc3\xa9");
}
