// File: server/drivers/interfaces.h
//
// The behaviour behind the driver composition spec's interface names. Each implementation
// ("ipmitool" power, "fake" raid, ...) is one object, created once at start-up and shared by
// every node that names it (the spec: "interface implementations themselves will stay
// singletons"); per-node state lives in the TaskContext the conductor passes in.
//
// Steps (deployment steps framework, manual cleaning spec): every implementation declares its
// clean and deploy steps in one table (house-style rule 8), returned by steps().
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/config.h"
#include "server/drivers/hardware_types.h"
#include "server/drivers/sensor_data.h"
#include "server/model/interface_type.h"
#include "server/model/bios_setting.h"
#include "server/model/firmware_component.h"
#include "server/schema/record.h"
#include "shared/core/clock.h"
#include "shared/core/error.h"
#include "shared/core/log.h"
#include "shared/step/arg_info.h"

namespace kiln::server {

class PowerInterface;
class ManagementInterface;
class BootInterface;
class DeployInterface;
class InspectInterface;
class HardwareInterface;
class DhcpProvider;

/// The implementations a node uses, one per interface type (resolved from its *_interface
/// fields). Pointers are never null for an enabled hardware type.
struct NodeDriver {
  std::array<HardwareInterface*, kInterfaceCount> byType{};
  PowerInterface* power = nullptr;
  ManagementInterface* management = nullptr;
  BootInterface* boot = nullptr;
  DeployInterface* deploy = nullptr;
  InspectInterface* inspect = nullptr;

  HardwareInterface* get(InterfaceType t) const { return byType[static_cast<size_t>(t)]; }
};

/// What an implementation sees of the node it works on. The conductor loads it, runs one
/// action or step, and persists `node` (with the three JSON documents written back) afterwards.
/// Not thread-safe: one task per node at a time (the node's reservation).
struct TaskContext {
  Record node;
  nlohmann::json driverInfo = nlohmann::json::object();
  nlohmann::json instanceInfo = nlohmann::json::object();
  nlohmann::json internalInfo = nlohmann::json::object();  ///< driver_internal_info
  std::vector<std::string> traits;
  std::vector<Record> ports;
  const NodeDriver* driver = nullptr;
  const Config* config = nullptr;
  const Clock* clock = nullptr;
  /// The provisioning network's DHCP (server/drivers/dhcp/dhcp_provider.h); null = none.
  DhcpProvider* dhcp = nullptr;
  Logger log{"task"};
  std::string user;  ///< who asked for the running action (node history); "" when unknown
  /// The reservation the worker running this task holds ("" when none): the conductor's saves
  /// then refuse to write over a node whose reservation changed meanwhile (another conductor
  /// took it over while this one, cut off from the database's heartbeats, carried on).
  std::string heldBy;
  /// Called once, by the conductor's task store, when a save that gave the node's reservation
  /// up has committed (server/conductor/task_store.h): the worker's lock then holds nothing.
  std::function<void()> onReleased;
  /// Set by an inspect interface that finished: the hardware inventory (ironic-python-agent's
  /// format) the conductor records for GET /v1/nodes/{id}/inventory (API 1.81).
  std::optional<nlohmann::json> inventory;
  /// One provision-state move (TaskStore::transition) not yet saved.
  struct StateMove {
    std::string from, to, event;
  };
  /// The moves since the last save: that save journals them as node events
  /// (server/conductor/node_events_recorder.h) and clears them.
  std::vector<StateMove> stateMoves;

  const std::string& uuid() const { return node.uuid(); }
};

/// One argument a step accepts (shared with the agent's step catalogue).
using ArgInfo = kiln::ArgInfo;

/// How a step (or an action) ended: finished, or continues asynchronously (the node parks in
/// "clean wait" / "wait call-back" until something resumes it).
enum class StepResult { Done, Wait };

using StepHandler = std::function<Result<StepResult>(TaskContext&, const nlohmann::json& args)>;

/// Called when the agent reports a command a step queued (an in-band step, or a conductor-side
/// step that hands work to the agent such as deploy.write_image) as SUCCEEDED: `result` is the
/// command's result document. Done moves on to the next step; Wait means the handler queued
/// more agent work. A FAILED command fails the flow before any handler runs.
using AgentResultHandler = std::function<Result<StepResult>(TaskContext&, const nlohmann::json& args,
                                                            const nlohmann::json& result)>;

/// A step an implementation offers. Priorities are the defaults; 0 = only when asked for
/// (manual cleaning, deploy templates, user deploy steps); -1 = not that kind of step.
struct StepDefinition {
  std::string interface;  ///< wire name: "deploy", "raid", ...
  std::string name;       ///< "erase_devices"
  int cleanPriority = -1;
  int deployPriority = -1;
  bool abortable = false;
  bool requiresRamdisk = false;  ///< runs inside the agent (in-band)
  std::vector<ArgInfo> argsinfo;
  StepHandler handler;           ///< empty for in-band steps (the agent runs them)
  AgentResultHandler onAgentResult = {};  ///< optional: after the agent finished the step's command
  bool service = false;  ///< also a service step (1.87), run on request on an active node
};

/// Base of every interface implementation.
class HardwareInterface {
 public:
  virtual ~HardwareInterface() = default;
  virtual InterfaceType type() const = 0;
  /// The entry-point name ("ipmitool").
  virtual std::string_view name() const = 0;
  /// A no-op implementation ("no-raid"): the interface is reported unsupported by validation.
  virtual bool isNoop() const { return false; }
  /// The steps this implementation offers.
  virtual std::span<const StepDefinition> steps() const { return {}; }
  /// Whether the node is set up well enough for this implementation; nullopt when it is, or
  /// the reason shown by GET /v1/nodes/{id}/validate.
  virtual std::optional<std::string> validate(const TaskContext& task) const {
    return std::nullopt;
  }
};

/// Power control. Thread-safe across nodes.
class PowerInterface : public HardwareInterface {
 public:
  InterfaceType type() const override { return InterfaceType::Power; }
  /// The BMC's power state: "power on" or "power off"; nullopt when it is not known (Ironic's
  /// NOSTATE: the fake's machine before its power was first set).
  virtual Result<std::optional<std::string>> getPowerState(TaskContext& task) = 0;
  /// Sets "power on", "power off" or "soft power off" and waits (through task.clock) until
  /// the BMC reports it, up to `timeout` (DeadlineExceeded).
  virtual Result<void> setPowerState(TaskContext& task, std::string_view target,
                                     std::chrono::seconds timeout) = 0;
  /// Power cycles ("rebooting") or restarts gracefully (`soft`); the node ends powered on.
  virtual Result<void> reboot(TaskContext& task, bool soft, std::chrono::seconds timeout) = 0;
  /// The targets PUT /v1/nodes/{id}/states/power accepts for this implementation.
  virtual std::vector<std::string> supportedPowerStates() const {
    return {"power on", "power off", "rebooting"};
  }
};

/// Boot device selection, and the optional management features (boot mode, secure boot, NMI,
/// indicators): their defaults fail as Ironic's base ManagementInterface does, with
/// unsupported() (400 "Driver X does not support Y (disabled or not implemented).").
class ManagementInterface : public HardwareInterface {
 public:
  struct BootDevice {
    std::string device;               ///< "pxe", "disk", "cdrom", "bios", "safe"
    std::optional<bool> persistent;   ///< unknown when the BMC cannot tell
  };
  /// One indicator (an LED) of a hardware component.
  struct Indicator {
    bool readonly = true;
    std::vector<std::string> states;  ///< of "BLINKING", "OFF", "ON" (Ironic's indicator_states)
  };
  /// component ("system", "chassis", "disk") -> indicator name -> what it can do.
  using Indicators = std::map<std::string, std::map<std::string, Indicator>>;

  InterfaceType type() const override { return InterfaceType::Management; }
  virtual Result<BootDevice> getBootDevice(TaskContext& task) = 0;
  virtual Result<void> setBootDevice(TaskContext& task, std::string_view device,
                                     bool persistent) = 0;
  virtual std::vector<std::string> supportedBootDevices(const TaskContext& task) const = 0;

  /// The boot mode the node boots in: "uefi" or "bios"; nullopt when the BMC does not say.
  virtual Result<std::optional<std::string>> getBootMode(TaskContext& task) {
    return unsupported(task, "get_boot_mode");
  }
  /// Sets the boot mode ("uefi" or "bios") for the next boots.
  virtual Result<void> setBootMode(TaskContext& task, std::string_view mode) {
    return unsupported(task, "set_boot_mode");
  }
  /// Whether UEFI secure boot is enabled; nullopt when the BMC does not say.
  virtual Result<std::optional<bool>> getSecureBoot(TaskContext& task) {
    return unsupported(task, "get_secure_boot_state");
  }
  virtual Result<void> setSecureBoot(TaskContext& task, bool enabled) {
    return unsupported(task, "set_secure_boot_state");
  }
  /// Injects a non-maskable interrupt now.
  virtual Result<void> injectNmi(TaskContext& task) { return unsupported(task, "inject_nmi"); }
  /// The node's health (1.109): "OK", "Warning" or "Critical"; nullopt when the BMC does not
  /// report one (IPMI).
  virtual Result<std::optional<std::string>> getHealth(TaskContext& task) {
    return std::optional<std::string>();
  }
  /// The node's sensors (temperatures, fans, power supplies, drives) for the sensor metrics
  /// ([sensor_data] send_sensor_data, read in the power-state sync); nullopt when the interface
  /// has none to report (the default).
  virtual Result<std::optional<SensorData>> getSensorData(TaskContext& task) {
    return std::optional<SensorData>();
  }
  /// The node's indicators; only those of `component` unless it is empty.
  virtual Result<Indicators> supportedIndicators(TaskContext& task, std::string_view component) {
    return unsupported(task, "get_supported_indicators");
  }
  /// The state of one indicator: "ON", "OFF", "BLINKING" or "UNKNOWN".
  virtual Result<std::string> getIndicatorState(TaskContext& task, std::string_view component,
                                                std::string_view indicator) {
    return unsupported(task, "get_indicator_state");
  }
  virtual Result<void> setIndicatorState(TaskContext& task, std::string_view component,
                                         std::string_view indicator, std::string_view state) {
    return unsupported(task, "set_indicator_state");
  }

  /// Whether attach/detach/getVirtualMedia are implemented (else they are unsupported()).
  virtual bool hasVirtualMedia() const { return false; }
  /// A virtual media device of the BMC (API 1.93).
  struct VirtualMedia {
    std::vector<std::string> mediaTypes;  ///< as the BMC names them: "CD", "DVD", "USBStick"...
    bool inserted = false;
    std::string image;  ///< the URL the BMC reads, "" when none
  };
  /// Inserts the image at `url` into a device of `deviceType` ("cdrom", "disk" or "floppy",
  /// API 1.89). `downloadSource` "local": kiln-server downloads the image and serves it
  /// itself; "http": the BMC reads `url` directly.
  virtual Result<void> attachVirtualMedia(TaskContext& task, std::string_view deviceType,
                                          const std::string& url,
                                          std::string_view downloadSource) {
    return unsupported(task, "attach_virtual_media");
  }
  /// Ejects the media of the given device types (every type when empty).
  virtual Result<void> detachVirtualMedia(TaskContext& task,
                                          const std::vector<std::string>& deviceTypes) {
    return unsupported(task, "detach_virtual_media");
  }
  virtual Result<std::vector<VirtualMedia>> getVirtualMedia(TaskContext& task) {
    return unsupported(task, "get_virtual_media");
  }

  /// Ironic's UnsupportedDriverExtension for the node's driver: InvalidArgument with
  /// Reason::Unsupported, "Driver <driver> does not support <extension> (disabled or not
  /// implemented)." (defined in interface_registry.cpp).
  static std::unexpected<Error> unsupported(const TaskContext& task, std::string_view extension);
};

/// How the node boots: the agent ramdisk or its own disk.
class BootInterface : public HardwareInterface {
 public:
  InterfaceType type() const override { return InterfaceType::Boot; }
  /// Arranges for the next boot to load the agent ramdisk.
  virtual Result<void> prepareRamdisk(TaskContext& task) = 0;
  /// Undoes prepareRamdisk.
  virtual Result<void> cleanUpRamdisk(TaskContext& task) = 0;
  /// Arranges for the next boot to start the deployed instance.
  virtual Result<void> prepareInstance(TaskContext& task) = 0;
  /// Undoes prepareInstance (on undeploy).
  virtual Result<void> cleanUpInstance(TaskContext& task) = 0;
  /// Ironic's "ramdisk_boot" capability: prepareInstance boots a ramdisk deployment's kernel
  /// and ramdisk or ISO (server/drivers/ramdisk/ramdisk_deploy.h) when the node's deploy
  /// interface is "ramdisk".
  virtual bool ramdiskBoot() const { return false; }
  /// Why this interface cannot boot the node's ramdisk deployment; nullopt when it can.
  virtual std::optional<std::string> validateRamdiskBoot(const TaskContext& task) const {
    return std::nullopt;
  }
};

/// Deployment (its deploy steps carry the work) plus the hooks around cleaning and undeploy.
class DeployInterface : public HardwareInterface {
 public:
  InterfaceType type() const override { return InterfaceType::Deploy; }
  /// Before cleaning. Done, or Wait when the agent must boot first (in-band cleaning).
  virtual Result<StepResult> prepareCleaning(TaskContext& task) = 0;
  /// After cleaning (also after a failed or aborted cleaning).
  virtual Result<void> tearDownCleaning(TaskContext& task) = 0;
  /// Undeploy: stop the instance (power off) and undo its boot configuration.
  virtual Result<void> tearDown(TaskContext& task) = 0;
};

/// Hardware inspection (the "inspect" verb).
class InspectInterface : public HardwareInterface {
 public:
  InterfaceType type() const override { return InterfaceType::Inspect; }
  /// Done (properties updated) or Wait (the agent reports the inventory later).
  virtual Result<StepResult> inspectHardware(TaskContext& task) = 0;
};

/// Rescue (the rescue and unrescue verbs, 1.38): a rescue environment on a deployed node, whose
/// password is in instance_info.rescue_password, and the way back to the instance.
class RescueInterface : public HardwareInterface {
 public:
  InterfaceType type() const override { return InterfaceType::Rescue; }
  /// Starts the rescue environment: Done, or Wait when an agent must report first. Errors fail
  /// the node into "rescue failed" with the message as last_error.
  virtual Result<StepResult> rescue(TaskContext& task) = 0;
  /// Ends the rescue environment and boots the instance again. Errors: "unrescue failed".
  virtual Result<void> unrescue(TaskContext& task) = 0;
};

/// One vendor passthru method (Ironic's @passthru metadata).
struct VendorMethod {
  std::string_view name;
  std::vector<std::string_view> httpMethods;  ///< upper case: "POST", "GET", ...
  bool async = true;                 ///< run by a worker after a 202 (else 200 with its result)
  std::string_view description;
  bool attach = false;               ///< the result is a file to download (not JSON)
  bool requireExclusiveLock = true;  ///< the node's reservation is held while it runs
};

/// Vendor passthru (/v1/nodes/{id}/vendor_passthru?method=...): named methods of the vendor
/// interface, relayed with the request's JSON body as their arguments.
class VendorInterface : public HardwareInterface {
 public:
  InterfaceType type() const override { return InterfaceType::Vendor; }
  /// The methods this implementation offers.
  virtual std::span<const VendorMethod> methods() const = 0;
  /// Checks a call's arguments before it runs (Ironic's validate(task, method, **kwargs)):
  /// nullopt when they suit, else the reason (a 400).
  virtual std::optional<std::string> validateCall(const TaskContext& task, std::string_view method,
                                                  const nlohmann::json& args) const {
    return std::nullopt;
  }
  /// Runs `method` (one of methods()) with `args` (a JSON object) for `httpMethod`; its result
  /// (ignored for asynchronous methods).
  virtual Result<nlohmann::json> call(TaskContext& task, std::string_view method,
                                      std::string_view httpMethod, const nlohmann::json& args) = 0;
};

/// BIOS settings (1.40): the steps that change them (apply_configuration, factory_reset) and a
/// way to read them back. The conductor stores what cacheBiosSettings() returns for
/// GET /v1/nodes/{id}/bios after each bios step, at the start of cleaning and on verify.
class BiosInterface : public HardwareInterface {
 public:
  InterfaceType type() const override { return InterfaceType::Bios; }
  /// The node's current settings, with their registry where the hardware has one.
  virtual Result<std::vector<BiosSetting>> cacheBiosSettings(TaskContext& task) = 0;
};

/// Firmware (1.86): the firmware.update step (components "bios", "bmc", "nic:<id>" flashed from
/// URLs) and a way to read the components' versions back. The conductor records what
/// cacheFirmwareComponents() returns for GET /v1/nodes/{id}/firmware (server/conductor/
/// firmware_cache.h). "no-firmware" is a GenericInterface: nothing to cache, no steps.
class FirmwareInterface : public HardwareInterface {
 public:
  InterfaceType type() const override { return InterfaceType::Firmware; }
  /// The node's components and their current versions. Unimplemented when the hardware
  /// reports none (Ironic's UnsupportedDriverExtension).
  virtual Result<std::vector<FirmwareComponentInfo>> cacheFirmwareComponents(TaskContext& task) = 0;
};

/// Any other interface type (console, network, raid, storage): steps and
/// validation only.
class GenericInterface : public HardwareInterface {
 public:
  GenericInterface(InterfaceType type, std::string name, bool noop,
                   std::vector<StepDefinition> steps = {})
      : type_(type), name_(std::move(name)), noop_(noop), steps_(std::move(steps)) {}
  InterfaceType type() const override { return type_; }
  std::string_view name() const override { return name_; }
  bool isNoop() const override { return noop_; }
  std::span<const StepDefinition> steps() const override { return steps_; }

 private:
  InterfaceType type_;
  std::string name_;
  bool noop_;
  std::vector<StepDefinition> steps_;
};

/// Helper for implementations: a required string from driver_info, or nullopt.
std::optional<std::string> driverInfoString(const TaskContext& task, const char* key);

}  // namespace kiln::server
