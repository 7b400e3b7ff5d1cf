// File: shared/core/tar.h
//
// The POSIX ustar archive format (POSIX.1-2001 pax's "ustar" interchange format), in memory,
// for the ramdisk's log bundle (agent/diagnostics/log_bundle.h writes it, kiln-server checks
// what it stores). Only what the bundle needs: regular files with names of at most 100 bytes,
// mode 0644, owner root. Written here rather than with libarchive because the agent is linked
// statically and Debian's static libarchive drags in a dozen more static libraries.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include "shared/core/error.h"

namespace kiln {

struct TarEntry {
  std::string name;  ///< relative path, 1 to 100 bytes, no NUL
  std::string content;
};

/// The ustar archive of `entries` (each header stamped with `mtime`), ended by two zero blocks,
/// as tar(1) reads it. InvalidArgument when a name is empty, longer than 100 bytes or holds a
/// NUL byte.
Result<std::string> tarArchive(const std::vector<TarEntry>& entries, std::time_t mtime);

struct TarMember {
  std::string name;
  uint64_t size = 0;
  char type = '0';  ///< the header's typeflag ('0' or '\0': a regular file)
};

/// The members of an archive, checking each header's checksum and that every member's content
/// is there. InvalidArgument "Invalid tar archive: <why>" for a bad checksum, a malformed size,
/// a truncated member, more than `maxMembers` members, or no end-of-archive marker. Contents
/// are not copied.
Result<std::vector<TarMember>> listTar(std::string_view archive, size_t maxMembers = 1000);

/// The content of the regular member `name`; NotFound when it is not in the archive, the
/// errors of listTar for a malformed one.
Result<std::string> tarMemberContent(std::string_view archive, std::string_view name);

}  // namespace kiln
