#include "server/model/node_event.h"

namespace kiln::server::node_event {

bool validKind(std::string_view kind) {
  if (kind.empty() || kind.size() > 64) return false;
  for (char c : kind) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

}  // namespace kiln::server::node_event
