// Fuzz target ini_config (docs/fuzzing.md): kiln-server's configuration file (the input, as
// INI text) through parseConfig, which loadConfig calls with the file's bytes, and the same
// bytes as the http_basic user file through parseHtpasswd. Neither may crash; an accepted
// configuration keeps every value of the option table (configOptions()) inside its range or
// among its choices, and its log level is one kiln-server can set.
#include <algorithm>
#include <cstdint>
#include <string>
#include <variant>

#include "server/api/auth.h"
#include "server/config.h"
#include "shared/core/log.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = [] {
    kiln::Logger::setSink([](std::string_view) {});
    return true;
  }();
  (void)quiet;
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (auto config = kiln::server::parseConfig(text, "fuzz.conf")) {
    if (config->port < 0 || config->port > 65535) {
      kiln::fuzz::fail("parseConfig accepted port " + std::to_string(config->port), text);
    }
    if (config->workersPoolSize < 1) {
      kiln::fuzz::fail("parseConfig accepted workers_pool_size " +
                           std::to_string(config->workersPoolSize), text);
    }
    (void)kiln::server::splitList(config->connection);
    using kiln::server::Config;
    using kiln::server::OptionKind;
    for (const auto& option : kiln::server::configOptions()) {
      const std::string name = "[" + option.section + "] " + option.key;
      if (option.kind == OptionKind::Int) {
        std::optional<int> value;
        if (const auto* member = std::get_if<int Config::*>(&option.member)) {
          value = (*config).**member;
        } else {
          value = (*config).*std::get<std::optional<int> Config::*>(option.member);
        }
        if (value && (*value < option.min || *value > option.max)) {
          kiln::fuzz::fail("parseConfig accepted " + name + " = " + std::to_string(*value), text);
        }
      }
      if (option.kind == OptionKind::Choice) {
        const std::string& value = (*config).*std::get<std::string Config::*>(option.member);
        if (std::find(option.choices.begin(), option.choices.end(), value) ==
            option.choices.end()) {
          kiln::fuzz::fail("parseConfig accepted " + name + " = " + value, text);
        }
      }
    }
    if (!kiln::parseLogLevel(config->logLevel)) {
      kiln::fuzz::fail("parseConfig accepted log level " + config->logLevel, text);
    }
  }
  (void)kiln::server::parseHtpasswd(text);
  return 0;
}
