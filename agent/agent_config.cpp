#include "agent/agent_config.h"

#include <charconv>

namespace kiln::agent {

std::string_view agentUsage() {
  return "usage: kiln-agent [--api-url URL --device PATH... [--mac MAC...] [--node-uuid UUID]]\n"
         "                  [--max-backoff SECONDS] [--sys-root DIR] [--log-level LEVEL]\n"
         "       kiln-agent write-image --url URL --device PATH [--checksum ALGO:HEX] ...\n"
         "\n"
         "Without --api-url the agent reads kiln.api_url= (or ipa-api-url=) from /proc/cmdline\n"
         "and acts on every disk of the machine (the ramdisk). With --api-url it acts only on\n"
         "the devices given with --device and never powers off or reboots this machine.\n";
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
  int value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || value < 1 || value > 3600) {
    return invalid(std::string(option) + " needs a number of seconds between 1 and 3600, got '" + text + "'");
  }
  return std::chrono::seconds(value);
}

std::string trimUrl(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

}  // namespace

Result<AgentConfig> parseAgentArgs(std::span<const std::string> args, std::string_view kernelCmdline) {
  AgentConfig c;
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
    } else {
      return invalid("unknown option '" + opt + "'");
    }
  }
  if (!c.byHand) {
    if (!c.devices.empty()) return invalid("--device is only meaningful with --api-url");
    auto url = kernelParameter(kernelCmdline, "kiln.api_url");
    if (!url) url = kernelParameter(kernelCmdline, "ipa-api-url");
    if (!url || url->empty()) {
      return invalid("no API URL: pass --api-url, or boot with kiln.api_url= on the kernel "
                     "command line");
    }
    c.apiUrl = trimUrl(*url);
    if (auto uuid = kernelParameter(kernelCmdline, "kiln.node_uuid")) c.nodeUuid = *uuid;
    if (auto backoff = kernelParameter(kernelCmdline, "kiln.max_backoff")) {
      c.maxBackoff = KILN_TRY(parseSeconds("kiln.max_backoff", *backoff));
    }
  } else if (c.devices.empty()) {
    return invalid("run by hand (--api-url), the agent needs at least one --device: it touches "
                   "only the devices it is given");
  }
  if (c.apiUrl.rfind("http://", 0) != 0 && c.apiUrl.rfind("https://", 0) != 0) {
    return invalid("the API URL must start with http:// or https://, got '" + c.apiUrl + "'");
  }
  return c;
}

}  // namespace kiln::agent
