// Tests of parseImageInfo and the checksum / compression helpers.
#include <catch2/catch.hpp>

#include "agent/image/image_info.h"

using namespace kiln;
using namespace kiln::agent;
using nlohmann::json;

namespace {

const std::string kSha256(64, 'a');
const std::string kSha512(128, 'b');
const std::string kMd5(32, 'c');

json base() {
  return {{"id", "img-1"}, {"urls", {"http://10.0.0.1/image.raw"}}, {"node_uuid", "n1"}};
}

}  // namespace

TEST_CASE("parseImageInfo reads os_hash_algo and os_hash_value", "[agent][image]") {
  json doc = base();
  doc["os_hash_algo"] = "sha512";
  doc["os_hash_value"] = std::string(128, 'B');
  doc["disk_format"] = "qcow2";
  doc["stream_raw_images"] = false;
  doc["compression"] = "zstd";
  auto info = parseImageInfo(doc, false);
  REQUIRE(info);
  CHECK(info->id == "img-1");
  CHECK(info->nodeUuid == "n1");
  CHECK(info->urls == std::vector<std::string>{"http://10.0.0.1/image.raw"});
  CHECK(info->diskFormat == DiskFormat::Qcow2);
  CHECK_FALSE(info->streamRawImages);
  CHECK(info->checksumAlgorithm == ChecksumAlgorithm::Sha512);
  CHECK(info->checksum == kSha512);  // lowercased
  CHECK(info->compression == Compression::Zstd);
}

TEST_CASE("parseImageInfo guesses the legacy checksum's algorithm by length or prefix",
          "[agent][image]") {
  json doc = base();
  doc["checksum"] = kSha256;
  auto info = parseImageInfo(doc, false);
  REQUIRE(info);
  CHECK(info->checksumAlgorithm == ChecksumAlgorithm::Sha256);
  CHECK(info->diskFormat == DiskFormat::Raw);
  CHECK(info->compression == Compression::Auto);

  doc["checksum"] = kSha512;
  REQUIRE(parseImageInfo(doc, false)->checksumAlgorithm == ChecksumAlgorithm::Sha512);
  doc["checksum"] = "sha256:" + kSha256;
  REQUIRE(parseImageInfo(doc, false)->checksum == kSha256);
  doc["checksum"] = kMd5;
  auto md5 = parseImageInfo(doc, true);
  REQUIRE(md5);
  CHECK(md5->checksumAlgorithm == ChecksumAlgorithm::Md5);
}

TEST_CASE("parseImageInfo refuses md5 unless allowed and says how to allow it", "[agent][image]") {
  for (const json& extra : {json{{"checksum", kMd5}}, json{{"checksum", "md5:" + kMd5}},
                            json{{"os_hash_algo", "md5"}, {"os_hash_value", kMd5}}}) {
    json doc = base();
    doc.update(extra);
    auto info = parseImageInfo(doc, false);
    REQUIRE_FALSE(info);
    CHECK(info.error().code == ErrorCode::InvalidArgument);
    CHECK_THAT(info.error().message, Catch::Contains("md5") && Catch::Contains("disabled") &&
                                         Catch::Contains("allow_md5_checksum") &&
                                         Catch::Contains("[agent]"));
    CHECK(parseImageInfo(doc, true));
  }
}

TEST_CASE("parseImageInfo rejects invalid documents", "[agent][image]") {
  auto rejects = [](json doc, const std::string& fragment) {
    auto info = parseImageInfo(doc, false);
    REQUIRE_FALSE(info);
    CHECK(info.error().code == ErrorCode::InvalidArgument);
    CHECK_THAT(info.error().message, Catch::Contains(fragment));
  };
  rejects(base(), "checksum");
  json doc = base();
  doc["checksum"] = kSha256;
  json bad = doc;
  bad["disk_format"] = "vmdk";
  rejects(bad, "vmdk");
  bad = doc;
  bad["urls"] = json::array();
  rejects(bad, "urls");
  bad = doc;
  bad["urls"] = {"ftp://x/y"};
  rejects(bad, "ftp://x/y");
  bad = doc;
  bad["compression"] = "lz4";
  rejects(bad, "lz4");
  bad = doc;
  bad["checksum"] = "sha256:abc";
  rejects(bad, "64 hex digits");
  bad = doc;
  bad["checksum"] = std::string(64, 'z');
  rejects(bad, "Invalid sha256");
  bad = doc;
  bad["os_hash_algo"] = "sha1";
  bad["os_hash_value"] = std::string(40, 'a');
  rejects(bad, "sha1");
}

TEST_CASE("detectCompression recognises zstd, gzip and xz magic", "[agent][image]") {
  CHECK(detectCompression(std::string_view("\x28\xb5\x2f\xfd\x00", 5)) == Compression::Zstd);
  CHECK(detectCompression(std::string_view("\x1f\x8b\x08", 3)) == Compression::Gzip);
  CHECK(detectCompression(std::string_view("\xfd"
                                           "7zXZ\x00\x00",
                                           7)) == Compression::Xz);
  CHECK(detectCompression("QFI\xfb") == Compression::None);
  CHECK(detectCompression("") == Compression::None);
}

TEST_CASE("parseImageInfo reads a partition image's type and root size", "[agent][image][partition]") {
  json doc = base();
  doc["os_hash_algo"] = "sha256";
  doc["os_hash_value"] = kSha256;
  auto whole = parseImageInfo(doc, false);
  REQUIRE(whole);
  CHECK(whole->imageType == ImageType::WholeDisk);
  doc["image_type"] = "whole-disk";
  CHECK(parseImageInfo(doc, false)->imageType == ImageType::WholeDisk);
  doc["image_type"] = "partition";
  doc["root_mb"] = 10240;
  auto partition = parseImageInfo(doc, false);
  REQUIRE(partition);
  CHECK(partition->imageType == ImageType::Partition);
  CHECK(partition->rootMb == 10240);
  for (const json& bad : {json(), json(0), json(-5), json("10240")}) {
    INFO(bad.dump());
    if (bad.is_null()) {
      doc.erase("root_mb");
    } else {
      doc["root_mb"] = bad;
    }
    auto refused = parseImageInfo(doc, false);
    REQUIRE_FALSE(refused);
    CHECK_THAT(refused.error().message, Catch::Contains("root_mb"));
  }
  doc["image_type"] = "netboot";
  doc["root_mb"] = 1;
  auto unknown = parseImageInfo(doc, false);
  REQUIRE_FALSE(unknown);
  CHECK_THAT(unknown.error().message, Catch::Contains("image_type"));
}
