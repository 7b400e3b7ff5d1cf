// File: tests/support/redfish_test_server.h
//
// A small in-process Redfish BMC for tests: real HTTP (Pistache) on 127.0.0.1, an ephemeral
// port. It serves the service root, the Systems collection, each ComputerSystem (GET, and
// PATCH of Boot and IndicatorLED), its SecureBoot resource and optional chassis (GET, PATCH),
// the ComputerSystem.Reset action (Nmi included), an optional Bios resource (attributes, a
// settings object, Bios.ResetBios), firmware versions (BiosVersion, the Manager's
// FirmwareVersion, NetworkAdapters) with an UpdateService whose SimpleUpdate runs a Task,
// Storage (RAID controllers with Drives and a Volumes collection: GET, POST and DELETE, at once
// or through a Task), the chassis' Thermal and Power resources (sensors), and SessionService
// sessions, with optional
// credential enforcement (basic and/or session), a power change that takes effect only after a
// configurable number of polls, error injection and a record of every request received.
//
// The state model is deliberately plain (systems with a PowerState and a Boot override) so the
// same server can later drive virtual machines.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shared/core/error.h"

namespace kiln::test {

/// A NetworkAdapter of a system's chassis (/redfish/v1/Chassis/<system id>/NetworkAdapters/<id>)
/// with one controller.
struct RedfishNetworkAdapter {
  std::string id = "NIC.Slot.1";
  std::string manufacturer = "Intel Corporation";
  std::string model = "Intel(R) 25GbE 2P XXV710 Adptr";
  std::string serialNumber = "ABC12345";       ///< "" = not reported
  std::string firmwareVersion = "22.0.9";      ///< the controller's FirmwarePackageVersion
};

/// An image the UpdateService knows: SimpleUpdate of `uri` flashes `component` ("bios", "bmc",
/// or a NetworkAdapter's id or serial number) of the target system to `version` when its task
/// completes. An unknown URI gives a task that ends in Exception.
struct RedfishFirmwareImage {
  std::string uri;
  std::string component;
  std::string version;
};

/// A subscription of the BMC's EventService (/redfish/v1/EventService/Subscriptions/<id>).
struct RedfishSubscription {
  std::string id;
  std::string destination;
  std::string context;
  std::string protocol;
  std::vector<std::string> eventTypes;
  std::string httpHeaders;  ///< the HttpHeaders POSTed (JSON text; never served back)
};

/// A physical drive of a Storage (<system>/Storage/<storage id>/Drives/<id>).
struct RedfishDrive {
  std::string id;
  std::string name;  ///< Name; "" = not reported
  int64_t capacityBytes = 0;
  std::string mediaType = "HDD";  ///< "HDD" or "SSD"
  std::string protocol = "SAS";   ///< "SAS", "SATA", "NVMe", ...
  std::string model{};            ///< Model; "" = not reported
  std::string health{};           ///< Status.Health; "" = no Status
  std::string state = "Enabled";  ///< Status.State (with health); "" = not reported
};

/// A volume (a logical disk) of a Storage (<system>/Storage/<storage id>/Volumes/<id>).
struct RedfishVolume {
  std::string id;
  std::string name;
  std::string raidType;  ///< "RAID1", ...; "" = not reported (a non-RAID volume)
  int64_t capacityBytes = 0;
  std::vector<std::string> drives;  ///< ids of the storage's drives it uses
  /// false: the volume's GET answers "Allow: GET" and a DELETE is 405 (else "GET, DELETE").
  bool deletable = true;
};

/// A RAID controller of a system (<system>/Storage/<id>) with its drives and a Volumes
/// collection. POST to the collection creates a volume: RAIDType (one of supportedRaidTypes),
/// Links.Drives (the storage's drives, as many as the type needs: RAID0 1+, RAID1 2, RAID5 3+,
/// RAID6 4+, RAID10 4+ even, RAID50 6+ even, RAID60 8+ even), CapacityBytes (at most what the
/// drives have left times the data drives; left out = all of it), Name, and
/// @Redfish.OperationApplyTime (one of applyTimes). DELETE of a volume removes it.
struct RedfishStorage {
  std::string id = "RAID.Integrated.1-1";
  std::vector<RedfishDrive> drives;
  std::vector<RedfishVolume> volumes;
  /// StorageControllers[0].SupportedRAIDTypes; empty = a controller without RAID.
  std::vector<std::string> supportedRaidTypes = {"RAID0",  "RAID1",  "RAID5", "RAID6",
                                                 "RAID10", "RAID50", "RAID60"};
  bool hasVolumes = true;  ///< whether the storage links its Volumes collection
  /// The Volumes collection's @Redfish.OperationApplyTimeSupport.SupportedValues; empty = not
  /// advertised (a request naming an apply time is then refused).
  std::vector<std::string> applyTimes;
  /// -1: POST and DELETE act at once (201, 204). n >= 0: they answer 202 with a Task and a
  /// Location task monitor (/redfish/v1/TaskService/TaskMonitors/raid-<k>, the Task at
  /// /redfish/v1/TaskService/Tasks/raid-<k>) that answers 202 for n GETs, then 200 with the
  /// ended Task, the change made. A request with apply time OnReset stays Pending until the
  /// system was reset after it.
  int taskPolls = -1;
  /// Whether those tasks end in Exception, changing nothing.
  bool taskFails = false;
};

// ---- hardware inventory (the redfish inspect interface) ----

/// A processor of a system (<system>/Processors/<id>). Empty strings and zeros are not
/// reported.
struct RedfishProcessor {
  std::string id = "CPU1";
  std::string processorType = "CPU";         ///< ProcessorType
  std::string architecture = "x86";          ///< ProcessorArchitecture
  std::string instructionSet = "x86-64";     ///< InstructionSet
  std::string model = "Kiln Test CPU 2000";  ///< Model
  int maxSpeedMhz = 2000;                    ///< MaxSpeedMHz
  int totalCores = 4;                        ///< TotalCores
  int totalThreads = 8;                      ///< TotalThreads
};

/// An EthernetInterface of a system (<system>/EthernetInterfaces/<id>). Empty strings and
/// zeros are not reported.
struct RedfishEthernetInterface {
  std::string id;
  std::string macAddress;           ///< MACAddress
  std::string permanentMacAddress;  ///< PermanentMACAddress
  int speedMbps = 0;                ///< SpeedMbps
  std::string linkStatus;           ///< LinkStatus: "LinkUp", "LinkDown", "NoLink"
};

/// A device of a SimpleStorage controller (its Devices array).
struct RedfishSimpleStorageDevice {
  std::string name;
  int64_t capacityBytes = 0;
  std::string state = "Enabled";  ///< Status.State
};

/// A SimpleStorage controller of a system (<system>/SimpleStorage/<id>).
struct RedfishSimpleStorage {
  std::string id = "1";
  std::vector<RedfishSimpleStorageDevice> devices;
};

/// What a system reports about its hardware. The defaults describe a small server (two 8-thread
/// x86-64 processors, 32 GiB, one NIC, no SimpleStorage); empty strings, negative numbers and
/// empty lists leave a property or a link out.
struct RedfishHardware {
  std::string manufacturer = "Kiln";       ///< Manufacturer
  std::string model = "Test Server";       ///< Model
  std::string serialNumber = "KILN-0001";  ///< SerialNumber
  int processorCount = 2;                  ///< ProcessorSummary.Count
  double memoryGiB = 32;                   ///< MemorySummary.TotalSystemMemoryGiB
  std::vector<RedfishProcessor> processors = {RedfishProcessor{}, RedfishProcessor{.id = "CPU2"}};
  std::vector<RedfishEthernetInterface> ethernetInterfaces = {
      {"NIC.1", "52:54:00:12:34:56", "52:54:00:12:34:56", 10000, "LinkUp"}};
  std::vector<RedfishSimpleStorage> simpleStorage;  ///< <system>/SimpleStorage
};

/// One ComputerSystem of the test BMC.
struct RedfishSystemState {
  std::string id = "1";                  ///< served at /redfish/v1/Systems/<id>
  std::string powerState = "Off";        ///< "On", "Off", "PoweringOn" or "PoweringOff"
  std::string bootTarget = "None";       ///< Boot.BootSourceOverrideTarget
  std::string bootEnabled = "Disabled";  ///< Boot.BootSourceOverrideEnabled
  /// BootSourceOverrideTarget@Redfish.AllowableValues; empty = not advertised (any accepted).
  std::vector<std::string> allowedBootTargets = {"None", "Pxe", "Hdd", "Cd", "BiosSetup"};
  /// ResetType@Redfish.AllowableValues; empty = not advertised (the standard ones accepted).
  std::vector<std::string> allowedResetTypes = {
      "On", "ForceOff", "GracefulShutdown", "ForceRestart", "GracefulRestart", "Nmi"};
  std::string uuid = "8b3a4b1c-5d6e-4f70-8192-a3b4c5d6e7f8";  ///< the system's UUID
  /// Boot.BootSourceOverrideMode, "UEFI" or "Legacy" (PATCHable); "" = not reported, and a
  /// PATCH of it is refused.
  std::string bootMode = "UEFI";
  /// Whether the system links a SecureBoot resource (<system>/SecureBoot, GET and PATCH).
  bool hasSecureBoot = true;
  bool secureBootEnable = false;  ///< SecureBoot.SecureBootEnable
  /// IndicatorLED: "Lit", "Blinking" or "Off" (PATCHable); "" = not reported.
  std::string indicatorLed = "Off";
  /// The IndicatorLED of a chassis the system links (/redfish/v1/Chassis/<id>, GET and PATCH);
  /// "" = the system links no chassis.
  std::string chassisIndicatorLed;
  /// Status.Health of the system ("" = not reported).
  std::string health;
  std::string chassisUuid = "0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f";  ///< the chassis' UUID
  /// The Reset action's target path; "" = <system>/Actions/ComputerSystem.Reset.
  std::string resetTarget;
  /// Every ResetType accepted so far, in order (for assertions).
  std::vector<std::string> resets;
  /// Whether the system has a Bios resource (<system>/Bios, with its settings object
  /// <system>/Bios/Settings and the Bios.ResetBios action); without one, those paths are 404.
  bool bios = false;
  /// Bios.Attributes (string values).
  std::vector<std::pair<std::string, std::string>> biosAttributes;
  /// Attributes PATCHed to the settings object; applied, as by a real BMC, at the next reset
  /// that leaves the system on.
  std::vector<std::pair<std::string, std::string>> pendingBiosAttributes;
  /// What Bios.ResetBios restores (at the next reset), and whether it was requested.
  std::vector<std::pair<std::string, std::string>> defaultBiosAttributes;
  bool biosResetPending = false;
  /// Whether a Manager (/redfish/v1/Managers/<id>, Links.ManagedBy of the system) with a
  /// VirtualMedia collection holding one CD slot ("Cd") exists.
  bool manager = false;
  /// The CD slot: the Image URL inserted ("" = none), and whether it is in.
  std::string cdImage;
  bool cdInserted = false;
  /// Whether the slot advertises the InsertMedia/EjectMedia actions; without them only the
  /// older PATCH of Image/Inserted works (and POSTs to the action paths are 404).
  bool cdActions = true;
  /// Every InsertMedia image and "eject", in order (for assertions).
  std::vector<std::string> cdHistory;
  /// Firmware (the redfish firmware interface). ComputerSystem.BiosVersion ("" = not reported);
  /// the Manager's FirmwareVersion and Model (with `manager`; "" = not reported); the
  /// NetworkAdapters of the system's chassis (with any, the system links its chassis even
  /// without chassisIndicatorLed).
  std::string biosVersion;
  std::string managerFirmwareVersion;
  std::string managerModel;
  std::vector<RedfishNetworkAdapter> networkAdapters;
  /// Sensors (the sensor metrics): the bodies of the chassis' Thermal and Power resources
  /// (<chassis>/Thermal, <chassis>/Power), served as they are (JSON or not, for malformed
  /// answers); "" = the chassis links none. With either, the system links its chassis.
  std::string thermalBody;
  std::string powerBody;
  /// RAID (the redfish raid interface): the Storage collection (<system>/Storage); empty = the
  /// system links none.
  std::vector<RedfishStorage> storage;
  /// The hardware inventory (also the system's Manufacturer, Model and SerialNumber); the
  /// firmware version is biosVersion above.
  RedfishHardware hardware;

  /// "/redfish/v1/Systems/<id>".
  std::string path() const { return "/redfish/v1/Systems/" + id; }
  /// "/redfish/v1/Managers/<id>/VirtualMedia/Cd".
  std::string cdPath() const { return "/redfish/v1/Managers/" + id + "/VirtualMedia/Cd"; }
  /// "/redfish/v1/Chassis/<id>".
  std::string chassisPath() const { return "/redfish/v1/Chassis/" + id; }
};

/// A request as the BMC received it.
struct RecordedRequest {
  std::string method;  ///< "GET", "PATCH", ...
  std::string path;    ///< without the query
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  ///< names lowercased

  /// The value of a header (lowercase name), or nullopt.
  std::optional<std::string> header(std::string_view lowercaseName) const;
};

/// A failure the BMC returns instead of handling matching requests.
struct InjectedError {
  std::string method;  ///< "" = any method
  std::string path;    ///< exact request path
  int status = 500;
  std::string message = "Injected failure";  ///< carried in error.@Message.ExtendedInfo
  int count = 1;                             ///< how many requests fail; -1 = every one
  int after = 0;  ///< matching requests let through before the failures start
};

/// The test BMC. Starts with one powered-off system "1". Every method is thread-safe; the HTTP
/// handler runs on Pistache's thread.
class RedfishTestServer {
 public:
  RedfishTestServer();
  ~RedfishTestServer();
  RedfishTestServer(const RedfishTestServer&) = delete;
  RedfishTestServer& operator=(const RedfishTestServer&) = delete;

  /// Binds 127.0.0.1 on an ephemeral port and serves on a background thread.
  Result<void> start();
  /// Stops serving; idempotent (the destructor calls it).
  void stop();
  /// The bound port (after start()).
  uint16_t port() const;
  /// "http://127.0.0.1:<port>".
  std::string address() const;

  /// Replaces the systems with these (ids must be unique).
  void setSystems(std::vector<RedfishSystemState> systems);
  /// Adds a system.
  void addSystem(RedfishSystemState system);
  /// A copy of a system's current state (REQUIRE-fails in the caller's test when unknown:
  /// returns a default-constructed state with an empty id).
  RedfishSystemState system(std::string_view id = "1") const;
  /// Changes a system in place.
  void updateSystem(std::string_view id, const std::function<void(RedfishSystemState&)>& change);

  /// Requires these credentials on every request but the service root and session creation.
  void requireCredentials(std::string username, std::string password);
  /// Whether HTTP basic authentication is accepted (default true).
  void setBasicAuthEnabled(bool enabled);
  /// Whether the SessionService exists (default true; false answers 404 to session creation).
  void setSessionsEnabled(bool enabled);
  /// After a Reset, this many GETs of the system still report PoweringOn/PoweringOff before the
  /// new PowerState shows (default 0: at once).
  void setPowerChangeDelay(int polls);
  /// Fails matching requests (checked before authentication).
  void injectError(InjectedError error);

  /// The UpdateService (/redfish/v1/UpdateService, always served): SimpleUpdate answers 202
  /// with a Task and a Location task monitor (/redfish/v1/TaskService/TaskMonitors/<n>; the
  /// Task itself is /redfish/v1/TaskService/Tasks/<n>). A monitor answers 202 (Running) for
  /// `polls` GETs (default 1), then 200 with the ended Task, and the image is flashed. A BIOS
  /// image's task stays Pending (202) until the system was reset after the SimpleUpdate.
  void addFirmwareImage(RedfishFirmwareImage image);
  void setFirmwareTaskPolls(int polls);

  /// The EventService (/redfish/v1/EventService, always served): POST to its Subscriptions
  /// collection creates a subscription (Destination required, EventTypes a subset of
  /// EventTypesForSubscription) and answers 201 with a Location; GET lists and reads them,
  /// DELETE removes one (404 for an unknown id).
  std::vector<RedfishSubscription> subscriptions() const;
  /// EventTypesForSubscription (default StatusChange, ResourceUpdated, ResourceAdded,
  /// ResourceRemoved, Alert).
  void setEventTypes(std::vector<std::string> types);

  /// Called with each request before it is answered, outside the BMC's own lock (a test can
  /// look at kiln-server's state at the moment the BMC is asked). Empty: none.
  void setRequestObserver(std::function<void(const RecordedRequest&)> observer);

  /// Every request received so far.
  std::vector<RecordedRequest> requests() const;
  /// The requests with this method and path.
  std::vector<RecordedRequest> requests(std::string_view method, std::string_view path) const;
  void clearRequests();
  /// Sessions created and not deleted.
  size_t activeSessions() const;
  /// Forgets every session, as a BMC does when they time out (their tokens then get 401).
  void dropSessions();

  /// Handles one request (the Pistache handler calls it; exposed for the implementation).
  struct Reply {
    int status = 200;
    std::string body;  ///< JSON, or empty
    std::vector<std::pair<std::string, std::string>> headers;
  };
  Reply handle(const RecordedRequest& request);

 private:
  struct State;
  struct Endpoint;
  std::unique_ptr<State> state_;
  std::unique_ptr<Endpoint> endpoint_;
};

}  // namespace kiln::test
