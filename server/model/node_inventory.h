// File: server/model/node_inventory.h
//
// A node's hardware inventory (API 1.81), as Ironic's node_inventory table: the last inventory
// an inspection recorded (the ironic-python-agent format that kiln-agent reports, or what an
// out-of-band inspect interface builds) and the plugin data derived from it. One row per node,
// replaced by every inspection, deleted with the node. Read by GET /v1/nodes/{id}/inventory.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "server/schema/record.h"
#include "server/model/resources.h"
#include "shared/core/error.h"

namespace kiln::server {

/// Order must match kNodeInventoryFields in node_inventory.cpp.
enum NodeInventoryField : size_t {
  kInvId,
  kInvUuid,
  kInvNodeId,
  kInvInventory,
  kInvPluginData,
  kInvCreatedAt,
  kInvUpdatedAt,
};

const Schema& nodeInventorySchema();

struct NodeInventory {
  nlohmann::json inventory = nlohmann::json::object();
  nlohmann::json pluginData = nlohmann::json::object();
};

/// Ironic's inspection plugin data for `inventory` (what its default inspection hooks record):
/// all_interfaces {name: {ip, mac, client_id, pxe_enabled}}, valid_interfaces (those with a
/// MAC), macs, boot_interface, cpus, cpu_arch, memory_mb, local_gb, root_disk, and parsed_lldp
/// {name: {switch_chassis_id, switch_port_id, switch_system_name, ...}} for interfaces whose
/// LLDP TLVs were reported. An interface is pxe_enabled when its MAC is the inventory's
/// boot.pxe_interface, or (when that is unknown) a PXE-enabled port of the node.
/// `pxeMacs`: the lower-case MACs of the node's PXE-enabled ports.
nlohmann::json buildPluginData(const nlohmann::json& inventory, std::span<const std::string> pxeMacs);

}  // namespace kiln::server
