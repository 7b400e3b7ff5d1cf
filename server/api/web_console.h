// File: server/api/web_console.h
//
// Serves the web console's static files under /ui/ (docs/console.md; the front end is built
// from console/ at build time). Public: the login page loads before any credentials; the
// files hold no data, everything the console shows comes from the API with the user's own
// credentials. Only two kinds of file are ever served from [console] static_dir:
//   /ui/                 its index.html
//   /ui/assets/<name>    a file directly in its assets/ directory, <name> of letters, digits,
//                        '.', '-' and '_' (no leading '.'), opened without following links
// `/ui` redirects to `/ui/`; anything else under /ui/ is a 404 in Ironic's error format, and
// methods other than GET and HEAD a 405. Every answer carries the console's security headers
// (kConsoleSecurityHeaders): a Content-Security-Policy without inline scripts or styles, no
// framing, no sniffing, no referrer.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "server/api/http.h"
#include "server/config.h"

namespace kiln::server {

/// The headers of every /ui/ answer.
inline constexpr std::pair<const char*, const char*> kConsoleSecurityHeaders[] = {
    {"Content-Security-Policy",
     "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
     "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
     "frame-ancestors 'none'"},
    {"X-Content-Type-Options", "nosniff"},
    {"Referrer-Policy", "no-referrer"},
    {"X-Frame-Options", "DENY"},
};

/// True for the paths the console answers: "/ui" and everything under "/ui/".
bool isConsolePath(std::string_view path);

/// What a console path names, relative to the static directory: "index.html" for "/ui/",
/// "assets/<name>" for an allowed asset; nullopt for anything else (a 404).
std::optional<std::string> consoleFileFor(std::string_view path);

/// The Content-Type of a console file by its extension.
std::string_view consoleContentType(std::string_view name);

/// The static directory in effect: [console] static_dir, else the installed console when it
/// holds index.html (the build's prefix, then <executable's dir>/../share/kiln/console), else
/// the build tree's (the two build-time paths are set by server/CMakeLists.txt).
std::string consoleStaticDir(const Config& config);

class WebConsole {
 public:
  explicit WebConsole(const Config& config) : dir_(consoleStaticDir(config)) {}
  /// The answer to a request for an isConsolePath() path.
  ApiResponse serve(const ApiRequest& request) const;
  const std::string& directory() const { return dir_; }

 private:
  std::string dir_;
};

}  // namespace kiln::server
