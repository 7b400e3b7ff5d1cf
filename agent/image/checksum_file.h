// File: agent/image/checksum_file.h
//
// Image checksums given as the URL of a checksum file (image_info's os_hash_value or legacy
// checksum starting with http:// or https://), read as ironic-python-agent's _fetch_checksum
// reads them: a file holding just one digest, or lines in the formats of sha256sum
// ("DIGEST  name", "DIGEST *name") and BSD/CentOS ("SHA256 (name) = DIGEST"), of which the line
// naming the image's file (the last path segment of its first URL) counts; '#' lines are
// comments. The file is downloaded like the image (same credentials, redirects, TLS settings)
// and is at most kMaxChecksumFileBytes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "agent/hardware/step_context.h"
#include "agent/image/image_info.h"
#include "shared/core/error.h"

namespace kiln::agent {

/// Largest checksum file accepted (distributions' SHA256SUMS files are a few KiB).
inline constexpr size_t kMaxChecksumFileBytes = 1024 * 1024;

/// The hex digest (32, 64 or 128 digits, as written) for `fileName` in a checksum file's
/// `text`. InvalidArgument when the file is empty, holds no valid digest, or has no line for
/// `fileName`; `source` names the file in messages.
Result<std::string> findChecksumInFile(std::string_view text, std::string_view fileName,
                                       std::string_view source);

/// Downloads info.checksumUrl and sets info.checksum (and, unless checksumAlgorithmFixed, the
/// algorithm from the digest's length; md5 only when ctx.md5Allowed). Nothing to do without a
/// checksumUrl. Unavailable/NotFound/DeadlineExceeded when the file cannot be downloaded.
Result<void> resolveChecksumUrl(StepContext& ctx, ImageInfo& info);

}  // namespace kiln::agent
