// Fuzz target web_console (docs/fuzzing.md): what the web console's server side reads from
// requests (server/api/web_console.h, web_security.h) and the ramdisk log bundle names
// (server/drivers/agent/ramdisk_log_files.h). The first byte chooses:
//   'o' an Origin header: normalizeOrigin;
//   'p' a request path: consoleFileFor;
//   'l' a file name read as a bundle of a fixed node: logFileTime;
//   any other: a write request, '\n'-separated: method, Origin, Host, Content-Type (an empty
//       line: no header), judged by refuseCrossSiteWrite.
// Never a crash, and what is accepted holds together: a normalized origin is lowercase
// http(s)://authority and normalizes to itself; a console file is index.html or one plain
// name directly in assets/ (no '/', no leading '.'); a bundle name starts with the
// node's UUID, ends in .tar.gz and has no '/'; a write is refused with 403 (foreign Origin) or
// 415 (a form's Content-Type) only, and one let through with an Origin has the Host's origin.
#include <cstdint>
#include <string>
#include <string_view>

#include "server/api/web_console.h"
#include "server/api/web_security.h"
#include "server/drivers/agent/ramdisk_log_files.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using namespace kiln;
using kiln::fuzz::fail;

constexpr std::string_view kNode = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123";

void origin(std::string_view text) {
  auto o = server::normalizeOrigin(text);
  if (!o) return;
  if (!o->starts_with("http://") && !o->starts_with("https://")) fail("web_console: origin scheme", *o);
  const std::string_view authority = std::string_view(*o).substr(o->find("://") + 3);
  if (authority.empty()) fail("web_console: empty authority accepted", *o);
  for (char c : authority) {
    if ((c >= 'A' && c <= 'Z') || c == '/' || c == '@' || c == '?' || c == '#' ||
        static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      fail("web_console: a stray character in an accepted origin", *o);
    }
  }
  if (server::normalizeOrigin(*o) != *o) fail("web_console: an origin does not normalize to itself", *o);
}

void path(std::string_view text) {
  auto file = server::consoleFileFor(text);
  if (!file || *file == "index.html") return;
  if (!file->starts_with("assets/")) fail("web_console: a file outside assets/", *file);
  const std::string_view name = std::string_view(*file).substr(7);
  if (name.empty() || name.front() == '.' || name.find('/') != std::string_view::npos) {
    fail("web_console: an asset name that leaves assets/", *file);
  }
}

void bundle(std::string_view name) {
  if (!server::agent::logFileTime(name, kNode)) return;
  if (!name.starts_with(kNode) || !name.ends_with(".tar.gz") || name.find('/') != std::string_view::npos) {
    fail("web_console: a bundle name accepted outside its shape", name);
  }
}

void write(fuzz::InputReader& in) {
  server::ApiRequest request;
  request.method = std::string(in.until("\n"));
  request.path = "/v1/nodes";
  const std::string_view origin = in.until("\n");
  const std::string_view host = in.until("\n");
  const std::string_view type = in.until("\n");
  if (!origin.empty()) request.headers.emplace_back("origin", std::string(origin));
  if (!host.empty()) request.headers.emplace_back("host", std::string(host));
  if (!type.empty()) request.headers.emplace_back("content-type", std::string(type));
  auto refused = server::refuseCrossSiteWrite(request, false, "");
  if (refused) {
    if (refused->status != 403 && refused->status != 415) fail("web_console: a refusal's status", refused->body);
    if (request.method == "GET" || request.method == "HEAD") fail("web_console: a read refused", request.method);
    return;
  }
  const bool isWrite = request.method != "GET" && request.method != "HEAD" && request.method != "OPTIONS";
  if (isWrite && !origin.empty()) {
    auto a = server::normalizeOrigin(origin);
    auto b = server::normalizeOrigin("http://" + std::string(host));
    if (!a || !b || *a != *b) fail("web_console: a foreign origin let through", origin);
  }
  if (isWrite && !type.empty() && server::isFormContentType(type)) fail("web_console: a form let through", type);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::fuzz::InputReader in(data, size);
  switch (in.byte()) {
    case 'o': origin(in.rest()); break;
    case 'p': path(in.rest()); break;
    case 'l': bundle(in.rest()); break;
    default: write(in); break;
  }
  return 0;
}
