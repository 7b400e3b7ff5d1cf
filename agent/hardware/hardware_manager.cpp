#include "agent/hardware/hardware_manager.h"

#include <unistd.h>

#include <filesystem>


#include "agent/disk/bios_boot.h"
#include "agent/disk/block_device_lister.h"
#include "agent/disk/config_drive_partition.h"
#include "agent/disk/block_device_probe.h"
#include "agent/disk/erase.h"
#include "agent/disk/partition_image.h"
#include "agent/disk/partition_naming.h"
#include "agent/disk/root_device_hints.h"
#include "agent/disk/uefi_boot.h"
#include "agent/image/config_drive.h"
#include "agent/image/image_info.h"
#include "agent/image/image_writer.h"
#include "agent/raid/software_raid.h"
#include "shared/step/step.h"

namespace kiln::agent {

using nlohmann::json;

namespace {

const json& nodeField(const StepContext& ctx, const char* key) {
  static const json empty = json::object();
  auto it = ctx.node.find(key);
  return it != ctx.node.end() && it->is_object() ? *it : empty;
}

/// The root volume's md device from raid_config, if the node has software RAID.
std::optional<std::string> raidRootDevice(const StepContext& ctx) {
  const json& raid = nodeField(ctx, "raid_config");
  auto disks = raid.find("logical_disks");
  if (disks == raid.end() || !disks->is_array()) return std::nullopt;
  for (const auto& d : *disks) {
    if (d.is_object() && d.value("is_root_volume", false) && d.contains("device") &&
        d["device"].is_string()) {
      return d["device"].get<std::string>();
    }
  }
  return std::nullopt;
}

/// The target RAID configuration limited as create_configuration's arguments ask.
json filteredTarget(const StepContext& ctx, const json& args) {
  json target = nodeField(ctx, "target_raid_config");
  const bool root = args.value("create_root_volume", true);
  const bool nonroot = args.value("create_nonroot_volumes", true);
  json kept = json::array();
  for (const auto& d : target.value("logical_disks", json::array())) {
    const bool isRoot = d.is_object() && d.value("is_root_volume", false);
    if ((isRoot && root) || (!isRoot && nonroot)) kept.push_back(d);
  }
  target["logical_disks"] = kept;
  return target;
}

}  // namespace

Result<BlockDevice> findRootDevice(const StepContext& ctx) {
  const json& properties = nodeField(ctx, "properties");
  auto hints = properties.find("root_device");
  if (hints != properties.end() && hints->is_object() && !hints->empty()) {
    return chooseRootDevice(ctx.devices, *hints);
  }
  if (auto md = raidRootDevice(ctx)) {
    const std::vector<std::string> paths{*md};
    auto described = KILN_TRY(describeDevices(paths));
    if (described.empty()) return notFound("the software RAID root volume " + *md + " does not exist");
    return described.front();
  }
  return chooseRootDevice(ctx.devices, json::object());
}

namespace {

/// The config drive of write_image's arguments, when there is one, in its partition of `root`.
/// A config drive URL gets the image's server credentials (info.imageServerAuth) when it has
/// none of its own.
Result<bool> writeConfigDrive(StepContext& ctx, const json& args, const ImageInfo& info,
                              const std::string& root) {
  auto cd = args.find("configdrive");
  if (cd == args.end() || !cd->is_string() || cd->get<std::string>().empty()) return false;
  const std::string bytes =
      KILN_TRY(loadConfigDrive(ctx, cd->get<std::string>(), info.imageServerAuth));
  const PartitionTarget part = KILN_TRY(prepareConfigDrivePartition(ctx, root, bytes.size()));
  KILN_TRY_VOID(writeRegion(part.path, part.offset, bytes));
  return true;
}

json writeResult(const BlockDevice& root, const WriteResult& written, bool configdrive) {
  return json{{"root_device", root.name},
              {"bytes_written", written.bytesWritten},
              {"bytes_downloaded", written.bytesDownloaded},
              {"checksum", written.checksum},
              {"seconds", written.seconds},
              {"configdrive", configdrive}};
}

/// /dev/disk/by-uuid/<uuid> -> the partition, when missing (best effort).
void linkByUuid(const std::string& uuid, const std::string& partition, StepContext& ctx) {
  std::error_code ec;
  const std::filesystem::path dir = "/dev/disk/by-uuid";
  std::filesystem::create_directories(dir, ec);
  if (ec || std::filesystem::exists(std::filesystem::symlink_status(dir / uuid))) return;
  std::filesystem::create_symlink(partition, dir / uuid, ec);
  if (ec) ctx.log.warning("cannot link /dev/disk/by-uuid", {{"uuid", uuid}, {"error", ec.message()}});
}

/// A partition image: the agent's partitions, the image in the root one, the image's GRUB.
Result<json> writePartitionImage(StepContext& ctx, const json& args, const ImageInfo& info,
                                 const BlockDevice& root, SysfsReader& sysfs) {
  if (isMdDevice(root.name)) {
    return invalid("Partition images on a software RAID root are not supported by Kiln: deploy a "
                   "whole-disk image onto " + root.name);
  }
  const bool uefi = bootedThroughUefi(sysfs);
  const PartitionImageLayout layout = KILN_TRY(partitionForImage(ctx, root.name, root.size, info.rootMb, uefi));
  ctx.log.info("writing partition image", {{"device", root.name}, {"partition", std::to_string(layout.rootPartition)}});
  const WriteResult written =
      KILN_TRY(writeImage(ctx, info, WriteTarget{root.name, layout.rootOffset, layout.rootBytes}));
  json result = writeResult(root, written, KILN_TRY(writeConfigDrive(ctx, args, info, root.name)));
  const std::string rootPartition = partitionPath(root.name, layout.rootPartition);
  result["image_type"] = "partition";
  result["root_partition"] = rootPartition;
  if (ctx.byHand) return result;  // the machine's boot is not the agent's to change
  BlkidBlockDeviceProbe probe;
  const ProbeResult fs = KILN_TRY(probe.probe(root.name, layout.rootOffset, layout.rootBytes));
  if (fs.filesystemType.empty()) {
    return invalid("The partition image written to " + rootPartition +
                   " holds no file system libblkid knows; a partition image is one file system");
  }
  // The ramdisk has no udev: without /dev/disk/by-uuid the image's grub-mkconfig writes
  // root=/dev/vdaN instead of root=UUID=..., which a renamed disk would break.
  if (!fs.uuid.empty()) linkByUuid(fs.uuid, rootPartition, ctx);
  char base[] = "/tmp/kiln-root.XXXXXX";
  if (::mkdtemp(base) == nullptr) return internalError("Cannot make a mount point for the image's root");
  auto grub = installImageGrub(ctx, layout, rootPartition, partitionPath(root.name, layout.bootPartition), fs.filesystemType, base);
  ::rmdir(base);
  result.update(KILN_TRY(std::move(grub)));
  if (uefi) result.update(KILN_TRY(installUefiBoot(ctx, root.name, sysfs)));
  return result;
}

}  // namespace

Result<json> writeImageStep(StepContext& ctx, const json& args, SysfsReader& sysfs) {
  if (!args.contains("image_info") || !args["image_info"].is_object()) {
    return invalid("write_image needs an image_info argument");
  }
  const ImageInfo info = KILN_TRY(parseImageInfo(args["image_info"], ctx.md5Allowed));
  const BlockDevice root = KILN_TRY(findRootDevice(ctx));
  if (info.imageType == ImageType::Partition) return writePartitionImage(ctx, args, info, root, sysfs);
  ctx.log.info("writing image", {{"device", root.name}, {"url", info.urls.empty() ? "" : info.urls.front()}});
  const WriteResult written = KILN_TRY(writeImage(ctx, info, WriteTarget{root.name, 0, 0}));
  json result = writeResult(root, written, KILN_TRY(writeConfigDrive(ctx, args, info, root.name)));
  // Run by hand the agent does not own the machine's boot. A UEFI machine: the image's ESP
  // (on each RAID member disk) and a firmware boot entry. A legacy-BIOS machine with a software
  // RAID root: boot code on every member disk.
  if (!ctx.byHand && bootedThroughUefi(sysfs)) {
    const json boot = KILN_TRY(installUefiBoot(ctx, root.name, sysfs));
    result.update(boot);
  } else if (!ctx.byHand && isMdDevice(root.name)) {
    const json boot = KILN_TRY(installRaidBiosBoot(ctx, root.name));
    result["bios_boot_disks"] = boot["bios_boot_disks"];
  }
  return result;
}

std::vector<AgentStepDefinition> genericHardwareSteps(SysfsReader& sysfs) {
  SysfsReader* fs = &sysfs;
  std::vector<AgentStepDefinition> steps;
  steps.push_back({"deploy", "erase_devices_metadata", 99, 0, true, {},
                   [](StepContext& ctx, const json&) { return eraseDevicesMetadata(ctx); }});
  steps.push_back({"deploy", "erase_devices", 10, -1, true, {},
                   [](StepContext& ctx, const json&) { return eraseDevices(ctx); }});
  steps.push_back({"raid", "delete_configuration", 0, -1, false, {},
                   [fs](StepContext& ctx, const json&) { return deleteSoftwareRaid(ctx, *fs); }});
  steps.push_back(
      {"raid", "create_configuration", 0, -1, false,
       {{"create_root_volume", "Create the root volume of target_raid_config (default true).", false},
        {"create_nonroot_volumes", "Create the other volumes of target_raid_config (default true).", false},
        {"delete_existing", "Delete existing software RAID first (default true).", false}},
       [fs](StepContext& ctx, const json& args) -> Result<json> {
         if (args.value("delete_existing", true)) KILN_TRY(deleteSoftwareRaid(ctx, *fs));
         return createSoftwareRaid(ctx, filteredTarget(ctx, args), raidLayoutFor(*fs));
       }});
  steps.push_back(
      {"raid", "apply_configuration", -1, 0, false,
       {{"raid_config", "The RAID configuration to apply (target_raid_config format).", true},
        {"delete_existing", "Delete existing software RAID first (default true).", false}},
       [fs](StepContext& ctx, const json& args) { return applySoftwareRaid(ctx, args, *fs); }});
  steps.push_back({"deploy", "write_image", -1, 0, false,
                   {{"image_info", "The image to write: urls, checksum, disk_format; image_type "
                                   "partition with root_mb for a partition image.", true},
                    {"configdrive", "A config drive: URL or base64 of a gzipped ISO.", false}},
                   [fs](StepContext& ctx, const json& args) { return writeImageStep(ctx, args, *fs); }});
  return steps;
}

json stepCatalogue(std::span<const AgentStepDefinition> steps) {
  StepCatalogue catalogue;
  catalogue.hardwareManagerVersion = {{"generic", kGenericHardwareManagerVersion}};
  for (const auto& s : steps) {
    for (auto [kind, priority] : {std::pair{&catalogue.clean, s.cleanPriority},
                                  std::pair{&catalogue.deploy, s.deployPriority}}) {
      if (priority < 0) continue;
      StepDescriptor d;
      d.interface = s.interface;
      d.step = s.name;
      d.priority = priority;
      d.abortable = s.abortable;
      d.argsinfo = s.argsinfo;
      (*kind)[d.interface].push_back(std::move(d));
    }
  }
  return catalogue.toJson();
}

}  // namespace kiln::agent
