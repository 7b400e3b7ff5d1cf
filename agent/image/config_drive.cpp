// File: agent/image/config_drive.cpp
//
// loadConfigDrive: fetch (with the image download's credential rules) or take the text, then
// base64 and gzip (shared/core) in memory.
#include "agent/image/config_drive.h"

#include <algorithm>
#include <cctype>

#include "agent/image/image_info.h"
#include "shared/core/base64.h"
#include "shared/core/gzip.h"
#include "shared/core/strings.h"

namespace kiln::agent {
namespace {

Result<std::string> fetch(StepContext& ctx, const std::string& given,
                          const std::optional<BasicCredentials>& credentials) {
  if (ctx.http == nullptr) return internalError("No HTTP client to fetch the config drive with");
  HttpRequest request = KILN_TRY(downloadRequest(given, credentials));
  const std::string& url = request.url;  // without user information: quoted in messages
  request.timeout = std::chrono::seconds(60);
  request.idleTimeout = std::chrono::seconds(60);
  // Base64 text is 4/3 of the data; allow for it before decoding.
  return downloadWhole(*ctx.http, request,
                       {kMaxConfigDriveBytes / 3 * 4 + 4096,
                        "The config drive at " + url + " is larger than " +
                            std::to_string(kMaxConfigDriveBytes) + " bytes",
                        "Cannot download the config drive from " + url});
}

}  // namespace

Result<std::string> loadConfigDrive(StepContext& ctx, const std::string& configdrive,
                                    const std::optional<BasicCredentials>& credentials) {
  const std::string lower = asciiLower(std::string_view(configdrive).substr(0, 8));
  const bool isUrl = lower.starts_with("http://") || lower.starts_with("https://");
  std::string data = isUrl ? KILN_TRY(fetch(ctx, configdrive, credentials)) : configdrive;
  auto decoded = base64Decode(data, Base64Mode::Lenient);
  if (decoded) {
    data = std::move(*decoded);
  } else if (!isUrl) {
    return invalid("The config drive is neither a URL nor base64 text");
  }
  // else: a fetched file that is not base64 text is taken as the (possibly gzipped) image.
  if (detectCompression(data) != Compression::Gzip) {
    if (data.size() > kMaxConfigDriveBytes) {
      return invalid("The config drive is larger than " + std::to_string(kMaxConfigDriveBytes) +
                     " bytes");
    }
    return data;  // plain base64 of an ISO: accepted as well
  }
  auto inflated = gunzip(data, kMaxConfigDriveBytes);
  if (!inflated) {
    const std::string& why = inflated.error().message;
    if (why.starts_with("The gzip data inflates")) {
      return invalid("The config drive is larger than " + std::to_string(kMaxConfigDriveBytes) +
                     " bytes");
    }
    return invalid(why + " in the config drive");
  }
  return inflated;
}

}  // namespace kiln::agent
