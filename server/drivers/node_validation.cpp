#include "server/drivers/node_validation.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "server/model/node.h"
#include "shared/json/json_util.h"

namespace kiln::server {
namespace {

std::string pyList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", '" : "'") + items[i] + "'";
  return out + "]";
}

}  // namespace

Result<void> checkInstanceTraits(const Record& node, const std::vector<std::string>& traits) {
  const Json info = objectField(node, kNodeInstanceInfo);
  auto it = info.find("traits");
  if (it == info.end() || it->is_null()) return {};
  const std::string parseError = "Error parsing traits from Node " + node.uuid() +
                                 " instance_info field. A list of strings is expected.";
  if (!it->is_array()) return invalid(parseError);
  std::vector<std::string> missing;
  for (const auto& t : *it) {
    if (!t.is_string()) return invalid(parseError);
    const auto name = t.get<std::string>();
    if (std::find(traits.begin(), traits.end(), name) == traits.end()) missing.push_back(name);
  }
  if (!missing.empty()) {
    return invalid("Cannot specify instance traits that are not also specified on the node. Node " +
                   node.uuid() + " is missing traits " + pyList(missing));
  }
  return {};
}

}  // namespace kiln::server
