#include "server/conductor/hash_ring.h"

#include <algorithm>

namespace kiln::server {

uint64_t HashRing::hash(std::string_view text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  // FNV alone clusters keys that differ in their last characters (host#1, host#2): mix.
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

HashRing::HashRing(std::vector<Member> members) {
  std::sort(members.begin(), members.end(),
            [](const Member& a, const Member& b) { return a.host < b.host; });
  members.erase(std::unique(members.begin(), members.end(),
                            [](const Member& a, const Member& b) { return a.host == b.host; }),
                members.end());
  for (const auto& m : members) {
    hosts_.push_back(m.host);
    Points& group = groups_[m.group];
    for (int i = 0; i < kReplicas; ++i) {
      const uint64_t h = hash(m.host + "#" + std::to_string(i));
      group.emplace_back(h, m.host);
      all_.emplace_back(h, m.host);
    }
  }
  for (auto& [name, points] : groups_) std::sort(points.begin(), points.end());
  std::sort(all_.begin(), all_.end());
}

const std::string& HashRing::lookup(const Points& points, uint64_t h) {
  auto it = std::lower_bound(points.begin(), points.end(), h,
                             [](const auto& point, uint64_t v) { return point.first < v; });
  if (it == points.end()) it = points.begin();
  return it->second;
}

const std::string& HashRing::ownerOf(std::string_view group, std::string_view key) const {
  static const std::string none;
  const uint64_t h = hash(key);
  if (auto it = groups_.find(group); it != groups_.end() && !it->second.empty()) {
    return lookup(it->second, h);
  }
  if (all_.empty()) return none;
  return lookup(all_, h);
}

bool HashRing::contains(std::string_view host) const {
  return std::binary_search(hosts_.begin(), hosts_.end(), host);
}

}  // namespace kiln::server
