// File: server/drivers/dhcp/dhcp_provider.h
//
// The provisioning network's DHCP, as Ironic's dhcp_factory: `[dhcp] dhcp_provider` = none (the
// operator's DHCP server does everything) or dnsmasq (Kiln writes a host entry per port of a
// node that is to boot its agent or a ramdisk, and the boot file per firmware).
//
// What a node's ports get is a pure function of the node (dhcpAnswerFor): an entry while
// driver_internal_info.boot_target is "agent" or "ramdisk", the node is not in maintenance and
// its provision state boots one (cleaning, deploying, inspecting, rescuing, servicing and their
// wait/hold states; `active` only with a ramdisk deploy; `manageable`/`available` only while fast
// track keeps the agent up). So the entries follow from the database alone: any kiln-server can
// rewrite them (after a takeover, after a restart), and the periodic sync
// (server/conductor/dhcp_sync.h) does so on the server that serves DHCP.
//
// The dnsmasq provider writes, with a write to a dot-file and a rename (dnsmasq's inotify reads
// the new file whole and replaces what the file said before, without a restart):
//   <dhcp_hostsdir>/kiln-<mac with '-'>   "<mac>,set:kiln,set:<tag>"  while the node boots,
//                                         "<mac>,ignore"               afterwards;
//   <dhcp_optsdir>/kiln-<tag>             the node's options, each scoped to its tag and to the
//                                         firmware's class (dnsmasq_config.h's tags).
// The tag is "kiln-" and a hash of the node's UUID and options, so that changed options get a
// new tag (dnsmasq forgets a deleted options file only on SIGHUP) and an unchanged node the same
// files on every server. A MAC is ignored rather than forgotten, since dnsmasq also keeps a
// deleted host file's entry until SIGHUP.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "server/config.h"
#include "server/schema/record.h"
#include "shared/core/error.h"

namespace kiln::server {

struct TaskContext;

/// What decides a node's DHCP answers (read from its row or from a task).
struct DhcpNode {
  std::string uuid;
  std::string provisionState;
  bool maintenance = false;
  std::string bootInterface;
  std::string bootTarget;   ///< driver_internal_info.boot_target
  std::string httpBootIso;  ///< driver_internal_info.http_boot_iso: the http boot interface's ISO
  std::vector<std::string> macs;  ///< the addresses of its ports with pxe_enabled
};

/// From a node row, its driver_internal_info (parsed) and its ports' rows.
DhcpNode dhcpNodeOf(const Record& node, const nlohmann::json& internalInfo,
                    const std::vector<Record>& ports);
/// From a task (its node, internal info and ports as the task holds them now).
DhcpNode dhcpNodeOf(const TaskContext& task);

/// The answers a node's ports get from the dnsmasq provider.
struct DhcpAnswer {
  std::string tag;                   ///< "kiln-<16 hex>"; "" when the answer has no options
  std::vector<std::string> macs;     ///< canonical MACs (invalid ones are left out)
  std::vector<std::string> options;  ///< dhcp-optsfile lines, each "tag:<tag>,..."
};

/// Whether `node` boots from the network now (see the file comment).
bool dhcpWanted(const DhcpNode& node);

/// The node's answers, or nullopt when its MACs get none (ignored). Needs the configuration's
/// API URL (booting machines are pointed at it) and, for the http boot interface, the ISO URL.
std::optional<DhcpAnswer> dhcpAnswerFor(const DhcpNode& node, const Config& config);

/// The names dnsmasq files get: "kiln-52-54-00-12-34-56" and "kiln-<tag without kiln->".
std::string dhcpHostFileName(std::string_view mac);
std::string dhcpOptsFileName(std::string_view tag);

class DhcpProvider {
 public:
  virtual ~DhcpProvider() = default;
  virtual std::string_view name() const = 0;
  /// Brings the node's entries in line with `node` now (a boot interface preparing or ending a
  /// network boot, a conductor save). Errors: the files cannot be written.
  virtual Result<void> syncNode(const DhcpNode& node) = 0;
  /// Rewrites every entry from `nodes`, all the nodes of the database: entries of nodes or MACs
  /// not among them become "ignore", options files no node uses are deleted.
  virtual Result<void> syncAll(const std::vector<DhcpNode>& nodes) = 0;
};

/// task.dhcp->syncNode(dhcpNodeOf(task)) when the task has a provider: what boot interfaces
/// call when a network boot starts or ends, before the machine powers on.
Result<void> syncDhcp(const TaskContext& task);

/// The provider `config` names ("none": does nothing). `onForgotten` runs after syncAll deleted
/// files whose entries dnsmasq keeps until SIGHUP (the supervisor of a managed dnsmasq sends it).
Result<std::unique_ptr<DhcpProvider>> makeDhcpProvider(const Config& config,
                                                        std::function<void()> onForgotten = {});

}  // namespace kiln::server
