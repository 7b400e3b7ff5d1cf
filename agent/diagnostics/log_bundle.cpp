#include "agent/diagnostics/log_bundle.h"

#include <chrono>
#include <cstdio>

#include "shared/core/gzip.h"
#include "shared/core/secrets.h"
#include "shared/core/tar.h"

namespace kiln::agent {
namespace {

std::string tail(std::string text) {
  if (text.size() <= kBundleFileBytes) return text;
  return "[" + std::to_string(text.size() - kBundleFileBytes) + " earlier bytes dropped]\n" +
         text.substr(text.size() - kBundleFileBytes);
}

/// The output of one of the bundle's own commands, or why there is none.
std::string toolOutput(CommandRunner& runner, std::vector<std::string> argv) {
  Command command;
  command.argv = std::move(argv);
  command.timeout = std::chrono::seconds(30);
  const std::string shown = command.display();
  auto r = runner.run(command);
  if (!r) return "$ " + shown + "\n" + r.error().message + "\n";
  std::string text = r->out;
  if (!r->err.empty()) text += (text.empty() || text.back() == '\n' ? "" : "\n") + r->err;
  if (r->exitCode != 0) text += "\n[exit status " + std::to_string(r->exitCode) + "]\n";
  return text;
}

void appendStream(std::string& out, const char* name, const std::string& text, size_t dropped) {
  out += "--- ";
  out += name;
  if (dropped) out += " (" + std::to_string(dropped) + " more bytes not kept)";
  out += "\n";
  out += text;
  if (!text.empty() && text.back() != '\n') out += "\n";
}

}  // namespace

std::string formatCommandLog(const std::vector<CommandRecord>& commands, size_t dropped) {
  std::string out;
  if (dropped) out += "[" + std::to_string(dropped) + " older commands dropped]\n\n";
  for (const auto& c : commands) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.3f", c.seconds);
    out += "=== " + c.started + " " + c.command + "\n";
    if (c.exitCode) {
      out += "exit status " + std::to_string(*c.exitCode);
    } else {
      out += "did not finish: " + c.error;
    }
    out += ", " + std::string(seconds) + " s\n";
    appendStream(out, "stdout", c.out, c.outDropped);
    appendStream(out, "stderr", c.err, c.errDropped);
    out += "\n";
  }
  return out;
}

Result<std::string> buildLogBundle(const BundleInputs& in) {
  std::vector<TarEntry> files;
  auto add = [&](std::string name, std::string content) {
    files.push_back({std::move(name), in.record.mask(maskUrlsInText(tail(std::move(content))))});
  };
  add("agent.log", in.record.log());
  add("commands.log", formatCommandLog(in.record.commands(), in.record.droppedCommands()));
  add("dmesg", toolOutput(in.runner, {"dmesg"}));
  add("inventory.json",
      in.inventory.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  add("ip_addr", toolOutput(in.runner, {"ip", "addr"}));
  add("ip_route", toolOutput(in.runner, {"ip", "route"}));
  add("lsblk", toolOutput(in.runner, {"lsblk", "--all"}));
  add("mdstat", in.sysfs.read("/proc/mdstat").value_or("(no /proc/mdstat)\n"));
  const std::string archive =
      KILN_TRY(tarArchive(files, std::chrono::system_clock::to_time_t(in.clock.now())));
  return gzipCompress(archive);
}

}  // namespace kiln::agent
