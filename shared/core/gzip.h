// File: shared/core/gzip.h
//
// In-memory gzip over zlib, for small documents: config drives (the server gzips the ISO it
// builds, the agent gunzips the one it receives). Images stream through the agent's
// decompressors (agent/image/decompressor.h) instead.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "shared/core/error.h"

namespace kiln {

/// gzip-compresses `data` (a gzip header and trailer, as gzip(1) writes; `level` 1-9).
/// Internal only when zlib itself fails.
Result<std::string> gzipCompress(std::string_view data, int level = 6);

/// Inflates gzip or zlib data (detected from the header). InvalidArgument "Truncated gzip
/// data", "Corrupt gzip data: <zlib's reason>", or "The gzip data inflates to more than N
/// bytes" (decompression stops there, so a bomb costs at most `maxBytes` of memory).
Result<std::string> gunzip(std::string_view data, size_t maxBytes);

}  // namespace kiln
