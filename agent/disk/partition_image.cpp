#include "agent/disk/partition_image.h"

#include <filesystem>
#include <vector>

#include "agent/disk/device_io.h"
#include "agent/disk/sgdisk.h"
#include "agent/disk/wipefs.h"
#include "shared/core/strings.h"

namespace kiln::agent {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr uint64_t kMiB = 1ULL << 20;
/// PATH inside the image's chroot (the agent's own PATH names ramdisk directories).
constexpr const char* kChrootPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

Result<void> run(StepContext& context, std::vector<std::string> argv, bool chrootPath = false) {
  Command command;
  command.argv = std::move(argv);
  command.timeout = std::chrono::seconds(600);
  // The image's tools see their own PATH and the C locale (which keeps locale settings out of
  // the grub.cfg they write).
  if (chrootPath) command.env = {{"PATH", kChrootPath}, {"LANG", "C"}, {"LC_ALL", "C"}};
  KILN_TRY(runChecked(*context.runner, std::move(command), ""));
  return {};
}

/// The mounts made so far, undone in reverse order when this goes out of scope.
class Mounts {
 public:
  explicit Mounts(StepContext& context) : context_(context) {}
  ~Mounts() {
    for (auto it = points_.rbegin(); it != points_.rend(); ++it) {
      if (auto out = run(context_, {"umount", *it}); !out) {
        context_.log.warning("cannot unmount; trying a lazy unmount", {{"path", *it}, {"error", out.error().message}});
        (void)run(context_, {"umount", "-l", *it});
      }
    }
  }
  Result<void> mount(std::vector<std::string> argv) {
    const std::string point = argv.back();
    KILN_TRY_VOID(run(context_, std::move(argv)));
    points_.push_back(point);
    return {};
  }

 private:
  StepContext& context_;
  std::vector<std::string> points_;
};

}  // namespace

Result<PartitionImageLayout> partitionForImage(StepContext& context, const std::string& disk,
                                               uint64_t diskBytes, uint64_t rootMb, bool uefi) {
  if (!context.runner) return internalError("Partitioning needs a command runner");
  const uint64_t bootMiB = uefi ? kPartitionImageEspMiB : kBiosBootPartitionMiB;
  // 1 MiB before the first partition, the boot partition, the root, the backup GPT and room
  // for a config drive (64 MiB) at the end.
  const uint64_t neededMiB = 1 + bootMiB + rootMb + 1 + 64;
  if (neededMiB * kMiB > diskBytes) {
    return invalid("The partition image needs " + std::to_string(neededMiB) + " MiB on " + disk +
                   " (root_mb " + std::to_string(rootMb) + ", a " + std::to_string(bootMiB) +
                   " MiB boot partition, a config drive), which has only " +
                   std::to_string(diskBytes / kMiB) + " MiB");
  }
  Sgdisk sgdisk(*context.runner);
  KILN_TRY_VOID(sgdisk.zap(disk));
  KILN_TRY_VOID(sgdisk.newTable(disk));
  if (uefi) {
    KILN_TRY_VOID(sgdisk.newPartition(disk, 1, "0", "+" + std::to_string(bootMiB) + "M", "EF00", "efi-system"));
  } else {
    KILN_TRY_VOID(sgdisk.newPartition(disk, 1, "0", "+" + std::to_string(bootMiB) + "M", "EF02", "bios-boot"));
  }
  KILN_TRY_VOID(sgdisk.newPartition(disk, 2, "0", "+" + std::to_string(rootMb) + "M", "8300", "root"));
  const GptTable table = KILN_TRY(sgdisk.print(disk));
  PartitionImageLayout layout{disk, uefi};
  const GptPartition* boot = nullptr;
  for (const GptPartition& p : table.partitions) {
    if (p.number == layout.rootPartition) {
      layout.rootOffset = table.offsetOf(p);
      layout.rootBytes = table.bytesOf(p);
    }
    if (p.number == layout.bootPartition) boot = &p;
  }
  if (!boot || layout.rootBytes == 0) return internalError("sgdisk did not make the partitions on " + disk);
  if (uefi) {
    const uint64_t sectors = table.offsetOf(*boot) / 512;  // mkfs.vfat counts 512-byte sectors
    const uint64_t kib = table.bytesOf(*boot) / 1024;
    KILN_TRY_VOID(run(context, {"mkfs.vfat", "-I", "-F", "32", "-n", "EFI-SYSTEM", "--offset",
                                std::to_string(sectors), disk, std::to_string(kib)}));
  }
  if (isBlockDevice(disk)) KILN_TRY_VOID(run(context, {"partx", "-u", disk}));
  context.log.info("Partitioned for a partition image",
                   {{"disk", disk}, {"boot", uefi ? "efi-system" : "bios-boot"}, {"root_mb", std::to_string(rootMb)}});
  return layout;
}

Result<json> installImageGrub(StepContext& context, const PartitionImageLayout& layout,
                              const std::string& rootPartition, const std::string& espPartition,
                              const std::string& rootFsType, const std::string& mountBase) {
  if (!context.runner) return internalError("Installing GRUB needs a command runner");
  Mounts mounts(context);
  KILN_TRY_VOID(mounts.mount({"mount", "-t", rootFsType, rootPartition, mountBase}));
  const fs::path root = mountBase;
  std::string flavour;
  for (const char* name : {"grub-install", "grub2-install"}) {
    for (const char* dir : {"usr/sbin", "usr/bin", "sbin", "bin"}) {
      if (flavour.empty() && fs::exists(root / dir / name)) flavour = std::string(name).substr(0, std::string(name).find('-'));
    }
  }
  if (flavour.empty()) {
    return invalid("The partition image has no grub-install or grub2-install: Kiln installs the "
                   "image's own bootloader, as ironic-python-agent does");
  }
  for (const char* dir : {"dev", "proc", "sys", "run"}) {
    std::error_code ec;
    fs::create_directories(root / dir, ec);
    KILN_TRY_VOID(mounts.mount({"mount", "--bind", std::string("/") + dir, (root / dir).string()}));
  }
  std::string target;
  if (layout.uefi) {
    std::error_code ec;
    fs::create_directories(root / "boot/efi", ec);
    KILN_TRY_VOID(mounts.mount({"mount", "-t", "vfat", espPartition, (root / "boot/efi").string()}));
    target = "x86_64-efi";
    KILN_TRY_VOID(run(context, {"chroot", mountBase, flavour + "-install", "--target=x86_64-efi",
                                "--efi-directory=/boot/efi", "--removable", "--no-nvram"}, true));
  } else {
    target = "i386-pc";
    KILN_TRY_VOID(run(context, {"chroot", mountBase, flavour + "-install", "--target=i386-pc", layout.disk}, true));
  }
  KILN_TRY_VOID(run(context, {"chroot", mountBase, flavour + "-mkconfig", "-o", "/boot/" + flavour + "/grub.cfg"}, true));
  context.log.info("Installed the image's GRUB", {{"disk", layout.disk}, {"target", target}});
  return json{{"bootloader", flavour}, {"grub_target", target}};
}

}  // namespace kiln::agent
