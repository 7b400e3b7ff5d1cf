// File: agent/image/write_image_command.cpp
//
// The write-image subcommand: argument parsing, a safety check that the device carries no
// mounted file system or active swap, SIGINT/SIGTERM as abort, and the JSON result line.
#include "agent/image/write_image_command.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/dns_resolver.h"
#include "agent/hardware/step_context.h"
#include "agent/image/image_info.h"
#include "agent/image/image_writer.h"
#include "shared/core/clock.h"
#include "shared/core/strings.h"
#include "shared/exec/command_runner.h"
#include "shared/http/http_client.h"

namespace kiln::agent {
namespace {

std::atomic<bool> gAbort{false};

extern "C" void onSignal(int) { gAbort.store(true); }

constexpr const char* kUsage =
    "usage: kiln-agent write-image --url URL --device PATH [--checksum ALGO:HEX|URL]\n"
    "                              [--compression auto|none|zstd|gzip|xz] [--format raw|qcow2]\n"
    "                              [--insecure] [--timeout SECONDS]\n";

/// The sysfs directory of a block device ("/sys/devices/.../sda"), or "" when not a device.
std::string sysfsPath(const struct stat& st) {
  if (!S_ISBLK(st.st_mode)) return "";
  std::error_code ec;
  const auto link = "/sys/dev/block/" + std::to_string(major(st.st_rdev)) + ":" +
                    std::to_string(minor(st.st_rdev));
  const auto canonical = std::filesystem::canonical(link, ec);
  return ec ? std::string() : canonical.string();
}

/// Whether `device` is, or contains (as a partition), a mounted file system or an active swap.
Result<void> refuseInUse(const std::string& device) {
  struct stat target {};
  if (::stat(device.c_str(), &target) != 0) return invalid("Cannot stat " + device);
  const std::string targetSys = sysfsPath(target);
  std::error_code ec;
  const auto targetReal = std::filesystem::weakly_canonical(device, ec);
  auto clash = [&](const std::string& source) {
    struct stat st {};
    if (source.empty() || source[0] != '/' || ::stat(source.c_str(), &st) != 0) return false;
    if (S_ISBLK(st.st_mode) && S_ISBLK(target.st_mode)) {
      if (st.st_rdev == target.st_rdev) return true;
      const std::string sys = sysfsPath(st);
      return !targetSys.empty() && sys.starts_with(targetSys + "/");
    }
    std::error_code e;
    return std::filesystem::weakly_canonical(source, e) == targetReal;
  };
  for (const char* table : {"/proc/self/mounts", "/proc/swaps"}) {
    std::ifstream in(table);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string source;
      fields >> source;
      if (clash(source)) {
        return invalid("Refusing to write to " + device + ": " + source + " is in use (" +
                       (std::string(table) == "/proc/swaps" ? "swap" : "mounted") + ")");
      }
    }
  }
  return {};
}

}  // namespace

int runWriteImageCommand(int argc, char** argv) {
  ImageInfo info;
  info.id = "write-image";
  std::string device;
  std::string checksum;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (arg == "--insecure") {
      info.verifyTls = false;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      return 0;
    }
    if (arg != "--url" && arg != "--device" && arg != "--checksum" && arg != "--compression" &&
        arg != "--format" && arg != "--timeout") {
      std::cerr << "write-image: unknown argument " << arg << "\n" << kUsage;
      return 2;
    }
    if ((v = value()) == nullptr) {
      std::cerr << "write-image: " << arg << " needs a value\n" << kUsage;
      return 2;
    }
    if (arg == "--url") {
      info.urls.push_back(v);
    } else if (arg == "--device") {
      device = v;
    } else if (arg == "--checksum") {
      checksum = v;
    } else if (arg == "--compression") {
      auto c = parseCompression(v);
      if (!c) {
        std::cerr << "write-image: " << c.error().message << "\n";
        return 2;
      }
      info.compression = *c;
    } else if (arg == "--format") {
      const std::string f = v;
      if (f != "raw" && f != "qcow2") {
        std::cerr << "write-image: --format must be raw or qcow2\n";
        return 2;
      }
      info.diskFormat = f == "qcow2" ? DiskFormat::Qcow2 : DiskFormat::Raw;
    } else if (arg == "--timeout") {
      const auto seconds = parseInt<int>(v, 1, 86400);
      if (!seconds) {
        std::cerr << "write-image: --timeout needs a number of seconds from 1 to 86400\n";
        return 2;
      }
      info.connectTimeout = info.idleTimeout = std::chrono::seconds(*seconds);
    }
  }
  if (info.urls.empty() || device.empty()) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string scheme = checksum.substr(0, checksum.find("://"));
  if (scheme == "http" || scheme == "https") {
    info.checksumUrl = checksum;  // a checksum file, fetched like the image
  } else if (!checksum.empty()) {
    // Run by hand, md5 is the operator's own choice.
    auto parsed = parseChecksumSpec(checksum, /*md5Allowed=*/true);
    if (!parsed) {
      std::cerr << "write-image: " << parsed.error().message << "\n";
      return 2;
    }
    info.checksumAlgorithm = parsed->first;
    info.checksum = parsed->second;
  }
  if (auto safe = refuseInUse(device); !safe) {
    std::cerr << "write-image: " << safe.error().message << "\n";
    return 1;
  }

  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);
  ProcessCommandRunner runner;
  SystemClock clock;
  // Host names through DNS (c-ares, /etc/resolv.conf): this static binary has no NSS.
  HttpClientPtr http = makeHttpClient(makeDnsResolver());
  StepContext ctx;
  ctx.runner = &runner;
  ctx.http = http.get();
  ctx.clock = &clock;
  ctx.abortRequested = &gAbort;
  ctx.byHand = true;
  ctx.md5Allowed = true;  // run by hand, md5 is the operator's own choice
  ctx.log = Logger("write-image");

  auto result = writeImage(ctx, info, WriteTarget{device});
  if (!result) {
    std::cerr << "write-image: " << toString(result.error().code) << ": " << result.error().message
              << "\n";
    return 1;
  }
  const double mib = static_cast<double>(result->bytesWritten) / (1024.0 * 1024.0);
  nlohmann::json out = {
      {"device", device},
      {"bytes_downloaded", result->bytesDownloaded},
      {"bytes_written", result->bytesWritten},
      {"seconds", result->seconds},
      {"mib_per_s", result->seconds > 0 ? mib / result->seconds : 0.0},
      {"checksum", std::string(toString(result->checksumAlgorithm)) + ":" + result->checksum},
      {"verified", !info.checksum.empty() || !info.checksumUrl.empty()}};
  std::cout << out.dump() << std::endl;
  return 0;
}

}  // namespace kiln::agent
