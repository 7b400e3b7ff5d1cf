// File: server/drivers/redfish/redfish_virtual_media.h
//
// Redfish virtual media, as sushy and Ironic's redfish-virtual-media boot interface use it:
// the System's managers (Links.ManagedBy) list VirtualMedia slots; a slot whose MediaTypes
// include CD or DVD takes a bootable ISO by URL (the BMC downloads it) through
// VirtualMedia.InsertMedia, or, on BMCs without the action, through a PATCH of Image and
// Inserted; EjectMedia (or the PATCH) takes it out.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/drivers/redfish/redfish_common.h"

namespace kiln::server {

/// A VirtualMedia slot: its path and what GET returned.
struct VirtualMediaSlot {
  std::string path;
  nlohmann::json resource;
};

/// The first slot of the System's managers whose MediaTypes include `mediaType` ("CD" also
/// takes "DVD"). InvalidArgument "... has no virtual media slot for CD" when none does (no
/// manager, no VirtualMedia collection, no such slot); the BMC's errors otherwise.
Result<VirtualMediaSlot> findVirtualMediaSlot(RedfishTarget& target, const nlohmann::json& system,
                                              std::string_view mediaType);

/// Every VirtualMedia slot of the System's managers (Links.ManagedBy), in order.
Result<std::vector<VirtualMediaSlot>> listVirtualMediaSlots(RedfishTarget& target,
                                                            const nlohmann::json& system);

/// Whether the slot takes `mediaType` ("CD" also takes "DVD"), case-insensitively.
bool slotTakesMedia(const nlohmann::json& slot, std::string_view mediaType);

/// Whether the slot holds a medium (Inserted, or an Image set).
bool virtualMediaInserted(const nlohmann::json& slot);

/// Inserts the image at `url` (read-only): ejects what is in the slot first, then the slot's
/// InsertMedia action target, else a PATCH {"Image", "Inserted": true, "WriteProtected": true}.
Result<void> insertVirtualMedia(RedfishTarget& target, const VirtualMediaSlot& slot, const std::string& url);

/// Takes the medium out (nothing to do when the slot is empty): the EjectMedia action target
/// with {}, else a PATCH {"Image": null, "Inserted": false}.
Result<void> ejectVirtualMedia(RedfishTarget& target, const VirtualMediaSlot& slot);

}  // namespace kiln::server
