// Fuzz target url (docs/fuzzing.md): the URL parser behind every outbound request and the
// redirect resolver (shared/http/url.h), with user information accepted as image, checksum
// and config drive URLs carry it, and downloadRequest, which turns it into Basic credentials.
// The input's first line is a URL, the rest a redirect's Location. None may crash; a parsed
// URL's str() parses again to the same origin and target and carries no user information; a
// refused URL's message never quotes its password; downloadRequest's URL carries no user
// information; a resolved Location without '@' carries none either.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "shared/http/http_client.h"
#include "shared/http/url.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using kiln::HttpUrl;
using kiln::UserInfo;

void checkNoUserInfo(const std::string& url, const std::string& what, const std::string& input) {
  auto again = kiln::parseHttpUrl(url, UserInfo::Accept);
  if (again && again->credentials)
    kiln::fuzz::fail(what + " carries user information: " + url, input);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const std::string url = input.substr(0, newline);
  const std::string location = newline == std::string::npos ? "" : input.substr(newline + 1);

  auto parsed = kiln::parseHttpUrl(url, UserInfo::Accept);
  if (parsed) {
    const std::string canonical = parsed->str();
    auto again = kiln::parseHttpUrl(canonical, UserInfo::Reject);
    if (!again) {
      kiln::fuzz::fail(
          "str() of a parsed URL does not parse: " + canonical + ": " + again.error().message,
          input);
    } else if (again->origin() != parsed->origin() || again->target != parsed->target) {
      kiln::fuzz::fail("str() changes the URL: " + canonical, input);
    }
    // A password of some length must not be quoted by the refusal of the same URL (unless the
    // rest of the URL holds the same text: "http://u:~~~~~~~~@h.~~~~~~~~").
    if (parsed->credentials && parsed->credentials->second.size() >= 8 &&
        url.find(parsed->credentials->second) == url.rfind(parsed->credentials->second) &&
        canonical.find(parsed->credentials->second) == std::string::npos) {
      auto refused = kiln::parseHttpUrl(url, UserInfo::Reject);
      if (!refused &&
          refused.error().message.find(parsed->credentials->second) != std::string::npos) {
        kiln::fuzz::fail("a refused URL's message quotes its password", input);
      }
    }
    if (location.find('@') == std::string::npos) {
      checkNoUserInfo(kiln::resolveReference(*parsed, location), "a resolved Location", input);
    }
  }
  if (auto request = kiln::downloadRequest(url, std::nullopt)) {
    checkNoUserInfo(request->url, "downloadRequest's URL", input);
  }
  return 0;
}
