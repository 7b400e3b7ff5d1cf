#include "agent/disk/uefi_boot.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>

#include "agent/disk/device_io.h"
#include "agent/disk/partx.h"
#include "agent/disk/wipefs.h"
#include "agent/disk/partition_naming.h"
#include "agent/disk/sgdisk.h"
#include "agent/raid/mdadm.h"
#include "shared/core/strings.h"

namespace kiln::agent {

using nlohmann::json;

namespace {

constexpr std::string_view kEspCode = "EF00";
/// The GPT name of the ESPs made on RAID member disks.
constexpr std::string_view kMemberEspName = "kiln-esp";
constexpr uint64_t kMiB = 1ULL << 20;

/// UTF-16LE to ASCII (other characters dropped), when `raw` looks like UTF-16LE.
std::string narrow(std::string_view raw) {
  const bool bom = raw.size() >= 2 && static_cast<unsigned char>(raw[0]) == 0xFF &&
                   static_cast<unsigned char>(raw[1]) == 0xFE;
  const bool zeros = raw.size() >= 2 && raw[1] == '\0';
  if (!bom && !zeros) return std::string(raw);
  std::string out;
  for (size_t i = bom ? 2 : 0; i + 1 < raw.size(); i += 2) {
    const unsigned lo = static_cast<unsigned char>(raw[i]);
    const unsigned hi = static_cast<unsigned char>(raw[i + 1]);
    if (hi == 0 && lo != 0 && lo < 0x80) out.push_back(static_cast<char>(lo));
  }
  return out;
}

/// The entry of `dir` named `name` in any case, as stored; nullopt when there is none.
std::optional<std::string> findEntry(SysfsReader& fs, const std::string& dir, std::string_view name) {
  for (const std::string& entry : fs.list(dir)) {
    if (equalsIgnoreCase(entry, name)) return entry;
  }
  return std::nullopt;
}

/// A name fit for a firmware path component: printable ASCII (spaces allowed) without '\\' or
/// '/', and not "." or "..". ESPs are FAT; anything else is not a loader the agent registers.
bool safeEfiName(std::string_view name) {
  if (name.empty() || name.size() > 255 || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return c >= 0x20 && c < 0x7f && c != '\\' && c != '/';
  });
}

std::string firmwarePath(const std::string& vendor, const std::string& file) {
  return "\\EFI\\" + vendor + "\\" + file;
}

/// Runs a tool; a non-zero exit is Internal with its output (wipefs.h's runChecked).
Result<CommandOutput> runTool(StepContext& context, std::vector<std::string> argv) {
  Command command;
  command.argv = std::move(argv);
  return runChecked(*context.runner, std::move(command), "");
}

/// An ESP of a disk: where it is on the whole device.
struct EspLocation {
  std::string disk;
  int number = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

EspLocation locate(const std::string& device, const GptTable& table, const GptPartition& p) {
  return EspLocation{device, p.number, table.offsetOf(p), table.bytesOf(p)};
}

std::optional<EspLocation> firstEsp(const std::string& device, const GptTable& table) {
  for (const GptPartition& p : table.partitions) {
    if (equalsIgnoreCase(p.code, kEspCode)) return locate(device, table, p);
  }
  return std::nullopt;
}

/// The ESP of member disk `disk` (made when missing) holding a copy of `image`.
Result<EspLocation> memberEsp(StepContext& context, const std::string& disk, const EspLocation& image) {
  Sgdisk sgdisk(*context.runner);
  GptTable table = KILN_TRY(sgdisk.print(disk));
  auto named = [&]() -> std::optional<EspLocation> {
    for (const GptPartition& p : table.partitions) {
      if (p.name == kMemberEspName) return locate(disk, table, p);
    }
    return std::nullopt;
  };
  std::optional<EspLocation> esp = named();
  if (!esp) {
    // In the room reserved before the first partition when there is enough, else wherever
    // sgdisk finds the largest free block.
    const uint64_t wantSectors = kEfiSystemPartitionMiB * kMiB / table.sectorSize;
    const uint64_t alignedStart = kMiB / table.sectorSize;
    uint64_t firstStart = table.lastUsableSector + 1;
    for (const GptPartition& p : table.partitions) firstStart = std::min(firstStart, p.startSector);
    const std::string start =
        firstStart >= alignedStart + wantSectors ? std::to_string(alignedStart) : std::string("0");
    KILN_TRY_VOID(sgdisk.newPartition(disk, 0, start, "+" + std::to_string(kEfiSystemPartitionMiB) + "M",
                                      std::string(kEspCode), std::string(kMemberEspName)));
    table = KILN_TRY(sgdisk.print(disk));
    esp = named();
    if (!esp) return internalError("sgdisk made no EFI system partition on " + disk);
    context.log.info("Made an EFI system partition on a RAID member disk",
                     {{"disk", disk}, {"partition", std::to_string(esp->number)}});
  }
  if (esp->bytes < image.bytes) {
    return invalid("The image's EFI system partition (" + std::to_string(image.bytes / kMiB) +
                   " MiB) does not fit the " + std::to_string(esp->bytes / kMiB) +
                   " MiB EFI system partition of " + disk);
  }
  KILN_TRY_VOID(copyRange(image.disk, image.offset, disk, esp->offset, image.bytes));
  rereadPartitions(context, disk);
  return *esp;
}

std::string deviceName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

/// Removes the entries carrying one of `labels` (what a previous deployment left).
Result<void> removeEntries(StepContext& context, const std::vector<std::string>& labels) {
  const CommandOutput listed = KILN_TRY(runTool(context, {"efibootmgr"}));
  for (const EfiBootEntry& entry : parseEfibootmgrList(listed.out)) {
    if (std::find(labels.begin(), labels.end(), entry.label) == labels.end()) continue;
    KILN_TRY(runTool(context, {"efibootmgr", "-q", "-b", entry.number, "-B"}));
  }
  return {};
}

struct PlannedEntry {
  EspLocation esp;
  EfiLoader loader;
  std::string label;
};

Result<void> registerEntries(StepContext& context, const std::vector<PlannedEntry>& planned) {
  std::vector<std::string> labels;
  for (const PlannedEntry& p : planned) labels.push_back(p.label);
  KILN_TRY_VOID(removeEntries(context, labels));
  // efibootmgr -c puts each new entry first in BootOrder: create the last one first.
  for (auto it = planned.rbegin(); it != planned.rend(); ++it) {
    KILN_TRY(runTool(context, {"efibootmgr", "-q", "-c", "-d", it->esp.disk, "-p",
                               std::to_string(it->esp.number), "-L", it->label, "-l",
                               it->loader.path}));
  }
  return {};
}

}  // namespace

std::vector<EfiLoader> parseBootCsv(std::string_view raw, std::string_view vendorDir) {
  std::vector<EfiLoader> loaders;
  const std::string text = narrow(raw);
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    const std::string line = trim(std::string_view(text).substr(begin, end - begin));
    begin = end + 1;
    const size_t comma = line.find(',');
    const std::string loader = trim(line.substr(0, comma));
    if (!safeEfiName(loader)) continue;
    std::string label;
    if (comma != std::string::npos) {
      const size_t next = line.find(',', comma + 1);
      label = trim(line.substr(comma + 1, next == std::string::npos ? std::string::npos : next - comma - 1));
    }
    // The label goes to efibootmgr -L: printable ASCII only.
    label.erase(std::remove_if(label.begin(), label.end(), [](char c) { return c < 0x20 || c >= 0x7f; }),
                label.end());
    if (label.empty()) label = std::string(vendorDir);
    loaders.push_back({firmwarePath(std::string(vendorDir), loader), label});
  }
  return loaders;
}

EspContent readEspContent(SysfsReader& esp) {
  EspContent content;
  const auto efi = findEntry(esp, "/", "EFI");
  if (!efi) return content;
  const std::string efiDir = "/" + *efi;
  if (const auto boot = findEntry(esp, efiDir, "BOOT")) {
    content.removablePath = findEntry(esp, efiDir + "/" + *boot, "BOOTX64.EFI").has_value();
  }
  std::vector<std::string> vendors;
  for (const std::string& dir : esp.list(efiDir)) {
    if (!equalsIgnoreCase(dir, "BOOT") && safeEfiName(dir)) vendors.push_back(dir);
  }
  for (const std::string& vendor : vendors) {
    const std::string dir = efiDir + "/" + vendor;
    const auto csv = findEntry(esp, dir, "BOOTX64.CSV");
    if (!csv) continue;
    for (EfiLoader loader : parseBootCsv(esp.read(dir + "/" + *csv).value_or(""), vendor)) {
      const std::string file = loader.path.substr(loader.path.rfind('\\') + 1);
      if (const auto stored = findEntry(esp, dir, file); stored && safeEfiName(*stored)) {
        loader.path = firmwarePath(vendor, *stored);
        content.loaders.push_back(std::move(loader));
      }
    }
  }
  if (content.loaders.empty()) {
    for (const std::string& vendor : vendors) {
      const std::string dir = efiDir + "/" + vendor;
      for (std::string_view name : {"shimx64.efi", "grubx64.efi"}) {
        if (const auto stored = findEntry(esp, dir, name); stored && safeEfiName(*stored)) {
          content.loaders.push_back({firmwarePath(vendor, *stored), vendor});
          break;
        }
      }
    }
  }
  if (content.loaders.empty() && content.removablePath) {
    content.loaders.push_back({std::string(kRemovableLoaderPath), "kiln"});
  }
  return content;
}

std::vector<EfiBootEntry> parseEfibootmgrList(std::string_view text) {
  std::vector<EfiBootEntry> entries;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    begin = end + 1;
    if (line.size() < 9 || !line.starts_with("Boot")) continue;
    const std::string_view number = line.substr(4, 4);
    if (!std::all_of(number.begin(), number.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); })) {
      continue;
    }
    std::string_view rest = line.substr(8);
    if (rest.starts_with("*")) rest.remove_prefix(1);
    const size_t tab = rest.find('\t');
    entries.push_back({std::string(number), trim(rest.substr(0, tab))});
  }
  return entries;
}

Result<EspContent> inspectMountedEsp(StepContext& context, const std::string& partition) {
  char dir[] = "/tmp/kiln-esp.XXXXXX";
  if (::mkdtemp(dir) == nullptr) return internalError("Cannot make a mount point for " + partition);
  const std::string mountPoint = dir;
  auto mounted = runTool(context, {"mount", "-t", "vfat", "-o", "ro", partition, mountPoint});
  if (!mounted) {
    ::rmdir(dir);
    return std::unexpected(mounted.error());
  }
  RootedSysfsReader esp(mountPoint);
  EspContent content = readEspContent(esp);
  auto unmounted = runTool(context, {"umount", mountPoint});
  if (!unmounted) {
    context.log.warning("Cannot unmount an EFI system partition",
                        {{"partition", partition}, {"error", unmounted.error().message}});
  } else {
    ::rmdir(dir);
  }
  return content;
}

Result<json> installUefiBoot(StepContext& context, const std::string& rootDevice, SysfsReader& sysfs,
                             const EspInspector& inspect) {
  if (!context.runner) return internalError("UEFI boot setup needs a command runner");
  Sgdisk sgdisk(*context.runner);
  const GptTable table = KILN_TRY(sgdisk.print(rootDevice));
  const std::optional<EspLocation> imageEsp = firstEsp(rootDevice, table);
  if (!imageEsp) {
    return invalid("The image on " + rootDevice + " has no EFI system partition (GPT type EF00), "
                   "so this UEFI machine cannot boot it: deploy a UEFI image, or ask for "
                   "boot_mode bios");
  }
  const bool raid = isMdDevice(rootDevice);
  std::vector<EspLocation> esps;
  if (raid) {
    Mdadm mdadm(*context.runner);
    const MdArrayDetail detail = KILN_TRY(mdadm.detail(rootDevice));
    std::vector<std::string> disks;
    for (const std::string& member : detail.memberDevices()) {
      const std::string disk = holderDisk(member);
      if (disk.empty() || disk == member) {
        return invalid("The member " + member + " of " + rootDevice +
                       " is not a partition: there is no room for an EFI system partition");
      }
      if (std::find(disks.begin(), disks.end(), disk) == disks.end()) disks.push_back(disk);
    }
    for (const std::string& disk : disks) esps.push_back(KILN_TRY(memberEsp(context, disk, *imageEsp)));
  } else {
    rereadPartitions(context, rootDevice);
    esps.push_back(*imageEsp);
  }

  const EspContent content = KILN_TRY(inspect(context, partitionPath(esps.front().disk, esps.front().number)));
  if (content.loaders.empty()) {
    return invalid("The EFI system partition of the image on " + rootDevice +
                   " has no boot loader (no BOOTX64.CSV, shimx64.efi or grubx64.efi under \\EFI\\, "
                   "and no \\EFI\\BOOT\\BOOTX64.EFI)");
  }
  std::vector<PlannedEntry> planned;
  for (const EspLocation& esp : esps) {
    for (const EfiLoader& loader : content.loaders) {
      const std::string label = raid ? loader.label + " (" + deviceName(esp.disk) + ")" : loader.label;
      planned.push_back({esp, loader, label});
    }
  }
  json partitions = json::array();
  for (const EspLocation& esp : esps) partitions.push_back(partitionPath(esp.disk, esp.number));
  json entries = json::array();
  Result<void> registered = sysfs.list(kEfivarsDir).empty()
                                ? Result<void>(fail(ErrorCode::Unavailable,
                                                    "efivarfs is not mounted at " + std::string(kEfivarsDir)))
                                : registerEntries(context, planned);
  if (!registered) {
    if (!content.removablePath) {
      return internalError("Cannot register a UEFI boot entry and the image has no " +
                           std::string(kRemovableLoaderPath) + " to fall back to: " +
                           registered.error().message);
    }
    context.log.warning("No UEFI boot entry registered; the firmware will boot the removable-media path",
                        {{"error", registered.error().message}});
  } else {
    for (const PlannedEntry& p : planned) {
      entries.push_back({{"disk", p.esp.disk},
                         {"partition", partitionPath(p.esp.disk, p.esp.number)},
                         {"loader", p.loader.path},
                         {"label", p.label}});
      context.log.info("Registered a UEFI boot entry", {{"disk", p.esp.disk}, {"loader", p.loader.path}});
    }
  }
  return json{{"efi_system_partitions", partitions}, {"efi_boot_entries", entries}};
}

}  // namespace kiln::agent
