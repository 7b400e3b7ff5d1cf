// The wire format of the agent protocol is pinned by golden files (docs/protocol.md): every
// message parses from its golden file and serialises back to exactly the same document.
#include <catch2/catch.hpp>

#include "shared/protocol/messages.h"
#include "tests/support/protocol_golden.h"

using namespace kiln;
using kiln::test::goldenMessage;

TEST_CASE("protocol messages round-trip their golden files exactly", "[shared][protocol]") {
  SECTION("lookup response") {
    const auto golden = goldenMessage("lookup_response");
    auto parsed = protocol::LookupResponse::parse(golden);
    REQUIRE(parsed);
    CHECK(parsed->nodeUuid == "1be26c0b-03f2-4d2e-ae87-c02d7f33c123");
    CHECK(parsed->heartbeatInterval == 10);
    CHECK(parsed->agentToken.size() >= 32);
    CHECK(parsed->toJson() == golden);
  }
  SECTION("heartbeat request") {
    const auto golden = goldenMessage("heartbeat_request");
    auto parsed = protocol::HeartbeatRequest::parse(golden);
    REQUIRE(parsed);
    REQUIRE(parsed->results.size() == 2);
    CHECK(parsed->results[0].status == "FAILED");
    REQUIRE(parsed->progress);
    CHECK(parsed->progress->bytesTotal == 268435456);
    REQUIRE(parsed->log);
    CHECK(parsed->log->firstSeq == 41);
    CHECK(parsed->log->lines.size() == 2);
    CHECK(parsed->log->dropped == 2);
    CHECK(parsed->toJson() == golden);
  }
  SECTION("heartbeat response") {
    const auto golden = goldenMessage("heartbeat_response");
    auto parsed = protocol::HeartbeatResponse::parse(golden);
    REQUIRE(parsed);
    REQUIRE(parsed->commands.size() == 3);
    CHECK(parsed->commands[1].name == "collect_logs");
    CHECK(parsed->commands[2].name == "power_off");
    CHECK(parsed->logAcknowledged == 42u);
    CHECK(parsed->toJson() == golden);
  }
}

TEST_CASE("protocol messages reject malformed input without throwing", "[shared][protocol]") {
  using nlohmann::json;
  CHECK_FALSE(protocol::LookupResponse::parse(json::array()));
  CHECK_FALSE(protocol::LookupResponse::parse(json{{"node", {{"uuid", 5}}}, {"config", json::object()}}));
  CHECK_FALSE(protocol::HeartbeatRequest::parse(json{{"results", "x"}}));
  CHECK_FALSE(protocol::HeartbeatRequest::parse(json{{"results", {{{"id", "a"}, {"status", "MAYBE"}}}}}));
  CHECK_FALSE(protocol::HeartbeatRequest::parse(json{{"progress", {{"command_id", "a"}, {"bytes_done", -1}}}}));
  CHECK_FALSE(protocol::HeartbeatRequest::parse(json{{"running", {1, 2}}}));
  CHECK_FALSE(protocol::HeartbeatRequest::parse(json{{"log", "line"}}));
  CHECK_FALSE(protocol::HeartbeatRequest::parse(json{{"log", {{"lines", {"a", 3}}}}}));
  CHECK_FALSE(protocol::HeartbeatRequest::parse(json{{"log", {{"first_seq", 0}, {"lines", {"a"}}}}}));
  CHECK_FALSE(protocol::HeartbeatRequest::parse(json{{"log", {{"first_seq", -4}}}}));
  CHECK_FALSE(protocol::HeartbeatRequest::parse(json{{"log", {{"dropped", 1.5}}}}));
  CHECK_FALSE(protocol::HeartbeatRequest::parse(
      json{{"log", {{"first_seq", UINT64_MAX}, {"lines", {"a", "b"}}}}}));
  CHECK_FALSE(protocol::HeartbeatResponse::parse(json{{"commands", {{{"name", "x"}}}}}));
  CHECK_FALSE(protocol::HeartbeatResponse::parse(json{{"heartbeat_interval", "soon"}}));
  CHECK_FALSE(protocol::AgentCommand::parse(json{{"id", "a"}, {"name", "b"}, {"params", 3}}));
}
