#include "shared/core/tar.h"

#include <algorithm>
#include <cstring>
#include <optional>

namespace kiln {
namespace {

constexpr size_t kBlock = 512;

/// `value` in octal, zero-padded to width-1 digits and a NUL, into field[0..width).
void putOctal(char* field, size_t width, uint64_t value) {
  std::string digits(width - 1, '0');
  for (size_t i = width - 1; i-- > 0 && value != 0; value >>= 3) {
    digits[i] = static_cast<char>('0' + (value & 7));
  }
  std::memcpy(field, digits.data(), width - 1);
  field[width - 1] = '\0';
}

unsigned headerChecksum(const char* header) {
  unsigned sum = 0;
  for (size_t i = 0; i < kBlock; ++i) {
    // The checksum field (148..155) counts as spaces.
    sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(header[i]);
  }
  return sum;
}

/// An octal field (spaces and NULs around the digits allowed, as writers differ).
std::optional<uint64_t> readOctal(const char* field, size_t width) {
  size_t i = 0;
  while (i < width && field[i] == ' ') ++i;
  uint64_t value = 0;
  size_t digits = 0;
  for (; i < width && field[i] >= '0' && field[i] <= '7'; ++i, ++digits) {
    if (value > (UINT64_MAX >> 3)) return std::nullopt;
    value = (value << 3) | static_cast<uint64_t>(field[i] - '0');
  }
  for (; i < width; ++i) {
    if (field[i] != ' ' && field[i] != '\0') return std::nullopt;
  }
  if (digits == 0) return std::nullopt;
  return value;
}

Error badTar(const std::string& why) {
  return Error{ErrorCode::InvalidArgument, "Invalid tar archive: " + why};
}

size_t padded(uint64_t size) { return static_cast<size_t>((size + kBlock - 1) / kBlock * kBlock); }

/// Walks the archive; `visit(member, content)` for each member.
template <typename Visit>
Result<void> walkTar(std::string_view archive, size_t maxMembers, Visit&& visit) {
  size_t offset = 0;
  size_t members = 0;
  while (true) {
    if (archive.size() - offset < kBlock)
      return std::unexpected(badTar("no end-of-archive marker"));
    const char* header = archive.data() + offset;
    if (std::all_of(header, header + kBlock, [](char c) { return c == '\0'; })) return {};
    const auto stored = readOctal(header + 148, 8);
    if (!stored || *stored != headerChecksum(header)) {
      return std::unexpected(badTar("bad header checksum at offset " + std::to_string(offset)));
    }
    const auto size = readOctal(header + 124, 12);
    if (!size) return std::unexpected(badTar("malformed size at offset " + std::to_string(offset)));
    if (++members > maxMembers) {
      return std::unexpected(badTar("more than " + std::to_string(maxMembers) + " members"));
    }
    TarMember member;
    member.name.assign(header, strnlen(header, 100));
    member.size = *size;
    member.type = header[156];
    offset += kBlock;
    if (*size > archive.size() - offset || padded(*size) > archive.size() - offset) {
      return std::unexpected(badTar("member '" + member.name + "' is truncated"));
    }
    if (!visit(member, archive.substr(offset, static_cast<size_t>(*size)))) return {};
    offset += padded(*size);
  }
}

}  // namespace

Result<std::string> tarArchive(const std::vector<TarEntry>& entries, std::time_t mtime) {
  std::string out;
  for (const auto& entry : entries) {
    if (entry.name.empty() || entry.name.size() > 100 ||
        entry.name.find('\0') != std::string::npos) {
      return invalid("A tar member name must be 1 to 100 bytes without NUL, got '" + entry.name +
                     "'");
    }
    char header[kBlock] = {};
    std::memcpy(header, entry.name.data(), entry.name.size());
    putOctal(header + 100, 8, 0644);
    putOctal(header + 108, 8, 0);
    putOctal(header + 116, 8, 0);
    putOctal(header + 124, 12, entry.content.size());
    putOctal(header + 136, 12, static_cast<uint64_t>(std::max<std::time_t>(mtime, 0)));
    header[156] = '0';
    std::memcpy(header + 257, "ustar", 6);  // with its NUL
    std::memcpy(header + 263, "00", 2);
    std::memcpy(header + 265, "root", 4);
    std::memcpy(header + 297, "root", 4);
    // Six octal digits, NUL, space (what tar(1) writes).
    putOctal(header + 148, 7, headerChecksum(header));
    header[155] = ' ';
    out.append(header, kBlock);
    out.append(entry.content);
    out.append(padded(entry.content.size()) - entry.content.size(), '\0');
  }
  out.append(2 * kBlock, '\0');
  return out;
}

Result<std::vector<TarMember>> listTar(std::string_view archive, size_t maxMembers) {
  std::vector<TarMember> members;
  KILN_TRY_VOID(walkTar(archive, maxMembers, [&](const TarMember& m, std::string_view) {
    members.push_back(m);
    return true;
  }));
  return members;
}

Result<std::string> tarMemberContent(std::string_view archive, std::string_view name) {
  std::optional<std::string> found;
  KILN_TRY_VOID(walkTar(archive, SIZE_MAX, [&](const TarMember& m, std::string_view content) {
    if (m.name != name || (m.type != '0' && m.type != '\0')) return true;
    found = std::string(content);
    return false;
  }));
  if (!found)
    return fail(ErrorCode::NotFound, "No member '" + std::string(name) + "' in the archive");
  return *found;
}

}  // namespace kiln
