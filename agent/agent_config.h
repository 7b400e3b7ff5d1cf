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
//
// Either way the agent verifies kiln-server's certificate (docs/protocol.md §7 "TLS"): with the
// CA it is told about (ApiTls), else the system's store; only an explicit insecure switch
// turns verification off.
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shared/core/error.h"

namespace kiln::agent {

/// The CA a ramdisk may embed (image-build/build-ramdisk.sh --ca-file): used when present and
/// nothing on the kernel command line names a CA.
inline constexpr std::string_view kDefaultApiCaFile = "/etc/kiln/ca.pem";

/// How the agent verifies kiln-server's certificate. At most one CA source is set; `source`
/// names it for the start-up line ("kiln.api_ca", "kiln.api_ca_file", "--api-ca-file",
/// "/etc/kiln/ca.pem", "system" or "none (insecure)").
struct ApiTls {
  /// --insecure, kiln.insecure= or ipa-insecure= true: no certificate verification at all.
  bool insecure = false;
  std::string caFile;       ///< a PEM file or a directory of hashed PEM files
  std::string inlineCaPem;  ///< PEM text decoded from kiln.api_ca= (one or more certificates)
  std::string source = "system";
};

struct AgentConfig {
  std::string apiUrl;                ///< "http://10.0.2.2:6385" (no trailing slash)
  std::vector<std::string> macs;     ///< lookup addresses; empty = every NIC's MAC
  std::vector<std::string> devices;  ///< by hand: the only devices steps may touch
  std::string nodeUuid;              ///< optional: look up by UUID as well
  bool byHand = false;               ///< started with --api-url (not from the kernel line)
  std::chrono::seconds maxBackoff{30};  ///< longest wait between retries while unreachable
  std::string sysRoot = "/";         ///< where /sys and /proc are (tests point it elsewhere)
  std::string logLevel = "info";
  ApiTls tls;
  /// DNS servers for host names in the API and image URLs ("IP[:PORT]", "[IPv6][:PORT]"):
  /// --dns, else kiln.dns=; empty = /etc/resolv.conf (agent/dns_resolver.h).
  std::vector<std::string> dnsServers;
};

/// The usage text of `kiln-agent`.
std::string_view agentUsage();

/// Reads the agent's arguments (argv without the program name). Without --api-url the
/// settings come from `kernelCmdline`. InvalidArgument for an unknown option, a missing value,
/// no API URL anywhere, or --api-url without --device (a hand-run agent must be told exactly
/// which devices it may touch), a kiln.api_ca= that is not base64 of certificates, or an
/// insecure switch that is not a boolean, or a --dns / kiln.dns= list with an item that is not
/// an IP address with an optional port.
///
/// The CA, first match wins: by hand --api-ca / --api-ca-file (or IPA's --cafile), else the
/// system's store; in the ramdisk kiln.api_ca= (what kiln-server passes), kiln.api_ca_file=,
/// `defaultCaFile` when that file exists, else the system's store. An insecure switch
/// (--insecure; kiln.insecure=, else ipa-insecure=) overrides them all.
Result<AgentConfig> parseAgentArgs(std::span<const std::string> args, std::string_view kernelCmdline,
                                   std::string_view defaultCaFile = kDefaultApiCaFile);

/// The PEM text of kiln.api_ca='s value: comma-separated standard base64 items, each the DER
/// of one certificate (the compact form kiln-server sends: a PEM body without its lines) or a
/// whole PEM file. InvalidArgument naming the item that is neither.
Result<std::string> decodeInlineCa(std::string_view value);

/// Ironic's (oslo.config's) booleans: 1/t/true/on/y/yes and 0/f/false/off/n/no, any case.
std::optional<bool> parseBool(std::string_view text);

/// The value of `key=` on a kernel command line (the last occurrence), if present.
std::optional<std::string> kernelParameter(std::string_view cmdline, std::string_view key);

}  // namespace kiln::agent
