// File: server/drivers/ramdisk/ramdisk_deploy.h
//
// Ironic's `ramdisk` and `autodetect` deploy interfaces.
//
//   ramdisk     writes no disk: its one deploy step (deploy.deploy, priority 100) powers the
//               node off, has the boot interface boot the instance's own kernel and initramfs
//               (instance_info kernel, ramdisk, ramdisk_kernel_arguments) or ISO
//               (instance_info boot_iso) from then on (BootInterface::prepareInstance, which
//               sets driver_internal_info.boot_target = "ramdisk"), and powers it on: the node
//               is active while it runs that ramdisk. Undeploy powers it off and undoes the
//               boot configuration (cleanUpInstance clears boot_target). Cleaning boots the
//               agent as the direct deploy does. Only boot interfaces with Ironic's
//               "ramdisk_boot" capability (BootInterface::ramdiskBoot: ipxe, pxe,
//               redfish-virtual-media) can be used.
//   autodetect  picks, per deployment, the first of [DEFAULT] autodetect_deploy_interfaces
//               that supports it (ramdisk: instanceInfoWantsRamdisk; direct: always), else the
//               last one; the conductor switches the node's deploy_interface to it when the
//               deployment is requested, keeps the original in driver_internal_info.
//               original_deploy_interface and switches back at the end of the next cleaning
//               (as Ironic's switch_interface / restore_interface).
//
// instance_info of a ramdisk deployment (instanceBoot, Ironic's rules): boot_iso, or kernel
// and ramdisk; image_source is not used, and image_source with boot_iso is refused; with
// boot_iso, kernel and ramdisk are ignored (as Ironic). Each location is an http(s) URL or a
// local file under [conductor] file_url_allowed_paths (server/local_files.h), as for the agent
// images; a boot interface may narrow that (pxe: local files; ipxe: boot_iso a URL). Values
// that end up in boot scripts and kernel command lines must not hold control characters.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/config.h"
#include "server/drivers/interfaces.h"
#include "server/schema/record.h"

namespace kiln::server {
class InterfaceRegistry;
}

namespace kiln::server::ramdisk {

/// driver_internal_info.boot_target while the node boots its instance ramdisk.
inline constexpr const char* kBootTarget = "ramdisk";
/// driver_internal_info key of the deploy interface autodetect switched from.
inline constexpr const char* kOriginalDeployInterface = "original_deploy_interface";
inline constexpr const char* kRamdiskName = "ramdisk";
inline constexpr const char* kAutodetectName = "autodetect";

/// What a ramdisk deployment boots.
struct InstanceBoot {
  std::string kernel;           ///< "" when bootIso is set
  std::string ramdisk;          ///< "" when bootIso is set
  std::string bootIso;          ///< "" for a kernel and ramdisk
  std::string kernelArguments;  ///< instance_info.ramdisk_kernel_arguments ("" when unset)
};

/// True when the node's deploy interface is "ramdisk" (Ironic's get_boot_option == 'ramdisk').
bool isRamdiskDeploy(const Record& node);

/// instance_info of a ramdisk deployment, checked as described above. InvalidArgument in
/// Ironic's words where Ironic has them ("Image None is missing the following properties:
/// kernel, ramdisk"). Local files are checked against `config` when it is not null.
Result<InstanceBoot> instanceBoot(const Config* config, const nlohmann::json& instanceInfo);

/// Ironic's RamdiskDeploy.supports_deploy for instance_info: ironic_ramdisk_deploy is set (a
/// truthy value, as Python reads it) and boot_iso, or kernel and ramdisk, are set.
bool instanceInfoWantsRamdisk(const nlohmann::json& instanceInfo);

/// The deploy interface autodetect switches to: the first of `order` that supports the
/// deployment, else the last ("direct" when `order` is empty).
std::string detectDeployInterface(const std::vector<std::string>& order,
                                  const nlohmann::json& instanceInfo);

/// The kernel command line of a network-booted instance ramdisk, as Ironic's templates build
/// it: "root=/dev/ram0 text", the kernel_append_params (instance_info, else driver_info, else
/// [pxe] kernel_append_params; %default% replaced), then ramdisk_kernel_arguments.
/// InvalidArgument when it holds a control character or is longer than a kernel takes.
Result<std::string> netbootCommandLine(const Config& config, const TaskContext& task,
                                       const InstanceBoot& boot);

/// The same for an ISO built from the kernel and ramdisk (Ironic's virtual media: no
/// kernel_append_params): "root=/dev/ram0 text" and ramdisk_kernel_arguments.
Result<std::string> isoCommandLine(const InstanceBoot& boot);

/// The ramdisk and autodetect deploy interfaces. `registry` (which owns them) is where
/// autodetect finds the interface it validates with.
std::vector<std::unique_ptr<HardwareInterface>> makeRamdiskDeployInterfaces(
    const InterfaceRegistry* registry);

}  // namespace kiln::server::ramdisk
