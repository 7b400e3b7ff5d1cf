#include "agent/agent_config.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "agent/dns_resolver.h"
#include "shared/core/base64.h"
#include "shared/core/log.h"
#include "shared/core/strings.h"

namespace kiln::agent {

std::string_view agentUsage() {
  return "usage: kiln-agent [--api-url URL --device PATH... [--mac MAC...] [--node-uuid UUID]]\n"
         "                  [--api-ca-file PATH | --api-ca BASE64 | --insecure]\n"
         "                  [--dns IP[:PORT],...] [--max-backoff SECONDS] [--sys-root DIR]\n"
         "                  [--log-level LEVEL]\n"
         "       kiln-agent write-image --url URL --device PATH [--checksum ALGO:HEX|URL] ...\n"
         "\n"
         "Without --api-url the agent reads kiln.api_url= (or ipa-api-url=) from /proc/cmdline\n"
         "and acts on every disk of the machine (the ramdisk). With --api-url it acts only on\n"
         "the devices given with --device and never powers off or reboots this machine.\n"
         "\n"
         "HTTPS: the server's certificate is verified against the CA of --api-ca-file (a PEM\n"
         "file or directory; IPA's --cafile works too) or --api-ca (as kiln.api_ca=), else the\n"
         "system's store. In the ramdisk: kiln.api_ca=, kiln.api_ca_file=, /etc/kiln/ca.pem,\n"
         "the system's store. --insecure (kiln.insecure=1, ipa-insecure=1) verifies nothing.\n"
         "\n"
         "Host names in the API and image URLs are resolved through /etc/hosts and the DNS\n"
         "servers of /etc/resolv.conf, or those of --dns (kiln.dns=), e.g. "
         "10.0.2.3,[fd00::3]:53.\n";
}

std::optional<std::string> kernelParameter(std::string_view cmdline, std::string_view key) {
  std::optional<std::string> found;
  size_t pos = 0;
  while (pos < cmdline.size()) {
    while (pos < cmdline.size() && (cmdline[pos] == ' ' || cmdline[pos] == '\n' || cmdline[pos] == '\t')) ++pos;
    size_t end = pos;
    while (end < cmdline.size() && cmdline[end] != ' ' && cmdline[end] != '\n' && cmdline[end] != '\t') ++end;
    const std::string_view word = cmdline.substr(pos, end - pos);
    if (word.size() > key.size() && word.substr(0, key.size()) == key && word[key.size()] == '=') {
      found = std::string(word.substr(key.size() + 1));
    }
    pos = end;
  }
  return found;
}

namespace {

Result<std::chrono::seconds> parseSeconds(std::string_view option, const std::string& text) {
  const auto value = parseInt<int>(text, 1, 3600);
  if (!value) {
    return invalid(std::string(option) + " needs a number of seconds between 1 and 3600, got '" + text + "'");
  }
  return std::chrono::seconds(*value);
}

std::string trimUrl(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

Result<bool> parseSwitch(std::string_view option, const std::string& text) {
  auto value = parseBool(text);
  if (!value) {
    return invalid(std::string(option) + " needs true or false (1/0, yes/no, on/off), got '" +
                   text + "'");
  }
  return *value;
}

}  // namespace

std::optional<bool> parseBool(std::string_view text) {
  const std::string lower = asciiLower(text);
  for (std::string_view yes : {"1", "t", "true", "on", "y", "yes"}) {
    if (lower == yes) return true;
  }
  for (std::string_view no : {"0", "f", "false", "off", "n", "no"}) {
    if (lower == no) return false;
  }
  return std::nullopt;
}

Result<std::string> decodeInlineCa(std::string_view value) {
  std::string pem;
  size_t index = 0;
  for (const std::string_view item : split(value, ',')) {
    ++index;
    const std::string which = "kiln.api_ca item " + std::to_string(index);
    if (item.empty()) return invalid(which + " is empty");
    auto bytes = base64Decode(item, Base64Mode::Lenient);
    if (!bytes || bytes->empty()) return invalid(which + " is not base64 text");
    if (bytes->rfind("-----BEGIN", 0) == 0) {
      // base64 of a whole PEM file: taken as it is.
      if (bytes->find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
        return invalid(which + " is a PEM file without a CERTIFICATE block");
      }
      pem += *bytes;
      if (pem.back() != '\n') pem += '\n';
    } else if (static_cast<unsigned char>((*bytes)[0]) == 0x30) {
      // DER (an ASN.1 SEQUENCE): the PEM body is the same base64 in lines of 64.
      const std::string standard = base64Encode(*bytes);
      pem += "-----BEGIN CERTIFICATE-----\n";
      for (size_t at = 0; at < standard.size(); at += 64) pem += standard.substr(at, 64) + "\n";
      pem += "-----END CERTIFICATE-----\n";
    } else {
      return invalid(which + " is neither the DER of a certificate nor a PEM file");
    }
  }
  return pem;
}

Result<AgentConfig> parseAgentArgs(std::span<const std::string> args, std::string_view kernelCmdline,
                                   std::string_view defaultCaFile) {
  AgentConfig c;
  std::string handCaFile;
  std::optional<std::string> handCa;
  bool handDns = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& opt = args[i];
    auto value = [&]() -> Result<std::string> {
      if (i + 1 >= args.size()) return invalid(opt + " needs a value");
      return args[++i];
    };
    if (opt == "--api-url") {
      c.apiUrl = trimUrl(KILN_TRY(value()));
      c.byHand = true;
    } else if (opt == "--mac") {
      c.macs.push_back(KILN_TRY(value()));
    } else if (opt == "--device") {
      c.devices.push_back(KILN_TRY(value()));
    } else if (opt == "--node-uuid") {
      c.nodeUuid = KILN_TRY(value());
    } else if (opt == "--max-backoff") {
      c.maxBackoff = KILN_TRY(parseSeconds(opt, KILN_TRY(value())));
    } else if (opt == "--sys-root") {
      c.sysRoot = KILN_TRY(value());
    } else if (opt == "--log-level") {
      c.logLevel = KILN_TRY(value());
      if (!parseLogLevel(c.logLevel)) {
        return invalid("--log-level must be trace, debug, info, warning or error, got '" +
                       c.logLevel + "'");
      }
    } else if (opt == "--api-ca-file" || opt == "--cafile") {
      handCaFile = KILN_TRY(value());
      if (handCaFile.empty()) return invalid(opt + " needs a path");
    } else if (opt == "--api-ca") {
      handCa = KILN_TRY(value());
    } else if (opt == "--dns") {
      c.dnsServers = KILN_TRY(parseDnsServers(opt, KILN_TRY(value())));
      handDns = true;
    } else if (opt == "--insecure") {
      c.tls.insecure = true;
    } else {
      return invalid("unknown option '" + opt + "'");
    }
  }
  if (!c.byHand) {
    if (!c.devices.empty()) return invalid("--device is only meaningful with --api-url");
    if (handCa || !handCaFile.empty()) {
      return invalid("--api-ca and --api-ca-file are only meaningful with --api-url (in the "
                     "ramdisk: kiln.api_ca= or kiln.api_ca_file=)");
    }
    auto url = kernelParameter(kernelCmdline, "kiln.api_url");
    if (!url) url = kernelParameter(kernelCmdline, "ipa-api-url");
    if (!url || url->empty()) {
      return invalid("no API URL: pass --api-url, or boot with kiln.api_url= on the kernel "
                     "command line");
    }
    c.apiUrl = trimUrl(*url);
    if (auto uuid = kernelParameter(kernelCmdline, "kiln.node_uuid")) c.nodeUuid = *uuid;
    // --dns on the agent's own command line wins; an empty kiln.dns= means resolv.conf.
    if (auto dns = kernelParameter(kernelCmdline, "kiln.dns"); dns && !dns->empty() && !handDns) {
      c.dnsServers = KILN_TRY(parseDnsServers("kiln.dns", *dns));
    }
    if (auto backoff = kernelParameter(kernelCmdline, "kiln.max_backoff")) {
      c.maxBackoff = KILN_TRY(parseSeconds("kiln.max_backoff", *backoff));
    }
    // kiln.insecure= decides when present (even =0), else IPA's ipa-insecure=.
    if (auto insecure = kernelParameter(kernelCmdline, "kiln.insecure")) {
      c.tls.insecure |= KILN_TRY(parseSwitch("kiln.insecure", *insecure));
    } else if (auto ipaInsecure = kernelParameter(kernelCmdline, "ipa-insecure")) {
      c.tls.insecure |= KILN_TRY(parseSwitch("ipa-insecure", *ipaInsecure));
    }
    std::error_code ec;
    const auto inlineCa = kernelParameter(kernelCmdline, "kiln.api_ca");
    const auto file = kernelParameter(kernelCmdline, "kiln.api_ca_file");
    if (inlineCa && !inlineCa->empty()) {
      c.tls.inlineCaPem = KILN_TRY(decodeInlineCa(*inlineCa));
      c.tls.source = "kiln.api_ca";
    } else if (file && !file->empty()) {
      c.tls.caFile = *file;
      c.tls.source = "kiln.api_ca_file";
    } else if (!defaultCaFile.empty() && std::filesystem::exists(defaultCaFile, ec)) {
      c.tls.caFile = std::string(defaultCaFile);
      c.tls.source = std::string(defaultCaFile);
    }
  } else if (c.devices.empty()) {
    return invalid("run by hand (--api-url), the agent needs at least one --device: it touches "
                   "only the devices it is given");
  } else if (handCa) {
    auto pem = decodeInlineCa(*handCa);
    if (!pem) return invalid("--api-ca: " + pem.error().message);
    c.tls.inlineCaPem = std::move(*pem);
    c.tls.source = "--api-ca";
  } else if (!handCaFile.empty()) {
    c.tls.caFile = handCaFile;
    c.tls.source = "--api-ca-file";
  }
  if (c.tls.insecure) {
    // Nothing is verified, so no CA is used (the start-up line warns).
    c.tls.caFile.clear();
    c.tls.inlineCaPem.clear();
    c.tls.source = "none (insecure)";
  }
  if (c.apiUrl.rfind("http://", 0) != 0 && c.apiUrl.rfind("https://", 0) != 0) {
    return invalid("the API URL must start with http:// or https://, got '" + c.apiUrl + "'");
  }
  return c;
}

}  // namespace kiln::agent
