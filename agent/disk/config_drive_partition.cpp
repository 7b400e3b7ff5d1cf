#include "agent/disk/config_drive_partition.h"

#include <optional>

#include "agent/disk/block_device_lister.h"
#include "agent/disk/mbr.h"
#include "agent/disk/partx.h"
#include "agent/disk/sgdisk.h"

namespace kiln::agent {
namespace {

constexpr std::string_view kLabel = "config-2";

PartitionTarget targetOf(const std::string& device, const GptTable& table,
                         const GptPartition& partition) {
  return PartitionTarget{device, table.offsetOf(partition), table.bytesOf(partition)};
}

/// The partition named "config-2" (highest number wins), else one whose file system is
/// labelled "config-2".
std::optional<GptPartition> findConfigDrive(const std::string& device, const GptTable& table,
                                            BlockDeviceProbe& probe) {
  std::optional<GptPartition> found;
  for (const GptPartition& p : table.partitions) {
    if (p.name == kLabel) found = p;
  }
  if (found) return found;
  for (const GptPartition& p : table.partitions) {
    auto probed = probe.probe(device, table.offsetOf(p), table.bytesOf(p));
    if (probed && probed->label == kLabel) return p;
  }
  return std::nullopt;
}

Result<PartitionTarget> checkedTarget(const std::string& device, const GptTable& table,
                                      const GptPartition& partition, uint64_t bytes) {
  PartitionTarget target = targetOf(device, table, partition);
  if (target.size < bytes) {
    return invalid("The config drive (" + std::to_string(bytes) + " bytes) does not fit in " +
                   "partition " + std::to_string(partition.number) + " of " + device + " (" +
                   std::to_string(target.size) + " bytes)");
  }
  return target;
}

Result<PartitionTarget> prepareOnGpt(StepContext& context, const std::string& device,
                                     uint64_t bytes, BlockDeviceProbe& probe) {
  Sgdisk sgdisk(*context.runner);
  GptTable table = KILN_TRY(sgdisk.print(device));
  if (auto existing = findConfigDrive(device, table, probe)) {
    context.log.info("Reusing the existing config drive partition",
                     {{"device", device}, {"partition", std::to_string(existing->number)}});
    return checkedTarget(device, table, *existing, bytes);
  }
  KILN_TRY_VOID(sgdisk.moveBackupToEnd(device));
  KILN_TRY_VOID(sgdisk.newPartition(device, 0, "-64M", "0", "0700", std::string(kLabel)));
  table = KILN_TRY(sgdisk.print(device));
  std::optional<GptPartition> created;
  for (const GptPartition& p : table.partitions) {
    if (p.name == kLabel) created = p;
  }
  if (!created) return internalError("sgdisk created no config-2 partition on " + device);
  rereadPartitions(context, device);
  return checkedTarget(device, table, *created, bytes);
}

Result<PartitionTarget> mbrTarget(const std::string& device, const MbrEntry& entry,
                                  uint64_t bytes) {
  PartitionTarget target{device, uint64_t{entry.startSector} * kMbrSectorBytes,
                         uint64_t{entry.sectors} * kMbrSectorBytes};
  if (target.size < bytes) {
    return invalid("The config drive (" + std::to_string(bytes) + " bytes) does not fit in " +
                   "partition " + std::to_string(entry.slot + 1) + " of " + device);
  }
  return target;
}

/// MBR: reuse a partition labelled config-2, else append a primary partition at the end of
/// the disk (what ironic-python-agent does with parted), written in-process.
Result<PartitionTarget> prepareOnMbr(StepContext& context, const std::string& device,
                                     uint64_t bytes, BlockDeviceProbe& probe) {
  const std::array<MbrEntry, 4> entries = KILN_TRY(readMbr(device));
  for (const MbrEntry& e : entries) {
    if (!e.used()) continue;
    auto probed = probe.probe(device, uint64_t{e.startSector} * kMbrSectorBytes,
                              uint64_t{e.sectors} * kMbrSectorBytes);
    if (probed && probed->label == kLabel) return mbrTarget(device, e, bytes);
  }
  const std::vector<std::string> paths = {device};
  const std::vector<BlockDevice> described = KILN_TRY(describeDevices(paths));
  const MbrEntry entry = KILN_TRY(planMbrPartitionAtEnd(
      entries, described.front().size / kMbrSectorBytes, kConfigDrivePartitionBytes));
  KILN_TRY_VOID(writeMbrEntry(device, entry));
  context.log.info("Added an MBR partition for the config drive",
                   {{"device", device}, {"partition", std::to_string(entry.slot + 1)}});
  rereadPartitions(context, device);
  return mbrTarget(device, entry, bytes);
}

}  // namespace

Result<PartitionTarget> prepareConfigDrivePartition(StepContext& context,
                                                    const std::string& rootDevice, uint64_t bytes,
                                                    BlockDeviceProbe& probe) {
  if (!context.runner) return internalError("Preparing a config drive needs a command runner");
  if (bytes > kConfigDrivePartitionBytes) {
    return invalid("The config drive is " + std::to_string(bytes) +
                   " bytes; at most 64 MiB is supported");
  }
  ProbeResult probed = KILN_TRY(probe.probe(rootDevice));
  if (probed.partitionTableType == "gpt") return prepareOnGpt(context, rootDevice, bytes, probe);
  if (probed.partitionTableType == "dos") return prepareOnMbr(context, rootDevice, bytes, probe);
  if (probed.partitionTableType.empty()) {
    return fail(ErrorCode::Unimplemented,
                "Cannot add a config drive partition to " + rootDevice +
                    ": it has no partition table (a partition image or a raw file system)");
  }
  return fail(ErrorCode::Unimplemented, "Cannot add a config drive partition to " + rootDevice +
                                            ": partition table type '" + probed.partitionTableType +
                                            "' is not supported (only GPT and MBR)");
}

Result<PartitionTarget> prepareConfigDrivePartition(StepContext& context,
                                                    const std::string& rootDevice, uint64_t bytes) {
  BlkidBlockDeviceProbe probe;
  return prepareConfigDrivePartition(context, rootDevice, bytes, probe);
}

}  // namespace kiln::agent
