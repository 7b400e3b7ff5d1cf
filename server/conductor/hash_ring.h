// File: server/conductor/hash_ring.h
//
// Which kiln-server works on which node (Ironic's hash ring): a consistent hash of the node's
// UUID onto the live conductors of the node's conductor_group. Each conductor sits on the ring
// at kReplicas points, so when one joins or dies only the nodes next to its points move, and
// the nodes of a dead conductor spread over all the others. Every process computes the same
// ring from the same conductor list (a fixed hash function, no per-process seed).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::server {

class HashRing {
 public:
  struct Member {
    std::string host;
    std::string group;  ///< conductor_group ("" is the default group)
  };
  /// Points each conductor takes on the ring.
  static constexpr int kReplicas = 64;

  HashRing() = default;
  explicit HashRing(std::vector<Member> members);

  /// The conductor that owns `key` (a node UUID) among the members of `group`. A group no
  /// live conductor serves falls back to the ring of every member (Kiln's choice: such a node
  /// is still served; Ironic would refuse to act on it). "" when the ring is empty.
  const std::string& ownerOf(std::string_view group, std::string_view key) const;
  /// The members' host names, sorted.
  const std::vector<std::string>& hosts() const { return hosts_; }
  bool contains(std::string_view host) const;

  /// The ring's hash: 64-bit FNV-1a with a final avalanche, stable across processes.
  static uint64_t hash(std::string_view text);

 private:
  using Points = std::vector<std::pair<uint64_t, std::string>>;
  static const std::string& lookup(const Points& points, uint64_t h);

  std::map<std::string, Points, std::less<>> groups_;
  Points all_;
  std::vector<std::string> hosts_;
};

}  // namespace kiln::server
