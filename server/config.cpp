#include "server/config.h"

#include <ini.h>
#include <unistd.h>

#include <set>

#include "server/conductor/step_planner.h"
#include "server/drivers/netboot/loader_files.h"
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
  auto getString = [&](const std::string& section, const std::string& key, std::string& out) {
    if (reader.has(section, key)) out = trim(reader.get(section, key));
  };
  auto getInt = [&](const std::string& section, const std::string& key, int& out, int min,
                    int max) -> Result<void> {
    if (!reader.has(section, key)) return {};
    const std::string raw = trim(reader.get(section, key));
    // As std::stol read it: a '+' sign is allowed.
    const auto v = parseInt<int>(raw, min, max, IntSyntax::Strtol);
    if (!v) {
      return invalid(where(section, key) + " must be an integer between " + std::to_string(min) +
                     " and " + std::to_string(max) + ", got '" + raw + "'");
    }
    out = *v;
    return {};
  };
  auto getBool = [&](const std::string& section, const std::string& key,
                     bool& out) -> Result<void> {
    if (!reader.has(section, key)) return {};
    const std::string raw = asciiLower(trim(reader.get(section, key)));
    if (raw == "true" || raw == "1" || raw == "yes" || raw == "on") {
      out = true;
    } else if (raw == "false" || raw == "0" || raw == "no" || raw == "off") {
      out = false;
    } else {
      return invalid(where(section, key) + " must be true or false, got '" + raw + "'");
    }
    return {};
  };

  getString("DEFAULT", "auth_strategy", c.authStrategy);
  if (c.authStrategy != "noauth" && c.authStrategy != "http_basic") {
    return invalid(where("DEFAULT", "auth_strategy") + " must be noauth or http_basic, got '" +
                   c.authStrategy + "'");
  }
  getString("DEFAULT", "http_basic_auth_user_file", c.httpBasicAuthUserFile);
  getString("DEFAULT", "host", c.host);
  getString("DEFAULT", "log_level", c.logLevel);
  bool debug = false;
  KILN_TRY_VOID(getBool("DEFAULT", "debug", debug));
  if (debug) c.logLevel = "debug";
  if (reader.has("DEFAULT", "enabled_hardware_types")) {
    c.enabledHardwareTypes = splitList(reader.get("DEFAULT", "enabled_hardware_types"));
  }
  for (const auto& info : kInterfaceTypes) {
    const std::string enabledKey = "enabled_" + std::string(info.name) + "_interfaces";
    const std::string defaultKey = "default_" + std::string(info.name) + "_interface";
    const auto idx = static_cast<size_t>(info.type);
    if (reader.has("DEFAULT", enabledKey)) {
      c.enabledInterfaces[idx] = splitList(reader.get("DEFAULT", enabledKey));
    }
    if (reader.has("DEFAULT", defaultKey)) {
      std::string v = trim(reader.get("DEFAULT", defaultKey));
      if (!v.empty()) c.defaultInterfaces[idx] = v;
    }
  }

  getString("api", "host_ip", c.hostIp);
  KILN_TRY_VOID(getInt("api", "port", c.port, 0, 65535));
  KILN_TRY_VOID(getInt("api", "max_limit", c.maxLimit, 1, 1000000));
  getString("api", "public_endpoint", c.publicEndpoint);
  while (!c.publicEndpoint.empty() && c.publicEndpoint.back() == '/') c.publicEndpoint.pop_back();
  KILN_TRY_VOID(getInt("api", "api_workers", c.apiWorkers, 0, 256));
  KILN_TRY_VOID(getInt("api", "ramdisk_heartbeat_timeout", c.ramdiskHeartbeatTimeout, 5, 86400));
  KILN_TRY_VOID(getBool("api", "restrict_lookup", c.restrictLookup));
  KILN_TRY_VOID(getInt("api", "max_request_body_size", c.maxRequestBodySize, 1024, 1024 * 1024 * 1024));
  KILN_TRY_VOID(getInt("api", "client_socket_timeout", c.clientSocketTimeout, 1, 86400));
  KILN_TRY_VOID(getInt("api", "max_connections", c.maxConnections, 16, 10000000));
  KILN_TRY_VOID(getBool("api", "enable_ssl_api", c.enableSslApi));
  getString("ssl", "cert_file", c.sslCertFile);
  getString("ssl", "key_file", c.sslKeyFile);
  if (c.enableSslApi && (c.sslCertFile.empty() || c.sslKeyFile.empty())) {
    return invalid(where("api", "enable_ssl_api") + " needs [ssl] cert_file and key_file");
  }

  getString("database", "connection", c.connection);

  KILN_TRY_VOID(
      getBool("conductor", "allow_deleting_available_nodes", c.allowDeletingAvailableNodes));
  KILN_TRY_VOID(getBool("conductor", "automated_clean", c.automatedClean));
  KILN_TRY_VOID(getInt("conductor", "deploy_callback_timeout", c.deployCallbackTimeout, 0, 86400 * 7));
  KILN_TRY_VOID(getInt("conductor", "clean_callback_timeout", c.cleanCallbackTimeout, 0, 86400 * 7));
  KILN_TRY_VOID(getInt("conductor", "sync_power_state_interval", c.syncPowerStateInterval, 0, 86400));
  KILN_TRY_VOID(getBool("conductor", "force_power_state_during_sync", c.forcePowerStateDuringSync));
  KILN_TRY_VOID(getBool("conductor", "enable_health_monitoring", c.enableHealthMonitoring));
  KILN_TRY_VOID(getInt("conductor", "power_state_sync_max_retries", c.powerStateSyncMaxRetries, 1, 100));
  KILN_TRY_VOID(getInt("conductor", "power_state_change_timeout", c.powerStateChangeTimeout, 1, 3600));
  KILN_TRY_VOID(getInt("conductor", "workers_pool_size", c.workersPoolSize, 1, 1024));
  KILN_TRY_VOID(getInt("conductor", "node_locked_retry_attempts", c.nodeLockedRetryAttempts, 1, 100));
  KILN_TRY_VOID(getInt("conductor", "node_locked_retry_interval", c.nodeLockedRetryInterval, 0, 600));
  KILN_TRY_VOID(getInt("conductor", "periodic_interval", c.periodicInterval, 0, 3600));
  getString("conductor", "conductor_group", c.conductorGroup);
  c.conductorGroup = asciiLower(c.conductorGroup);
  if (c.conductorGroup.size() > 255 ||
      c.conductorGroup.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-.") !=
          std::string::npos) {
    return invalid(where("conductor", "conductor_group") +
                   " may only hold letters, digits, '_', '-' and '.' (at most 255), got '" +
                   c.conductorGroup + "'");
  }
  KILN_TRY_VOID(getInt("conductor", "heartbeat_interval", c.heartbeatInterval, 1, 3600));
  KILN_TRY_VOID(getInt("conductor", "heartbeat_timeout", c.heartbeatTimeout, 2, 86400));
  if (c.heartbeatTimeout <= c.heartbeatInterval) {
    return invalid(where("conductor", "heartbeat_timeout") +
                   " must be longer than [conductor] heartbeat_interval");
  }
  KILN_TRY_VOID(getInt("conductor", "inspect_wait_timeout", c.inspectWaitTimeout, 0, 86400 * 7));
  KILN_TRY_VOID(getBool("conductor", "node_history", c.nodeHistory));
  KILN_TRY_VOID(
      getInt("conductor", "node_history_max_entries", c.nodeHistoryMaxEntries, 0, 1000000));
  KILN_TRY_VOID(
      getInt("conductor", "node_history_minimum_days", c.nodeHistoryMinimumDays, 0, 36500));
  getString("conductor", "deploy_kernel", c.deployKernel);
  getString("conductor", "deploy_ramdisk", c.deployRamdisk);
  if (reader.has("conductor", "file_url_allowed_paths")) {
    c.fileUrlAllowedPaths.clear();
    for (const auto& entry : splitList(reader.get("conductor", "file_url_allowed_paths"))) {
      auto dir = checkAllowedDirectory(entry);
      if (!dir) return invalid(where("conductor", "file_url_allowed_paths") + ": " + dir.error().message);
      if (const auto system = forbiddenDirectoryOf(*dir); !system.empty()) {
        Logger("config").warning("file_url_allowed_paths entry inside a system directory allows no file",
                                 {{"entry", *dir}, {"system_directory", std::string(system)}});
      }
      c.fileUrlAllowedPaths.push_back(std::move(*dir));
    }
  }
  getString("conductor", "api_url", c.apiUrl);
  while (!c.apiUrl.empty() && c.apiUrl.back() == '/') c.apiUrl.pop_back();
  getString("pxe", "tftp_root", c.tftpRoot);
  getString("pxe", "kernel_append_params", c.kernelAppendParams);
  if (reader.has("pxe", "loader_file_paths")) {
    auto parsed = parseLoaderFilePaths(reader.get("pxe", "loader_file_paths"));
    if (!parsed) return invalid(where("pxe", "loader_file_paths") + ": " + parsed.error().message);
    c.loaderFilePaths = std::move(*parsed);
    c.loaderFilePathsSet = true;
  }
  KILN_TRY_VOID(getInt("agent", "heartbeat_interval", c.agentHeartbeatInterval, 1, 3600));
  KILN_TRY_VOID(getInt("agent", "command_heartbeat_interval", c.agentCommandHeartbeatInterval, 1, 3600));
  KILN_TRY_VOID(getBool("agent", "allow_md5_checksum", c.allowMd5Checksum));
  getString("agent", "api_ca_file", c.agentApiCaFile);
  for (auto [key, target] : {std::pair{"clean_step_priority_override", &c.cleanStepPriorityOverride},
                             std::pair{"deploy_step_priority_override", &c.deployStepPriorityOverride}}) {
    if (!reader.has("conductor", key)) continue;
    auto parsed = parsePriorityOverrides(reader.get("conductor", key));
    if (!parsed) return invalid(where("conductor", key) + ": " + parsed.error().message);
    *target = std::move(*parsed);
  }
  KILN_TRY_VOID(getBool("deploy", "power_off_after_deploy_failure", c.powerOffAfterDeployFailure));
  getString("deploy", "http_root", c.httpRoot);
  getString("deploy", "external_http_url", c.externalHttpUrl);
  while (!c.externalHttpUrl.empty() && c.externalHttpUrl.back() == '/') c.externalHttpUrl.pop_back();
  if (!c.externalHttpUrl.empty() && c.externalHttpUrl.rfind("http://", 0) != 0 &&
      c.externalHttpUrl.rfind("https://", 0) != 0) {
    return invalid(where("deploy", "external_http_url") + " must be an http:// or https:// URL, got '" +
                   c.externalHttpUrl + "'");
  }
  getString("deploy", "image_server_auth_strategy", c.imageServerAuthStrategy);
  getString("deploy", "image_server_user", c.imageServerUser);
  getString("deploy", "image_server_password", c.imageServerPassword);
  if (c.imageServerAuthStrategy != "noauth" && c.imageServerAuthStrategy != "http_basic") {
    return invalid(where("deploy", "image_server_auth_strategy") +
                   " must be noauth or http_basic, got '" + c.imageServerAuthStrategy + "'");
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
  getString("deploy", "default_boot_mode", c.defaultBootMode);
  c.defaultBootMode = asciiLower(trim(c.defaultBootMode));
  if (c.defaultBootMode != "uefi" && c.defaultBootMode != "bios") {
    return invalid(where("deploy", "default_boot_mode") + " must be uefi or bios, got '" +
                   c.defaultBootMode + "'");
  }
  for (auto [key, target] : {std::pair{"erase_devices_priority", &c.eraseDevicesPriority},
                             std::pair{"erase_devices_metadata_priority", &c.eraseDevicesMetadataPriority}}) {
    int value = 0;
    if (!reader.has("deploy", key)) continue;
    KILN_TRY_VOID(getInt("deploy", key, value, 0, 1000000));
    *target = value;
  }

  int ipmiAttempts = c.ipmi.attempts;
  KILN_TRY_VOID(getInt("ipmi", "command_attempts", ipmiAttempts, 1, 100));
  c.ipmi.attempts = ipmiAttempts;
  int ipmiRetryInterval = static_cast<int>(c.ipmi.retryDelay.count() / 1000);
  KILN_TRY_VOID(getInt("ipmi", "command_retry_interval", ipmiRetryInterval, 0, 600));
  c.ipmi.retryDelay = std::chrono::seconds(ipmiRetryInterval);
  int ipmiTimeout = static_cast<int>(c.ipmi.commandTimeout.count() / 1000);
  KILN_TRY_VOID(getInt("ipmi", "command_timeout", ipmiTimeout, 1, 3600));
  c.ipmi.commandTimeout = std::chrono::seconds(ipmiTimeout);

  for (const auto& [key, raw] : reader.values["http_basic_roles"]) {
    const std::string value = asciiLower(trim(raw));
    Role role;
    if (value == "admin") {
      role = Role::Admin;
    } else if (value == "observer") {
      role = Role::Observer;
    } else {
      return invalid(where("http_basic_roles", key) + " must be admin or observer, got '" +
                     value + "'");
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
    std::set<std::string> k = {
        "default/auth_strategy", "default/http_basic_auth_user_file", "default/host",
        "default/log_level", "default/debug", "default/enabled_hardware_types",
        "api/host_ip", "api/port", "api/max_limit", "api/public_endpoint", "api/api_workers",
        "api/ramdisk_heartbeat_timeout", "api/restrict_lookup", "api/max_request_body_size",
        "api/client_socket_timeout", "api/max_connections", "api/enable_ssl_api",
        "ssl/cert_file", "ssl/key_file", "conductor/inspect_wait_timeout",
        "agent/heartbeat_interval", "agent/command_heartbeat_interval", "agent/allow_md5_checksum",
        "agent/api_ca_file",
        "conductor/deploy_kernel", "conductor/deploy_ramdisk", "conductor/api_url",
        "conductor/file_url_allowed_paths",
        "pxe/tftp_root", "pxe/kernel_append_params", "pxe/loader_file_paths",
        "database/connection", "conductor/allow_deleting_available_nodes",
        "conductor/automated_clean", "conductor/deploy_callback_timeout",
        "conductor/clean_callback_timeout", "conductor/sync_power_state_interval",
        "conductor/force_power_state_during_sync", "conductor/power_state_sync_max_retries",
        "conductor/power_state_change_timeout", "conductor/workers_pool_size",
        "conductor/node_locked_retry_attempts", "conductor/node_locked_retry_interval",
        "conductor/periodic_interval", "conductor/clean_step_priority_override",
        "conductor/conductor_group", "conductor/heartbeat_interval", "conductor/heartbeat_timeout",
        "conductor/deploy_step_priority_override", "deploy/erase_devices_priority",
        "deploy/erase_devices_metadata_priority", "deploy/power_off_after_deploy_failure",
        "deploy/default_boot_mode", "deploy/http_root", "deploy/external_http_url"};
    for (const char* key :
         {"image_server_auth_strategy", "image_server_user", "image_server_password"}) {
      k.insert(std::string("deploy/") + key);
    }
    // Node history; Kiln prunes on insert, so the periodic clean-up options have no effect.
    for (const char* key : {"node_history", "node_history_max_entries", "node_history_minimum_days",
                            "node_history_cleanup_interval", "node_history_cleanup_batch_count"}) {
      k.insert(std::string("conductor/") + key);
    }
    for (const char* key : {"command_attempts", "command_retry_interval", "command_timeout"}) {
      k.insert(std::string("ipmi/") + key);
    }
    for (const auto& info : kInterfaceTypes) {
      k.insert("default/enabled_" + std::string(info.name) + "_interfaces");
      k.insert("default/default_" + std::string(info.name) + "_interface");
    }
    return k;
  }();
  for (const auto& [section, key] : reader.keys) {
    if (section == "http_basic_roles") continue;
    if (!kKnown.count(section + "/" + key)) {
      Logger("config").warning("ignoring unknown option", {{"option", "[" + section + "] " + key},
                                                           {"file", origin}});
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
