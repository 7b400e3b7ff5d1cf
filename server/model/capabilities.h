// File: server/model/capabilities.h
//
// Ironic's capabilities string, a node's properties.capabilities: "key:value,key2:value2".
// Ironic reads and edits it in several places with rules that differ a little, and each
// caller keeps its own (all split items on ',' only):
//
//   get     ironic/drivers/utils.py get_node_capability (boot mode, Redfish inspection): an
//           item counts when it splits on ':' into exactly two non-empty parts; key and value
//           are trimmed (kiln::trim's spaces) and the first item of the key wins. Malformed
//           items are skipped.
//   parse   the items get reads, in order, duplicates kept; render joins such items back.
//   add     add_node_capability (the inspection rules' set-capability): appends
//           ",key:value", or gives "key:value" when the string is empty. An item of the key
//           that is already there stays: the key then appears twice, as in Ironic.
//   unset   remove_node_capability (unset-capability): drops every item that begins with
//           "key:" as written (untrimmed); the others stay as they are, empty ones included.
//   set     the boot_mode capability after in-band inspection: drops the key's items (those
//           that begin with "key:") and empty items, and appends "key:value" at the end.
//           Ironic's get_updated_capabilities keeps the key's place and refuses a string with
//           an item without ':'; Kiln has always moved the key to the end and kept such items.
//
// Pure functions of the string; the caller reads it from and writes it to the node.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::server {

/// One well-formed item of a capabilities string.
struct Capability {
  std::string key;
  std::string value;
  bool operator==(const Capability&) const = default;
};

/// The well-formed items of `capabilities` in order (get's rules; duplicates kept).
std::vector<Capability> parseCapabilities(std::string_view capabilities);

/// "key:value,key2:value2" of `items`, in order.
std::string renderCapabilities(const std::vector<Capability>& items);

/// The value of the first item of `key` (get's rules); nullopt when there is none.
std::optional<std::string> getCapability(std::string_view capabilities, std::string_view key);

/// `capabilities` with "key:value" appended (add's rules).
std::string addCapability(std::string_view capabilities, std::string_view key,
                          std::string_view value);

/// `capabilities` with the key's items and empty items dropped and "key:value" at the end
/// (set's rules).
std::string setCapability(std::string_view capabilities, std::string_view key,
                          std::string_view value);

/// `capabilities` without the items that begin with "key:" (unset's rules).
std::string unsetCapability(std::string_view capabilities, std::string_view key);

}  // namespace kiln::server
