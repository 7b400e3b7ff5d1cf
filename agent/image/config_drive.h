// File: agent/image/config_drive.h
//
// Config drives as Ironic sends them: an http(s) URL to fetch, or the base64 text of a
// gzip-compressed ISO 9660 image. Decoded in memory with a size cap, then written with
// writeRegion (agent/image/image_writer.h) to the partition the deploy step chose.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "agent/hardware/step_context.h"
#include "shared/core/error.h"
#include "shared/http/http_client.h"

namespace kiln::agent {

/// Largest config drive accepted (decoded and decompressed), as in Ironic.
inline constexpr size_t kMaxConfigDriveBytes = 64 * 1024 * 1024;

/// The config drive's image bytes from Ironic's `configdrive` value (URL or base64 of gzip).
/// A URL is downloaded with its own user information as Basic credentials, else with
/// `credentials` (the image server's, image_info's image_server_auth_strategy), following
/// redirects with the credentials kept for the URL's origin (shared/http/http_client.h).
Result<std::string> loadConfigDrive(StepContext& ctx, const std::string& configdrive,
                                    const std::optional<BasicCredentials>& credentials = {});

}  // namespace kiln::agent
