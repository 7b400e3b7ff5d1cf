#include "shared/raid/raid_config.h"

#include <nlohmann/json.hpp>

namespace kiln {
namespace {

constexpr std::string_view kLevels[] = {"JBOD", "0", "1", "2", "5", "6", "1+0", "5+0", "6+0"};

constexpr LogicalDiskProperty kProperties[] = {
    {"raid_level",
     "RAID level for the logical disk. Valid values are 'JBOD', '0', '1', '2', '5', '6', '1+0', "
     "'5+0' and '6+0'. Required."},
    {"size_gb",
     "Size in GiB (Integer) for the logical disk. Use 'MAX' as size_gb if this logical disk is "
     "supposed to use the rest of the space available. Required."},
    {"volume_name", "Name of the volume to be created. Optional."},
    {"is_root_volume",
     "Specifies whether this disk is a root volume. By default, this is False. Optional."},
    {"share_physical_disks",
     "Specifies whether other logical disks can share physical disks with this logical disk. "
     "By default, this is False. Optional."},
    {"disk_type",
     "The type of disk preferred. Valid values are 'hdd' and 'ssd'. If this is not specified, "
     "disk type will not be a criterion to find backing physical disks. Optional."},
    {"interface_type",
     "The interface type of disk. Valid values are 'sata', 'scsi' and 'sas'. Optional."},
    {"number_of_physical_disks",
     "The number of physical disks to use for this logical disk. Optional."},
    {"controller", "Controller to use for this logical disk. Optional."},
    {"physical_disks",
     "The physical disks to use for this logical disk (for software RAID: device names or "
     "root device hints). Optional."},
};

std::string err(const std::string& msg) { return "RAID config validation error: " + msg; }

}  // namespace

std::span<const LogicalDiskProperty> logicalDiskProperties() { return kProperties; }

Result<RaidConfig> parseRaidConfig(const Json& config) {
  if (!config.is_object()) {
    return invalid(err(config.dump() + " is not of type 'object'"));
  }
  for (auto it = config.begin(); it != config.end(); ++it) {
    if (it.key() != "logical_disks") {
      return invalid(err("Additional properties are not allowed ('" + it.key() +
                         "' was unexpected)"));
    }
  }
  if (!config.contains("logical_disks")) {
    return invalid(err("'logical_disks' is a required property"));
  }
  const Json& disks = config["logical_disks"];
  if (!disks.is_array()) return invalid(err(disks.dump() + " is not of type 'array'"));
  if (disks.empty()) return invalid(err("[] is too short"));
  RaidConfig out;
  int roots = 0;
  for (const auto& d : disks) {
    if (!d.is_object()) return invalid(err(d.dump() + " is not of type 'object'"));
    LogicalDisk ld;
    if (!d.contains("raid_level")) return invalid(err("'raid_level' is a required property"));
    if (!d.contains("size_gb")) return invalid(err("'size_gb' is a required property"));
    for (auto it = d.begin(); it != d.end(); ++it) {
      const std::string& k = it.key();
      const Json& v = it.value();
      if (k == "raid_level") {
        bool ok = false;
        if (v.is_string()) {
          for (auto l : kLevels) ok = ok || v.get<std::string>() == l;
        }
        if (!ok) {
          return invalid(err(v.dump() +
                             " is not one of ['JBOD', '0', '1', '2', '5', '6', '1+0', '5+0', "
                             "'6+0']"));
        }
        ld.raidLevel = v.get<std::string>();
      } else if (k == "size_gb") {
        if (v.is_null() || (v.is_string() && v.get<std::string>() == "MAX")) {
          // null: Metal3 (BMO) leaves the size out to mean the whole disks; Ironic's schema
          // refuses it, Kiln takes it as "MAX".
          ld.sizeGb.reset();
        } else if (v.is_number_integer() && v.get<int64_t>() > 0) {
          ld.sizeGb = v.get<int64_t>();
        } else {
          return invalid(err(v.dump() + " is not valid under any of the given schemas (size_gb "
                                        "must be a positive integer or \"MAX\")"));
        }
      } else if (k == "is_root_volume" || k == "share_physical_disks") {
        if (!v.is_boolean()) return invalid(err(v.dump() + " is not of type 'boolean'"));
        if (k == "is_root_volume") ld.isRootVolume = v.get<bool>();
      } else if (k == "volume_name" || k == "controller") {
        if (!v.is_string()) return invalid(err(v.dump() + " is not of type 'string'"));
        if (k == "volume_name") ld.volumeName = v.get<std::string>();
      } else if (k == "disk_type") {
        if (!v.is_string() || (v != "hdd" && v != "ssd")) {
          return invalid(err(v.dump() + " is not one of ['hdd', 'ssd']"));
        }
      } else if (k == "interface_type") {
        if (!v.is_string() || (v != "sata" && v != "scsi" && v != "sas")) {
          return invalid(err(v.dump() + " is not one of ['sata', 'scsi', 'sas']"));
        }
      } else if (k == "number_of_physical_disks") {
        if (!v.is_number_integer() || v.get<int64_t>() <= 0) {
          return invalid(err(v.dump() + " is less than the minimum of 1"));
        }
        ld.numberOfPhysicalDisks = v.get<int>();
      } else if (k == "physical_disks") {
        if (!v.is_array()) return invalid(err(v.dump() + " is not of type 'array'"));
        for (const auto& p : v) {
          if (p.is_string()) {
            auto hints = parseDeviceHints(Json{{"name", p}});
            if (!hints) {
              return invalid(err("physical_disks entry " + p.dump() +
                                 " is not a device name: " + hints.error().message));
            }
            ld.physicalDisks.push_back({p.get<std::string>(), std::move(*hints)});
          } else if (p.is_object()) {
            if (p.empty()) {
              return invalid(err("physical_disks entry {} has no device hints"));
            }
            auto hints = parseDeviceHints(p);
            if (!hints) {
              return invalid(err("physical_disks entry " + p.dump() +
                                 " has invalid device hints: " + hints.error().message));
            }
            ld.physicalDisks.push_back({p.dump(), std::move(*hints)});
          } else {
            return invalid(err(p.dump() + " is not of type 'string', 'object'"));
          }
        }
      } else {
        return invalid(err("Additional properties are not allowed ('" + k + "' was unexpected)"));
      }
    }
    if (ld.isRootVolume) ++roots;
    out.logicalDisks.push_back(std::move(ld));
  }
  if (roots > 1) {
    return invalid("Raid config cannot have more than one root volume. " + std::to_string(roots) +
                   " root volumes were specified");
  }
  return out;
}

}  // namespace kiln
