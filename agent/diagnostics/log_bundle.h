// File: agent/diagnostics/log_bundle.h
//
// The ramdisk's log bundle, the answer to the collect_logs command (docs/protocol.md §2.3;
// ironic-python-agent's log.collect_system_logs): a gzip'd ustar archive holding
//   agent.log       the agent's own log lines of this boot (RamdiskRecord::log)
//   commands.log    every external command the steps ran: time, command, exit status,
//                   duration, stdout and stderr (bounded, RamdiskRecord)
//   dmesg           the kernel log (`dmesg`)
//   inventory.json  the hardware inventory
//   ip_addr, ip_route, lsblk   the output of `ip addr`, `ip route`, `lsblk --all`
//   mdstat          /proc/mdstat
// A tool that is missing or fails leaves its file with the error in it: the bundle is made
// whatever the machine lacks. Every file goes through RamdiskRecord::mask and has its URLs'
// user information masked. Each file holds at most 1 MiB (the end of it is kept).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "agent/diagnostics/ramdisk_record.h"
#include "agent/hardware/sysfs.h"
#include "shared/core/clock.h"
#include "shared/exec/command_runner.h"

namespace kiln::agent {

/// Largest file of a bundle (the tail is kept).
inline constexpr size_t kBundleFileBytes = 1024 * 1024;

struct BundleInputs {
  const RamdiskRecord& record;
  CommandRunner& runner;  ///< runs dmesg, ip and lsblk (the bundle's own commands are not recorded)
  SysfsReader& sysfs;     ///< /proc/mdstat
  const Clock& clock;
  nlohmann::json inventory = nlohmann::json::object();
};

/// The gzip'd tar archive's bytes. Internal only when zlib fails.
Result<std::string> buildLogBundle(const BundleInputs& in);

/// commands.log's text for `commands` (`dropped` older ones left out).
std::string formatCommandLog(const std::vector<CommandRecord>& commands, size_t dropped);

}  // namespace kiln::agent
