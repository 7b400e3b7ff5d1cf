#include "agent/disk/mbr.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "agent/disk/device_io.h"

namespace kiln::agent {
namespace {

constexpr size_t kTableOffset = 446;
constexpr size_t kEntryBytes = 16;
constexpr uint64_t kAlignSectors = 2048;  // 1 MiB
constexpr uint64_t kMaxMbrSectors = 1ULL << 32;

uint32_t readLe32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

void writeLe32(uint8_t* p, uint32_t value) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(value >> (8 * i));
}

std::unexpected<Error> ioError(const std::string& what, const std::string& path) {
  return internalError("Cannot " + what + " " + path + ": " + std::strerror(errno));
}

}  // namespace

Result<std::array<MbrEntry, 4>> parseMbr(std::span<const uint8_t> sector) {
  if (sector.size() < 512 || sector[510] != 0x55 || sector[511] != 0xAA) {
    return invalid("No MBR signature (0x55AA) in the first sector");
  }
  std::array<MbrEntry, 4> entries{};
  for (int slot = 0; slot < 4; ++slot) {
    const uint8_t* e = sector.data() + kTableOffset + kEntryBytes * static_cast<size_t>(slot);
    entries[slot] = MbrEntry{slot, e[4], readLe32(e + 8), readLe32(e + 12)};
  }
  return entries;
}

Result<MbrEntry> planMbrPartitionAtEnd(const std::array<MbrEntry, 4>& entries, uint64_t diskSectors,
                                       uint64_t bytes) {
  const MbrEntry* freeSlot = nullptr;
  uint64_t usedEnd = 1;  // the MBR itself
  for (const MbrEntry& e : entries) {
    if (e.extended()) {
      return invalid("MBR disks with an extended partition are not supported");
    }
    if (!e.used()) {
      if (!freeSlot) freeSlot = &e;
      continue;
    }
    usedEnd = std::max<uint64_t>(usedEnd, uint64_t{e.startSector} + e.sectors);
  }
  if (!freeSlot) return invalid("All four primary MBR partitions are in use");
  const uint64_t end = std::min(diskSectors, kMaxMbrSectors - 1);
  const uint64_t wanted = (bytes + kMbrSectorBytes - 1) / kMbrSectorBytes;
  if (wanted + kAlignSectors > end) return invalid("The disk is too small for the partition");
  const uint64_t start = (end - wanted) / kAlignSectors * kAlignSectors;
  if (start < usedEnd) {
    return invalid("No room for a " + std::to_string(bytes) +
                   "-byte partition after the last MBR partition");
  }
  return MbrEntry{freeSlot->slot, 0x83, static_cast<uint32_t>(start),
                  static_cast<uint32_t>(end - start)};
}

Result<std::array<MbrEntry, 4>> readMbr(const std::string& path) {
  const UniqueFd file = KILN_TRY(openFile(path, O_RDONLY));
  std::array<uint8_t, 512> sector{};
  if (::pread(file.get(), sector.data(), sector.size(), 0) != static_cast<ssize_t>(sector.size())) {
    return ioError("read the MBR of", path);
  }
  return parseMbr(sector);
}

Result<void> writeMbrEntry(const std::string& path, const MbrEntry& entry) {
  std::array<uint8_t, kEntryBytes> raw{};
  // CHS fields 0xFE 0xFF 0xFF: "use the LBA fields", as fdisk writes past cylinder 1023.
  raw[1] = raw[5] = 0xFE;
  raw[2] = raw[3] = raw[6] = raw[7] = 0xFF;
  raw[4] = entry.type;
  writeLe32(raw.data() + 8, entry.startSector);
  writeLe32(raw.data() + 12, entry.sectors);
  const UniqueFd file = KILN_TRY(openFile(path, O_WRONLY));
  const uint64_t offset = kTableOffset + kEntryBytes * static_cast<size_t>(entry.slot);
  KILN_TRY_VOID(
      pwriteAll(file.get(), reinterpret_cast<const char*>(raw.data()), raw.size(), offset, path));
  if (::fsync(file.get()) != 0) return ioError("sync", path);
  return {};
}

}  // namespace kiln::agent
