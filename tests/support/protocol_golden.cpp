#include "tests/support/protocol_golden.h"

#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "tests/support/replay_command_runner.h"

namespace kiln::test {

nlohmann::json goldenMessage(std::string_view name) {
  const auto path = testDataPath("protocol/" + std::string(name) + ".json");
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  auto parsed = nlohmann::json::parse(ss.str(), nullptr, false);
  REQUIRE_FALSE(parsed.is_discarded());
  return parsed;
}

std::set<std::string> keysOf(const nlohmann::json& object) {
  std::set<std::string> keys;
  if (!object.is_object()) return keys;
  for (auto it = object.begin(); it != object.end(); ++it) keys.insert(it.key());
  return keys;
}

}  // namespace kiln::test
