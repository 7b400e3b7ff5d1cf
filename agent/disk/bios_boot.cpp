#include "agent/disk/bios_boot.h"


#include "agent/disk/partition_naming.h"
#include "agent/image/image_writer.h"
#include "agent/raid/mdadm.h"
#include "shared/core/file.h"
#include "shared/core/strings.h"

namespace kiln::agent {

int partitionNumber(const std::string& partition) {
  size_t end = partition.size();
  size_t begin = end;
  while (begin > 0 && partition[begin - 1] >= '0' && partition[begin - 1] <= '9') --begin;
  if (begin == end || end - begin > 3) return -1;
  return parseInt<int>(std::string_view(partition).substr(begin)).value_or(-1);
}

Result<nlohmann::json> installRaidBiosBoot(StepContext& ctx, const std::string& mdDevice,
                                           const std::string& bootCodePath) {
  std::string code = readFile(bootCodePath).value_or("");
  if (code.size() < 440) {
    return fail(ErrorCode::Unavailable, "Cannot read the BIOS boot code " + bootCodePath +
                                            " (syslinux's gptmbr.bin; is syslinux-common in the ramdisk?)");
  }
  code.resize(440);  // the boot code area; the disk signature and partition table stay
  Mdadm mdadm(*ctx.runner);
  const MdArrayDetail detail = KILN_TRY(mdadm.detail(mdDevice));
  nlohmann::json disks = nlohmann::json::array();
  for (const auto& member : detail.memberDevices()) {
    const int number = partitionNumber(member);
    const std::string disk = holderDisk(member);
    if (number < 1 || disk.empty() || disk == member) {
      return invalid("The member " + member + " of " + mdDevice + " is not a partition: the "
                     "BIOS boot code needs partition members");
    }
    Command attr;
    attr.argv = {"sgdisk", "-A", std::to_string(number) + ":set:2", disk};
    auto out = KILN_TRY(ctx.runner->run(attr));
    if (out.exitCode != 0) {
      return internalError("sgdisk could not mark " + member + " legacy-BIOS bootable: " + out.err + out.out);
    }
    KILN_TRY_VOID(writeRegion(disk, 0, code));
    disks.push_back(disk);
    ctx.log.info("installed BIOS boot code", {{"disk", disk}, {"partition", member}});
  }
  return nlohmann::json{{"bios_boot_disks", disks}};
}

}  // namespace kiln::agent
