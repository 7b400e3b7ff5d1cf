// Fuzz target ini_config (docs/fuzzing.md): kiln-server's configuration file (the input, as
// INI text) through parseConfig, which loadConfig calls with the file's bytes, and the same
// bytes as the http_basic user file through parseHtpasswd. Neither may crash; an accepted
// configuration keeps its values inside the ranges config.cpp enforces.
#include <cstdint>
#include <string>

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
  }
  (void)kiln::server::parseHtpasswd(text);
  return 0;
}
