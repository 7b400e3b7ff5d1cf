#include "server/api/version.h"

#include "shared/core/strings.h"

namespace kiln::server {
namespace {

/// The version asked for by `OpenStack-API-Version: baremetal X` (the entry for our service
/// type; the header may list several services separated by commas).
std::optional<std::string> standardHeaderVersion(const std::string& value) {
  for (const std::string& item : splitTrimmed(value, ',', kAsciiSpace)) {
    const size_t space = item.find(' ');
    if (space != std::string::npos && equalsIgnoreCase(item.substr(0, space), "baremetal")) {
      return trim(item.substr(space + 1), kAsciiSpace);
    }
  }
  return std::nullopt;
}

}  // namespace

std::string versionString(int minor) { return "1." + std::to_string(minor); }

Result<int> negotiateVersion(const ApiRequest& request) {
  std::optional<std::string> requested;
  if (auto standard = request.header("openstack-api-version")) {
    requested = standardHeaderVersion(*standard);
  }
  if (!requested) {
    requested = request.header("x-openstack-ironic-api-version");
  }
  if (!requested) {
    return kMinMinorVersion;
  }
  const std::string text = trim(*requested, kAsciiSpace);
  if (equalsIgnoreCase(text, "latest")) {
    return kMaxMinorVersion;
  }
  const std::string range =
      "The supported version range is: [" + versionString(kMinMinorVersion) + ", " +
      versionString(kMaxMinorVersion) + "].";
  const size_t dot = text.find('.');
  // Each part: at most six digits and nothing else.
  auto number = [](std::string_view part) -> std::optional<int> {
    if (part.size() > 6) return std::nullopt;
    const auto n = parseInt<unsigned>(part);
    return n ? std::optional<int>(static_cast<int>(*n)) : std::nullopt;
  };
  const auto major = dot == std::string::npos ? std::nullopt : number(text.substr(0, dot));
  const auto minor = dot == std::string::npos ? std::nullopt : number(text.substr(dot + 1));
  if (!major || !minor) {
    return fail(ErrorCode::NotAcceptable,
                "Invalid value for X-OpenStack-Ironic-API-Version header: " + text + ". " + range);
  }
  if (*major != 1) {
    return fail(ErrorCode::NotAcceptable,
                "Mutually exclusive versions requested. Version " + text +
                    " requested but not supported by this service. " + range);
  }
  if (*minor < kMinMinorVersion || *minor > kMaxMinorVersion) {
    return fail(ErrorCode::NotAcceptable,
                "Version " + text +
                    " was requested but the minor version is not supported by this service. " +
                    range);
  }
  return *minor;
}

}  // namespace kiln::server
