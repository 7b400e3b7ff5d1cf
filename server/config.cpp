#include "server/config.h"

#include <ini.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "server/config/dnsmasq_options.h"
#include "server/config/option_values.h"
#include "server/local_files.h"
#include "shared/core/file.h"
#include "shared/core/log.h"
#include "shared/core/strings.h"

namespace kiln::server {
namespace {

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) {
    return "localhost";
  }
  return buf;
}

/// The parsed file: every (section, key) in order, and the values (sections and keys
/// lowercased; a repeated key keeps its last value).
struct IniFile {
  std::vector<std::pair<std::string, std::string>> keys;
  std::map<std::string, std::map<std::string, std::string>> values;

  bool has(const std::string& section, const std::string& key) const {
    auto s = values.find(asciiLower(section));
    return s != values.end() && s->second.count(key) > 0;
  }
  std::string get(const std::string& section, const std::string& key) const {
    auto s = values.find(asciiLower(section));
    if (s == values.end()) return "";
    auto k = s->second.find(key);
    return k == s->second.end() ? "" : k->second;
  }
};

int collectHandler(void* user, const char* section, const char* name, const char* value) {
  auto* file = static_cast<IniFile*>(user);
  const std::string sec = asciiLower(section);
  const std::string key = asciiLower(name);
  file->keys.emplace_back(sec, key);
  file->values[sec][key] = value ? value : "";
  return 1;
}

}  // namespace

std::vector<std::string> splitList(const std::string& text) { return splitTrimmed(text, ','); }

namespace {

/// "a, b or c".
std::string choiceList(const std::vector<std::string>& choices) {
  std::string out;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) out += i + 1 == choices.size() ? " or " : ", ";
    out += choices[i];
  }
  return out;
}

Result<int> readInt(const std::string& text, int min, int max, const std::string& where) {
  // As std::stol read it: a '+' sign is allowed.
  const auto value = parseInt<int>(text, min, max, IntSyntax::Strtol);
  if (!value) {
    return invalid(where + " must be an integer between " + std::to_string(min) + " and " +
                   std::to_string(max) + ", got '" + text + "'");
  }
  return *value;
}

Result<bool> readBool(const std::string& text, const std::string& where) {
  const std::string value = asciiLower(text);
  if (value == "true" || value == "1" || value == "yes" || value == "on") return true;
  if (value == "false" || value == "0" || value == "no" || value == "off") return false;
  return invalid(where + " must be true or false, got '" + value + "'");
}

/// Stores `option`'s text (trimmed) in its member, or hands it to its reader.
Result<void> readOption(const ConfigOption& option, const std::string& text,
                        const std::string& where, Config& c) {
  switch (option.kind) {
    case OptionKind::String:
      c.*std::get<std::string Config::*>(option.member) = text;
      return {};
    case OptionKind::Int: {
      const int value = KILN_TRY(readInt(text, option.min, option.max, where));
      if (const auto* member = std::get_if<int Config::*>(&option.member)) {
        c.** member = value;
      } else {
        c.*std::get<std::optional<int> Config::*>(option.member) = value;
      }
      return {};
    }
    case OptionKind::Bool:
      c.*std::get<bool Config::*>(option.member) = KILN_TRY(readBool(text, where));
      return {};
    case OptionKind::Choice: {
      const std::string value = option.normalize ? option.normalize(text) : text;
      if (std::find(option.choices.begin(), option.choices.end(), value) == option.choices.end()) {
        return invalid(where + " must be " + choiceList(option.choices) + ", got '" + value + "'");
      }
      c.*std::get<std::string Config::*>(option.member) = value;
      return {};
    }
    case OptionKind::List:
      c.*std::get<std::vector<std::string> Config::*>(option.member) = splitList(text);
      return {};
    case OptionKind::Custom:
      if (option.custom) return option.custom(option, text, where, c);
      return {};
  }
  return {};
}

ConfigOption makeOption(std::string section, std::string key, OptionKind kind,
                        ConfigOption::Member member, std::optional<std::string> defaultValue) {
  ConfigOption o;
  o.section = std::move(section);
  o.key = std::move(key);
  o.kind = kind;
  o.member = member;
  o.defaultValue = std::move(defaultValue);
  return o;
}

ConfigOption optString(std::string section, std::string key, std::string Config::*member,
                       std::optional<std::string> defaultValue) {
  return makeOption(std::move(section), std::move(key), OptionKind::String, member,
                    std::move(defaultValue));
}

ConfigOption optInt(std::string section, std::string key, int Config::*member, int min, int max,
                    int defaultValue) {
  ConfigOption o = makeOption(std::move(section), std::move(key), OptionKind::Int, member,
                              std::to_string(defaultValue));
  o.min = min;
  o.max = max;
  return o;
}

ConfigOption optBool(std::string section, std::string key, bool Config::*member,
                     bool defaultValue) {
  return makeOption(std::move(section), std::move(key), OptionKind::Bool, member,
                    defaultValue ? "true" : "false");
}

ConfigOption optChoice(std::string section, std::string key, std::string Config::*member,
                       std::vector<std::string> choices, std::string defaultValue,
                       std::string (*normalize)(std::string_view) = nullptr) {
  ConfigOption o = makeOption(std::move(section), std::move(key), OptionKind::Choice, member,
                              std::move(defaultValue));
  o.choices = std::move(choices);
  o.normalize = normalize;
  return o;
}

ConfigOption optCustom(std::string section, std::string key, ConfigOption::Reader reader,
                       std::optional<std::string> defaultValue = std::nullopt) {
  ConfigOption o = makeOption(std::move(section), std::move(key), OptionKind::Custom,
                              std::monostate{}, std::move(defaultValue));
  o.custom = std::move(reader);
  return o;
}

/// An [ipmi] option in seconds (IpmitoolOptions keeps milliseconds).
ConfigOption ipmiSeconds(std::string key, std::chrono::milliseconds IpmitoolOptions::*member,
                         int min, int max, int defaultValue) {
  ConfigOption option = optCustom(
      "ipmi", std::move(key),
      [member](const ConfigOption& self, const std::string& text, const std::string& where,
               Config& c) -> Result<void> {
        c.ipmi.*member = std::chrono::seconds(KILN_TRY(readInt(text, self.min, self.max, where)));
        return {};
      },
      std::to_string(defaultValue));
  option.min = min;
  option.max = max;
  return option;
}

std::vector<ConfigOption> makeOptions() {
  using C = Config;
  constexpr int kWeek = 86400 * 7;
  std::vector<ConfigOption> o;
  // [DEFAULT]
  o.push_back(
      optChoice("DEFAULT", "auth_strategy", &C::authStrategy, {"noauth", "http_basic"}, "noauth"));
  o.push_back(optString("DEFAULT", "http_basic_auth_user_file", &C::httpBasicAuthUserFile,
                        "/etc/kiln/htpasswd"));
  o.push_back(optString("DEFAULT", "host", &C::host, std::nullopt));  // the hostname
  o.push_back(optChoice("DEFAULT", "log_level", &C::logLevel,
                        {"trace", "debug", "info", "warning", "error"}, "info",
                        [](std::string_view text) {
                          // Any case, and "warn", as parseLogLevel reads them; shown in messages
                          // lowered.
                          const auto level = parseLogLevel(text);
                          return level ? std::string(logLevelName(*level)) : asciiLower(text);
                        }));
  o.push_back(optCustom(
      "DEFAULT", "debug",
      [](const ConfigOption&, const std::string& text, const std::string& where,
         Config& c) -> Result<void> {
        if (KILN_TRY(readBool(text, where))) c.logLevel = "debug";
        return {};
      },
      "false"));
  o.push_back(makeOption("DEFAULT", "enabled_hardware_types", OptionKind::List,
                         &C::enabledHardwareTypes, "ipmi, redfish"));
  for (const auto& info : kInterfaceTypes) {
    const auto idx = static_cast<size_t>(info.type);
    auto enabled = optCustom("DEFAULT", "enabled_" + std::string(info.name) + "_interfaces",
                             [idx](const ConfigOption&, const std::string& text, const std::string&,
                                   Config& c) -> Result<void> {
                               c.enabledInterfaces[idx] = splitList(text);
                               return {};
                             });
    enabled.docName = "enabled_<iface>_interfaces";
    o.push_back(std::move(enabled));
    auto byDefault = optCustom("DEFAULT", "default_" + std::string(info.name) + "_interface",
                               [idx](const ConfigOption&, const std::string& text,
                                     const std::string&, Config& c) -> Result<void> {
                                 if (!text.empty()) c.defaultInterfaces[idx] = text;
                                 return {};
                               });
    byDefault.docName = "default_<iface>_interface";
    o.push_back(std::move(byDefault));
  }
  o.push_back(makeOption("DEFAULT", "autodetect_deploy_interfaces", OptionKind::List,
                         &C::autodetectDeployInterfaces, "ramdisk, direct"));

  // [api]
  o.push_back(optString("api", "host_ip", &C::hostIp, "127.0.0.1"));
  o.push_back(optInt("api", "port", &C::port, 0, 65535, 6385));
  o.push_back(optInt("api", "max_limit", &C::maxLimit, 1, 1000000, 1000));
  o.push_back(optString("api", "public_endpoint", &C::publicEndpoint, ""));
  o.push_back(optInt("api", "api_workers", &C::apiWorkers, 0, 256, 0));
  o.push_back(
      optInt("api", "ramdisk_heartbeat_timeout", &C::ramdiskHeartbeatTimeout, 5, 86400, 300));
  o.push_back(optBool("api", "restrict_lookup", &C::restrictLookup, true));
  o.push_back(optInt("api", "max_request_body_size", &C::maxRequestBodySize, 1024,
                     1024 * 1024 * 1024, 16 * 1024 * 1024));
  o.push_back(optInt("api", "client_socket_timeout", &C::clientSocketTimeout, 1, 86400, 60));
  o.push_back(optInt("api", "max_connections", &C::maxConnections, 16, 10000000, 10000));
  o.push_back(optBool("api", "enable_ssl_api", &C::enableSslApi, false));

  // [ssl]
  o.push_back(optString("ssl", "cert_file", &C::sslCertFile, ""));
  o.push_back(optString("ssl", "key_file", &C::sslKeyFile, ""));

  // [database]
  o.push_back(optString("database", "connection", &C::connection, "sqlite:///kiln.sqlite"));
  o.push_back(optString("database", "backup_dir", &C::backupDir, "/var/lib/kiln/backups"));
  o.push_back(optInt("database", "backup_keep", &C::backupKeep, 0, 100000, 7));
  o.push_back(optInt("database", "backup_interval", &C::backupInterval, 0, 31536000, 0));

  // [conductor]
  o.push_back(optBool("conductor", "allow_deleting_available_nodes",
                      &C::allowDeletingAvailableNodes, true));
  o.push_back(optBool("conductor", "automated_clean", &C::automatedClean, true));
  o.push_back(
      optInt("conductor", "deploy_callback_timeout", &C::deployCallbackTimeout, 0, kWeek, 1800));
  o.push_back(
      optInt("conductor", "clean_callback_timeout", &C::cleanCallbackTimeout, 0, kWeek, 1800));
  o.push_back(
      optInt("conductor", "sync_power_state_interval", &C::syncPowerStateInterval, 0, 86400, 60));
  o.push_back(
      optBool("conductor", "force_power_state_during_sync", &C::forcePowerStateDuringSync, true));
  o.push_back(optBool("conductor", "enable_health_monitoring", &C::enableHealthMonitoring, true));
  o.push_back(
      optInt("conductor", "power_state_sync_max_retries", &C::powerStateSyncMaxRetries, 1, 100, 3));
  o.push_back(
      optInt("conductor", "power_state_change_timeout", &C::powerStateChangeTimeout, 1, 3600, 60));
  o.push_back(optInt("conductor", "workers_pool_size", &C::workersPoolSize, 1, 1024, 16));
  o.push_back(
      optInt("conductor", "node_locked_retry_attempts", &C::nodeLockedRetryAttempts, 1, 100, 3));
  o.push_back(
      optInt("conductor", "node_locked_retry_interval", &C::nodeLockedRetryInterval, 0, 600, 1));
  o.push_back(optInt("conductor", "periodic_interval", &C::periodicInterval, 0, 3600, 1));
  // Lower-cased and checked with the other rules below.
  o.push_back(optString("conductor", "conductor_group", &C::conductorGroup, ""));
  o.push_back(optInt("conductor", "heartbeat_interval", &C::heartbeatInterval, 1, 3600, 10));
  o.push_back(optInt("conductor", "heartbeat_timeout", &C::heartbeatTimeout, 2, 86400, 60));
  o.push_back(optInt("conductor", "inspect_wait_timeout", &C::inspectWaitTimeout, 0, kWeek, 1800));
  o.push_back(optBool("conductor", "node_history", &C::nodeHistory, true));
  o.push_back(
      optInt("conductor", "node_history_max_entries", &C::nodeHistoryMaxEntries, 0, 1000000, 300));
  o.push_back(
      optInt("conductor", "node_history_minimum_days", &C::nodeHistoryMinimumDays, 0, 36500, 0));
  // Accepted for Ironic's sake: Kiln prunes node history on insert.
  o.push_back(optCustom("conductor", "node_history_cleanup_interval", nullptr));
  o.push_back(optCustom("conductor", "node_history_cleanup_batch_count", nullptr));
  o.push_back(optString("conductor", "deploy_kernel", &C::deployKernel, ""));
  o.push_back(optString("conductor", "deploy_ramdisk", &C::deployRamdisk, ""));
  o.push_back(optCustom(
      "conductor", "file_url_allowed_paths",
      [](const ConfigOption&, const std::string& text, const std::string& where,
         Config& c) -> Result<void> {
        c.fileUrlAllowedPaths.clear();
        for (const auto& entry : splitList(text)) {
          auto dir = checkAllowedDirectory(entry);
          if (!dir) return invalid(where + ": " + dir.error().message);
          if (const auto system = forbiddenDirectoryOf(*dir); !system.empty()) {
            Logger("config").warning(
                "file_url_allowed_paths entry inside a system directory allows no file",
                {{"entry", *dir}, {"system_directory", std::string(system)}});
          }
          c.fileUrlAllowedPaths.push_back(std::move(*dir));
        }
        return {};
      },
      "/var/lib/kiln/images"));
  o.push_back(optString("conductor", "api_url", &C::apiUrl, ""));
  for (auto [key, member] :
       {std::pair{"clean_step_priority_override", &C::cleanStepPriorityOverride},
        std::pair{"deploy_step_priority_override", &C::deployStepPriorityOverride}}) {
    o.push_back(optCustom("conductor", key,
                          [member](const ConfigOption&, const std::string& text,
                                   const std::string& where, Config& c) -> Result<void> {
                            auto parsed = parsePriorityOverrides(text);
                            if (!parsed) return invalid(where + ": " + parsed.error().message);
                            c.*member = std::move(*parsed);
                            return {};
                          }));
  }

  // [events]
  o.push_back(optInt("events", "max_per_node", &C::eventsMaxPerNode, 0, 10000000, 1000));
  o.push_back(optInt("events", "max_age", &C::eventsMaxAge, 0, 365 * 86400, 604800));
  o.push_back(optInt("events", "keepalive_interval", &C::eventsKeepaliveInterval, 1, 3600, 15));
  o.push_back(optInt("events", "poll_interval", &C::eventsPollInterval, 1, 3600, 1));
  o.push_back(
      optInt("events", "stream_buffer_bytes", &C::eventsStreamBuffer, 4096, 64 << 20, 262144));

  // [pxe]
  o.push_back(optString("pxe", "tftp_root", &C::tftpRoot, "/var/lib/kiln/tftpboot"));
  o.push_back(optString("pxe", "kernel_append_params", &C::kernelAppendParams,
                        Config{}.kernelAppendParams));
  o.push_back(optCustom("pxe", "loader_file_paths",
                        [](const ConfigOption&, const std::string& text, const std::string& where,
                           Config& c) -> Result<void> {
                          auto parsed = parseLoaderFilePaths(text);
                          if (!parsed) return invalid(where + ": " + parsed.error().message);
                          c.loaderFilePaths = std::move(*parsed);
                          c.loaderFilePathsSet = true;
                          return {};
                        }));

  // [agent]
  o.push_back(optInt("agent", "heartbeat_interval", &C::agentHeartbeatInterval, 1, 3600, 10));
  o.push_back(
      optInt("agent", "command_heartbeat_interval", &C::agentCommandHeartbeatInterval, 1, 3600, 2));
  o.push_back(optBool("agent", "allow_md5_checksum", &C::allowMd5Checksum, false));
  o.push_back(optString("agent", "api_ca_file", &C::agentApiCaFile, std::nullopt));
  o.push_back(optChoice("agent", "deploy_logs_collect", &C::deployLogsCollect,
                        {"always", "on_failure", "never"}, "on_failure"));
  o.push_back(
      optString("agent", "deploy_logs_storage_backend", &C::deployLogsStorageBackend, "local"));
  o.push_back(optString("agent", "deploy_logs_local_path", &C::deployLogsLocalPath,
                        "/var/log/kiln/deploy"));
  o.push_back(
      optInt("agent", "deploy_logs_collect_timeout", &C::deployLogsCollectTimeout, 1, 3600, 60));

  // [deploy]
  o.push_back(
      optBool("deploy", "power_off_after_deploy_failure", &C::powerOffAfterDeployFailure, true));
  o.push_back(optBool("deploy", "fast_track", &C::fastTrack, false));
  o.push_back(optInt("deploy", "fast_track_timeout", &C::fastTrackTimeout, 0, 300, 300));
  o.push_back(optString("deploy", "http_root", &C::httpRoot, "/var/lib/kiln/httpboot"));
  o.push_back(optString("deploy", "external_http_url", &C::externalHttpUrl, std::nullopt));
  o.push_back(optChoice("deploy", "image_server_auth_strategy", &C::imageServerAuthStrategy,
                        {"noauth", "http_basic"}, "noauth"));
  o.push_back(optString("deploy", "image_server_user", &C::imageServerUser, std::nullopt));
  o.push_back(optString("deploy", "image_server_password", &C::imageServerPassword, std::nullopt));
  o.push_back(optChoice("deploy", "default_boot_mode", &C::defaultBootMode, {"uefi", "bios"},
                        "uefi", [](std::string_view text) { return asciiLower(text); }));
  for (const char* key : {"erase_devices_priority", "erase_devices_metadata_priority"}) {
    ConfigOption priority = makeOption("deploy", key, OptionKind::Int,
                                       std::string_view(key) == "erase_devices_priority"
                                           ? &C::eraseDevicesPriority
                                           : &C::eraseDevicesMetadataPriority,
                                       std::nullopt);
    priority.min = 0;
    priority.max = 1000000;
    o.push_back(std::move(priority));
  }

  // [ipmi]
  ConfigOption attempts = optCustom(
      "ipmi", "command_attempts",
      [](const ConfigOption& self, const std::string& text, const std::string& where,
         Config& c) -> Result<void> {
        c.ipmi.attempts = KILN_TRY(readInt(text, self.min, self.max, where));
        return {};
      },
      "3");
  attempts.min = 1;
  attempts.max = 100;
  o.push_back(std::move(attempts));
  o.push_back(ipmiSeconds("command_retry_interval", &IpmitoolOptions::retryDelay, 0, 600, 2));
  o.push_back(ipmiSeconds("command_timeout", &IpmitoolOptions::commandTimeout, 1, 3600, 30));

  // [sensor_data]
  o.push_back(optBool("sensor_data", "send_sensor_data", &C::sendSensorData, false));
  o.push_back(optBool("sensor_data", "enable_for_undeployed_nodes",
                      &C::sensorDataForUndeployedNodes, false));

  // [dhcp], [dnsmasq]: the provisioning network (server/drivers/dhcp/)
  o.push_back(optChoice("dhcp", "dhcp_provider", &C::dhcpProvider, {"none", "dnsmasq"}, "none"));
  o.push_back(optBool("dnsmasq", "manage", &C::dnsmasqManage, false));
  o.push_back(optString("dnsmasq", "binary", &C::dnsmasqBinary, "/usr/sbin/dnsmasq"));
  o.push_back(optCustom(
      "dnsmasq", "interface",
      [](const ConfigOption&, const std::string& text, const std::string& where,
         Config& c) -> Result<void> {
        // Empty: unset (checked with manage below).
        if (auto problem = interfaceNameProblem(text); problem && !text.empty()) {
          return invalid(where + ": \"" + text + "\" " + *problem);
        }
        c.dnsmasqInterface = text;
        return {};
      }));
  o.push_back(optCustom(
      "dnsmasq", "dhcp_range",
      [](const ConfigOption&, const std::string& text, const std::string& where,
         Config& c) -> Result<void> {
        if (auto ranges = parseDhcpRanges(text); !ranges) return invalid(where + ": " + ranges.error().message);
        c.dnsmasqDhcpRange = text;
        return {};
      }));
  o.push_back(optBool("dnsmasq", "ignore_unknown_hosts", &C::dnsmasqIgnoreUnknownHosts, true));
  o.push_back(optString("dnsmasq", "dhcp_hostsdir", &C::dnsmasqHostsDir, "/var/lib/kiln/dnsmasq/hosts"));
  o.push_back(optString("dnsmasq", "dhcp_optsdir", &C::dnsmasqOptsDir, "/var/lib/kiln/dnsmasq/opts"));
  o.push_back(optString("dnsmasq", "dhcp_leasefile", &C::dnsmasqLeaseFile,
                        "/var/lib/kiln/dnsmasq/dnsmasq.leases"));
  o.push_back(optString("dnsmasq", "config_file", &C::dnsmasqConfigFile,
                        "/var/lib/kiln/dnsmasq/dnsmasq.conf"));
  o.push_back(optBool("dnsmasq", "enable_tftp", &C::dnsmasqEnableTftp, true));
  o.push_back(optCustom(
      "dnsmasq", "router",
      [](const ConfigOption&, const std::string& text, const std::string& where,
         Config& c) -> Result<void> {
        if (!text.empty() && !ipv4Number(text)) return invalid(where + ": \"" + text + "\" is not an IPv4 address");
        c.dnsmasqRouter = text;
        return {};
      }));
  o.push_back(optInt("dnsmasq", "sync_interval", &C::dnsmasqSyncInterval, 1, 3600, 10));

  // [metrics]
  o.push_back(optBool("metrics", "enabled", &C::metricsEnabled, true));
  o.push_back(optString("metrics", "listen_address", &C::metricsListenAddress, ""));
  o.push_back(optInt("metrics", "port", &C::metricsPort, 0, 65535, 9608));
  o.push_back(optBool("metrics", "require_auth", &C::metricsRequireAuth, false));

  // [console]
  o.push_back(optBool("console", "enabled", &C::consoleEnabled, true));
  o.push_back(optString("console", "static_dir", &C::consoleStaticDir, ""));
  return o;
}

/// The checks that span options, and the tidying of URLs, after every option was read.
Result<void> finish(Config& c, const std::function<std::string(const char*, const char*)>& where) {
  if (c.enableSslApi && (c.sslCertFile.empty() || c.sslKeyFile.empty())) {
    return invalid(where("api", "enable_ssl_api") + " needs [ssl] cert_file and key_file");
  }
  if (c.deployLogsStorageBackend != "local") {
    // Ironic also has "swift"; Kiln has no object store client.
    return invalid(where("agent", "deploy_logs_storage_backend") +
                   " must be 'local' (the only storage back end of ramdisk logs in Kiln), got '" +
                   c.deployLogsStorageBackend + "'");
  }
  if (c.deployLogsCollect != "never" && c.deployLogsLocalPath.empty()) {
    return invalid(where("agent", "deploy_logs_local_path") +
                   " must name a directory while [agent] deploy_logs_collect is " +
                   c.deployLogsCollect);
  }
  for (std::string* url : {&c.publicEndpoint, &c.apiUrl, &c.externalHttpUrl}) {
    while (!url->empty() && url->back() == '/') url->pop_back();
  }
  c.conductorGroup = asciiLower(c.conductorGroup);
  if (c.conductorGroup.size() > 255 ||
      c.conductorGroup.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-.") !=
          std::string::npos) {
    return invalid(where("conductor", "conductor_group") +
                   " may only hold letters, digits, '_', '-' and '.' (at most 255), got '" +
                   c.conductorGroup + "'");
  }
  if (c.heartbeatTimeout <= c.heartbeatInterval) {
    return invalid(where("conductor", "heartbeat_timeout") +
                   " must be longer than [conductor] heartbeat_interval");
  }
  if (!c.externalHttpUrl.empty() && c.externalHttpUrl.rfind("http://", 0) != 0 &&
      c.externalHttpUrl.rfind("https://", 0) != 0) {
    return invalid(where("deploy", "external_http_url") +
                   " must be an http:// or https:// URL, got '" + c.externalHttpUrl + "'");
  }
  if (c.dhcpProvider == "dnsmasq") {
    // Every value below reaches dnsmasq's files: checked here, once, at start-up.
    const std::string& apiUrl = c.apiUrl.empty() ? c.publicEndpoint : c.apiUrl;
    if (apiUrl.empty()) {
      return invalid(where("dhcp", "dhcp_provider") +
                     " is dnsmasq but neither [conductor] api_url nor [api] public_endpoint is set: "
                     "DHCP answers point booting machines at that URL");
    }
    if (!dnsmasqSafeValue(apiUrl)) {
      return invalid(where("conductor", "api_url") +
                     " cannot be handed out by DHCP: it must be printable ASCII without spaces, "
                     "',', '#', quotes or backslashes");
    }
    std::vector<std::pair<const char*, std::string*>> paths = {
        {"dhcp_hostsdir", &c.dnsmasqHostsDir}, {"dhcp_optsdir", &c.dnsmasqOptsDir},
        {"dhcp_leasefile", &c.dnsmasqLeaseFile}, {"config_file", &c.dnsmasqConfigFile}};
    for (const auto& [key, path] : paths) {
      if (path->empty() || path->front() != '/' || !dnsmasqSafeValue(*path)) {
        return invalid(where("dnsmasq", key) +
                       " must be an absolute path of printable ASCII without spaces, ',', '#', "
                       "quotes or backslashes, got '" + *path + "'");
      }
    }
    if (c.dnsmasqManage) {
      if (c.dnsmasqInterface.empty()) {
        return invalid(where("dnsmasq", "manage") + " is true but [dnsmasq] interface is not set");
      }
      if (c.dnsmasqDhcpRange.empty()) {
        return invalid(where("dnsmasq", "manage") + " is true but [dnsmasq] dhcp_range is not set");
      }
      if (c.dnsmasqEnableTftp && (c.tftpRoot.empty() || c.tftpRoot.front() != '/' ||
                                  !dnsmasqSafeValue(c.tftpRoot))) {
        return invalid(where("pxe", "tftp_root") +
                       " cannot be served by the managed dnsmasq: it must be an absolute path of "
                       "printable ASCII without spaces, ',', '#', quotes or backslashes");
      }
    }
  }
  if (c.imageServerAuthStrategy == "http_basic") {
    std::vector<std::string> missing;
    if (c.imageServerUser.empty()) missing.push_back("image_server_user");
    if (c.imageServerPassword.empty()) missing.push_back("image_server_password");
    if (missing.size() == 1) {
      return invalid(where("deploy", "image_server_auth_strategy") +
                     " is http_basic but [deploy] " + missing[0] + " is not set");
    }
    if (missing.size() == 2) {
      return invalid(where("deploy", "image_server_auth_strategy") +
                     " is http_basic but [deploy] image_server_user and image_server_password "
                     "are not set");
    }
  }
  return {};
}

}  // namespace

const std::vector<ConfigOption>& configOptions() {
  static const std::vector<ConfigOption> options = makeOptions();
  return options;
}

Result<Config> parseConfig(const std::string& text, const std::string& origin) {
  IniFile reader;
  if (const int line = ini_parse_string(text.c_str(), collectHandler, &reader); line != 0) {
    return invalid(origin + ": syntax error on line " + std::to_string(line));
  }
  Config c;
  c.host = hostname();
  auto where = [&](const std::string& section, const std::string& key) {
    return origin + ": [" + section + "] " + key;
  };
  for (const ConfigOption& option : configOptions()) {
    if (!reader.has(option.section, option.key)) continue;
    KILN_TRY_VOID(readOption(option, trim(reader.get(option.section, option.key)),
                             where(option.section, option.key), c));
  }
  KILN_TRY_VOID(
      finish(c, [&](const char* section, const char* key) { return where(section, key); }));

  for (const auto& [key, raw] : reader.values["http_basic_roles"]) {
    const std::string value = asciiLower(trim(raw));
    Role role;
    if (value == "admin") {
      role = Role::Admin;
    } else if (value == "observer") {
      role = Role::Observer;
    } else {
      return invalid(where("http_basic_roles", key) + " must be admin or observer, got '" + value +
                     "'");
    }
    if (key == "default_role") {
      c.defaultRole = role;
    } else {
      c.userRoles[key] = role;
    }
  }

  // Report options Kiln does not know: most likely typos, and silently ignoring them would
  // hide a misconfiguration.
  static const std::set<std::string> kKnown = [] {
    std::set<std::string> known;
    for (const ConfigOption& option : configOptions()) {
      known.insert(asciiLower(option.section) + "/" + option.key);
    }
    return known;
  }();
  for (const auto& [section, key] : reader.keys) {
    if (section == "http_basic_roles") continue;
    if (!kKnown.count(section + "/" + key)) {
      Logger("config").warning("ignoring unknown option",
                               {{"option", "[" + section + "] " + key}, {"file", origin}});
    }
  }
  return c;
}

Result<Config> loadConfig(const std::string& path) {
  auto text = readFile(path);
  if (!text) {
    return invalid("cannot read configuration file " + path);
  }
  return parseConfig(*text, path);
}

}  // namespace kiln::server
