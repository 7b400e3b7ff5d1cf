// File: server/drivers/ipmitool/ipmitool.h
//
// The typed wrapper over the `ipmitool` CLI (house-style rule 15): it builds argv from a node's
// driver_info, runs it through the CommandRunner with a bounded timeout, retries transient
// session failures, and hands stdout to pure parsers. IpmitoolPower and IpmitoolManagement are
// built on it.
//
// Invocation, for driver_info {ipmi_address, ipmi_port, ipmi_username, ipmi_password,
// ipmi_priv_level, ipmi_protocol_version, ipmi_cipher_suite}:
//
//   ipmitool -I lanplus|lan -H <address> [-p <port>] [-U <username>] [-L <priv_level>]
//            [-C <cipher_suite>] [-E] -R 1 <command...>
//
// `-I lan` for protocol 1.5, `-I lanplus` otherwise. The password never appears in argv: it is
// passed in the IPMI_PASSWORD environment variable, which `-E` tells ipmitool to read (and `-E`
// is left out when there is no password, or ipmitool would prompt for one). `-R 1` makes
// ipmitool try once; the retries are ours, so they wait through the task's clock.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/drivers/interfaces.h"
#include "server/config/ipmitool_options.h"
#include "shared/core/error.h"
#include "shared/exec/command_runner.h"

namespace kiln::server {

/// A node's IPMI settings, parsed from driver_info.
struct IpmiDriverInfo {
  std::string address;                   ///< ipmi_address (required)
  std::optional<int> port;               ///< ipmi_port, 1-65535
  std::optional<std::string> username;   ///< ipmi_username; unset = the NULL user
  std::optional<std::string> password;   ///< ipmi_password; never logged, never in argv
  std::optional<std::string> privLevel;  ///< ipmi_priv_level; unset = ipmitool's ADMINISTRATOR
  std::string protocolVersion = "2.0";   ///< ipmi_protocol_version: "1.5" or "2.0"
  /// ipmi_cipher_suite (lanplus only, 0-255); unset = ipmitool's choice, which first asks the
  /// BMC for its cipher suites (a BMC that does not answer that costs a second per run).
  std::optional<int> cipherSuite;
};

/// The privilege levels ipmitool accepts for -L.
inline constexpr std::string_view kIpmiPrivLevels[] = {"ADMINISTRATOR", "CALLBACK", "OPERATOR",
                                                       "USER"};

/// Parses and validates the ipmi_* keys of driver_info. Errors (InvalidArgument), with Ironic's
/// wording where Ironic has one:
///   "Missing the following IPMI credentials in node's driver_info: ['ipmi_address']."
///   ipmi_port not an integer in 1-65535, ipmi_priv_level not one of kIpmiPrivLevels,
///   ipmi_protocol_version not "1.5" or "2.0", a non-string address, user name or password,
///   "Invalid cipher suite <value>, expected a number" (an integer 0-255, or its digits),
///   "Cipher suites cannot be used with IPMI 1.5".
/// Pure.
Result<IpmiDriverInfo> parseIpmiDriverInfo(const nlohmann::json& driverInfo);

/// The argv (without the command itself) that connects ipmitool to the node's BMC; see the
/// file comment. Contains no secret. Pure.
std::vector<std::string> ipmitoolConnectionArgs(const IpmiDriverInfo& info);

/// Parses `ipmitool chassis power status` output ("Chassis Power is on\n") into Ironic's
/// power state: "power on" or "power off". Internal error (quoting the text) for anything
/// else. Pure.
Result<std::string> parsePowerStatus(std::string_view out);

/// The boot flags (boot parameter 5) as `ipmitool chassis bootparam get 5` prints them.
struct IpmiBootFlags {
  bool valid = true;        ///< "Boot Flag Valid" (an override is pending) or "Invalid"
  bool persistent = false;  ///< "Options apply to all future boots"
  bool efi = false;         ///< "BIOS EFI boot"
  std::string selector;     ///< the "Boot Device Selector" text, e.g. "Force PXE"
  /// The Ironic boot device the selector names: "pxe", "disk", "cdrom", "bios", "safe", or ""
  /// for "No override" and devices Ironic has no name for (floppy, diagnostic partition).
  std::string device;
};

/// Parses `ipmitool chassis bootparam get 5` output. Internal error when there is no
/// "Boot Device Selector" line. Pure.
Result<IpmiBootFlags> parseBootFlags(std::string_view out);

/// How an ipmitool failure should be treated, from its stderr.
enum class IpmitoolFailure {
  /// The session could not be set up or the BMC was momentarily busy ("Unable to establish
  /// IPMI v2 / RMCP+ session", "insufficient resources for session", "Node busy", ...): worth
  /// another attempt. Unavailable when attempts run out.
  Transient,
  /// The BMC could not be reached or refused the credentials (address lookup failure, RAKP
  /// rejection, invalid user name): retrying would not help (and could lock the account).
  /// Unavailable.
  Connection,
  /// The BMC answered and rejected the command ("Set Chassis Power Control to Soft failed:
  /// Command not supported in present state"), or ipmitool rejected its arguments. Internal.
  Command,
};

/// Classifies a failed ipmitool run by its stderr. Pure.
IpmitoolFailure classifyIpmitoolFailure(std::string_view stderrText);

/// Runs ipmitool against a node's BMC. Stateless apart from the runner; thread-safe when the
/// runner is.
class Ipmitool {
 public:
  explicit Ipmitool(CommandRunnerPtr runner, IpmitoolOptions options = {});

  /// The Command for `args` (e.g. {"chassis", "power", "status"}) against the node in `info`:
  /// argv, the password in env, a timeout, and a displayName without secrets. Pure.
  Command buildCommand(const IpmiDriverInfo& info, const std::vector<std::string>& args) const;

  /// Runs `ipmitool <connection> <args>` for the task's node and returns its stdout. Retries
  /// transient failures (IpmitoolOptions). Errors: InvalidArgument (bad driver_info),
  /// Unavailable (session/connection failures, ipmitool missing), DeadlineExceeded (every
  /// attempt hung), Internal (the BMC rejected the command); messages quote what ipmitool
  /// printed (stderr, or stdout when stderr is empty), the node's password shown as "******".
  Result<std::string> run(const TaskContext& task, const std::vector<std::string>& args) const;

  /// `chassis power status`, parsed: "power on" or "power off".
  Result<std::string> powerStatus(const TaskContext& task) const;

  /// `chassis power <action>` with action "on", "off", "soft" or "cycle".
  Result<void> powerControl(const TaskContext& task, std::string_view action) const;

  /// `chassis bootparam get 5`, parsed.
  Result<IpmiBootFlags> bootFlags(const TaskContext& task) const;

  /// Sets the next (or, with `persistent`, every) boot device: first
  /// `raw 0x00 0x08 0x03 0x08` (stop the BMC from dropping the setting after 60 s, as Ironic
  /// does; a BMC that rejects it is tolerated), then `chassis bootdev <device>
  /// [options=persistent]`. `device` is an ipmitool bootdev name (pxe, disk, cdrom, bios, safe).
  /// When the node boots UEFI (server/drivers/boot_mode.h), the second command is
  /// `raw 0x00 0x08 0x05 <0xe0 persistent | 0xa0 once> <uefiBootDeviceCode> 0x00 0x00 0x00`
  /// instead, as Ironic sends it: bootdev's options=efiboot is not honoured by every BMC.
  Result<void> setBootDevice(const TaskContext& task, std::string_view device,
                             bool persistent) const;

  const IpmitoolOptions& options() const { return options_; }

  /// The clock a task waits on: task.clock, or the system clock when the caller left it unset.
  static const Clock& clockOf(const TaskContext& task);

 private:
  /// The one place a request reaches the BMC: runs `command` once and records it
  /// (server/drivers/bmc_metrics.h) under `operation`, and notes it for the node's bmc_request
  /// event (server/drivers/bmc_requests.h).
  Result<CommandOutput> send(const Command& command, std::string_view operation) const;

  CommandRunnerPtr runner_;
  IpmitoolOptions options_;
};

/// The bounded name of an ipmitool request for metrics: its leading command words, at most
/// three, up to the first raw byte or option ({"chassis", "power", "on"} -> "chassis power on",
/// {"raw", "0x00", ...} -> "raw").
std::string ipmitoolOperation(const std::vector<std::string>& args);

/// The IPMI boot device selector for a UEFI boot of `device` (pxe 0x04, disk 0x08 — 0x24 on a
/// node whose properties.vendor is Supermicro —, cdrom 0x14, bios 0x18, safe 0x0c).
Result<std::string> uefiBootDeviceCode(const TaskContext& task, std::string_view device);

}  // namespace kiln::server
