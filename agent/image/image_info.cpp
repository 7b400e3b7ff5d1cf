// File: agent/image/image_info.cpp
//
// parseImageInfo and its helpers. The checksum rules follow Ironic: os_hash_algo +
// os_hash_value win over the legacy "checksum" field, whose algorithm is given as "algo:hex"
// or guessed from the digest length; md5 is refused unless the operator allows it. Either may
// instead be the http(s) URL of a checksum file (ironic-python-agent's _fetch_checksum).
#include "agent/image/image_info.h"

#include <algorithm>
#include <cctype>

#include "shared/core/secrets.h"
#include "shared/core/strings.h"
#include "shared/http/url.h"

namespace kiln::agent {
namespace {

using nlohmann::json;

constexpr std::string_view kMd5Disabled =
    "md5 image checksums are disabled; the operator enables them with allow_md5_checksum = "
    "true in the [agent] section of the configuration";

bool isHex(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isxdigit(static_cast<unsigned char>(c)) != 0;
  });
}

size_t hexLength(ChecksumAlgorithm algorithm) {
  switch (algorithm) {
    case ChecksumAlgorithm::Md5:
      return 32;
    case ChecksumAlgorithm::Sha256:
      return 64;
    case ChecksumAlgorithm::Sha512:
      return 128;
  }
  return 0;
}

Result<ChecksumAlgorithm> parseAlgorithm(std::string_view name, bool md5Allowed) {
  const std::string n = asciiLower(name);
  if (n == "sha256") return ChecksumAlgorithm::Sha256;
  if (n == "sha512") return ChecksumAlgorithm::Sha512;
  if (n == "md5") {
    if (!md5Allowed) return invalid(std::string(kMd5Disabled));
    return ChecksumAlgorithm::Md5;
  }
  return invalid("Unsupported image checksum algorithm \"" + std::string(name) +
                 "\" (supported: sha256, sha512, md5)");
}

Result<std::string> checkDigest(ChecksumAlgorithm algorithm, std::string_view hex) {
  if (!isHex(hex) || hex.size() != hexLength(algorithm)) {
    return invalid("Invalid " + std::string(toString(algorithm)) + " image checksum \"" +
                   std::string(hex) + "\": expected " + std::to_string(hexLength(algorithm)) +
                   " hex digits");
  }
  return asciiLower(hex);
}

bool isHttpUrl(std::string_view s) {
  const std::string l = asciiLower(s.substr(0, 8));
  return l.starts_with("http://") || l.starts_with("https://");
}

/// A checksum file's URL, checked up front (the message masks user information).
Result<std::string> checksumFileUrl(const std::string& url, const char* key) {
  if (auto parsed = parseHttpUrl(url, UserInfo::Accept); !parsed) {
    return invalid("image_info." + std::string(key) +
                   " is not a valid checksum file URL: " + parsed.error().message);
  }
  return url;
}

/// image_server_auth_strategy and its credentials (ironic-python-agent's rules, stricter: an
/// unknown strategy is refused rather than ignored).
Result<std::optional<BasicCredentials>> imageServerAuth(const json& doc) {
  const auto strategyIt = doc.find("image_server_auth_strategy");
  if (strategyIt == doc.end() || strategyIt->is_null()) return std::nullopt;
  if (!strategyIt->is_string()) {
    return invalid("image_info.image_server_auth_strategy must be a string");
  }
  const std::string strategy = strategyIt->get<std::string>();
  if (strategy.empty() || strategy == "noauth") return std::nullopt;
  if (strategy != "http_basic") {
    return invalid("Unsupported image_info.image_server_auth_strategy \"" + strategy +
                   "\" (supported: noauth, http_basic)");
  }
  std::vector<std::string> missing;
  std::string credentials[2];
  const char* keys[2] = {"image_server_user", "image_server_password"};
  for (int i = 0; i < 2; ++i) {
    const auto it = doc.find(keys[i]);
    if (it != doc.end() && !it->is_null() && !it->is_string()) {
      return invalid(std::string("image_info.") + keys[i] + " must be a string");
    }
    if (it != doc.end() && it->is_string()) credentials[i] = it->get<std::string>();
    if (credentials[i].empty()) missing.push_back(keys[i]);
  }
  if (!missing.empty()) {
    std::string names;
    for (const auto& m : missing) names += (names.empty() ? "" : " and ") + m;
    return invalid("image_info.image_server_auth_strategy is http_basic but " + names +
                   (missing.size() == 1 ? " is" : " are") + " missing or empty");
  }
  return BasicCredentials{credentials[0], credentials[1]};
}

Result<std::string> optionalString(const json& doc, const char* key) {
  const auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return std::string();
  if (!it->is_string()) return invalid(std::string("image_info.") + key + " must be a string");
  return it->get<std::string>();
}

}  // namespace

std::string_view toString(ChecksumAlgorithm algorithm) {
  switch (algorithm) {
    case ChecksumAlgorithm::Md5:
      return "md5";
    case ChecksumAlgorithm::Sha256:
      return "sha256";
    case ChecksumAlgorithm::Sha512:
      return "sha512";
  }
  return "unknown";
}

std::string_view toString(Compression compression) {
  switch (compression) {
    case Compression::Auto:
      return "auto";
    case Compression::None:
      return "none";
    case Compression::Zstd:
      return "zstd";
    case Compression::Gzip:
      return "gzip";
    case Compression::Xz:
      return "xz";
  }
  return "unknown";
}

Result<Compression> parseCompression(std::string_view name) {
  const std::string n = asciiLower(name);
  if (n == "auto" || n.empty()) return Compression::Auto;
  if (n == "none") return Compression::None;
  if (n == "zstd") return Compression::Zstd;
  if (n == "gzip" || n == "zlib") return Compression::Gzip;
  if (n == "xz") return Compression::Xz;
  return invalid("Unsupported image compression \"" + std::string(name) +
                 "\" (supported: zstd, gzip, xz, none)");
}

Compression detectCompression(std::string_view b) {
  auto starts = [&](std::string_view magic) { return b.substr(0, magic.size()) == magic; };
  if (starts(std::string_view("\x28\xb5\x2f\xfd", 4))) return Compression::Zstd;
  if (starts(std::string_view("\x1f\x8b", 2))) return Compression::Gzip;
  if (starts(std::string_view("\xfd\x37\x7a\x58\x5a\x00", 6))) return Compression::Xz;
  return Compression::None;
}

Result<std::pair<ChecksumAlgorithm, std::string>> parseChecksumSpec(std::string_view spec,
                                                                    bool md5Allowed) {
  ChecksumAlgorithm algorithm;
  std::string_view hex = spec;
  if (const auto colon = spec.find(':'); colon != std::string_view::npos) {
    algorithm = KILN_TRY(parseAlgorithm(spec.substr(0, colon), md5Allowed));
    hex = spec.substr(colon + 1);
  } else if (spec.size() == 32) {
    algorithm = KILN_TRY(parseAlgorithm("md5", md5Allowed));
  } else if (spec.size() == 64) {
    algorithm = ChecksumAlgorithm::Sha256;
  } else if (spec.size() == 128) {
    algorithm = ChecksumAlgorithm::Sha512;
  } else {
    return invalid("Cannot tell the algorithm of image checksum \"" + std::string(spec) +
                   "\": give \"algo:hex\" or a 32, 64 or 128 digit hex digest");
  }
  auto digest = KILN_TRY(checkDigest(algorithm, hex));
  return std::pair{algorithm, std::move(digest)};
}

Result<ImageInfo> parseImageInfo(const json& doc, bool md5Allowed) {
  if (!doc.is_object()) return invalid("image_info must be an object");
  ImageInfo info;
  info.id = KILN_TRY(optionalString(doc, "id"));
  info.nodeUuid = KILN_TRY(optionalString(doc, "node_uuid"));

  const auto urls = doc.find("urls");
  if (urls == doc.end() || !urls->is_array() || urls->empty()) {
    return invalid("image_info.urls must be a non-empty list of http(s) URLs");
  }
  for (const auto& url : *urls) {
    if (!url.is_string()) return invalid("image_info.urls must contain strings");
    const std::string u = url.get<std::string>();
    const std::string l = asciiLower(u);
    if (!l.starts_with("http://") && !l.starts_with("https://")) {
      return invalid("Unsupported image URL \"" + maskUrlsInText(u) +
                     "\": only http:// and https:// are allowed");
    }
    info.urls.push_back(u);
  }

  const std::string format = asciiLower(KILN_TRY(optionalString(doc, "disk_format")));
  if (format.empty() || format == "raw") {
    info.diskFormat = DiskFormat::Raw;
  } else if (format == "qcow2") {
    info.diskFormat = DiskFormat::Qcow2;
  } else {
    return invalid("Unsupported image disk_format \"" + format + "\" (supported: raw, qcow2)");
  }

  if (const auto it = doc.find("stream_raw_images"); it != doc.end() && !it->is_null()) {
    if (!it->is_boolean()) return invalid("image_info.stream_raw_images must be a boolean");
    info.streamRawImages = it->get<bool>();
  }

  const std::string imageType = KILN_TRY(optionalString(doc, "image_type"));
  if (imageType == "partition") {
    info.imageType = ImageType::Partition;
    const auto root = doc.find("root_mb");
    if (root == doc.end() || !root->is_number_integer() || root->get<int64_t>() <= 0) {
      return invalid("image_info.root_mb must be a positive integer for a partition image");
    }
    info.rootMb = root->get<uint64_t>();
  } else if (!imageType.empty() && imageType != "whole-disk") {
    return invalid("Unsupported image_type \"" + imageType + "\" (supported: whole-disk, partition)");
  }

  const std::string compression = KILN_TRY(optionalString(doc, "compression"));
  info.compression = KILN_TRY(parseCompression(compression));

  const std::string algo = KILN_TRY(optionalString(doc, "os_hash_algo"));
  const std::string value = KILN_TRY(optionalString(doc, "os_hash_value"));
  const std::string legacy = KILN_TRY(optionalString(doc, "checksum"));
  if (!algo.empty() && !value.empty()) {
    info.checksumAlgorithm = KILN_TRY(parseAlgorithm(algo, md5Allowed));
    if (isHttpUrl(value)) {
      info.checksumUrl = KILN_TRY(checksumFileUrl(value, "os_hash_value"));
      info.checksumAlgorithmFixed = true;
    } else {
      info.checksum = KILN_TRY(checkDigest(info.checksumAlgorithm, value));
    }
  } else if (isHttpUrl(legacy)) {
    info.checksumUrl = KILN_TRY(checksumFileUrl(legacy, "checksum"));
  } else if (!legacy.empty()) {
    auto [algorithm, digest] = KILN_TRY(parseChecksumSpec(legacy, md5Allowed));
    info.checksumAlgorithm = algorithm;
    info.checksum = std::move(digest);
  } else {
    return invalid(
        "image_info has no checksum: os_hash_algo + os_hash_value or checksum is "
        "required");
  }
  info.imageServerAuth = KILN_TRY(imageServerAuth(doc));
  return info;
}

Result<HttpRequest> imageRequest(const ImageInfo& info, std::string_view url) {
  HttpRequest request = KILN_TRY(downloadRequest(url, info.imageServerAuth));
  request.timeout = info.connectTimeout;
  request.idleTimeout = info.idleTimeout;
  request.verifyTls = info.verifyTls;
  request.caFile = info.caFile;
  return request;
}

Result<std::string> downloadWhole(HttpClient& http, const HttpRequest& request,
                                  const WholeDownload& how) {
  std::string body;
  auto response = http.stream(request, [&](std::string_view chunk) -> Result<void> {
    if (body.size() + chunk.size() > how.maxBytes) return invalid(how.tooLarge);
    body.append(chunk);
    return {};
  });
  if (!response) {
    if (response.error().code == ErrorCode::InvalidArgument)
      return std::unexpected(response.error());
    return fail(response.error().code, how.failed + ": " + response.error().message);
  }
  if (response->status != 200) {
    return fail(response->status == 404 ? how.notFound : ErrorCode::Unavailable,
                how.failed + ": HTTP status " + std::to_string(response->status));
  }
  return body;
}

}  // namespace kiln::agent
