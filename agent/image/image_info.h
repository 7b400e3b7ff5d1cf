// File: agent/image/image_info.h
//
// What the server says about the image to write (Ironic's `image_info` of the write_image
// deploy step): where to download it, its format, its checksum and its compression. Parsing
// validates everything up front, so the write pipeline never meets a half-valid description.
//
// Credentials, as ironic-python-agent uses them: a URL's own user information
// ("http://user:password@host/...", percent-decoded) is sent as HTTP Basic authentication;
// a URL without any gets the image server's credentials when the server sends
// image_server_auth_strategy "http_basic" with image_server_user and image_server_password.
// Both go only to the URL's origin (shared/http/http_client.h: redirects).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "shared/core/error.h"
#include "shared/http/http_client.h"

namespace kiln::agent {

enum class DiskFormat { Raw, Qcow2 };
enum class ChecksumAlgorithm { Md5, Sha256, Sha512 };
/// Auto = detect by the magic bytes at the start of the download.
enum class Compression { Auto, None, Zstd, Gzip, Xz };
/// Ironic's image_type: a whole disk (with its own partition table and boot loader), or one
/// file system the agent puts in a root partition it makes, then boots with the image's GRUB.
enum class ImageType { WholeDisk, Partition };

struct ImageInfo {
  std::string id;
  std::vector<std::string> urls;  ///< tried in order; http:// or https://
  DiskFormat diskFormat = DiskFormat::Raw;
  bool streamRawImages = true;
  std::string nodeUuid;
  ChecksumAlgorithm checksumAlgorithm = ChecksumAlgorithm::Sha256;
  /// Lowercase hex. Empty = do not verify (only for writes by hand: parseImageInfo requires one,
  /// or a checksumUrl).
  std::string checksum;
  /// os_hash_value or checksum given as an http(s) URL of a checksum file: writeImage downloads
  /// it first (agent/image/checksum_file.h) and fills `checksum` from it.
  std::string checksumUrl;
  /// With checksumUrl: the digest's algorithm is checksumAlgorithm (os_hash_algo) when true,
  /// else it is told by the digest's length (the legacy checksum field).
  bool checksumAlgorithmFixed = false;
  /// image_server_auth_strategy http_basic: the credentials of URLs without user information.
  std::optional<BasicCredentials> imageServerAuth;
  Compression compression = Compression::Auto;
  /// Bounds connecting and the response header of each download.
  std::chrono::milliseconds connectTimeout{std::chrono::seconds(60)};
  /// Bounds each wait for body bytes (a stalled server fails; a long download does not).
  std::chrono::milliseconds idleTimeout{std::chrono::seconds(60)};
  bool verifyTls = true;
  std::string caFile;  ///< https: trust this CA bundle instead of the system's
  ImageType imageType = ImageType::WholeDisk;  ///< image_type: "whole-disk" (default) or "partition"
  uint64_t rootMb = 0;  ///< root_mb: the root partition of a partition image (required for one)
};

/// Parses the server's image_info document; md5 checksums only when `md5Allowed`.
Result<ImageInfo> parseImageInfo(const nlohmann::json& imageInfo, bool md5Allowed);

/// Parses "sha256:HEX", "sha512:HEX", "md5:HEX" or a bare hex digest (algorithm by length).
Result<std::pair<ChecksumAlgorithm, std::string>> parseChecksumSpec(std::string_view spec,
                                                                    bool md5Allowed);

/// The request that downloads `url` for `info` (the image, its checksum file or the config
/// drive): the URL's user information, else info.imageServerAuth, as Basic credentials; the
/// URL without user information; redirects followed; info's timeouts and TLS settings.
Result<HttpRequest> imageRequest(const ImageInfo& info, std::string_view url);

/// Parses "auto", "none", "zstd", "gzip" or "xz".
Result<Compression> parseCompression(std::string_view name);

/// "md5", "sha256", "sha512".
std::string_view toString(ChecksumAlgorithm algorithm);
/// "auto", "none", "zstd", "gzip", "xz".
std::string_view toString(Compression compression);

/// The compression announced by the first bytes of a stream (None when no magic matches).
Compression detectCompression(std::string_view firstBytes);

}  // namespace kiln::agent
