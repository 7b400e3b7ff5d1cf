// Fuzz target json_body (docs/fuzzing.md): one API request in the text form of
// tests/fuzz/fuzz_server.h ("METHOD /path?query", header lines, a blank line, the body)
// through ApiService::handle of an in-process kiln-server holding one resource of each kind.
// FuzzServer::call aborts on a 5xx or a body that is not what its Content-Type says.
#include <cstdint>
#include <string_view>

#include "tests/fuzz/fuzz_server.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto request =
      kiln::fuzz::parseRequestText(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!request) return -1;
  kiln::fuzz::FuzzServer::instance().call(std::move(*request));
  return 0;
}
