#include "server/api/version.h"

#include <cctype>

namespace kiln::server {
namespace {

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t b = 0;
  while (b < s.size() && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  return s.substr(b);
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// The version asked for by `OpenStack-API-Version: baremetal X` (the entry for our service
/// type; the header may list several services separated by commas).
std::optional<std::string> standardHeaderVersion(const std::string& value) {
  size_t pos = 0;
  while (pos <= value.size()) {
    size_t comma = value.find(',', pos);
    if (comma == std::string::npos) comma = value.size();
    const std::string item = trim(value.substr(pos, comma - pos));
    const size_t space = item.find(' ');
    if (space != std::string::npos && lower(item.substr(0, space)) == "baremetal") {
      return trim(item.substr(space + 1));
    }
    pos = comma + 1;
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
  const std::string text = trim(*requested);
  if (lower(text) == "latest") {
    return kMaxMinorVersion;
  }
  const std::string range =
      "The supported version range is: [" + versionString(kMinMinorVersion) + ", " +
      versionString(kMaxMinorVersion) + "].";
  const size_t dot = text.find('.');
  auto allDigits = [](const std::string& s) {
    if (s.empty() || s.size() > 6) return false;
    for (char c : s) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    }
    return true;
  };
  if (dot == std::string::npos || !allDigits(text.substr(0, dot)) ||
      !allDigits(text.substr(dot + 1))) {
    return fail(ErrorCode::NotAcceptable,
                "Invalid value for X-OpenStack-Ironic-API-Version header: " + text + ". " + range);
  }
  const int major = std::stoi(text.substr(0, dot));
  const int minor = std::stoi(text.substr(dot + 1));
  if (major != 1) {
    return fail(ErrorCode::NotAcceptable,
                "Mutually exclusive versions requested. Version " + text +
                    " requested but not supported by this service. " + range);
  }
  if (minor < kMinMinorVersion || minor > kMaxMinorVersion) {
    return fail(ErrorCode::NotAcceptable,
                "Version " + text +
                    " was requested but the minor version is not supported by this service. " +
                    range);
  }
  return minor;
}

}  // namespace kiln::server
