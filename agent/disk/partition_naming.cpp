#include "agent/disk/partition_naming.h"

#include <cctype>

namespace kiln::agent {
namespace {

bool isDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

}  // namespace

std::string partitionPath(std::string_view disk, int number) {
  std::string path(disk);
  if (!path.empty() && isDigit(path.back())) path += 'p';
  return path + std::to_string(number);
}

bool isMdDevice(std::string_view path) {
  if (path.starts_with("/dev/md")) return true;
  const size_t slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return name.size() > 2 && name.starts_with("md") && isDigit(name[2]);
}

std::string holderDisk(std::string_view partition) {
  size_t end = partition.size();
  while (end > 0 && isDigit(partition[end - 1])) --end;
  if (end == partition.size() || end == 0) return std::string(partition);
  // "nvme0n1p2": digits, then 'p', then a digit before it -> strip "p2".
  if (partition[end - 1] == 'p' && end >= 2 && isDigit(partition[end - 2])) {
    return std::string(partition.substr(0, end - 1));
  }
  // "nvme0n1", "loop0", "mmcblk0" are whole disks: their trailing digits are no partition.
  const std::string_view stem = partition.substr(0, end);
  for (std::string_view whole : {"nvme", "loop", "mmcblk", "md", "nbd"}) {
    const auto slash = stem.rfind('/');
    const std::string_view leaf = slash == std::string_view::npos ? stem : stem.substr(slash + 1);
    if (leaf.starts_with(whole)) return std::string(partition);
  }
  return std::string(stem);
}

}  // namespace kiln::agent
