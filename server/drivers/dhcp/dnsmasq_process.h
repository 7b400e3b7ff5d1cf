// File: server/drivers/dhcp/dnsmasq_process.h
//
// The dnsmasq kiln-server runs itself with `[dnsmasq] manage = true`: its configuration,
// generated from [dnsmasq] and [pxe] (dnsmasqConfig), the start-up checks against the machine's
// interfaces (checkManagedDnsmasq), and the supervisor that starts it, forwards what it prints
// to kiln-server's log (component "dnsmasq"), and restarts it with back-off when it exits.
//
// The configuration (docs/provisioning-network.md has the operator's copy for manage = false):
// DHCP only (port=0: no DNS), bound to the one interface, the ranges, no router unless
// [dnsmasq] router, the host and options directories Kiln writes (dhcp_provider.h), the firmware
// class tags those files use (ipxe, efi64, httpclient; HTTP boot answers carry vendor class
// HTTPClient), dhcp-ignore=tag:!known with ignore_unknown_hosts, and TFTP from [pxe] tftp_root.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/config.h"
#include "shared/core/error.h"
#include "shared/core/log.h"

namespace kiln::server {

/// The generated configuration file's text. InvalidArgument when a range does not parse (the
/// configuration reader checked them already).
Result<std::string> dnsmasqConfig(const Config& config);

/// The IPv4 networks ("192.0.2.1/24") configured on `interface` in this network namespace.
std::vector<std::string> interfaceIpv4Networks(const std::string& interface);

/// Start-up checks for manage = true, each naming its option: the interface exists, every range
/// without a netmask lies in one of its subnets (a range with a netmask outside them is a subnet
/// a DHCP relay forwards), the binary is executable. `networks` = interfaceIpv4Networks().
Result<void> checkManagedDnsmasq(const Config& config, const std::vector<std::string>& networks);

/// Runs dnsmasq (see the file comment). start() writes the configuration and starts the process;
/// an exit is logged with its status and last line, and dnsmasq starts again after 1 s, doubling
/// up to 60 s (back to 1 s after a run of a minute). Nothing else in kiln-server waits for it:
/// nodes waiting for their agent are not failed because DHCP is down.
class DnsmasqSupervisor {
 public:
  explicit DnsmasqSupervisor(const Config& config) : config_(config) {}
  ~DnsmasqSupervisor();
  DnsmasqSupervisor(const DnsmasqSupervisor&) = delete;
  DnsmasqSupervisor& operator=(const DnsmasqSupervisor&) = delete;

  /// Writes config_file and starts dnsmasq and the supervising thread. Errors: the file cannot
  /// be written, the process cannot be started.
  Result<void> start();
  /// Stops dnsmasq (SIGTERM) and the thread. Idempotent.
  void stop();
  /// SIGHUP: dnsmasq re-reads the host and options directories, forgetting deleted files.
  void reload();
  /// The running dnsmasq's process id, 0 when none runs.
  pid_t pid() const;
  /// How often dnsmasq was started (1 after start()).
  uint64_t starts() const;

 private:
  Result<pid_t> spawn(int& outputFd);
  void run(pid_t first, int firstFd);

  const Config& config_;
  Logger log_{"dnsmasq"};
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_;
  pid_t pid_ = 0;
  uint64_t starts_ = 0;
  bool stopping_ = false;
};

}  // namespace kiln::server
