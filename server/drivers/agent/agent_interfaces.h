// File: server/drivers/agent/agent_interfaces.h
//
// The interfaces that work through kiln-agent (the pull protocol of docs/protocol.md):
//   deploy  "direct": the core deploy steps of Ironic's agent deploy. deploy.deploy boots the
//           ramdisk and waits for the agent; deploy.write_image hands the image and the config
//           drive to the agent (built from JSON here: server/drivers/agent/config_drive.h);
//           prepare_instance_boot, tear_down_agent (the agent powers off), boot_instance. The
//           agent's in-band steps (erase_devices_metadata, erase_devices, ...) come from its
//           heartbeat; the same steps are declared here so templates validate before it boots.
//           Cleaning boots the ramdisk when the plan has in-band steps.
//   raid    "agent": software RAID in the agent (create/delete_configuration as clean steps,
//           apply_configuration as a deploy step); the agent's result becomes raid_config.
//   inspect "agent": boots the ramdisk, stores the agent's inventory (driver_internal_info.
//           agent_inventory) and the properties derived from it.
#pragma once

#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/drivers/interfaces.h"
#include "shared/exec/command_runner.h"

namespace kiln::server {

/// `runner` runs xorrisofs for config drives given as JSON (nullptr: a ProcessCommandRunner).
std::vector<std::unique_ptr<HardwareInterface>> makeAgentInterfaces(CommandRunnerPtr runner = nullptr);

/// The image_info the agent's deploy.write_image receives, from the node's instance_info
/// (image_source, image_checksum / image_os_hash_algo + image_os_hash_value, either a digest or
/// a checksum file's URL, image_disk_format, Kiln's image_compression) and, with [deploy]
/// image_server_auth_strategy http_basic, image_server_auth_strategy, image_server_user and
/// image_server_password as Ironic sends them. InvalidArgument naming what is missing.
Result<nlohmann::json> buildImageInfo(const TaskContext& task);

/// Node properties derived from an agent inventory: cpus, cpu_arch, memory_mb, local_gb (the
/// root disk's size in GiB minus one, as ironic-inspector) and the boot_mode capability,
/// merged into `properties`.
void applyInventory(nlohmann::json& properties, const nlohmann::json& inventory);

}  // namespace kiln::server
