// File: agent/agent_config.h
//
// How kiln-agent is told where kiln-server is and what it may touch. Two ways:
//
//   In the ramdisk: the kernel command line (/proc/cmdline) carries kiln.api_url= (or
//   ironic-python-agent's ipa-api-url=); the agent looks up with the MACs of every NIC and acts
//   on every disk it finds.
//
//   By hand (tests, labs): `kiln-agent --api-url URL --mac MAC... --device PATH...`. The agent
//   acts only on the listed devices (files or block devices) and never powers off or reboots
//   the machine it runs on: it logs such a command and exits.
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shared/core/error.h"

namespace kiln::agent {

struct AgentConfig {
  std::string apiUrl;                ///< "http://10.0.2.2:6385" (no trailing slash)
  std::vector<std::string> macs;     ///< lookup addresses; empty = every NIC's MAC
  std::vector<std::string> devices;  ///< by hand: the only devices steps may touch
  std::string nodeUuid;              ///< optional: look up by UUID as well
  bool byHand = false;               ///< started with --api-url (not from the kernel line)
  std::chrono::seconds maxBackoff{30};  ///< longest wait between retries while unreachable
  std::string sysRoot = "/";         ///< where /sys and /proc are (tests point it elsewhere)
  std::string logLevel = "info";
};

/// The usage text of `kiln-agent`.
std::string_view agentUsage();

/// Reads the agent's arguments (argv without the program name). Without --api-url the
/// settings come from `kernelCmdline`. InvalidArgument for an unknown option, a missing value,
/// no API URL anywhere, or --api-url without --device (a hand-run agent must be told exactly
/// which devices it may touch).
Result<AgentConfig> parseAgentArgs(std::span<const std::string> args, std::string_view kernelCmdline);

/// The value of `key=` on a kernel command line (the last occurrence), if present.
std::optional<std::string> kernelParameter(std::string_view cmdline, std::string_view key);

}  // namespace kiln::agent
