#include "server/api/router.h"

#include <algorithm>

namespace kiln::server {

void Router::add(Route route) {
  Entry e;
  e.segments = normalizePath(route.pattern);
  for (auto& s : e.segments) {
    if (s.size() >= 2 && s.front() == '{' && s.back() == '}') s = "{}";
  }
  e.route = std::move(route);
  routes_.push_back(std::move(e));
}

void Router::addNodeLastAliases(std::initializer_list<std::string_view> suffixes) {
  std::vector<Route> aliases;
  for (const auto& e : routes_) {
    const std::string_view pattern = e.route.pattern;
    constexpr std::string_view kPrefix = "/v1/nodes/{node}/";
    if (pattern.substr(0, kPrefix.size()) != kPrefix) continue;
    const std::string_view suffix = pattern.substr(kPrefix.size());
    if (std::find(suffixes.begin(), suffixes.end(), suffix) == suffixes.end()) continue;
    Route alias = e.route;
    alias.pattern = "/v1/nodes/" + std::string(suffix) + "/{node}";
    aliases.push_back(std::move(alias));
  }
  for (auto& a : aliases) add(std::move(a));
}

Router::Match Router::match(std::string_view method, const std::vector<std::string>& segments) const {
  Match m;
  // Prefer literal segments over parameters: "/v1/nodes/detail" beats "/v1/nodes/{node}".
  int bestScore = -1;
  for (const auto& e : routes_) {
    if (e.segments.size() != segments.size()) continue;
    int score = 0;
    bool ok = true;
    for (size_t i = 0; i < segments.size(); ++i) {
      if (e.segments[i] == "{}") continue;
      if (e.segments[i] != segments[i]) {
        ok = false;
        break;
      }
      score += 1 << (segments.size() - i);
    }
    if (!ok) continue;
    if (score < bestScore) continue;
    if (score > bestScore) {
      bestScore = score;
      m = Match{};
    }
    m.pathMatched = true;
    const bool methodOk = e.route.method == method || (method == "HEAD" && e.route.method == "GET");
    if (std::find(m.allowed.begin(), m.allowed.end(), e.route.method) == m.allowed.end()) {
      m.allowed.push_back(e.route.method);
    }
    if (methodOk && !m.route) {
      m.route = &e.route;
      m.params.clear();
      for (size_t i = 0; i < segments.size(); ++i) {
        if (e.segments[i] == "{}") m.params.push_back(segments[i]);
      }
    }
  }
  return m;
}

std::vector<const Route*> Router::routes() const {
  std::vector<const Route*> out;
  out.reserve(routes_.size());
  for (const auto& e : routes_) out.push_back(&e.route);
  return out;
}

std::vector<std::string> normalizePath(std::string_view rawPath) {
  std::vector<std::string> segs;
  size_t pos = 0;
  while (pos <= rawPath.size()) {
    size_t slash = rawPath.find('/', pos);
    if (slash == std::string_view::npos) slash = rawPath.size();
    if (slash > pos) segs.push_back(urlDecode(rawPath.substr(pos, slash - pos), false));
    pos = slash + 1;
  }
  if (!segs.empty() && segs[0] != "v1") {
    segs.insert(segs.begin(), "v1");
  }
  return segs;
}

}  // namespace kiln::server
