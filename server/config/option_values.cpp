#include "server/config/option_values.h"

#include <set>

#include "shared/core/strings.h"

namespace kiln::server {
namespace {

bool safeDestination(const std::string& dest) {
  if (dest.empty() || dest.front() == '/') return false;
  size_t begin = 0;
  while (begin <= dest.size()) {
    size_t end = dest.find('/', begin);
    if (end == std::string::npos) end = dest.size();
    const std::string_view part = std::string_view(dest).substr(begin, end - begin);
    if (part.empty() || part == "." || part == "..") return false;
    begin = end + 1;
  }
  return true;
}

}  // namespace

Result<std::map<std::string, int>> parsePriorityOverrides(const std::string& text) {
  std::map<std::string, int> out;
  for (const std::string& item : splitTrimmed(text, ',', " \t")) {
    const auto colon = item.rfind(':');
    const auto dot = item.find('.');
    if (colon == std::string::npos || dot == std::string::npos || dot > colon) {
      return invalid("expected interface.step:priority, got '" + item + "'");
    }
    const std::string prio = item.substr(colon + 1);
    const auto priority = parseInt<unsigned>(prio);
    if (prio.size() > 6 || !priority) {
      return invalid("priority must be an integer >= 0 in '" + item + "'");
    }
    out[item.substr(0, colon)] = static_cast<int>(*priority);
  }
  return out;
}

Result<std::vector<std::pair<std::string, std::string>>> parseLoaderFilePaths(
    std::string_view text) {
  std::vector<std::pair<std::string, std::string>> files;
  std::set<std::string> seen;
  for (const std::string& item : splitTrimmed(text, ',')) {
    const size_t colon = item.find(':');
    if (colon == std::string::npos) {
      return invalid("'" + item + "' is not destination:/source/path");
    }
    std::string dest = trim(std::string_view(item).substr(0, colon));
    std::string source = trim(std::string_view(item).substr(colon + 1));
    if (!safeDestination(dest)) {
      return invalid("the destination '" + dest + "' must be a relative path inside tftp_root");
    }
    if (source.empty() || source.front() != '/') {
      return invalid("the source of " + dest + " must be an absolute path, got '" + source + "'");
    }
    if (!seen.insert(dest).second) return invalid("the destination " + dest + " is named twice");
    files.emplace_back(std::move(dest), std::move(source));
  }
  return files;
}

}  // namespace kiln::server
