#include "server/drivers/redfish/redfish_virtual_media.h"

#include "shared/core/strings.h"

namespace kiln::server {

using nlohmann::json;

namespace {

bool takesMedia(const json& slot, std::string_view mediaType) {
  auto types = slot.find("MediaTypes");
  if (types == slot.end() || !types->is_array()) return false;
  for (const auto& t : *types) {
    if (!t.is_string()) continue;
    const std::string type = t.get<std::string>();
    if (equalsIgnoreCase(type, mediaType)) return true;
    if (equalsIgnoreCase(mediaType, "CD") && equalsIgnoreCase(type, "DVD")) return true;
  }
  return false;
}

/// The target of the slot's action `name` ("#VirtualMedia.InsertMedia"), or "".
std::string actionTarget(const json& slot, const char* name) {
  auto actions = slot.find("Actions");
  if (actions == slot.end() || !actions->is_object()) return "";
  auto action = actions->find(name);
  if (action == actions->end() || !action->is_object()) return "";
  auto target = action->find("target");
  return target != action->end() && target->is_string() ? redfishLinkPath(target->get<std::string>()) : "";
}

}  // namespace

Result<std::vector<VirtualMediaSlot>> listVirtualMediaSlots(RedfishTarget& target,
                                                            const json& system) {
  std::vector<std::string> managers;
  if (auto links = system.find("Links"); links != system.end() && links->is_object()) {
    if (auto by = links->find("ManagedBy"); by != links->end() && by->is_array()) {
      for (const auto& m : *by) {
        if (auto path = redfishLinkAt(m); !path.empty()) managers.push_back(path);
      }
    }
  }
  std::vector<VirtualMediaSlot> out;
  for (const std::string& managerPath : managers) {
    const json manager = KILN_TRY(target.client->get(managerPath));
    const std::string collectionPath = redfishLinkAt(manager.value("VirtualMedia", json::object()));
    if (collectionPath.empty()) continue;
    const json collection = KILN_TRY(target.client->get(collectionPath));
    for (const auto& member : collection.value("Members", json::array())) {
      const std::string path = redfishLinkAt(member);
      if (path.empty()) continue;
      out.push_back({path, KILN_TRY(target.client->get(path))});
    }
  }
  return out;
}

bool slotTakesMedia(const json& slot, std::string_view mediaType) {
  return takesMedia(slot, mediaType);
}

Result<VirtualMediaSlot> findVirtualMediaSlot(RedfishTarget& target, const json& system,
                                              std::string_view mediaType) {
  auto slots = KILN_TRY(listVirtualMediaSlots(target, system));
  for (auto& slot : slots) {
    if (takesMedia(slot.resource, mediaType)) return std::move(slot);
  }
  const bool managed = system.contains("Links") && system["Links"].is_object() &&
                       system["Links"].contains("ManagedBy");
  return invalid("The BMC of System " + target.systemPath + " has no virtual media slot for " +
                 std::string(mediaType) +
                 (managed ? "" : " (the System names no manager in Links.ManagedBy)"));
}

bool virtualMediaInserted(const json& slot) {
  if (slot.value("Inserted", false)) return true;
  auto image = slot.find("Image");
  return image != slot.end() && image->is_string() && !image->get<std::string>().empty();
}

Result<void> ejectVirtualMedia(RedfishTarget& target, const VirtualMediaSlot& slot) {
  if (!virtualMediaInserted(slot.resource)) return {};
  if (const std::string action = actionTarget(slot.resource, "#VirtualMedia.EjectMedia"); !action.empty()) {
    KILN_TRY(target.client->post(action, json::object()));
    return {};
  }
  KILN_TRY(target.client->patch(slot.path, json{{"Image", nullptr}, {"Inserted", false}}));
  return {};
}

Result<void> insertVirtualMedia(RedfishTarget& target, const VirtualMediaSlot& slot, const std::string& url) {
  KILN_TRY_VOID(ejectVirtualMedia(target, slot));
  if (const std::string action = actionTarget(slot.resource, "#VirtualMedia.InsertMedia"); !action.empty()) {
    KILN_TRY(target.client->post(action, json{{"Image", url}, {"Inserted", true}, {"WriteProtected", true}}));
    return {};
  }
  KILN_TRY(target.client->patch(slot.path, json{{"Image", url}, {"Inserted", true}, {"WriteProtected", true}}));
  return {};
}

}  // namespace kiln::server
