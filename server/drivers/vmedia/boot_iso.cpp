#include "server/drivers/vmedia/boot_iso.h"

#include <cctype>
#include <filesystem>

#include "shared/core/file.h"

namespace kiln::server::vmedia {

namespace fs = std::filesystem;

namespace {

/// GRUB modules in the EFI image's memdisk (with their dependencies): enough to find the ISO
/// and boot Linux from it.
constexpr const char* kGrubModules =
    "normal configfile echo test search search_fs_file iso9660 part_gpt part_msdos fat serial "
    "terminal linux gzio";

Result<void> runTool(CommandRunner& runner, std::vector<std::string> argv, const char* package) {
  Command command{.argv = std::move(argv), .timeout = std::chrono::seconds(300)};
  auto out = runner.run(command);
  if (!out) {
    return fail(ErrorCode::Unavailable, "cannot build the virtual media ISO: " + out.error().message +
                                            " (kiln-server needs " + command.argv.front() +
                                            ", Debian package " + package + ")");
  }
  if (out->exitCode != 0) {
    return internalError("cannot build the virtual media ISO: " + failureMessage(command, *out));
  }
  return {};
}

/// A graft point "path/in/iso=/source" for xorriso -graft-points, '\\' and '=' of the source
/// escaped.
std::string graft(const std::string& inIso, const std::string& source) {
  std::string escaped;
  for (char c : source) {
    if (c == '\\' || c == '=') escaped += '\\';
    escaped += c;
  }
  return inIso + "=" + escaped;
}

bool plainName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  }
  return name != "." && name != "..";
}

}  // namespace

std::string isolinuxConfig(const std::string& cmdline) {
  return "# kiln-server: boot the kiln-agent ramdisk from virtual media.\n"
         "serial 0 115200\n"
         "default agent\n"
         "prompt 0\n"
         "timeout 0\n"
         "label agent\n"
         "  kernel /vmlinuz\n"
         "  append initrd=/initrd " + cmdline + "\n";
}

std::string grubIsoConfig(const std::string& marker, const std::string& cmdline) {
  return "# kiln-server: boot the kiln-agent ramdisk from virtual media.\n"
         "serial --unit=0 --speed=115200\n"
         "terminal_input serial console\n"
         "terminal_output serial console\n"
         "set timeout=0\n"
         "search --no-floppy --set=root --file /" + marker + "\n"
         "echo \"kiln: loading the agent from ($root)\"\n"
         "linux /vmlinuz " + cmdline + "\n"
         "initrd /initrd\n"
         "boot\n";
}

Result<void> buildBootIso(CommandRunner& runner, const BootIsoSpec& spec) {
  if (!plainName(spec.marker)) return invalid("The ISO marker '" + spec.marker + "' is not a plain file name");
  for (const char* file : {kIsolinuxBin, kLdlinuxC32}) {
    if (!fs::is_regular_file(file)) {
      return fail(ErrorCode::Unavailable, std::string("cannot build the virtual media ISO: ") + file +
                                              " is missing (Debian packages isolinux, syslinux-common)");
    }
  }
  auto dir = KILN_TRY(ScopedTempDir::create("kiln-vmedia"));
  const fs::path work = dir.path();
  KILN_TRY_VOID(writeFile(work / "grub.cfg", grubIsoConfig(spec.marker, spec.cmdline)));
  KILN_TRY_VOID(writeFile(work / "isolinux.cfg", isolinuxConfig(spec.cmdline)));
  KILN_TRY_VOID(writeFile(work / spec.marker, "kiln-server virtual media\n"));
  const std::string efi = (work / "bootx64.efi").string();
  KILN_TRY_VOID(runTool(runner,
                        {"grub-mkstandalone", "-O", "x86_64-efi", "-o", efi, "--locales=", "--fonts=",
                         "--themes=", std::string("--install-modules=") + kGrubModules,
                         "--modules=part_gpt part_msdos fat iso9660",
                         "boot/grub/grub.cfg=" + (work / "grub.cfg").string()},
                        "grub-efi-amd64-bin"));
  // The EFI El Torito image: a FAT file 1 MiB larger than GRUB, in KiB as mkfs.vfat -C counts.
  std::error_code ec;
  const auto grubBytes = fs::file_size(efi, ec);
  if (ec) return internalError("grub-mkstandalone wrote no " + efi);
  const std::string efiImage = (work / "efiboot.img").string();
  const uint64_t kib = (grubBytes / 1024 + 1024 + 63) / 64 * 64;
  KILN_TRY_VOID(runTool(runner, {"mkfs.vfat", "-C", "-n", "KILN_EFI", efiImage, std::to_string(kib)},
                        "dosfstools"));
  KILN_TRY_VOID(runTool(runner, {"mmd", "-i", efiImage, "::EFI", "::EFI/BOOT"}, "mtools"));
  KILN_TRY_VOID(runTool(runner, {"mcopy", "-i", efiImage, efi, "::EFI/BOOT/BOOTX64.EFI"}, "mtools"));
  const std::string partial = spec.output + ".partial";
  std::vector<std::string> xorriso{
      "xorriso", "-as", "mkisofs", "-quiet", "-o", partial, "-V", kBootIsoLabel, "-J", "-r",
      "-graft-points", "-b", "isolinux/isolinux.bin", "-c", "isolinux/boot.cat", "-no-emul-boot",
      "-boot-load-size", "4", "-boot-info-table", "-eltorito-alt-boot", "-e", "efiboot.img",
      "-no-emul-boot", graft("isolinux/isolinux.bin", kIsolinuxBin),
      graft("isolinux/ldlinux.c32", kLdlinuxC32),
      graft("isolinux/isolinux.cfg", (work / "isolinux.cfg").string()),
      graft("efiboot.img", efiImage), graft("vmlinuz", spec.kernel), graft("initrd", spec.ramdisk),
      graft(spec.marker, (work / spec.marker).string())};
  if (!spec.networkData.empty()) {
    KILN_TRY_VOID(writeFile(work / "network_data.json", spec.networkData));
    xorriso.push_back(graft(kNetworkDataIsoPath, (work / "network_data.json").string()));
  }
  KILN_TRY_VOID(runTool(runner, xorriso, "xorriso"));
  fs::rename(partial, spec.output, ec);
  if (ec) return internalError("cannot move the virtual media ISO to " + spec.output + ": " + ec.message());
  return {};
}

}  // namespace kiln::server::vmedia
