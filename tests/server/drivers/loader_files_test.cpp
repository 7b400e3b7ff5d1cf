// [pxe] loader_file_paths: parsing Ironic's dictionary form and copying the loaders into a
// temporary tftp_root.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "server/config.h"
#include "server/config/option_values.h"
#include "server/drivers/netboot/loader_files.h"
#include "shared/core/file.h"
#include "tests/support/temp_dir.h"

using namespace kiln;
using namespace kiln::server;

TEST_CASE("loader_file_paths parses Ironic's dictionary form", "[netboot][loaders]") {
  auto parsed = parseLoaderFilePaths(" snponly.efi:/usr/lib/ipxe/snponly.efi, grub/grubx64.efi : /a/b ,");
  REQUIRE(parsed);
  REQUIRE(parsed->size() == 2);
  CHECK((*parsed)[0] == std::pair<std::string, std::string>{"snponly.efi", "/usr/lib/ipxe/snponly.efi"});
  CHECK((*parsed)[1] == std::pair<std::string, std::string>{"grub/grubx64.efi", "/a/b"});
  CHECK(parseLoaderFilePaths("")->empty());
  for (const char* bad : {"undionly.kpxe", "/etc/x:/a", "../x:/a", "a/../x:/a", "a//b:/a", ":/a",
                          "x:relative/path", "x:", "x:/a,x:/b"}) {
    INFO(bad);
    auto refused = parseLoaderFilePaths(bad);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == ErrorCode::InvalidArgument);
  }
}

TEST_CASE("the config reads [pxe] loader_file_paths and names a bad one", "[netboot][loaders][config]") {
  auto unset = parseConfig("", "test");
  REQUIRE(unset);
  CHECK_FALSE(unset->loaderFilePathsSet);
  auto set = parseConfig("[pxe]\nloader_file_paths = ipxe.efi:/usr/lib/ipxe/ipxe.efi\n", "test");
  REQUIRE(set);
  CHECK(set->loaderFilePathsSet);
  REQUIRE(set->loaderFilePaths.size() == 1);
  auto bad = parseConfig("[pxe]\nloader_file_paths = ../ipxe.efi:/x\n", "test");
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("loader_file_paths"));
}

TEST_CASE("installLoaderFiles copies the loaders into tftp_root", "[netboot][loaders]") {
  test::TempDir dir("kiln-loaders");
  const std::string source = dir.file("snponly.efi");
  std::ofstream(source, std::ios::binary) << "MZ iPXE";
  Config config;
  config.tftpRoot = dir.file("tftp");
  config.loaderFilePathsSet = true;
  config.loaderFilePaths = {{"snponly.efi", source}, {"efi/boot/bootx64.efi", source}};
  auto copied = installLoaderFiles(config);
  REQUIRE(copied);
  CHECK(*copied == std::vector<std::string>{"snponly.efi", "efi/boot/bootx64.efi"});
  CHECK(readFile(dir.file("tftp/snponly.efi")) == std::optional<std::string>("MZ iPXE"));
  CHECK(readFile(dir.file("tftp/efi/boot/bootx64.efi")) == std::optional<std::string>("MZ iPXE"));
  struct stat st {};
  REQUIRE(::stat(dir.file("tftp/snponly.efi").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0644);
  CHECK_FALSE(std::filesystem::exists(dir.file("tftp/snponly.efi.kiln-tmp")));

  config.loaderFilePaths.push_back({"missing.efi", dir.file("absent")});
  auto missing = installLoaderFiles(config);
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message, Catch::Contains(dir.file("absent")));
}

TEST_CASE("unset, the Debian defaults that exist are copied", "[netboot][loaders]") {
  test::TempDir dir("kiln-loaders");
  Config config;
  config.tftpRoot = dir.file("tftp");
  auto copied = installLoaderFiles(config);
  REQUIRE(copied);
  size_t present = 0;
  for (const auto& [dest, source] : kDefaultLoaderFiles) {
    const bool exists = std::filesystem::is_regular_file(source);
    present += exists ? 1 : 0;
    CHECK(std::filesystem::exists(dir.file("tftp/" + std::string(dest))) == exists);
  }
  CHECK(copied->size() == present);
}
