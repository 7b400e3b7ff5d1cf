// kiln-server: the Ironic-compatible bare-metal provisioning server.
//   kiln-server --config-file /etc/kiln/kiln.conf
#include <malloc.h>

#include <pthread.h>
#include <signal.h>

#include <csignal>
#include <cstdio>
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstring>
#include <unistd.h>
#include <string>

#include "server/drivers/netboot/loader_files.h"
#include "server/server_app.h"
#include "server/storage/database_backup.h"
#include "server/storage/storage.h"
#include "shared/core/log.h"

namespace {

void usage() {
  std::fprintf(stderr,
               "usage: kiln-server [--config-file FILE] [--port-file FILE]\n"
               "       kiln-server --upgrade-database [--config-file FILE]\n"
               "  --config-file FILE    INI configuration (see etc/kiln.conf.sample)\n"
               "  --port-file FILE      write the bound TCP port to FILE once listening\n"
               "                        (useful with [api] port = 0)\n"
               "  --upgrade-database    apply the database migrations this version has and exit\n");
}

/// One online backup of the database ([database] backup_dir), logged.
void backUpDatabase(const kiln::server::Config& config, kiln::server::Storage& storage,
                    const char* reason, kiln::Logger& log) {
  const auto started = std::chrono::steady_clock::now();
  auto done = kiln::server::backupDatabase(storage, config.backupDir, config.backupKeep,
                                           std::chrono::system_clock::now());
  if (!done) {
    log.error("database backup failed", {{"reason", reason}, {"error", done.error().message}});
    return;
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  log.info("database backed up", {{"reason", reason}, {"path", done->path},
                                  {"bytes", std::to_string(done->bytes)},
                                  {"duration_ms", std::to_string(ms.count())},
                                  {"removed", std::to_string(done->removed.size())}});
}

}  // namespace

int main(int argc, char** argv) {
  // Response bodies of list pages are a few hundred KiB: keep them on the heap rather than in
  // fresh mmap()s, and keep freed memory instead of trimming it, so each page does not
  // page-fault its buffers in again. Memory use stays bounded by the peak.
  mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
  mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);
  // SIGTERM and SIGINT are blocked before any thread starts (every thread inherits the mask)
  // and taken by the main thread with sigwait() once the server runs: a stop signal is never
  // handled by another thread while the main thread sleeps on (a lost wake-up that left the
  // server running until a second signal). One that arrives during start-up waits, pending.
  // SIGUSR1 (a database backup) is taken the same way.
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGTERM);
  sigaddset(&stopSignals, SIGINT);
  sigaddset(&stopSignals, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);
  std::string configFile;
  std::string portFile;
  bool upgradeDatabase = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--config-file" && i + 1 < argc) {
      configFile = argv[++i];
    } else if (arg.rfind("--config-file=", 0) == 0) {
      configFile = arg.substr(std::strlen("--config-file="));
    } else if (arg == "--port-file" && i + 1 < argc) {
      portFile = argv[++i];
    } else if (arg == "--upgrade-database") {
      upgradeDatabase = true;
    } else if (arg == "-h" || arg == "--help") {
      usage();
      return 0;
    } else {
      usage();
      return 2;
    }
  }
  kiln::Logger log("kiln-server");
  kiln::server::Config config;
  if (!configFile.empty()) {
    auto loaded = kiln::server::loadConfig(configFile);
    if (!loaded) {
      log.error("invalid configuration", {{"error", loaded.error().message}});
      return 1;
    }
    config = std::move(*loaded);
  } else {
    auto defaults = kiln::server::parseConfig("", "defaults");
    config = std::move(*defaults);
  }
  // parseConfig accepted only a level's name.
  kiln::Logger::setLevel(kiln::parseLogLevel(config.logLevel).value_or(kiln::LogLevel::Info));

  if (upgradeDatabase) {
    // What a package runs on upgrade (and an operator once before starting the new version on
    // PostgreSQL): opening the database applies the migrations it lacks, in order, each in its
    // own transaction; a database newer than this version is refused.
    const std::string database = kiln::server::displayConnection(config.connection);
    auto storage = kiln::server::openStorage(config.connection);
    if (!storage) {
      log.error("cannot upgrade the database",
                {{"database", database}, {"error", storage.error().message}});
      return 1;
    }
    log.info("database upgraded", {{"database", database},
                                   {"schema_version", std::to_string((*storage)->schemaVersion())}});
    return 0;
  }

  auto app = kiln::server::ServerApp::create(config);
  if (!app) {
    log.error("cannot start", {{"error", app.error().message}});
    return 1;
  }
  // The first-stage boot loaders the pxe and ipxe boot interfaces need on the TFTP server.
  const auto& boot = (*app)->drivers().enabledInterfaces(kiln::server::InterfaceType::Boot);
  auto enabled = [&](const char* name) { return std::find(boot.begin(), boot.end(), name) != boot.end(); };
  if (enabled("pxe") || enabled("ipxe") || enabled("http-ipxe") || enabled("http")) {
    if (auto copied = kiln::server::installLoaderFiles(config); !copied) {
      if (config.loaderFilePathsSet) {
        log.error("cannot install the boot loaders", {{"error", copied.error().message}});
        return 1;
      }
      log.warning("cannot install the default boot loaders into tftp_root",
                  {{"error", copied.error().message}, {"tftp_root", config.tftpRoot}});
    }
  }
  if (auto started = (*app)->start(); !started) {
    log.error("cannot start", {{"error", started.error().message}});
    return 1;
  }
  log.info("listening", {{"address", config.hostIp + ":" + std::to_string((*app)->port())},
                         {"database", kiln::server::displayConnection(config.connection)},
                         {"auth_strategy", config.authStrategy}});
  if ((*app)->metricsPort() != 0) {
    log.info("metrics listening", {{"address", config.metricsListenAddress + ":" +
                                                   std::to_string((*app)->metricsPort())}});
  }
  if (!portFile.empty()) {
    // Write then rename, so a reader never sees a partial file.
    const std::string tmp = portFile + ".tmp";
    if (FILE* f = std::fopen(tmp.c_str(), "w")) {
      std::fprintf(f, "%u\n", static_cast<unsigned>((*app)->port()));
      std::fclose(f);
      std::rename(tmp.c_str(), portFile.c_str());
    }
  }
  // Until a stop signal: a database backup on SIGUSR1 and every [database] backup_interval.
  const bool periodic = config.backupInterval > 0;
  const auto interval = std::chrono::seconds(config.backupInterval);
  auto nextBackup = std::chrono::steady_clock::now() + interval;
  int signal = 0;
  while (true) {
    if (periodic) {
      const auto wait = std::max(nextBackup - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration{});
      const auto secs = std::chrono::duration_cast<std::chrono::seconds>(wait);
      const timespec timeout{static_cast<time_t>(secs.count()),
                             static_cast<long>(std::chrono::duration_cast<std::chrono::nanoseconds>(wait - secs).count())};
      signal = sigtimedwait(&stopSignals, nullptr, &timeout);
    } else if (sigwait(&stopSignals, &signal) != 0) {
      signal = -1;
    }
    if (signal == SIGTERM || signal == SIGINT) break;
    const bool due = periodic && std::chrono::steady_clock::now() >= nextBackup;
    if (signal == SIGUSR1 || due) {
      backUpDatabase(config, (*app)->storage(), signal == SIGUSR1 ? "SIGUSR1" : "backup_interval", log);
      if (due) nextBackup = std::chrono::steady_clock::now() + interval;
    }
  }
  log.info("shutting down", {{"signal", signal == SIGINT ? "SIGINT" : "SIGTERM"}});
  (*app)->stop();
  return 0;
}
