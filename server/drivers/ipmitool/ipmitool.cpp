#include "server/drivers/ipmitool/ipmitool.h"

#include <algorithm>
#include <array>

#include "server/drivers/bmc_metrics.h"
#include "server/drivers/bmc_requests.h"
#include "server/drivers/boot_mode.h"
#include "server/model/node.h"
#include "shared/core/secrets.h"
#include "shared/core/strings.h"

namespace kiln::server {
namespace {

using nlohmann::json;

std::vector<std::string_view> lines(std::string_view text) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t eol = text.find('\n', pos);
    const size_t end = eol == std::string_view::npos ? text.size() : eol;
    out.push_back(text.substr(pos, end - pos));
    if (eol == std::string_view::npos) break;
    pos = eol + 1;
  }
  return out;
}

bool contains(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}

/// Tool output quoted in an error message: trimmed, lines joined with "; ", bounded.
std::string quoteOutput(std::string_view text) {
  std::string out;
  for (auto line : lines(trimView(text))) {
    line = trimView(line);
    if (line.empty()) continue;
    if (!out.empty()) out += "; ";
    out += line;
  }
  constexpr size_t kMax = 500;
  if (out.size() > kMax) out = out.substr(0, kMax) + "...";
  return out;
}

/// `text` with every occurrence of `password` shown as "******". ipmitool does not print the
/// password, but its output (and a BMC's error text in it) is quoted into last_error, the node
/// history and the log, which must never show it whatever the tool or the BMC says.
std::string withoutPassword(std::string text, const std::optional<std::string>& password) {
  if (password) maskSecretIn(text, *password);
  return text;
}

std::string privLevelList() {
  std::string out;
  for (auto level : kIpmiPrivLevels) {
    if (!out.empty()) out += ", ";
    out += level;
  }
  return out;
}

/// An optional string key; absent, null and "" are all "not given".
Result<std::optional<std::string>> optionalString(const json& info, const char* key, bool secret) {
  auto it = info.find(key);
  if (it == info.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) {
    // NOTE(kiln): a password is never echoed back, even a malformed one.
    return invalid(std::string("Invalid ") + key + (secret ? "" : " " + it->dump()) +
                   " in node's driver_info; expected a string.");
  }
  const auto& value = it->get_ref<const std::string&>();
  if (value.empty()) return std::nullopt;
  return value;
}

Result<std::optional<int>> parsePort(const json& info) {
  auto it = info.find("ipmi_port");
  if (it == info.end() || it->is_null()) return std::nullopt;
  const std::string shown = it->is_string() ? it->get<std::string>() : it->dump();
  auto bad = [&] {
    return invalid("Invalid ipmi_port \"" + shown +
                   "\" in node's driver_info; expected an integer between 1 and 65535.");
  };
  long long port = 0;
  if (it->is_number_integer()) {
    port = it->get<long long>();
  } else if (it->is_string()) {
    if (shown.empty()) return std::nullopt;
    const auto parsed = parseInt<unsigned>(shown);
    if (shown.size() > 9 || !parsed) return bad();
    port = *parsed;
  } else {
    return bad();
  }
  if (port < 1 || port > 65535) return bad();
  return static_cast<int>(port);
}

Result<std::string> parseProtocolVersion(const json& info) {
  auto it = info.find("ipmi_protocol_version");
  if (it == info.end() || it->is_null()) return std::string("2.0");
  std::string version;
  if (it->is_string()) {
    version = it->get<std::string>();
    if (version.empty()) return std::string("2.0");
  } else if (it->is_number()) {
    // A client that sent the JSON number 1.5 or 2 means the same as the strings.
    const double v = it->get<double>();
    if (v == 1.5) return std::string("1.5");
    if (v == 2.0) return std::string("2.0");
    version = it->dump();
  } else {
    version = it->dump();
  }
  if (version == "1.5" || version == "2.0") return version;
  return invalid("Invalid ipmi_protocol_version \"" + version +
                 "\" in node's driver_info; expected one of 1.5, 2.0.");
}

Result<std::optional<int>> parseCipherSuite(const json& info, const std::string& protocolVersion) {
  auto it = info.find("ipmi_cipher_suite");
  if (it == info.end() || it->is_null()) return std::nullopt;
  const std::string shown = it->is_string() ? it->get<std::string>() : it->dump();
  long long suite = -1;
  if (it->is_number_integer()) {
    suite = it->get<long long>();
  } else if (const auto n = parseInt<unsigned>(shown); it->is_string() && n && shown.size() <= 3) {
    suite = *n;
  } else if (it->is_string() && shown.empty()) {
    return std::nullopt;
  }
  // Ironic's words. The numbers IPMI 2.0 defines fit a byte.
  if (suite < 0 || suite > 255) {
    return invalid("Invalid cipher suite " + shown + ", expected a number");
  }
  if (protocolVersion == "1.5") return invalid("Cipher suites cannot be used with IPMI 1.5");
  return static_cast<int>(suite);
}

std::string joinWords(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out.push_back(' ');
    out += w;
  }
  return out;
}

// Substrings of ipmitool's stderr, checked in this order (first match wins); see
// classifyIpmitoolFailure.
//
// The BMC cannot be found, or it refused the credentials: DNS failure for -H, lanplus RAKP
// rejections ("RAKP 2 message indicates an error : unauthorized name", "RAKP 2 HMAC is
// invalid"), lan (1.5) login failures, -E without IPMI_PASSWORD.
constexpr std::string_view kConnectionMarkers[] = {
    "Address lookup",    "Could not open socket", "RAKP",
    "unauthorized name", "Invalid user name",     "invalid role",
    "Activate Session",  "Authentication type",   "Unable to read password",
};
// ipmitool refused its own arguments.
constexpr std::string_view kArgumentMarkers[] = {
    "Invalid privilege level",
    "is out of range",
    "Invalid chassis power command",
    "Invalid argument",
};
// Session set-up failures and busy-BMC completion codes (Ironic's retryable list plus the
// "Unable to establish ... session" of an unanswered session request).
constexpr std::string_view kTransientMarkers[] = {
    "Unable to establish",
    "insufficient resources for session",
    "Node busy",
    "Timeout",
    "Out of space",
    "BMC initialization in progress",
    // Printed when a request inside an established session got no answer at all.
    "Unable to get Chassis Power Status",
    "Unable to set Chassis Power Control",
    "Error Getting Chassis Boot Parameter",
    "Error setting Chassis Boot Parameter",
};

}  // namespace

Result<IpmiDriverInfo> parseIpmiDriverInfo(const json& driverInfo) {
  static const json kEmpty = json::object();
  const json& info = driverInfo.is_object() ? driverInfo : kEmpty;
  IpmiDriverInfo out;
  auto address = KILN_TRY(optionalString(info, "ipmi_address", false));
  if (!address) {
    return invalid(
        "Missing the following IPMI credentials in node's driver_info: "
        "['ipmi_address'].");
  }
  out.address = std::move(*address);
  out.port = KILN_TRY(parsePort(info));
  out.username = KILN_TRY(optionalString(info, "ipmi_username", false));
  out.password = KILN_TRY(optionalString(info, "ipmi_password", true));
  out.privLevel = KILN_TRY(optionalString(info, "ipmi_priv_level", false));
  if (out.privLevel && std::find(std::begin(kIpmiPrivLevels), std::end(kIpmiPrivLevels),
                                 *out.privLevel) == std::end(kIpmiPrivLevels)) {
    return invalid("Invalid ipmi_priv_level \"" + *out.privLevel +
                   "\" in node's driver_info; expected one of " + privLevelList() + ".");
  }
  out.protocolVersion = KILN_TRY(parseProtocolVersion(info));
  out.cipherSuite = KILN_TRY(parseCipherSuite(info, out.protocolVersion));
  return out;
}

std::vector<std::string> ipmitoolConnectionArgs(const IpmiDriverInfo& info) {
  std::vector<std::string> args = {"-I", info.protocolVersion == "1.5" ? "lan" : "lanplus", "-H",
                                   info.address};
  if (info.port) {
    args.insert(args.end(), {"-p", std::to_string(*info.port)});
  }
  if (info.username) {
    args.insert(args.end(), {"-U", *info.username});
  }
  if (info.privLevel) {
    args.insert(args.end(), {"-L", *info.privLevel});
  }
  if (info.cipherSuite) {
    args.insert(args.end(), {"-C", std::to_string(*info.cipherSuite)});
  }
  // NOTE(kiln): with -E and no IPMI_PASSWORD, ipmitool prompts on the terminal; a node
  // without a password uses the BMC's empty password instead.
  if (info.password) args.emplace_back("-E");
  args.insert(args.end(), {"-R", "1"});
  return args;
}

Result<std::string> parsePowerStatus(std::string_view out) {
  for (auto line : lines(out)) {
    line = trimView(line);
    if (line == "Chassis Power is on") return std::string("power on");
    if (line == "Chassis Power is off") return std::string("power off");
  }
  return internalError("Unexpected output from ipmitool chassis power status: \"" +
                       quoteOutput(out) + "\"");
}

Result<IpmiBootFlags> parseBootFlags(std::string_view out) {
  IpmiBootFlags flags;
  bool sawSelector = false;
  for (auto line : lines(out)) {
    line = trimView(line);
    if (line.starts_with("- ")) line = trimView(line.substr(2));
    if (line == "Boot Flag Valid") {
      flags.valid = true;
    } else if (line == "Boot Flag Invalid") {
      flags.valid = false;
    } else if (line == "Options apply to all future boots") {
      flags.persistent = true;
    } else if (line == "Options apply to only next boot") {
      flags.persistent = false;
    } else if (line == "BIOS EFI boot") {
      flags.efi = true;
    } else if (line.starts_with("Boot Device Selector")) {
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      flags.selector = std::string(trimView(line.substr(colon + 1)));
      sawSelector = true;
    }
  }
  if (!sawSelector) {
    return internalError(
        "Unexpected output from ipmitool chassis bootparam get 5 (no Boot "
        "Device Selector): \"" +
        quoteOutput(out) + "\"");
  }
  const std::string_view s = flags.selector;
  // Order matters: "Force Boot from default Hard-Drive, request Safe-Mode" is safe, not disk.
  if (contains(s, "PXE")) {
    flags.device = "pxe";
  } else if (contains(s, "Safe")) {
    flags.device = "safe";
  } else if (contains(s, "Hard-Drive")) {
    flags.device = "disk";
  } else if (contains(s, "CD/DVD")) {
    flags.device = "cdrom";
  } else if (contains(s, "BIOS Setup")) {
    flags.device = "bios";
  }
  return flags;
}

IpmitoolFailure classifyIpmitoolFailure(std::string_view stderrText) {
  for (auto marker : kConnectionMarkers) {
    if (contains(stderrText, marker)) return IpmitoolFailure::Connection;
  }
  for (auto marker : kArgumentMarkers) {
    if (contains(stderrText, marker)) return IpmitoolFailure::Command;
  }
  for (auto marker : kTransientMarkers) {
    if (contains(stderrText, marker)) return IpmitoolFailure::Transient;
  }
  return IpmitoolFailure::Command;
}

Ipmitool::Ipmitool(CommandRunnerPtr runner, IpmitoolOptions options)
    : runner_(std::move(runner)), options_(options) {}

const Clock& Ipmitool::clockOf(const TaskContext& task) {
  static const SystemClock kSystemClock;
  return task.clock ? *task.clock : kSystemClock;
}

Command Ipmitool::buildCommand(const IpmiDriverInfo& info,
                               const std::vector<std::string>& args) const {
  Command command;
  command.argv = {"ipmitool"};
  for (auto& a : ipmitoolConnectionArgs(info)) command.argv.push_back(std::move(a));
  command.argv.insert(command.argv.end(), args.begin(), args.end());
  if (info.password) command.env.emplace_back("IPMI_PASSWORD", *info.password);
  command.timeout = options_.commandTimeout;
  // argv holds no secret by construction; naming the display text explicitly keeps it that
  // way should a later change add one to argv.
  command.displayName = joinWords(command.argv);
  return command;
}

std::string ipmitoolOperation(const std::vector<std::string>& args) {
  std::string operation;
  for (size_t i = 0; i < args.size() && i < 3; ++i) {
    const std::string& word = args[i];
    if (word.empty() || word.find_first_not_of("abcdefghijklmnopqrstuvwxyz") != std::string::npos) {
      break;
    }
    if (!operation.empty()) operation += ' ';
    operation += word;
  }
  return operation.empty() ? std::string("other") : operation;
}

namespace {

/// The bmc_request record of one ipmitool run (server/drivers/bmc_requests.h): the BMC from
/// -H, the error text with the password (IPMI_PASSWORD) masked before it is bounded.
void noteIpmitoolRequest(const Command& command, std::string_view operation,
                         std::string_view outcome, std::chrono::steady_clock::duration elapsed,
                         const Result<CommandOutput>& result) {
  BmcRequestRecord record;
  record.driver = "ipmitool";
  record.operation = std::string(operation);
  record.result = std::string(outcome);
  record.durationSeconds = std::chrono::duration<double>(elapsed).count();
  for (size_t i = 0; i + 1 < command.argv.size(); ++i) {
    if (command.argv[i] == "-H") {
      record.bmc = command.argv[i + 1];
      break;
    }
  }
  std::optional<std::string> password;
  for (const auto& [name, value] : command.env) {
    if (name == "IPMI_PASSWORD") password = value;
  }
  // Masked before it is bounded, so no cut can leave part of the password.
  const auto masked = [&](std::string text) {
    return maskUrlsInText(withoutPassword(std::move(text), password), UrlScope::All);
  };
  if (!result) {
    record.error = boundBmcError(masked(result.error().message));
  } else {
    record.exitStatus = result->exitCode;
    if (result->exitCode != 0) {
      record.error = quoteOutput(masked(result->err.empty() ? result->out : result->err));
      if (record.error.empty()) record.error = "exit status " + std::to_string(result->exitCode);
    }
  }
  noteBmcRequest(std::move(record));
}

}  // namespace

Result<CommandOutput> Ipmitool::send(const Command& command, std::string_view operation) const {
  const auto start = std::chrono::steady_clock::now();
  auto result = runner_->run(command);
  const std::string_view outcome =
      !result ? (result.error().code == ErrorCode::DeadlineExceeded ? kBmcTimeout : kBmcError)
              : (result->exitCode == 0 ? kBmcSuccess : kBmcError);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  recordBmcRequest("ipmitool", operation, outcome, elapsed);
  if (bmcRequestScopeOpen()) noteIpmitoolRequest(command, operation, outcome, elapsed, result);
  return result;
}

Result<std::string> Ipmitool::run(const TaskContext& task,
                                  const std::vector<std::string>& args) const {
  const IpmiDriverInfo info = KILN_TRY(parseIpmiDriverInfo(task.driverInfo));
  const Command command = buildCommand(info, args);
  const std::string what =
      "IPMI command \"" + joinWords(args) + "\" to BMC " + info.address + " of node " + task.uuid();
  const Clock& clock = clockOf(task);
  const int attempts = std::max(1, options_.attempts);
  const std::string operation = ipmitoolOperation(args);
  for (int attempt = 1;; ++attempt) {
    auto result = send(command, operation);
    Error failure;
    bool retryable = false;
    if (!result) {
      if (result.error().code != ErrorCode::DeadlineExceeded) {
        // ipmitool missing or not startable: no point trying again.
        return fail(result.error().code, what + " failed: " + result.error().message);
      }
      failure = {ErrorCode::DeadlineExceeded, what + " did not finish within " +
                                                  std::to_string(options_.commandTimeout.count()) +
                                                  " ms"};
      retryable = true;
    } else if (result->exitCode == 0) {
      return std::move(result->out);
    } else {
      const IpmitoolFailure kind = classifyIpmitoolFailure(result->err);
      // Masked before quoteOutput bounds it, so no cut can leave part of the password.
      const std::string detail = quoteOutput(
          withoutPassword(result->err.empty() ? result->out : result->err, info.password));
      failure = {kind == IpmitoolFailure::Command ? ErrorCode::Internal : ErrorCode::Unavailable,
                 what + " failed (exit code " + std::to_string(result->exitCode) + ")" +
                     (detail.empty() ? std::string(".") : ": " + detail)};
      retryable = kind == IpmitoolFailure::Transient;
    }
    if (!retryable || attempt >= attempts) {
      if (attempt > 1) failure.message += " [" + std::to_string(attempt) + " attempts]";
      return std::unexpected(std::move(failure));
    }
    task.log.warning("ipmitool failed, retrying", {{"node", task.uuid()},
                                                   {"command", command.display()},
                                                   {"attempt", std::to_string(attempt)},
                                                   {"error", failure.message}});
    clock.sleepFor(options_.retryDelay);
  }
}

Result<std::string> Ipmitool::powerStatus(const TaskContext& task) const {
  const std::string out = KILN_TRY(run(task, {"chassis", "power", "status"}));
  return parsePowerStatus(out);
}

Result<void> Ipmitool::powerControl(const TaskContext& task, std::string_view action) const {
  KILN_TRY_VOID(run(task, {"chassis", "power", std::string(action)}));
  return {};
}

Result<IpmiBootFlags> Ipmitool::bootFlags(const TaskContext& task) const {
  const std::string out = KILN_TRY(run(task, {"chassis", "bootparam", "get", "5"}));
  return parseBootFlags(out);
}

Result<void> Ipmitool::setBootDevice(const TaskContext& task, std::string_view device,
                                     bool persistent) const {
  // Set System Boot Options, parameter 3 (boot flag valid bit clearing) = 0x08: do not clear
  // the boot flags after 60 s without a chassis control command, so the setting survives a
  // slow reboot. Ironic sends the same bytes; BMCs that reject them still honour bootdev.
  auto timeoutOff = run(task, {"raw", "0x00", "0x08", "0x03", "0x08"});
  if (!timeoutOff) {
    if (timeoutOff.error().code != ErrorCode::Internal) {
      return std::unexpected(timeoutOff.error());
    }
    task.log.warning("BMC rejected disabling the boot flag timeout; continuing",
                     {{"node", task.uuid()}, {"error", timeoutOff.error().message}});
  }
  // UEFI: "chassis bootdev" cannot say EFI reliably, so the boot flags go raw, as Ironic sends
  // them (Set System Boot Options parameter 5: 0xe0 persistent + EFI, 0xa0 once + EFI).
  if (KILN_TRY(effectiveBootMode(task)) == kBootModeUefi) {
    const std::string code = KILN_TRY(uefiBootDeviceCode(task, device));
    KILN_TRY_VOID(run(task, {"raw", "0x00", "0x08", "0x05", persistent ? "0xe0" : "0xa0", code,
                             "0x00", "0x00", "0x00"}));
    return {};
  }
  std::vector<std::string> args = {"chassis", "bootdev", std::string(device)};
  if (persistent) args.emplace_back("options=persistent");
  KILN_TRY_VOID(run(task, args));
  return {};
}

Result<std::string> uefiBootDeviceCode(const TaskContext& task, std::string_view device) {
  // Boot device selector of IPMI's boot flags (byte 2, bits 5:2), as Ironic maps it; Supermicro
  // BMCs want 0x24 for the disk in UEFI mode.
  if (device == "pxe") return std::string("0x04");
  if (device == "disk") {
    const json properties = objectField(task.node, kNodeProperties);
    auto vendor = properties.find("vendor");
    if (vendor != properties.end() && vendor->is_string() &&
        equalsIgnoreCase(vendor->get_ref<const std::string&>(), "supermicro")) {
      return std::string("0x24");
    }
    return std::string("0x08");
  }
  if (device == "cdrom") return std::string("0x14");
  if (device == "bios") return std::string("0x18");
  if (device == "safe") return std::string("0x0c");
  return invalid("Invalid boot device " + std::string(device) + " specified.");
}

}  // namespace kiln::server
