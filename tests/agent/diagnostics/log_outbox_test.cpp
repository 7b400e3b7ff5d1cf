// The agent's outbox of log lines for the heartbeats (agent/diagnostics/log_outbox.h).
#include <catch2/catch.hpp>

#include <string>

#include "agent/diagnostics/log_outbox.h"

using namespace kiln;
using namespace kiln::agent;

TEST_CASE("log outbox numbers lines and forgets them only when acknowledged", "[agent][log]") {
  LogOutbox outbox;
  CHECK_FALSE(outbox.take());
  outbox.append("one\n");
  outbox.append("two");
  outbox.append("three\r\n");
  auto batch = outbox.take();
  REQUIRE(batch);
  CHECK(batch->firstSeq == 1);
  CHECK(batch->lines == std::vector<std::string>{"one", "two", "three"});
  CHECK(batch->dropped == 0);
  // Taking is not forgetting: a lost answer means the same lines again.
  CHECK(outbox.take()->lines == batch->lines);
  outbox.acknowledge(2, 0);
  batch = outbox.take();
  REQUIRE(batch);
  CHECK(batch->firstSeq == 3);
  CHECK(batch->lines == std::vector<std::string>{"three"});
  outbox.acknowledge(3, 0);
  CHECK_FALSE(outbox.take());
  outbox.append("four");
  CHECK(outbox.take()->firstSeq == 4);
}

TEST_CASE("log outbox sends at most the heartbeat's bytes, oldest first, at least one line",
          "[agent][log]") {
  LogOutbox outbox;
  for (int i = 0; i < 10; ++i) outbox.append(std::string(100, static_cast<char>('a' + i)));
  auto batch = outbox.take(350);
  REQUIRE(batch);
  CHECK(batch->lines.size() == 3);
  CHECK(batch->lines[0][0] == 'a');
  outbox.append(std::string(5000, 'z'));
  outbox.acknowledge(10, 0);
  batch = outbox.take(100);
  REQUIRE(batch);
  REQUIRE(batch->lines.size() == 1);  // longer than the budget, sent alone, cut
  CHECK(batch->lines[0].size() == protocol::LogBatch::kMaxLineBytes);
}

TEST_CASE("log outbox drops the oldest lines when full and reports the count once",
          "[agent][log]") {
  LogOutbox outbox(1000);
  for (int i = 0; i < 25; ++i) outbox.append(std::string(99, 'x') + "\n");  // 99 bytes kept each
  CHECK(outbox.size() == 10);
  CHECK(outbox.dropped() == 15);
  auto batch = outbox.take();
  REQUIRE(batch);
  CHECK(batch->firstSeq == 16);
  CHECK(batch->dropped == 15);
  outbox.append(std::string(99, 'y'));  // dropping one more while the batch is on its way
  CHECK(outbox.dropped() == 16);
  outbox.acknowledge(batch->firstSeq + batch->lines.size() - 1, batch->dropped);
  CHECK(outbox.dropped() == 1);
  batch = outbox.take();
  REQUIRE(batch);
  CHECK(batch->dropped == 1);
  CHECK(batch->lines == std::vector<std::string>{std::string(99, 'y')});
}

TEST_CASE("log outbox masks secrets before it cuts and escapes bytes that are not UTF-8",
          "[agent][log]") {
  LogOutbox outbox;
  const std::string secret = "s3cr3t-token";
  outbox.append("bad \xFF\xC3 byte, good \xC3\xA9");
  outbox.append(std::string(protocol::LogBatch::kMaxLineBytes - 4, 'p') + secret);
  const auto mask = [&](std::string_view text) {
    std::string out(text);
    for (size_t at = out.find(secret); at != std::string::npos; at = out.find(secret)) {
      out.replace(at, secret.size(), "******");
    }
    return out;
  };
  auto batch = outbox.take(protocol::LogBatch::kMaxHeartbeatBytes, mask);
  REQUIRE(batch);
  REQUIRE(batch->lines.size() == 2);
  CHECK(batch->lines[0] == "bad \\xFF\\xC3 byte, good \xC3\xA9");
  CHECK(batch->lines[1].find("s3cr") == std::string::npos);
  CHECK(batch->lines[1].size() == protocol::LogBatch::kMaxLineBytes);
  CHECK(nlohmann::json(batch->lines).dump().size() > 0);  // valid UTF-8: dump does not throw
}
