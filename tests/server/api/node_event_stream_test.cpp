// The Server-Sent Events stream of GET /v1/nodes/{node}/events over a real socket: it follows
// a flow live (fake-hardware), resumes with Last-Event-ID, sends keep-alives, and drops a
// client that stops reading once its bounded buffer is full (server/api/node_event_hub.h).
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/model/node.h"
#include "server/storage/queries/node_events.h"
#include "tests/support/raw_http_client.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TestApi;
using namespace kiln::server;
using Clock = std::chrono::steady_clock;

namespace {

/// One frame of the stream: its id and its data, or a comment.
struct Frame {
  int64_t id = -1;
  Json data;
  std::string comment;
};

/// A loopback client reading a stream; reads wait on poll() with a deadline.
class StreamClient {
 public:
  StreamClient(uint16_t port, const std::string& request, int receiveBuffer = 0) {
    fd_ = kiln::test::connectLoopback(port, receiveBuffer);
    REQUIRE(send(fd_, request.data(), request.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(request.size()));
  }
  ~StreamClient() { close(fd_); }

  /// Reads until the head has arrived; returns it.
  std::string head() {
    REQUIRE(readUntil([&] { return buffer_.find("\r\n\r\n") != std::string::npos; }));
    const size_t end = buffer_.find("\r\n\r\n");
    std::string h = buffer_.substr(0, end);
    buffer_.erase(0, end + 4);
    return h;
  }

  /// Reads frames until `done` says so (true) or 20 s pass (false).
  bool framesUntil(const std::function<bool(const std::vector<Frame>&)>& done) {
    return readUntil([&] {
      parse();
      return done(frames);
    });
  }

  /// Reads until the server closes the connection (true) or 20 s pass.
  bool untilClosed() {
    return readUntil([] { return false; }, true);
  }

  std::vector<Frame> frames;
  size_t received = 0;

 private:
  bool readUntil(const std::function<bool()>& done, bool closeIsDone = false) {
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (!done()) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
      char buf[65536];
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return closeIsDone;
      received += static_cast<size_t>(n);
      buffer_.append(buf, static_cast<size_t>(n));
    }
    return true;
  }

  void parse() {
    size_t end;
    while ((end = buffer_.find("\n\n")) != std::string::npos) {
      const std::string block = buffer_.substr(0, end);
      buffer_.erase(0, end + 2);
      Frame f;
      size_t start = 0;
      while (start <= block.size()) {
        size_t nl = block.find('\n', start);
        if (nl == std::string::npos) nl = block.size();
        const std::string line = block.substr(start, nl - start);
        if (line.rfind("id: ", 0) == 0) f.id = std::stoll(line.substr(4));
        if (line.rfind("data: ", 0) == 0) f.data = Json::parse(line.substr(6));
        if (line.rfind(":", 0) == 0) f.comment = line;
        start = nl + 1;
      }
      frames.push_back(std::move(f));
    }
  }

  int fd_ = -1;
  std::string buffer_;
};

std::string streamRequest(const std::string& path, const std::string& extra = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n" + extra +
         "\r\n";
}

std::vector<Frame> eventsOf(const std::vector<Frame>& frames) {
  std::vector<Frame> out;
  for (const auto& f : frames) {
    if (f.id >= 0) out.push_back(f);
  }
  return out;
}

bool hasFlowEnd(const std::vector<Frame>& frames, const std::string& flow) {
  for (const auto& f : frames) {
    if (f.id >= 0 && f.data["kind"] == "flow_finished" && f.data["flow"] == flow) return true;
  }
  return false;
}

/// Waits (yielding) until `ok` holds or 20 s pass.
bool eventually(const std::function<bool()>& ok) {
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (!ok()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace

TEST_CASE("an event stream follows a flow live and resumes after Last-Event-ID",
          "[server][http][events]") {
  TestApi api("[api]\nport = 0\n[events]\nkeepalive_interval = 1\n");
  REQUIRE(api.app().start());
  const uint16_t port = api.app().port();
  const Json node = api.createNode({{"name", "live"}});

  StreamClient live(port, streamRequest("/v1/nodes/live/events"));
  const std::string head = live.head();
  CHECK(head.rfind("HTTP/1.1 200", 0) == 0);
  CHECK_THAT(head, Catch::Contains("Content-Type: text/event-stream"));
  CHECK_THAT(head, Catch::Contains("Cache-Control: no-cache"));
  CHECK_THAT(head, !Catch::Contains("Content-Length"));
  REQUIRE(eventually([&] { return api.app().eventHub().streams() == 1; }));

  // A flow runs while the client watches: manage (verify), then a manual cleaning.
  REQUIRE(api.provision("live", "manage").status == 202);
  REQUIRE(api.provision("live", "clean", {{"clean_steps", Json::parse(R"([
      {"interface": "power", "step": "power_on"},
      {"interface": "power", "step": "power_off"}])")}})
              .status == 202);
  REQUIRE(live.framesUntil([](const auto& f) { return hasFlowEnd(f, "clean"); }));
  const auto seen = eventsOf(live.frames);
  for (size_t i = 1; i < seen.size(); ++i) CHECK(seen[i].id > seen[i - 1].id);
  for (const auto& f : seen) CHECK(f.data["id"] == f.id);
  size_t steps = 0;
  for (const auto& f : seen) steps += f.data["kind"] == "step_finished" ? 1 : 0;
  CHECK(steps == 2);

  // The JSON listing has the same events.
  auto listed = api.get("/v1/nodes/live/events").json()["events"];
  REQUIRE(listed.size() == seen.size());
  for (size_t i = 0; i < seen.size(); ++i) CHECK(listed[i] == seen[i].data);

  // Keep-alive comments while nothing happens.
  REQUIRE(live.framesUntil([](const auto& frames) {
    for (const auto& f : frames) {
      if (f.comment == ": keep-alive") return true;
    }
    return false;
  }));

  // A reconnecting client resumes after the last event it saw, by UUID this time.
  const int64_t resumeAfter = seen[2].id;
  StreamClient again(port, streamRequest("/v1/nodes/" + node["uuid"].get<std::string>() + "/events",
                                         "Last-Event-ID: " + std::to_string(resumeAfter) + "\r\n"));
  CHECK(again.head().rfind("HTTP/1.1 200", 0) == 0);
  REQUIRE(again.framesUntil([&](const auto& f) { return eventsOf(f).size() >= seen.size() - 3; }));
  const auto resumed = eventsOf(again.frames);
  CHECK(resumed.front().id == seen[3].id);
  CHECK(resumed.back().id == seen.back().id);

  // ?kind= filters a stream too; ?since=0 replays the journal first.
  StreamClient only(port, streamRequest("/v1/nodes/live/events?since=0&kind=step_finished"));
  only.head();
  REQUIRE(only.framesUntil([](const auto& f) { return eventsOf(f).size() >= 2; }));
  for (const auto& f : eventsOf(only.frames)) CHECK(f.data["kind"] == "step_finished");

  // A malformed Last-Event-ID is a 400 before any stream starts.
  StreamClient bad(port, streamRequest("/v1/nodes/live/events", "Last-Event-ID: -4\r\n"));
  CHECK(bad.head().rfind("HTTP/1.1 400", 0) == 0);
  api.app().stop();
  CHECK(api.app().eventHub().streams() == 0);
}

TEST_CASE("an event stream whose client stops reading is dropped with its buffer",
          "[server][http][events]") {
  TestApi api("[api]\nport = 0\n[events]\nstream_buffer_bytes = 4096\n");
  REQUIRE(api.app().start());
  const Json node = api.createNode({{"name", "slow"}});
  StreamClient slow(api.app().port(), streamRequest("/v1/nodes/slow/events"), 4096);
  REQUIRE(eventually([&] { return api.app().eventHub().streams() == 1; }));
  // Far more than the socket buffers and the stream's 4 KiB hold, while nobody reads.
  const std::string filler(2000, 'x');
  auto& storage = api.app().storage();
  int64_t nodeId = 0;
  {
    auto tx = storage.begin(Storage::Mode::Read).value();
    nodeId = tx->nodes().findBy(kNodeName, Value::text("slow")).value()->id();
  }
  for (int batch = 0; batch < 40 && api.app().eventHub().streams() > 0; ++batch) {
    auto tx = storage.begin(Storage::Mode::Write).value();
    for (int i = 0; i < 100; ++i) {
      REQUIRE(appendNodeEvent(*tx, api.clock(), "h", nodeId, node["uuid"].get<std::string>(),
                              "filler", {{"text", filler}}));
    }
    REQUIRE(tx->commit());
  }
  REQUIRE(eventually([&] { return api.app().eventHub().streams() == 0; }));
  // The client finds the connection closed before it got everything.
  REQUIRE(slow.untilClosed());
  CHECK(slow.received < 40u * 100u * 2000u);
  // The server goes on serving.
  StreamClient next(api.app().port(), streamRequest("/v1/nodes/slow/events"));
  CHECK(next.head().rfind("HTTP/1.1 200", 0) == 0);
  api.app().stop();
}
