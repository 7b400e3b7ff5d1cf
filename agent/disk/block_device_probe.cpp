#include "agent/disk/block_device_probe.h"

#include <blkid/blkid.h>
#include <fcntl.h>

#include <memory>

#include "agent/disk/device_io.h"

namespace kiln::agent {
namespace {

struct ProbeDeleter {
  void operator()(blkid_probe probe) const { blkid_free_probe(probe); }
};
using ProbeHandle = std::unique_ptr<std::remove_pointer_t<blkid_probe>, ProbeDeleter>;

std::string lookup(blkid_probe probe, const char* name) {
  const char* value = nullptr;
  size_t length = 0;
  if (blkid_probe_lookup_value(probe, name, &value, &length) != 0 || value == nullptr) {
    return {};
  }
  return std::string(value);
}

}  // namespace

Result<ProbeResult> BlkidBlockDeviceProbe::probe(const std::string& path, uint64_t offset,
                                                 uint64_t size) {
  auto file = openFile(path, O_RDONLY);
  if (!file) return notFound(file.error().message);
  ProbeHandle probe(blkid_new_probe());
  if (!probe) return internalError("blkid_new_probe failed");
  if (blkid_probe_set_device(probe.get(), file->get(), static_cast<blkid_loff_t>(offset),
                             static_cast<blkid_loff_t>(size)) != 0) {
    return internalError("blkid cannot probe " + path);
  }
  blkid_probe_enable_superblocks(probe.get(), 1);
  blkid_probe_set_superblocks_flags(probe.get(), BLKID_SUBLKS_TYPE | BLKID_SUBLKS_LABEL | BLKID_SUBLKS_UUID);
  blkid_probe_enable_partitions(probe.get(), 1);
  blkid_probe_set_partitions_flags(probe.get(), BLKID_PARTS_ENTRY_DETAILS);
  const int rc = blkid_do_safeprobe(probe.get());
  if (rc < 0) {
    // NOTE(kiln): -2 means ambiguous signatures (e.g. leftovers of two file systems); report
    // "nothing certain" rather than failing, as blkid(8) does.
    if (rc == -2) return ProbeResult{};
    return internalError("blkid failed to probe " + path);
  }
  if (rc == 1) return ProbeResult{};
  return ProbeResult{lookup(probe.get(), "PTTYPE"), lookup(probe.get(), "TYPE"),
                     lookup(probe.get(), "LABEL"), lookup(probe.get(), "UUID")};
}

}  // namespace kiln::agent
