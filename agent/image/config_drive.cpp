// File: agent/image/config_drive.cpp
//
// loadConfigDrive and its in-memory base64 and gzip decoding.
#include "agent/image/config_drive.h"

#include <openssl/evp.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <memory>

#include "agent/image/image_info.h"

namespace kiln::agent {
namespace {

Result<std::string> fetch(StepContext& ctx, const std::string& url) {
  if (ctx.http == nullptr) return internalError("No HTTP client to fetch the config drive with");
  HttpRequest request;
  request.url = url;
  request.timeout = std::chrono::seconds(60);
  request.idleTimeout = std::chrono::seconds(60);
  std::string body;
  auto response = ctx.http->stream(request, [&](std::string_view chunk) -> Result<void> {
    // Base64 text is 4/3 of the data; allow for it before decoding.
    if (body.size() + chunk.size() > kMaxConfigDriveBytes / 3 * 4 + 4096) {
      return invalid("The config drive at " + url + " is larger than " +
                     std::to_string(kMaxConfigDriveBytes) + " bytes");
    }
    body.append(chunk);
    return {};
  });
  if (!response) {
    if (response.error().code == ErrorCode::InvalidArgument)
      return std::unexpected(response.error());
    return fail(response.error().code,
                "Cannot download the config drive from " + url + ": " + response.error().message);
  }
  if (response->status != 200) {
    return fail(ErrorCode::Unavailable, "Cannot download the config drive from " + url +
                                            ": HTTP status " + std::to_string(response->status));
  }
  return body;
}

}  // namespace

Result<std::string> decodeBase64(std::string_view text) {
  // OpenSSL's decoder; URL-safe characters are mapped to the standard alphabet first.
  std::string clean;
  clean.reserve(text.size());
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    clean += c == '-' ? '+' : c == '_' ? '/' : c;
  }
  std::string out(clean.size() / 4 * 3 + 3, '\0');
  std::unique_ptr<EVP_ENCODE_CTX, void (*)(EVP_ENCODE_CTX*)> ctx(EVP_ENCODE_CTX_new(), EVP_ENCODE_CTX_free);
  if (!ctx) return internalError("Cannot allocate a base64 decoder");
  EVP_DecodeInit(ctx.get());
  int produced = 0;
  int tail = 0;
  auto* dst = reinterpret_cast<unsigned char*>(out.data());
  if (EVP_DecodeUpdate(ctx.get(), dst, &produced, reinterpret_cast<const unsigned char*>(clean.data()),
                       static_cast<int>(clean.size())) < 0 ||
      EVP_DecodeFinal(ctx.get(), dst + produced, &tail) != 1) {
    return invalid("The config drive is neither a URL nor base64 text");
  }
  out.resize(static_cast<size_t>(produced + tail));
  return out;
}

Result<std::string> gunzip(std::string_view data, size_t maxBytes) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK) return internalError("Cannot initialise zlib");
  std::string out;
  char chunk[64 * 1024];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  int ret = Z_OK;
  while (ret != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof chunk;
    ret = inflate(&z, Z_NO_FLUSH);
    if (ret != Z_OK && ret != Z_STREAM_END) {
      inflateEnd(&z);
      return invalid(ret == Z_BUF_ERROR ? std::string("Truncated gzip data in the config drive")
                                        : std::string("Corrupt gzip data in the config drive: ") +
                                              (z.msg ? z.msg : "inflate failed"));
    }
    const size_t produced = sizeof chunk - z.avail_out;
    if (out.size() + produced > maxBytes) {
      inflateEnd(&z);
      return invalid("The config drive is larger than " + std::to_string(maxBytes) + " bytes");
    }
    out.append(chunk, produced);
  }
  inflateEnd(&z);
  return out;
}

Result<std::string> loadConfigDrive(StepContext& ctx, const std::string& configdrive) {
  std::string lower = configdrive.substr(0, 8);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const bool isUrl = lower.starts_with("http://") || lower.starts_with("https://");
  std::string data = isUrl ? KILN_TRY(fetch(ctx, configdrive)) : configdrive;
  auto decoded = decodeBase64(data);
  if (decoded) {
    data = std::move(*decoded);
  } else if (!isUrl) {
    return std::unexpected(decoded.error());
  }
  // else: a fetched file that is not base64 text is taken as the (possibly gzipped) image.
  if (detectCompression(data) != Compression::Gzip) {
    if (data.size() > kMaxConfigDriveBytes) {
      return invalid("The config drive is larger than " + std::to_string(kMaxConfigDriveBytes) +
                     " bytes");
    }
    return data;  // plain base64 of an ISO: accepted as well
  }
  return gunzip(data, kMaxConfigDriveBytes);
}

}  // namespace kiln::agent
