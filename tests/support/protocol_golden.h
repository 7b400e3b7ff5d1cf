// File: tests/support/protocol_golden.h
//
// The golden protocol messages (tests/data/protocol/*.json, docs/protocol.md) for the tests of
// both sides: the shared messages round-trip them exactly; the server's and the agent's real
// messages must carry the same fields.
#pragma once

#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kiln::test {

/// tests/data/protocol/<name>.json, parsed; fails the test when missing or malformed.
nlohmann::json goldenMessage(std::string_view name);

/// The object's keys.
std::set<std::string> keysOf(const nlohmann::json& object);

}  // namespace kiln::test
