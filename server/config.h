// File: server/config.h
//
// kiln-server's configuration, read from an INI file (`--config-file`). Option names follow
// Ironic's wherever the concept is the same; etc/kiln.conf.sample documents every option and
// docs/configuration.md explains them. configOptions() is the one table of options (section,
// key, member, kind, range or choices, default): parseConfig reads the file through it and
// warns about any option it does not list, and tests/server/config_test.cpp checks that the
// docs and the sample show every one.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "server/config/ipmitool_options.h"
#include "server/model/interface_type.h"
#include "shared/core/error.h"

namespace kiln::server {

enum class Role { Admin, Observer };

struct Config {
  // [DEFAULT]
  std::string authStrategy = "noauth";  ///< noauth | http_basic
  std::string httpBasicAuthUserFile = "/etc/kiln/htpasswd";
  std::string host;  ///< conductor name; defaults to the machine's hostname
  std::string logLevel = "info";
  std::vector<std::string> enabledHardwareTypes = {"ipmi", "redfish"};
  /// enabled_<iface>_interfaces; unset = every implementation the enabled hardware types
  /// support (so naming hardware types is enough to use them).
  std::array<std::optional<std::vector<std::string>>, kInterfaceCount> enabledInterfaces;
  /// default_<iface>_interface; unset = computed per hardware type.
  std::array<std::optional<std::string>, kInterfaceCount> defaultInterfaces;
  /// The deploy interfaces the autodetect deploy interface chooses from, in order (Ironic's
  /// [DEFAULT] autodetect_deploy_interfaces, without its bootc).
  std::vector<std::string> autodetectDeployInterfaces = {"ramdisk", "direct"};

  // [api]
  std::string hostIp = "127.0.0.1";
  int port = 6385;
  int maxLimit = 1000;
  std::string publicEndpoint;  ///< base URL used in links; empty = from the request's Host
  int apiWorkers = 0;          ///< HTTP threads; 0 = three per CPU
  int ramdiskHeartbeatTimeout = 300;  ///< told to agents at lookup (config.heartbeat_timeout)
  bool restrictLookup = true;  ///< lookup only finds nodes in states where an agent is expected
  /// Largest request body accepted (413 above it); Kiln's option (configdrives ride in bodies).
  int maxRequestBodySize = 16 * 1024 * 1024;
  /// Seconds a client has to send a whole request from its first byte, and seconds an idle
  /// keep-alive connection stays open (oslo.service's name; its default is 900).
  int clientSocketTimeout = 60;
  /// Open connections at most; more are refused after shedding idle ones. The effective cap is
  /// also kept below the open-file limit (docs/security.md). Kiln's option.
  int maxConnections = 10000;
  bool enableSslApi = false;   ///< serve the API over HTTPS ([ssl] cert_file, key_file)

  // [ssl] (oslo.service's names, as Ironic reads them)
  std::string sslCertFile;     ///< PEM certificate (chain) of the API
  std::string sslKeyFile;      ///< PEM private key of the API

  // [database]
  std::string connection = "sqlite:///kiln.sqlite";
  /// Kiln: online SQLite backups (server/storage/database_backup.h): where, how many kept,
  /// and seconds between periodic ones (0: only on SIGUSR1).
  std::string backupDir = "/var/lib/kiln/backups";
  int backupKeep = 7;
  int backupInterval = 0;

  // [conductor]
  bool allowDeletingAvailableNodes = true;
  bool automatedClean = true;              ///< clean on provide and after undeploy
  int deployCallbackTimeout = 1800;        ///< seconds a node may stay in "wait call-back"
  int cleanCallbackTimeout = 1800;         ///< seconds a node may stay in "clean wait"
  int syncPowerStateInterval = 60;         ///< seconds between power-state syncs; 0 = never
  bool forcePowerStateDuringSync = true;   ///< make the hardware match the recorded state
  bool enableHealthMonitoring = true;      ///< read the node's health in the power sync (1.109)
  int powerStateSyncMaxRetries = 3;        ///< failed syncs before maintenance ("power failure")
  int powerStateChangeTimeout = 60;        ///< seconds to wait for a BMC to reach a power state
  int workersPoolSize = 16;                ///< conductor worker threads
  int nodeLockedRetryAttempts = 3;         ///< scheduling passes while suitable nodes are locked
  int nodeLockedRetryInterval = 1;         ///< seconds between those passes
  int periodicInterval = 1;                ///< seconds between periodic checks; 0 = none
  /// The conductor group this server serves (nodes' conductor_group; lower case, Ironic's
  /// character set). Several kiln-servers on one database: docs/configuration.md.
  std::string conductorGroup;
  int heartbeatInterval = 10;  ///< seconds between this conductor's heartbeats in the database
  /// Seconds without a heartbeat after which a conductor counts as dead: its nodes move to
  /// the live conductors, which take over what it left reserved.
  int heartbeatTimeout = 60;
  int inspectWaitTimeout = 1800;           ///< seconds a node may stay in "inspect wait"
  bool nodeHistory = true;                 ///< journal node failures (node history, 1.78)
  int nodeHistoryMaxEntries = 300;         ///< entries kept per node (older ones pruned)
  int nodeHistoryMinimumDays = 0;          ///< entries younger than this are never pruned
  std::string deployKernel;   ///< agent kernel (path or URL) for nodes whose driver_info has none
  std::string deployRamdisk;  ///< agent initramfs (path or URL), likewise
  /// Directories local agent images (paths, file:// URLs) may come from; empty = none
  /// (server/local_files.h has the whole rule). Ironic's default lists its own directories.
  std::vector<std::string> fileUrlAllowedPaths = {"/var/lib/kiln/images"};
  std::string apiUrl;         ///< the URL agents use (kiln.api_url); empty = public_endpoint
  std::map<std::string, int> cleanStepPriorityOverride;   ///< "interface.step" -> priority
  std::map<std::string, int> deployStepPriorityOverride;

  // [agent]
  int agentHeartbeatInterval = 10;   ///< seconds between an idle agent's heartbeats (Kiln)
  int agentCommandHeartbeatInterval = 2;  ///< ... while a command is pending or running (Kiln)
  bool allowMd5Checksum = false;     ///< let agents verify md5 image checksums
  /// PEM CA that signed the API's certificate; the ipxe and pxe boot interfaces pass it to
  /// booting agents as kiln.api_ca= (Ironic's name; Ironic puts it on virtual media only).
  std::string agentApiCaFile;
  /// When the ramdisk's log bundle is collected (Ironic's names and values): "always" (also
  /// at the end of a successful deployment), "on_failure", "never".
  std::string deployLogsCollect = "on_failure";
  std::string deployLogsStorageBackend = "local";  ///< the only back end ("swift" refused)
  std::string deployLogsLocalPath = "/var/log/kiln/deploy";  ///< where bundles are stored
  /// Seconds a flow waits for the agent's answer to collect_logs before it goes on without
  /// the logs (Kiln; Ironic bounds its call with [agent] command_timeout, 60).
  int deployLogsCollectTimeout = 60;

  // [events] (Kiln: the node event journal, docs/observability.md "Events")
  int eventsMaxPerNode = 1000;       ///< events kept per node (older ones pruned; 0 = no limit)
  int eventsMaxAge = 604800;         ///< seconds an event is kept (0 = no limit)
  int eventsKeepaliveInterval = 15;  ///< seconds between a stream's keep-alive comments
  int eventsPollInterval = 1;  ///< seconds between reads of other servers' events (while streamed)
  int eventsStreamBuffer = 262144;  ///< bytes a stream may have unsent before it is dropped

  // [pxe]
  std::string tftpRoot = "/var/lib/kiln/tftpboot";  ///< where the pxe boot interface writes
  /// Agent kernel arguments. The last two skip the kernel's crypto self-tests (the SP800-108
  /// KDF test alone takes 1.6 s per boot under emulation); the ramdisk needs neither.
  std::string kernelAppendParams =
      "console=tty0 console=ttyS0,115200n8 initcall_blacklist=crypto_kdf108_init cryptomgr.notests";
  /// Boot loaders copied into tftp_root at start-up when the pxe or ipxe boot interface is
  /// enabled (Ironic's [pxe] loader_file_paths): destination name -> source file. Unset, the
  /// Debian files of kDefaultLoaderFiles that exist are copied; set, every source must exist.
  std::vector<std::pair<std::string, std::string>> loaderFilePaths;
  bool loaderFilePathsSet = false;

  // [deploy]
  std::optional<int> eraseDevicesPriority;          ///< deploy.erase_devices clean priority
  std::optional<int> eraseDevicesMetadataPriority;  ///< deploy.erase_devices_metadata
  /// Power a node off when its deployment fails (Ironic's default), so that a failed machine
  /// does not stay up in the ramdisk.
  bool powerOffAfterDeployFailure = true;
  /// [deploy] fast_track (Ironic's): the agent stays up after inspection and cleaning, and a
  /// flow started while it heartbeats within fast_track_timeout uses it without a reboot.
  /// driver_info/fast_track overrides it per node.
  bool fastTrack = false;
  int fastTrackTimeout = 300;  ///< [deploy] fast_track_timeout, seconds (Ironic's 0-300)
  /// The boot mode of nodes that request none (server/drivers/boot_mode.h): "uefi" | "bios".
  std::string defaultBootMode = "uefi";
  /// Where the redfish-virtual-media boot interface writes the ISOs BMCs fetch (Ironic's
  /// [deploy] http_root); kiln-server serves them at GET /v1/vmedia/<name>.
  std::string httpRoot = "/var/lib/kiln/httpboot";
  /// The URL BMCs fetch those ISOs under (Ironic's [deploy] external_http_url): a web server
  /// serving http_root, or kiln-server's own ".../v1/vmedia". Empty = <api_url>/v1/vmedia.
  std::string externalHttpUrl;
  /// Credentials for image servers (Ironic's names): "noauth" | "http_basic". With http_basic,
  /// image_server_user and image_server_password go with every image, checksum file and config
  /// drive download whose URL carries no user information of its own: the agent's (image_info)
  /// and kiln-server's (virtual media with image_download_source local).
  std::string imageServerAuthStrategy = "noauth";
  std::string imageServerUser;
  std::string imageServerPassword;  ///< secret: never logged or shown

  // [ipmi] (Kiln's options: ipmitool runs, retries and their bounds)
  IpmitoolOptions ipmi;

  // [metrics] (Kiln's options: GET /metrics in Prometheus' text format)
  bool metricsEnabled = true;
  /// Serve /metrics on this address (with metricsPort) instead of the API port; "" = the API's.
  std::string metricsListenAddress;
  int metricsPort = 9608;           ///< with metricsListenAddress; 0 = an ephemeral port (tests)
  bool metricsRequireAuth = false;  ///< scrapes need the API's credentials (auth_strategy)

  // [console] (Kiln's options: the web console at /ui/, server/api/console_files.h)
  bool consoleEnabled = true;
  /// The directory of the console's built files (index.html, assets/); "" = the install
  /// directory when it holds index.html, else the build tree's console/dist.
  std::string consoleStaticDir;

  // [sensor_data] (Ironic's options): BMC sensor metrics, read in the power-state sync
  bool sendSensorData = false;                ///< send_sensor_data: read and serve them
  bool sensorDataForUndeployedNodes = false;  ///< enable_for_undeployed_nodes: not only active

  // [dhcp] (Ironic's option) and [dnsmasq] (Ironic's directory names; the rest Kiln's):
  // the provisioning network's DHCP (server/drivers/dhcp/, docs/provisioning-network.md)
  std::string dhcpProvider = "none";  ///< none | dnsmasq
  bool dnsmasqManage = false;         ///< kiln-server runs and supervises dnsmasq itself
  std::string dnsmasqBinary = "/usr/sbin/dnsmasq";
  std::string dnsmasqInterface;       ///< the provisioning network's interface (manage = true)
  /// dhcp_range: ';'-separated "START,END[,NETMASK][,LEASE]" (server/drivers/dhcp/dnsmasq_config.h)
  std::string dnsmasqDhcpRange;
  bool dnsmasqIgnoreUnknownHosts = true;  ///< answer only the MACs Kiln wrote an entry for
  std::string dnsmasqHostsDir = "/var/lib/kiln/dnsmasq/hosts";    ///< dhcp_hostsdir
  std::string dnsmasqOptsDir = "/var/lib/kiln/dnsmasq/opts";      ///< dhcp_optsdir
  std::string dnsmasqLeaseFile = "/var/lib/kiln/dnsmasq/dnsmasq.leases";  ///< dhcp_leasefile
  std::string dnsmasqConfigFile = "/var/lib/kiln/dnsmasq/dnsmasq.conf";   ///< generated (manage)
  bool dnsmasqEnableTftp = true;   ///< the managed dnsmasq serves [pxe] tftp_root by TFTP
  std::string dnsmasqRouter;       ///< option 3 for the local ranges; "" = none sent
  int dnsmasqSyncInterval = 10;    ///< seconds between rewrites of every entry from the database

  // [http_basic_roles]  user = admin | observer   (Kiln extension)
  std::map<std::string, Role> userRoles;
  Role defaultRole = Role::Admin;  ///< [http_basic_roles] default_role
};

/// What an option's text becomes (ConfigOption::kind). Every value is trimmed first.
enum class OptionKind {
  String,  ///< the text
  Int,     ///< an integer in [min, max]; a '+' sign is allowed (as std::stol read it)
  Bool,    ///< true/1/yes/on or false/0/no/off, any case
  Choice,  ///< one of `choices` (after `normalize`, when the option has one)
  List,    ///< a comma list, items trimmed, empty ones dropped (splitList)
  Custom,  ///< read by `custom`; an option without one is accepted and ignored
};

/// One option of the configuration file: configOptions() is the one list, from which
/// parseConfig reads the file and knows which options exist (others are warned about).
/// [http_basic_roles], whose keys are user names, is read on its own.
struct ConfigOption {
  using Member = std::variant<std::monostate, std::string Config::*, int Config::*,
                              bool Config::*, std::optional<int> Config::*,
                              std::vector<std::string> Config::*>;
  /// Reads a Custom option's trimmed text into the configuration; `where` is its name as
  /// messages show it ("kiln.conf: [pxe] loader_file_paths").
  using Reader = std::function<Result<void>(const ConfigOption& option, const std::string& text,
                                            const std::string& where, Config& config)>;

  std::string section;  ///< as messages and docs spell it: "DEFAULT", "api", ...
  std::string key;
  OptionKind kind = OptionKind::String;
  Member member;  ///< where String, Int, Bool, Choice and List options go
  int min = 0;    ///< Int (and the Custom options that read an integer)
  int max = 0;
  std::vector<std::string> choices;  ///< Choice, in the order messages list them
  /// Choice: maps accepted spellings to a choice before the check ("DEBUG" -> "debug").
  std::string (*normalize)(std::string_view) = nullptr;
  /// The default as docs/configuration.md and etc/kiln.conf.sample show it; nullopt when the
  /// option is unset by default or its default is computed (the hostname). The values are
  /// Config's member initialisers: config_test checks that they agree.
  std::optional<std::string> defaultValue;
  /// The name docs/configuration.md gives the option when it documents a family in one row
  /// ("enabled_<iface>_interfaces"); empty = `key`.
  std::string docName;
  Reader custom;
};

/// Every option parseConfig reads, in the order it reads them.
const std::vector<ConfigOption>& configOptions();

/// Reads `path`. InvalidArgument names the file, section and option of any bad value.
Result<Config> loadConfig(const std::string& path);

/// Parses INI text (used by loadConfig and tests). `origin` names the source in messages.
Result<Config> parseConfig(const std::string& text, const std::string& origin);

/// Splits "a, b,c" into {"a","b","c"} (empty items dropped).
std::vector<std::string> splitList(const std::string& text);

}  // namespace kiln::server
