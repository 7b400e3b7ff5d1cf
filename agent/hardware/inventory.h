// File: agent/hardware/inventory.h
//
// The hardware inventory the agent sends at lookup, in ironic-python-agent's format, read
// from /proc and /sys through a SysfsReader (a fake tree in tests).
#pragma once

#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "agent/disk/block_device.h"
#include "agent/hardware/sysfs.h"

namespace kiln::agent {

/// The machine architecture as uname(2) reports it ("x86_64", "aarch64").
std::string hostArchitecture();

/// Collects the inventory:
///   {"cpu": {"model_name", "frequency", "count", "architecture", "flags"},
///    "memory": {"total": bytes, "physical_mb"},
///    "interfaces": [{"name", "mac_address", "ipv4_address": null, "ipv6_address": null,
///                    "has_carrier", "speed_mbps" (when known), "vendor", "product",
///                    "client_id": null, "biosdevname": null, "lldp": null}],
///    "disks": [BlockDevice::toJson()...],
///    "boot": {"current_boot_mode": "uefi" | "bios", "pxe_interface": null},
///    "system_vendor": {"product_name", "serial_number", "manufacturer",
///                      "firmware": {"vendor", "version", "build_date"}},
///    "hostname"}
/// from /proc/cpuinfo, /proc/meminfo, /sys/devices/system/memory, /sys/class/net (lo and
/// virtual interfaces without a device/ link are skipped), /sys/firmware/efi,
/// /sys/class/dmi/id and /proc/sys/kernel/hostname. Missing files give empty values, never
/// errors. `architecture` is reported as given.
/// The MAC addresses of the physical NICs (the agent's lookup addresses in the ramdisk).
std::vector<std::string> nicMacAddresses(SysfsReader& sysfs);

nlohmann::json collectInventory(SysfsReader& sysfs, std::span<const BlockDevice> disks,
                                const std::string& architecture = hostArchitecture());

}  // namespace kiln::agent
