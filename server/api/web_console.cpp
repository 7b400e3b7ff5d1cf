#include "server/api/web_console.h"

#include <filesystem>

#include "server/api/errors.h"
#include "server/local_files.h"

#ifndef KILN_CONSOLE_INSTALL_DIR
#define KILN_CONSOLE_INSTALL_DIR "/usr/share/kiln/console"
#endif
#ifndef KILN_CONSOLE_BUILD_DIR
#define KILN_CONSOLE_BUILD_DIR ""
#endif

namespace kiln::server {
namespace {

constexpr std::string_view kPrefix = "/ui/";

bool isAssetName(std::string_view name) {
  if (name.empty() || name.size() > 128 || name.front() == '.') return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

ApiResponse withSecurityHeaders(ApiResponse r) {
  for (const auto& [name, value] : kConsoleSecurityHeaders) r.setHeader(name, value);
  return r;
}

}  // namespace

bool isConsolePath(std::string_view path) { return path == "/ui" || path.starts_with(kPrefix); }

std::optional<std::string> consoleFileFor(std::string_view path) {
  if (!path.starts_with(kPrefix)) return std::nullopt;
  std::string_view rest = path.substr(kPrefix.size());
  if (rest.empty() || rest == "index.html") return std::string("index.html");
  constexpr std::string_view kAssets = "assets/";
  if (!rest.starts_with(kAssets)) return std::nullopt;
  rest.remove_prefix(kAssets.size());
  if (!isAssetName(rest)) return std::nullopt;
  return "assets/" + std::string(rest);
}

std::string_view consoleContentType(std::string_view name) {
  static constexpr std::pair<std::string_view, std::string_view> kTypes[] = {
      {".html", "text/html; charset=utf-8"}, {".js", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},   {".svg", "image/svg+xml"},
      {".png", "image/png"},                 {".ico", "image/x-icon"},
      {".woff2", "font/woff2"},              {".json", "application/json"},
      {".txt", "text/plain; charset=utf-8"},
  };
  for (const auto& [ext, type] : kTypes) {
    if (name.ends_with(ext)) return type;
  }
  return "application/octet-stream";
}

std::string consoleStaticDir(const Config& config) {
  if (!config.consoleStaticDir.empty()) return config.consoleStaticDir;
  std::error_code ec;
  const std::string installed = KILN_CONSOLE_INSTALL_DIR;
  if (std::filesystem::is_regular_file(installed + "/index.html", ec)) return installed;
  // Installed under another prefix than the build's (cmake --install --prefix, as the Debian
  // package is made): <bin>/../share/kiln/console beside the executable.
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::string beside = (exe.parent_path().parent_path() / "share/kiln/console").string();
    if (std::filesystem::is_regular_file(beside + "/index.html", ec)) return beside;
  }
  const std::string built = KILN_CONSOLE_BUILD_DIR;
  return built.empty() ? installed : built;
}

ApiResponse WebConsole::serve(const ApiRequest& request) const {
  if (request.method != "GET" && request.method != "HEAD") {
    ApiResponse r = errorResponse({ErrorCode::MethodNotAllowed,
                                   "The method " + request.method +
                                       " is not allowed for this resource."});
    r.setHeader("Allow", "GET, HEAD");
    return withSecurityHeaders(std::move(r));
  }
  if (request.path == "/ui") {
    ApiResponse r;
    r.status = 301;
    r.contentType = "text/plain; charset=utf-8";
    r.setHeader("Location", "/ui/");
    return withSecurityHeaders(std::move(r));
  }
  const auto file = consoleFileFor(request.path);
  if (!file) {
    return withSecurityHeaders(
        errorResponse({ErrorCode::NotFound, "The resource could not be found."}));
  }
  auto bytes = readRegularFile(dir_ + "/" + *file);
  if (!bytes) {
    const bool index = *file == "index.html";
    return withSecurityHeaders(errorResponse(
        {ErrorCode::NotFound, index ? "The web console is not installed on this server."
                                    : "The resource could not be found."}));
  }
  ApiResponse r;
  r.body = std::move(*bytes);
  r.contentType = std::string(consoleContentType(*file));
  // Assets have content-hashed names: a new build has new names, so they never go stale.
  r.setHeader("Cache-Control", *file == "index.html" ? "no-cache" : "public, max-age=31536000, immutable");
  return withSecurityHeaders(std::move(r));
}

}  // namespace kiln::server
