#include "tests/support/redfish_test_server.h"

#include <pistache/endpoint.h>
#include <pistache/http.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <variant>

#include <nlohmann/json.hpp>

#include "shared/core/base64.h"

namespace kiln::test {
namespace {

using nlohmann::json;
using Reply = RedfishTestServer::Reply;

constexpr std::string_view kRoot = "/redfish/v1";
constexpr std::string_view kSystems = "/redfish/v1/Systems";
constexpr std::string_view kSessionService = "/redfish/v1/SessionService";
constexpr std::string_view kSessions = "/redfish/v1/SessionService/Sessions";
constexpr std::string_view kUpdateService = "/redfish/v1/UpdateService";
constexpr std::string_view kEventService = "/redfish/v1/EventService";
constexpr std::string_view kSubscriptions = "/redfish/v1/EventService/Subscriptions";
constexpr std::string_view kSimpleUpdate =
    "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate";
constexpr std::string_view kTaskMonitors = "/redfish/v1/TaskService/TaskMonitors/";
constexpr std::string_view kTasks = "/redfish/v1/TaskService/Tasks/";

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (auto& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

/// A Redfish error body (DSP0266 §9.6): a general error whose extended info carries the detail.
Reply redfishError(int status, std::string_view messageId, std::string_view message) {
  json body = {
      {"error",
       {{"code", "Base.1.8.GeneralError"},
        {"message", "A general error has occurred. See ExtendedInfo for more information."},
        {"@Message.ExtendedInfo", json::array({{{"@odata.type", "#Message.v1_1_1.Message"},
                                                {"MessageId", "Base.1.8." + std::string(messageId)},
                                                {"Message", std::string(message)},
                                                {"Severity", "Critical"},
                                                {"Resolution", "None"}}})}}}};
  return Reply{status, body.dump(), {}};
}

Reply jsonReply(int status, const json& body) { return Reply{status, body.dump(), {}}; }

bool contains(const std::vector<std::string>& list, std::string_view value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

/// A response header with a name chosen at run time (see server/api/http_endpoint.cpp).
class NamedHeader final : public Pistache::Http::Header::Header {
 public:
  NamedHeader(std::string name, std::string value)
      : name_(std::move(name)), value_(std::move(value)) {}
  const char* name() const override { return name_.c_str(); }
  uint64_t hash() const override { return std::hash<std::string>{}(name_); }
  void parse(const std::string& data) override { value_ = data; }
  void write(std::ostream& os) const override { os << value_; }

 private:
  std::string name_;
  std::string value_;
};

class Handler final : public Pistache::Http::Handler {
 public:
  HTTP_PROTOTYPE(Handler)

  explicit Handler(RedfishTestServer* server) : server_(server) {}

  void onRequest(const Pistache::Http::Request& req,
                 Pistache::Http::ResponseWriter writer) override {
    using namespace Pistache;
    RecordedRequest request;
    request.method = Http::methodString(req.method());
    request.path = req.resource();
    request.body = req.body();
    for (const auto& [name, raw] : req.headers().rawList()) {
      request.headers.emplace_back(lowercase(name), raw.value());
    }
    // HTTP/1.1 is persistent unless the client says otherwise (Pistache 0.0.5 closes).
    if (req.version() == Http::Version::Http11 && !req.headers().has("Connection")) {
      writer.headers().remove<Http::Header::Connection>();
      writer.headers().add<Http::Header::Connection>(Http::ConnectionControl::KeepAlive);
    }
    Reply reply;
    try {
      reply = server_->handle(request);
    } catch (const std::exception& e) {
      reply = redfishError(500, "InternalError", e.what());
    }
    for (auto& [name, value] : reply.headers) {
      writer.headers().add(std::make_shared<NamedHeader>(name, value));
    }
    const auto code = static_cast<Http::Code>(reply.status);
    if (reply.body.empty()) {
      writer.send(code);
    } else {
      writer.send(code, reply.body, MIME(Application, Json));
    }
  }

 private:
  RedfishTestServer* server_;
};

struct SystemEntry {
  RedfishSystemState state;
  std::optional<std::string> pendingPowerState;  ///< the PowerState a Reset leads to
  int pollsLeft = 0;                             ///< GETs still showing the transition
};

std::string resetPath(const RedfishSystemState& s) {
  return s.resetTarget.empty() ? s.path() + "/Actions/ComputerSystem.Reset" : s.resetTarget;
}

void setAttribute(std::vector<std::pair<std::string, std::string>>& attrs, const std::string& name,
                  const std::string& value) {
  for (auto& [k, v] : attrs) {
    if (k == name) {
      v = value;
      return;
    }
  }
  attrs.emplace_back(name, value);
}

/// Whether the system links a chassis (/redfish/v1/Chassis/<id>).
bool hasChassis(const RedfishSystemState& s) {
  return !s.chassisIndicatorLed.empty() || !s.networkAdapters.empty() || !s.thermalBody.empty() ||
         !s.powerBody.empty();
}

/// A firmware update started by SimpleUpdate.
struct FirmwareTask {
  int id = 0;
  std::string systemId;
  std::string uri;
  std::optional<RedfishFirmwareImage> image;
  size_t resetsAtStart = 0;  ///< the system's resets when the update started
  int pollsLeft = 0;
  std::string state = "New";  ///< New, Pending, Running, Completed or Exception
};

/// A volume change (the RAID interface) that a Task carries out.
struct VolumeTask {
  std::string id;  ///< "raid-<n>"
  std::string systemId;
  std::string storageId;
  bool create = true;    ///< else a delete
  RedfishVolume volume;  ///< what is created, or (its id) deleted
  bool onReset = false;  ///< @Redfish.OperationApplyTime OnReset: waits for a reset
  size_t resetsAtStart = 0;
  int pollsLeft = 0;
  std::string state = "New";
};

/// Data drives of a RAID type over `n` drives; 0 when `n` does not suit the type.
int64_t dataDrives(const std::string& raidType, int64_t n) {
  if (raidType == "RAID0") return n >= 1 ? n : 0;
  if (raidType == "RAID1") return n == 2 ? 1 : 0;
  if (raidType == "RAID5") return n >= 3 ? n - 1 : 0;
  if (raidType == "RAID6") return n >= 4 ? n - 2 : 0;
  if (raidType == "RAID10") return n >= 4 && n % 2 == 0 ? n / 2 : 0;
  if (raidType == "RAID50") return n >= 6 && n % 2 == 0 ? n - 2 : 0;
  if (raidType == "RAID60") return n >= 8 && n % 2 == 0 ? n - 4 : 0;
  return 0;
}

/// A reset that leaves the system on applies what is pending for its BIOS.
void applyPendingBios(RedfishSystemState& s) {
  if (s.biosResetPending) s.biosAttributes = s.defaultBiosAttributes;
  for (const auto& [k, v] : s.pendingBiosAttributes) setAttribute(s.biosAttributes, k, v);
  s.pendingBiosAttributes.clear();
  s.biosResetPending = false;
}

}  // namespace

std::optional<std::string> RecordedRequest::header(std::string_view lowercaseName) const {
  for (const auto& [k, v] : headers) {
    if (k == lowercaseName) return v;
  }
  return std::nullopt;
}

struct RedfishTestServer::State {
  mutable std::mutex mutex;
  std::vector<SystemEntry> systems;
  std::optional<std::pair<std::string, std::string>> credentials;
  bool basicAuth = true;
  bool sessionService = true;
  int powerDelay = 0;
  std::vector<InjectedError> errors;
  std::vector<RecordedRequest> requests;
  std::function<void(const RecordedRequest&)> observer;  ///< setRequestObserver
  std::map<std::string, std::string> sessions;  ///< token -> session resource path
  int nextSession = 1;
  std::vector<RedfishFirmwareImage> firmwareImages;
  int firmwareTaskPolls = 1;
  std::vector<FirmwareTask> firmwareTasks;
  std::vector<VolumeTask> volumeTasks;
  int nextVolume = 1;
  std::vector<RedfishSubscription> subscriptions;
  std::vector<std::string> eventTypes = {"StatusChange", "ResourceUpdated", "ResourceAdded",
                                         "ResourceRemoved", "Alert"};
  int nextSubscription = 1;

  static json renderSubscription(const RedfishSubscription& sub) {
    return {{"@odata.id", std::string(kSubscriptions) + "/" + sub.id},
            {"@odata.type", "#EventDestination.v1_7_0.EventDestination"},
            {"Id", sub.id},
            {"Name", "Event subscription " + sub.id},
            {"Destination", sub.destination},
            {"Context", sub.context},
            {"Protocol", sub.protocol},
            {"EventTypes", sub.eventTypes},
            {"HttpHeaders", json::array()}};
  }

  /// The EventService and its Subscriptions collection.
  std::optional<Reply> routeEvents(const RecordedRequest& request, const std::string& path) {
    const auto& method = request.method;
    if (path == kEventService) {
      if (method != "GET") return redfishError(405, "ActionNotSupported", "Method not allowed.");
      return jsonReply(200, {{"@odata.id", kEventService},
                             {"@odata.type", "#EventService.v1_5_0.EventService"},
                             {"Id", "EventService"},
                             {"ServiceEnabled", true},
                             {"EventTypesForSubscription", eventTypes},
                             {"Subscriptions", {{"@odata.id", kSubscriptions}}}});
    }
    if (path == kSubscriptions) {
      if (method == "GET") {
        json members = json::array();
        for (const auto& sub : subscriptions) {
          members.push_back({{"@odata.id", std::string(kSubscriptions) + "/" + sub.id}});
        }
        return jsonReply(200, {{"@odata.id", kSubscriptions},
                               {"@odata.type", "#EventDestinationCollection.EventDestinationCollection"},
                               {"Name", "Event Subscriptions Collection"},
                               {"Members@odata.count", members.size()},
                               {"Members", members}});
      }
      if (method != "POST") return redfishError(405, "ActionNotSupported", "Method not allowed.");
      const json body = json::parse(request.body, nullptr, false);
      if (!body.is_object() || !body.contains("Destination") || !body["Destination"].is_string()) {
        return redfishError(400, "PropertyMissing",
                            "The property Destination is a required property and must be included "
                            "in the request.");
      }
      RedfishSubscription sub;
      sub.id = std::to_string(nextSubscription++);
      sub.destination = body["Destination"].get<std::string>();
      sub.context = body.value("Context", "");
      sub.protocol = body.value("Protocol", "Redfish");
      for (const auto& t : body.value("EventTypes", json::array())) {
        if (!t.is_string() || std::find(eventTypes.begin(), eventTypes.end(), t.get<std::string>()) ==
                                  eventTypes.end()) {
          return redfishError(400, "PropertyValueNotInList",
                              "The value " + t.dump() + " for the property EventTypes is not in "
                              "the list of acceptable values.");
        }
        sub.eventTypes.push_back(t.get<std::string>());
      }
      if (body.contains("HttpHeaders")) sub.httpHeaders = body["HttpHeaders"].dump();
      subscriptions.push_back(sub);
      Reply reply = jsonReply(201, renderSubscription(sub));
      reply.headers.emplace_back("Location", std::string(kSubscriptions) + "/" + sub.id);
      return reply;
    }
    const std::string prefix = std::string(kSubscriptions) + "/";
    if (path.rfind(prefix, 0) != 0) return std::nullopt;
    const std::string id = path.substr(prefix.size());
    const auto it = std::find_if(subscriptions.begin(), subscriptions.end(),
                                 [&](const RedfishSubscription& sub) { return sub.id == id; });
    if (it == subscriptions.end()) {
      return redfishError(404, "ResourceMissingAtURI",
                          "The resource at the URI " + path + " was not found.");
    }
    if (method == "GET") return jsonReply(200, renderSubscription(*it));
    if (method == "DELETE") {
      subscriptions.erase(it);
      return Reply{204, "", {}};
    }
    return redfishError(405, "ActionNotSupported", "Method not allowed.");
  }

  SystemEntry* find(std::string_view id) {
    for (auto& e : systems) {
      if (e.state.id == id) return &e;
    }
    return nullptr;
  }

  /// nullopt when the request may proceed, else the 401 to send.
  std::optional<Reply> checkAuth(const RecordedRequest& request) const {
    if (!credentials) return std::nullopt;
    if (auto token = request.header("x-auth-token")) {
      if (sessions.count(*token)) return std::nullopt;
      return redfishError(401, "NoValidSession",
                          "There is no valid session established with the implementation.");
    }
    if (auto auth = request.header("authorization")) {
      if (!basicAuth) {
        return redfishError(401, "InsufficientPrivilege",
                            "Basic authentication is disabled on this service.");
      }
      if (auth->rfind("Basic ", 0) == 0) {
        auto decoded = kiln::base64Decode(auth->substr(6));
        if (decoded && *decoded == credentials->first + ":" + credentials->second) {
          return std::nullopt;
        }
      }
      return redfishError(401, "ResourceAtUriUnauthorized",
                          "While accessing the resource at " + request.path +
                              ", the service received an authorization error: invalid "
                              "username or password.");
    }
    return redfishError(401, "NoValidSession",
                        "There is no valid session established with the implementation.");
  }

  json renderSystem(const SystemEntry& e) const {
    const auto& s = e.state;
    json boot = {{"BootSourceOverrideTarget", s.bootTarget},
                 {"BootSourceOverrideEnabled", s.bootEnabled}};
    if (!s.allowedBootTargets.empty()) {
      boot["BootSourceOverrideTarget@Redfish.AllowableValues"] = s.allowedBootTargets;
    }
    if (!s.bootMode.empty()) {
      boot["BootSourceOverrideMode"] = s.bootMode;
      boot["BootSourceOverrideMode@Redfish.AllowableValues"] = {"Legacy", "UEFI"};
    }
    json reset = {{"target", resetPath(s)}};
    if (!s.allowedResetTypes.empty()) {
      reset["ResetType@Redfish.AllowableValues"] = s.allowedResetTypes;
    }
    json system = {{"@odata.id", s.path()},
                   {"@odata.type", "#ComputerSystem.v1_10_0.ComputerSystem"},
                   {"Id", s.id},
                   {"Name", "Test system " + s.id},
                   {"UUID", s.uuid},
                   {"PowerState", s.powerState},
                   {"Boot", boot},
                   {"Actions", {{"#ComputerSystem.Reset", reset}}}};
    if (!s.indicatorLed.empty()) system["IndicatorLED"] = s.indicatorLed;
    if (!s.health.empty()) system["Status"] = {{"State", "Enabled"}, {"Health", s.health}};
    if (s.hasSecureBoot) system["SecureBoot"] = {{"@odata.id", s.path() + "/SecureBoot"}};
    if (hasChassis(s)) {
      system["Links"] = {{"Chassis", json::array({{{"@odata.id", s.chassisPath()}}})}};
    }
    if (s.manager) {
      system["Links"]["ManagedBy"] = json::array({{{"@odata.id", "/redfish/v1/Managers/" + s.id}}});
    }
    if (s.bios) system["Bios"] = {{"@odata.id", s.path() + "/Bios"}};
    if (!s.biosVersion.empty()) system["BiosVersion"] = s.biosVersion;
    if (!s.storage.empty()) system["Storage"] = {{"@odata.id", s.path() + "/Storage"}};
    renderHardware(s, system);
    return system;
  }

  static json renderSecureBoot(const RedfishSystemState& s) {
    return {{"@odata.id", s.path() + "/SecureBoot"},
            {"@odata.type", "#SecureBoot.v1_1_0.SecureBoot"},
            {"Id", "SecureBoot"},
            {"Name", "UEFI Secure Boot"},
            {"SecureBootEnable", s.secureBootEnable},
            {"SecureBootCurrentBoot", s.secureBootEnable ? "Enabled" : "Disabled"},
            {"SecureBootMode", "DeployedMode"}};
  }

  static json renderChassis(const RedfishSystemState& s) {
    json chassis = {{"@odata.id", s.chassisPath()},
                    {"@odata.type", "#Chassis.v1_10_0.Chassis"},
                    {"Id", s.id},
                    {"Name", "Test chassis " + s.id},
                    {"UUID", s.chassisUuid},
                    {"ChassisType", "RackMount"}};
    if (!s.chassisIndicatorLed.empty()) chassis["IndicatorLED"] = s.chassisIndicatorLed;
    if (!s.networkAdapters.empty()) {
      chassis["NetworkAdapters"] = {{"@odata.id", s.chassisPath() + "/NetworkAdapters"}};
    }
    if (!s.thermalBody.empty()) chassis["Thermal"] = {{"@odata.id", s.chassisPath() + "/Thermal"}};
    if (!s.powerBody.empty()) chassis["Power"] = {{"@odata.id", s.chassisPath() + "/Power"}};
    return chassis;
  }

  // ---- firmware: NetworkAdapters, UpdateService, tasks ----

  /// The chassis' NetworkAdapters collection and adapters; nullopt when `path` is none.
  static std::optional<Reply> routeNetworkAdapters(const RedfishSystemState& s,
                                                   const RecordedRequest& request,
                                                   const std::string& path) {
    const std::string collection = s.chassisPath() + "/NetworkAdapters";
    if (s.networkAdapters.empty() || path.rfind(collection, 0) != 0) return std::nullopt;
    if (request.method != "GET") {
      return redfishError(405, "ActionNotSupported", "Method not allowed.");
    }
    if (path == collection) {
      json members = json::array();
      for (const auto& a : s.networkAdapters) members.push_back({{"@odata.id", collection + "/" + a.id}});
      return jsonReply(200, {{"@odata.id", collection},
                             {"@odata.type", "#NetworkAdapterCollection.NetworkAdapterCollection"},
                             {"Members@odata.count", members.size()},
                             {"Members", members}});
    }
    for (const auto& a : s.networkAdapters) {
      if (path != collection + "/" + a.id) continue;
      json adapter = {{"@odata.id", path},
                      {"@odata.type", "#NetworkAdapter.v1_5_0.NetworkAdapter"},
                      {"Id", a.id},
                      {"Name", "Network adapter " + a.id},
                      {"Manufacturer", a.manufacturer},
                      {"Model", a.model},
                      {"Controllers", json::array({{{"FirmwarePackageVersion", a.firmwareVersion}}})}};
      if (!a.serialNumber.empty()) adapter["SerialNumber"] = a.serialNumber;
      return jsonReply(200, adapter);
    }
    return std::nullopt;
  }

  static json renderTask(const FirmwareTask& t) {
    json messages = json::array();
    if (t.state == "Exception") {
      messages.push_back({{"MessageId", "Update.1.0.TransferFailed"},
                          {"Message", "Transfer of image '" + t.uri + "' to the update service failed."},
                          {"Severity", "Critical"}});
    } else if (t.state == "Completed") {
      messages.push_back({{"MessageId", "Update.1.0.UpdateSuccessful"},
                          {"Message", "The update completed successfully."},
                          {"Severity", "OK"}});
    }
    return {{"@odata.id", std::string(kTasks) + std::to_string(t.id)},
            {"@odata.type", "#Task.v1_4_3.Task"},
            {"Id", std::to_string(t.id)},
            {"Name", "Firmware update"},
            {"TaskState", t.state},
            {"TaskStatus", t.state == "Exception" ? "Critical" : "OK"},
            {"Messages", messages}};
  }

  Reply simpleUpdate(const RecordedRequest& request) {
    const json body = json::parse(request.body, nullptr, false);
    if (!body.is_object() || !body.contains("ImageURI") || !body["ImageURI"].is_string()) {
      return redfishError(400, "ActionParameterMissing",
                          "The action UpdateService.SimpleUpdate requires the parameter ImageURI "
                          "to be present in the request body.");
    }
    SystemEntry* e = systems.empty() ? nullptr : &systems.front();
    if (auto targets = body.find("Targets"); targets != body.end() && targets->is_array() &&
                                             !targets->empty() && (*targets)[0].is_string()) {
      e = nullptr;
      for (auto& candidate : systems) {
        if (candidate.state.path() == (*targets)[0].get<std::string>()) e = &candidate;
      }
      if (!e) {
        return redfishError(400, "ActionParameterValueNotInList",
                            "The value of the parameter Targets is not a known resource.");
      }
    }
    if (!e) return redfishError(500, "InternalError", "No system to update.");
    FirmwareTask t;
    t.id = static_cast<int>(firmwareTasks.size()) + 1;
    t.systemId = e->state.id;
    t.uri = body["ImageURI"].get<std::string>();
    for (const auto& image : firmwareImages) {
      if (image.uri == t.uri) t.image = image;
    }
    t.resetsAtStart = e->state.resets.size();
    t.pollsLeft = firmwareTaskPolls;
    firmwareTasks.push_back(t);
    Reply reply = jsonReply(202, renderTask(t));
    reply.headers = {{"Location", std::string(kTaskMonitors) + std::to_string(t.id)}};
    return reply;
  }

  /// One look at a task through its monitor moves it on.
  void advance(FirmwareTask& t) {
    if (t.state == "Completed" || t.state == "Exception") return;
    SystemEntry* e = find(t.systemId);
    if (t.image && t.image->component == "bios" && e && e->state.resets.size() <= t.resetsAtStart) {
      t.state = "Pending";  // staged: applied at the next boot
      return;
    }
    if (t.pollsLeft > 0) {
      --t.pollsLeft;
      t.state = "Running";
      return;
    }
    if (!t.image || !e) {
      t.state = "Exception";
      return;
    }
    t.state = "Completed";
    RedfishSystemState& s = e->state;
    if (t.image->component == "bios") {
      s.biosVersion = t.image->version;
    } else if (t.image->component == "bmc") {
      s.managerFirmwareVersion = t.image->version;
    } else {
      for (auto& a : s.networkAdapters) {
        if (a.id == t.image->component || a.serialNumber == t.image->component) {
          a.firmwareVersion = t.image->version;
        }
      }
    }
  }

  /// The UpdateService, SimpleUpdate and the tasks; nullopt when `path` is none of them.
  std::optional<Reply> routeFirmware(const RecordedRequest& request, const std::string& path) {
    const auto& method = request.method;
    if (path == kUpdateService) {
      if (method != "GET") return redfishError(405, "ActionNotSupported", "Method not allowed.");
      return jsonReply(200, {{"@odata.id", kUpdateService},
                             {"@odata.type", "#UpdateService.v1_8_0.UpdateService"},
                             {"Id", "UpdateService"},
                             {"ServiceEnabled", true},
                             {"Actions",
                              {{"#UpdateService.SimpleUpdate",
                                {{"target", kSimpleUpdate},
                                 {"TransferProtocol@Redfish.AllowableValues",
                                  json::array({"HTTP", "HTTPS"})}}}}}});
    }
    if (path == kSimpleUpdate) {
      if (method != "POST") return redfishError(405, "ActionNotSupported", "Method not allowed.");
      return simpleUpdate(request);
    }
    for (auto& t : firmwareTasks) {
      if (path == std::string(kTaskMonitors) + std::to_string(t.id)) {
        if (method != "GET") return redfishError(405, "ActionNotSupported", "Method not allowed.");
        advance(t);
        const bool ended = t.state == "Completed" || t.state == "Exception";
        return jsonReply(ended ? 200 : 202, renderTask(t));
      }
      if (path == std::string(kTasks) + std::to_string(t.id)) {
        if (method != "GET") return redfishError(405, "ActionNotSupported", "Method not allowed.");
        return jsonReply(200, renderTask(t));
      }
    }
    return std::nullopt;
  }

  // ---- hardware inventory: vendor, summaries, Processors, EthernetInterfaces, SimpleStorage ----

  /// The system's own inventory properties and the links to its inventory collections.
  static void renderHardware(const RedfishSystemState& s, json& system) {
    const RedfishHardware& h = s.hardware;
    if (!h.manufacturer.empty()) system["Manufacturer"] = h.manufacturer;
    if (!h.model.empty()) system["Model"] = h.model;
    if (!h.serialNumber.empty()) system["SerialNumber"] = h.serialNumber;
    if (h.processorCount >= 0) system["ProcessorSummary"] = {{"Count", h.processorCount}};
    if (h.memoryGiB >= 0) system["MemorySummary"] = {{"TotalSystemMemoryGiB", h.memoryGiB}};
    if (!h.processors.empty()) system["Processors"] = {{"@odata.id", s.path() + "/Processors"}};
    if (!h.ethernetInterfaces.empty()) {
      system["EthernetInterfaces"] = {{"@odata.id", s.path() + "/EthernetInterfaces"}};
    }
    if (!h.simpleStorage.empty()) {
      system["SimpleStorage"] = {{"@odata.id", s.path() + "/SimpleStorage"}};
    }
  }

  static json renderProcessor(const std::string& path, const RedfishProcessor& p) {
    json body = {{"@odata.id", path},
                 {"@odata.type", "#Processor.v1_7_0.Processor"},
                 {"Id", p.id},
                 {"Name", "Processor " + p.id}};
    for (const auto& [key, value] :
         {std::pair{"ProcessorType", &p.processorType},
          std::pair{"ProcessorArchitecture", &p.architecture},
          std::pair{"InstructionSet", &p.instructionSet}, std::pair{"Model", &p.model}}) {
      if (!value->empty()) body[key] = *value;
    }
    for (const auto& [key, value] :
         {std::pair{"MaxSpeedMHz", p.maxSpeedMhz}, std::pair{"TotalCores", p.totalCores},
          std::pair{"TotalThreads", p.totalThreads}}) {
      if (value != 0) body[key] = value;
    }
    return body;
  }

  static json renderEthernetInterface(const std::string& path, const RedfishEthernetInterface& n) {
    json body = {{"@odata.id", path},
                 {"@odata.type", "#EthernetInterface.v1_6_0.EthernetInterface"},
                 {"Id", n.id},
                 {"Name", "Ethernet interface " + n.id}};
    if (!n.macAddress.empty()) body["MACAddress"] = n.macAddress;
    if (!n.permanentMacAddress.empty()) body["PermanentMACAddress"] = n.permanentMacAddress;
    if (n.speedMbps != 0) body["SpeedMbps"] = n.speedMbps;
    if (!n.linkStatus.empty()) body["LinkStatus"] = n.linkStatus;
    return body;
  }

  static json renderSimpleStorage(const std::string& path, const RedfishSimpleStorage& st) {
    json devices = json::array();
    for (const auto& d : st.devices) {
      devices.push_back({{"Name", d.name},
                         {"CapacityBytes", d.capacityBytes},
                         {"Status", {{"State", d.state}, {"Health", "OK"}}}});
    }
    return {{"@odata.id", path},
            {"@odata.type", "#SimpleStorage.v1_2_0.SimpleStorage"},
            {"Id", st.id},
            {"Name", "Simple storage " + st.id},
            {"Devices", devices}};
  }

  /// <system>/Processors, /EthernetInterfaces, /SimpleStorage and their members (GET only);
  /// nullopt when `path` is none of them.
  static std::optional<Reply> routeHardware(const RedfishSystemState& s,
                                            const RecordedRequest& request,
                                            const std::string& path) {
    const RedfishHardware& h = s.hardware;
    std::optional<json> body;
    auto collection = [&](const std::string& base, const std::string& type,
                          const std::vector<std::string>& ids) {
      json members = json::array();
      for (const auto& id : ids) members.push_back({{"@odata.id", base + "/" + id}});
      return json{{"@odata.id", base},
                  {"@odata.type", "#" + type + "Collection." + type + "Collection"},
                  {"Members@odata.count", members.size()},
                  {"Members", members}};
    };
    if (!h.processors.empty()) {
      const std::string base = s.path() + "/Processors";
      std::vector<std::string> ids;
      for (const auto& p : h.processors) {
        ids.push_back(p.id);
        if (path == base + "/" + p.id) body = renderProcessor(path, p);
      }
      if (path == base) body = collection(base, "Processor", ids);
    }
    if (!h.ethernetInterfaces.empty()) {
      const std::string base = s.path() + "/EthernetInterfaces";
      std::vector<std::string> ids;
      for (const auto& n : h.ethernetInterfaces) {
        ids.push_back(n.id);
        if (path == base + "/" + n.id) body = renderEthernetInterface(path, n);
      }
      if (path == base) body = collection(base, "EthernetInterface", ids);
    }
    if (!h.simpleStorage.empty()) {
      const std::string base = s.path() + "/SimpleStorage";
      std::vector<std::string> ids;
      for (const auto& st : h.simpleStorage) {
        ids.push_back(st.id);
        if (path == base + "/" + st.id) body = renderSimpleStorage(path, st);
      }
      if (path == base) body = collection(base, "SimpleStorage", ids);
    }
    if (!body) return std::nullopt;
    if (request.method != "GET") {
      return redfishError(405, "ActionNotSupported", "Method not allowed.");
    }
    return jsonReply(200, *body);
  }

  // ---- RAID: Storage, Drives, Volumes and their tasks ----

  static std::string storagePath(const RedfishSystemState& s, const RedfishStorage& st) {
    return s.path() + "/Storage/" + st.id;
  }

  static json renderVolume(const std::string& storage, const RedfishVolume& v) {
    json drives = json::array();
    for (const auto& d : v.drives) drives.push_back({{"@odata.id", storage + "/Drives/" + d}});
    json volume = {{"@odata.id", storage + "/Volumes/" + v.id},
                   {"@odata.type", "#Volume.v1_6_0.Volume"},
                   {"Id", v.id},
                   {"Name", v.name},
                   {"CapacityBytes", v.capacityBytes},
                   {"Links", {{"Drives", drives}}}};
    if (!v.raidType.empty()) volume["RAIDType"] = v.raidType;
    return volume;
  }

  static json renderVolumeTask(const VolumeTask& t) {
    json messages = json::array();
    if (t.state == "Exception") {
      messages.push_back({{"MessageId", "Base.1.8.GeneralError"},
                          {"Message", "The RAID controller could not apply the configuration."},
                          {"Severity", "Critical"}});
    } else if (t.state == "Completed") {
      messages.push_back({{"MessageId", "Base.1.8.Success"},
                          {"Message", "Successfully Completed Request"},
                          {"Severity", "OK"}});
    }
    return {{"@odata.id", std::string(kTasks) + t.id},
            {"@odata.type", "#Task.v1_4_3.Task"},
            {"Id", t.id},
            {"Name", t.create ? "Create volume" : "Delete volume"},
            {"TaskState", t.state},
            {"TaskStatus", t.state == "Exception" ? "Critical" : "OK"},
            {"Messages", messages}};
  }

  /// The apply time a request names, checked against the collection's; nullopt when fine.
  static std::optional<Reply> checkApplyTime(const RedfishStorage& st, const json& body,
                                             bool& onReset) {
    onReset = false;
    if (!body.is_object() || !body.contains("@Redfish.OperationApplyTime")) return std::nullopt;
    const json& t = body["@Redfish.OperationApplyTime"];
    if (!t.is_string() || !contains(st.applyTimes, t.get<std::string>())) {
      return redfishError(400, "PropertyValueNotInList",
                          "The value " + t.dump() +
                              " for the property @Redfish.OperationApplyTime is not in the list "
                              "of acceptable values.");
    }
    onReset = t == "OnReset";
    return std::nullopt;
  }

  /// Starts a task for a volume change (202 with its monitor).
  Reply startVolumeTask(const RedfishSystemState& s, const RedfishStorage& st, bool create,
                        RedfishVolume volume, bool onReset) {
    VolumeTask t;
    t.id = "raid-" + std::to_string(volumeTasks.size() + 1);
    t.systemId = s.id;
    t.storageId = st.id;
    t.create = create;
    t.volume = std::move(volume);
    t.onReset = onReset;
    t.resetsAtStart = s.resets.size();
    t.pollsLeft = st.taskPolls;
    volumeTasks.push_back(t);
    Reply reply = jsonReply(202, renderVolumeTask(t));
    reply.headers = {{"Location", std::string(kTaskMonitors) + t.id}};
    return reply;
  }

  Reply createVolume(RedfishSystemState& s, RedfishStorage& st, const RecordedRequest& request) {
    const json body = json::parse(request.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      return redfishError(400, "MalformedJSON", "The request body submitted was malformed JSON.");
    }
    const std::string storage = storagePath(s, st);
    const auto type = body.find("RAIDType");
    if (type == body.end() || !type->is_string() ||
        !contains(st.supportedRaidTypes, type->get<std::string>())) {
      return redfishError(400, "PropertyValueNotInList",
                          "The value " + (type == body.end() ? std::string("null") : type->dump()) +
                              " for the property RAIDType is not in the list of acceptable "
                              "values.");
    }
    RedfishVolume v;
    v.raidType = type->get<std::string>();
    const json links = body.value("Links", json::object());
    const json drives = links.is_object() ? links.value("Drives", json::array()) : json();
    if (!drives.is_array() || drives.empty()) {
      return redfishError(400, "PropertyMissing",
                          "The property Links/Drives is a required property and must be included "
                          "in the request.");
    }
    // Free space per drive: its capacity less each volume's share.
    auto usedOn = [&](const std::string& driveId) {
      int64_t used = 0;
      for (const auto& other : st.volumes) {
        if (!contains(other.drives, driveId)) continue;
        const int64_t data = dataDrives(other.raidType, static_cast<int64_t>(other.drives.size()));
        used += data > 0 ? other.capacityBytes / data : other.capacityBytes;
      }
      return used;
    };
    int64_t minFree = -1;
    for (const auto& link : drives) {
      const std::string path =
          link.is_object() && link.contains("@odata.id") && link["@odata.id"].is_string()
              ? link["@odata.id"].get<std::string>()
              : "";
      const RedfishDrive* drive = nullptr;
      for (const auto& d : st.drives) {
        if (path == storage + "/Drives/" + d.id) drive = &d;
      }
      if (!drive || contains(v.drives, drive->id)) {
        return redfishError(400, "PropertyValueIncorrect",
                            "The value " + link.dump() +
                                " for the property Links/Drives is not a drive of this "
                                "controller.");
      }
      v.drives.push_back(drive->id);
      const int64_t free = drive->capacityBytes - usedOn(drive->id);
      minFree = minFree < 0 ? free : std::min(minFree, free);
    }
    const int64_t data = dataDrives(v.raidType, static_cast<int64_t>(v.drives.size()));
    if (data == 0) {
      return redfishError(400, "PropertyValueIncorrect",
                          "The number of drives (" + std::to_string(v.drives.size()) +
                              ") does not suit " + v.raidType + ".");
    }
    const int64_t max = std::max<int64_t>(0, minFree) * data;
    if (auto capacity = body.find("CapacityBytes"); capacity != body.end()) {
      if (!capacity->is_number_integer() || capacity->get<int64_t>() <= 0 ||
          capacity->get<int64_t>() > max) {
        return redfishError(400, "PropertyValueIncorrect",
                            "The value " + capacity->dump() +
                                " for the property CapacityBytes is more than the drives hold (" +
                                std::to_string(max) + ").");
      }
      v.capacityBytes = capacity->get<int64_t>();
    } else {
      if (max <= 0) {
        return redfishError(400, "PropertyValueIncorrect", "The drives have no space left.");
      }
      v.capacityBytes = max;
    }
    if (auto name = body.find("Name"); name != body.end() && name->is_string()) {
      v.name = name->get<std::string>();
    }
    bool onReset = false;
    if (auto error = checkApplyTime(st, body, onReset)) return *error;
    v.id = "Volume" + std::to_string(nextVolume++);
    if (v.name.empty()) v.name = v.id;
    if (st.taskPolls >= 0) return startVolumeTask(s, st, true, std::move(v), onReset);
    st.volumes.push_back(v);
    Reply reply = jsonReply(201, renderVolume(storage, v));
    reply.headers = {{"Location", storage + "/Volumes/" + v.id}};
    return reply;
  }

  Reply deleteVolume(RedfishSystemState& s, RedfishStorage& st, size_t index,
                     const RecordedRequest& request) {
    if (!st.volumes[index].deletable) {
      Reply reply = redfishError(405, "ActionNotSupported", "The volume cannot be deleted.");
      reply.headers = {{"Allow", "GET"}};
      return reply;
    }
    json body = json::object();
    if (!request.body.empty()) {
      body = json::parse(request.body, nullptr, false);
      if (body.is_discarded() || !body.is_object()) {
        return redfishError(400, "MalformedJSON", "The request body submitted was malformed JSON.");
      }
    }
    bool onReset = false;
    if (auto error = checkApplyTime(st, body, onReset)) return *error;
    if (st.taskPolls >= 0) return startVolumeTask(s, st, false, st.volumes[index], onReset);
    st.volumes.erase(st.volumes.begin() + static_cast<std::ptrdiff_t>(index));
    return Reply{204, "", {}};
  }

  /// <system>/Storage and everything under it; nullopt when `path` is none of them.
  std::optional<Reply> routeStorage(RedfishSystemState& s, const RecordedRequest& request,
                                    const std::string& path) {
    const std::string collection = s.path() + "/Storage";
    if (s.storage.empty() || path.rfind(collection, 0) != 0) return std::nullopt;
    const std::string& method = request.method;
    auto getOnly = [&](json body) -> Reply {
      if (method != "GET") return redfishError(405, "ActionNotSupported", "Method not allowed.");
      return jsonReply(200, std::move(body));
    };
    if (path == collection) {
      json members = json::array();
      for (const auto& st : s.storage) members.push_back({{"@odata.id", storagePath(s, st)}});
      return getOnly({{"@odata.id", collection},
                      {"@odata.type", "#StorageCollection.StorageCollection"},
                      {"Members@odata.count", members.size()},
                      {"Members", members}});
    }
    for (auto& st : s.storage) {
      const std::string storage = storagePath(s, st);
      if (path == storage) {
        json drives = json::array();
        for (const auto& d : st.drives) {
          drives.push_back({{"@odata.id", storage + "/Drives/" + d.id}});
        }
        json body = {
            {"@odata.id", storage},
            {"@odata.type", "#Storage.v1_8_0.Storage"},
            {"Id", st.id},
            {"Name", "Controller " + st.id},
            {"Drives", drives},
            {"StorageControllers", json::array({{{"@odata.id", storage + "#/StorageControllers/0"},
                                                 {"MemberId", "0"},
                                                 {"SupportedRAIDTypes", st.supportedRaidTypes}}})}};
        if (st.hasVolumes) body["Volumes"] = {{"@odata.id", storage + "/Volumes"}};
        return getOnly(std::move(body));
      }
      for (const auto& d : st.drives) {
        if (path != storage + "/Drives/" + d.id) continue;
        json drive = {{"@odata.id", path},
                      {"@odata.type", "#Drive.v1_9_0.Drive"},
                      {"Id", d.id},
                      {"CapacityBytes", d.capacityBytes},
                      {"MediaType", d.mediaType},
                      {"Protocol", d.protocol}};
        if (!d.name.empty()) drive["Name"] = d.name;
        if (!d.model.empty()) drive["Model"] = d.model;
        if (!d.health.empty()) {
          drive["Status"] = {{"Health", d.health}};
          if (!d.state.empty()) drive["Status"]["State"] = d.state;
        }
        return getOnly(std::move(drive));
      }
      if (!st.hasVolumes) continue;
      const std::string volumes = storage + "/Volumes";
      if (path == volumes) {
        if (method == "POST") return createVolume(s, st, request);
        json members = json::array();
        for (const auto& v : st.volumes) members.push_back({{"@odata.id", volumes + "/" + v.id}});
        json body = {{"@odata.id", volumes},
                     {"@odata.type", "#VolumeCollection.VolumeCollection"},
                     {"Members@odata.count", members.size()},
                     {"Members", members}};
        if (!st.applyTimes.empty()) {
          body["@Redfish.OperationApplyTimeSupport"] = {
              {"@odata.type", "#Settings.v1_3_3.OperationApplyTimeSupport"},
              {"SupportedValues", st.applyTimes}};
        }
        return getOnly(std::move(body));
      }
      for (size_t i = 0; i < st.volumes.size(); ++i) {
        if (path != volumes + "/" + st.volumes[i].id) continue;
        if (method == "DELETE") return deleteVolume(s, st, i, request);
        if (method != "GET") return redfishError(405, "ActionNotSupported", "Method not allowed.");
        Reply reply = jsonReply(200, renderVolume(storage, st.volumes[i]));
        reply.headers = {{"Allow", st.volumes[i].deletable ? "GET, DELETE" : "GET"}};
        return reply;
      }
    }
    return std::nullopt;
  }

  /// One look at a volume task through its monitor moves it on.
  void advance(VolumeTask& t) {
    if (t.state == "Completed" || t.state == "Exception") return;
    SystemEntry* e = find(t.systemId);
    RedfishStorage* st = nullptr;
    if (e) {
      for (auto& candidate : e->state.storage) {
        if (candidate.id == t.storageId) st = &candidate;
      }
    }
    if (!st) {
      t.state = "Exception";
      return;
    }
    if (t.onReset && e->state.resets.size() <= t.resetsAtStart) {
      t.state = "Pending";  // applied at the next reset
      return;
    }
    if (t.pollsLeft > 0) {
      --t.pollsLeft;
      t.state = "Running";
      return;
    }
    if (st->taskFails) {
      t.state = "Exception";
      return;
    }
    t.state = "Completed";
    if (t.create) {
      st->volumes.push_back(t.volume);
      return;
    }
    std::erase_if(st->volumes, [&](const RedfishVolume& v) { return v.id == t.volume.id; });
  }

  /// The monitors and Tasks of volume changes; nullopt when `path` is none of them.
  std::optional<Reply> routeVolumeTasks(const RecordedRequest& request, const std::string& path) {
    for (auto& t : volumeTasks) {
      if (path == std::string(kTaskMonitors) + t.id) {
        if (request.method != "GET") {
          return redfishError(405, "ActionNotSupported", "Method not allowed.");
        }
        advance(t);
        const bool ended = t.state == "Completed" || t.state == "Exception";
        return jsonReply(ended ? 200 : 202, renderVolumeTask(t));
      }
      if (path == std::string(kTasks) + t.id) {
        if (request.method != "GET") {
          return redfishError(405, "ActionNotSupported", "Method not allowed.");
        }
        return jsonReply(200, renderVolumeTask(t));
      }
    }
    return std::nullopt;
  }

  /// The body of a PATCH as an object, or the error to answer.
  static std::variant<json, Reply> patchBody(const RecordedRequest& request) {
    json body = json::parse(request.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      return redfishError(400, "MalformedJSON",
                          "The request body submitted was malformed JSON and could not be "
                          "parsed by the receiving service.");
    }
    return body;
  }

  static std::optional<Reply> checkIndicatorLed(const json& value) {
    if (!value.is_string() || (value != "Lit" && value != "Blinking" && value != "Off")) {
      return redfishError(400, "PropertyValueNotInList",
                          "The value " + value.dump() +
                              " for the property IndicatorLED is not in the list of acceptable "
                              "values.");
    }
    return std::nullopt;
  }

  static Reply readOnly(const std::string& key) {
    return redfishError(400, "PropertyNotWritable",
                        "The property " + key +
                            " is a read only property and cannot be "
                            "assigned a value.");
  }

  Reply patchSecureBoot(SystemEntry& e, const RecordedRequest& request) {
    auto parsed = patchBody(request);
    if (auto* error = std::get_if<Reply>(&parsed)) return *error;
    const json& body = std::get<json>(parsed);
    for (const auto& [key, value] : body.items()) {
      if (key != "SecureBootEnable") return readOnly(key);
      if (!value.is_boolean()) {
        return redfishError(400, "PropertyValueTypeError",
                            "The value for the property SecureBootEnable is of a different type "
                            "than the property can accept.");
      }
    }
    if (body.contains("SecureBootEnable")) e.state.secureBootEnable = body["SecureBootEnable"];
    return Reply{204, "", {}};
  }

  Reply patchChassis(SystemEntry& e, const RecordedRequest& request) {
    auto parsed = patchBody(request);
    if (auto* error = std::get_if<Reply>(&parsed)) return *error;
    const json& body = std::get<json>(parsed);
    for (const auto& [key, value] : body.items()) {
      if (key != "IndicatorLED") return readOnly(key);
      if (auto error = checkIndicatorLed(value)) return *error;
    }
    if (body.contains("IndicatorLED")) e.state.chassisIndicatorLed = body["IndicatorLED"];
    return Reply{204, "", {}};
  }

  json renderBios(const RedfishSystemState& s) const {
    json attrs = json::object();
    for (const auto& [k, v] : s.biosAttributes) attrs[k] = v;
    return {
        {"@odata.id", s.path() + "/Bios"},
        {"@odata.type", "#Bios.v1_1_0.Bios"},
        {"Id", "BIOS"},
        {"Attributes", attrs},
        {"@Redfish.Settings", {{"SettingsObject", {{"@odata.id", s.path() + "/Bios/Settings"}}}}},
        {"Actions",
         {{"#Bios.ResetBios", {{"target", s.path() + "/Bios/Actions/Bios.ResetBios"}}}}}};
  }

  Reply patchBiosSettings(SystemEntry& e, const RecordedRequest& request) {
    const json body = json::parse(request.body, nullptr, false);
    if (body.is_discarded() || !body.is_object() || !body.contains("Attributes") ||
        !body["Attributes"].is_object()) {
      return redfishError(400, "PropertyMissing",
                          "The property Attributes is a required property and must be included "
                          "in the request.");
    }
    for (const auto& [key, value] : body["Attributes"].items()) {
      setAttribute(e.state.pendingBiosAttributes, key,
                   value.is_string() ? value.get<std::string>() : value.dump());
    }
    return Reply{204, "", {}};
  }

  Reply getSystem(SystemEntry& e) {
    if (e.pendingPowerState) {
      if (e.pollsLeft > 0) {
        --e.pollsLeft;
      } else {
        e.state.powerState = *e.pendingPowerState;
        e.pendingPowerState.reset();
      }
    }
    return jsonReply(200, renderSystem(e));
  }

  Reply patchSystem(SystemEntry& e, const RecordedRequest& request) {
    const json body = json::parse(request.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      return redfishError(400, "MalformedJSON",
                          "The request body submitted was malformed JSON and could not be "
                          "parsed by the receiving service.");
    }
    for (const auto& [key, value] : body.items()) {
      if (key == "IndicatorLED" && !e.state.indicatorLed.empty()) {
        if (auto error = checkIndicatorLed(value)) return *error;
        continue;
      }
      if (key != "Boot") {
        return redfishError(400, "PropertyNotWritable",
                            "The property " + key +
                                " is a read only property and cannot be "
                                "assigned a value.");
      }
    }
    const auto boot = body.find("Boot");
    if (boot == body.end() && body.contains("IndicatorLED")) {
      e.state.indicatorLed = body["IndicatorLED"];
      return Reply{204, "", {}};
    }
    if (boot == body.end() || !boot->is_object()) {
      return redfishError(400, "PropertyValueTypeError", "The property Boot must be an object.");
    }
    std::string target = e.state.bootTarget;
    std::string enabled = e.state.bootEnabled;
    std::string mode = e.state.bootMode;
    for (const auto& [key, value] : boot->items()) {
      if (!value.is_string()) {
        return redfishError(400, "PropertyValueTypeError",
                            "The value for the property " + key +
                                " is of a different type "
                                "than the property can accept.");
      }
      const auto text = value.get<std::string>();
      if (key == "BootSourceOverrideTarget") {
        if (!e.state.allowedBootTargets.empty() && !contains(e.state.allowedBootTargets, text)) {
          return redfishError(400, "PropertyValueNotInList",
                              "The value " + text +
                                  " for the property BootSourceOverrideTarget "
                                  "is not in the list of acceptable values.");
        }
        target = text;
      } else if (key == "BootSourceOverrideEnabled") {
        if (text != "Once" && text != "Continuous" && text != "Disabled") {
          return redfishError(400, "PropertyValueNotInList",
                              "The value " + text +
                                  " for the property BootSourceOverrideEnabled "
                                  "is not in the list of acceptable values.");
        }
        enabled = text;
      } else if (key == "BootSourceOverrideMode" && !e.state.bootMode.empty()) {
        if (text != "UEFI" && text != "Legacy") {
          return redfishError(400, "PropertyValueNotInList",
                              "The value " + text +
                                  " for the property BootSourceOverrideMode "
                                  "is not in the list of acceptable values.");
        }
        mode = text;
      } else {
        return redfishError(400, "PropertyUnknown",
                            "The property " + key +
                                " is not in the list of valid properties "
                                "for the resource.");
      }
    }
    e.state.bootTarget = target;
    e.state.bootEnabled = enabled;
    e.state.bootMode = mode;
    if (body.contains("IndicatorLED")) e.state.indicatorLed = body["IndicatorLED"];
    return Reply{204, "", {}};
  }

  Reply reset(SystemEntry& e, const RecordedRequest& request) {
    const json body = json::parse(request.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      return redfishError(400, "MalformedJSON", "The request body submitted was malformed JSON.");
    }
    const auto it = body.find("ResetType");
    if (it == body.end() || !it->is_string()) {
      return redfishError(400, "ActionParameterMissing",
                          "The action ComputerSystem.Reset requires the parameter ResetType to "
                          "be present in the request body.");
    }
    const auto type = it->get<std::string>();
    const bool known = type == "On" || type == "ForceOn" || type == "ForceOff" ||
                       type == "GracefulShutdown" || type == "ForceRestart" ||
                       type == "GracefulRestart" || type == "PowerCycle" || type == "Nmi";
    if (!known ||
        (!e.state.allowedResetTypes.empty() && !contains(e.state.allowedResetTypes, type))) {
      return redfishError(400, "ActionParameterValueNotInList",
                          "The value " + type +
                              " for the parameter ResetType in the action "
                              "ComputerSystem.Reset is not in the list of acceptable values.");
    }
    e.state.resets.push_back(type);
    if (type == "Nmi") return Reply{204, "", {}};  // an interrupt: the power state stays
    if (type != "ForceOff" && type != "GracefulShutdown") applyPendingBios(e.state);
    const std::string current = e.pendingPowerState ? *e.pendingPowerState : e.state.powerState;
    std::string final;
    if (type == "On" || type == "ForceOn") {
      if (current == "On") return Reply{204, "", {}};
      final = "On";
    } else if (type == "ForceOff" || type == "GracefulShutdown") {
      if (current == "Off") return Reply{204, "", {}};
      final = "Off";
    } else {
      final = "On";
    }
    if (powerDelay <= 0) {
      e.state.powerState = final;
      e.pendingPowerState.reset();
    } else {
      e.state.powerState = final == "On" ? "PoweringOn" : "PoweringOff";
      e.pendingPowerState = final;
      e.pollsLeft = powerDelay;
    }
    return Reply{204, "", {}};
  }

  Reply createSession(const RecordedRequest& request) {
    if (!sessionService) {
      return redfishError(404, "ResourceMissingAtURI",
                          "The resource at the URI " + request.path + " was not found.");
    }
    const json body = json::parse(request.body, nullptr, false);
    if (body.is_discarded() || !body.is_object() || !body.contains("UserName") ||
        !body.contains("Password") || !body["UserName"].is_string() ||
        !body["Password"].is_string()) {
      return redfishError(400, "PropertyMissing",
                          "The property UserName or Password is a required property and must be "
                          "included in the request.");
    }
    const auto user = body["UserName"].get<std::string>();
    if (credentials && (user != credentials->first ||
                        body["Password"].get<std::string>() != credentials->second)) {
      return redfishError(401, "ResourceAtUriUnauthorized",
                          "While accessing the resource at " + request.path +
                              ", the service received an authorization error: invalid "
                              "username or password.");
    }
    const int n = nextSession++;
    const std::string token = "kiln-test-token-" + std::to_string(n);
    const std::string location = std::string(kSessions) + "/" + std::to_string(n);
    sessions[token] = location;
    Reply reply = jsonReply(201, {{"@odata.id", location},
                                  {"@odata.type", "#Session.v1_1_0.Session"},
                                  {"Id", std::to_string(n)},
                                  {"UserName", user}});
    reply.headers = {{"X-Auth-Token", token}, {"Location", location}};
    return reply;
  }

  static json renderCd(const RedfishSystemState& s) {
    json cd = {{"@odata.id", s.cdPath()},
               {"@odata.type", "#VirtualMedia.v1_3_0.VirtualMedia"},
               {"Id", "Cd"},
               {"Name", "Virtual CD"},
               {"MediaTypes", json::array({"CD", "DVD"})},
               {"Image", s.cdImage.empty() ? json(nullptr) : json(s.cdImage)},
               {"Inserted", s.cdInserted},
               {"WriteProtected", true},
               {"ConnectedVia", s.cdInserted ? "URI" : "NotConnected"}};
    if (s.cdActions) {
      cd["Actions"] = {{"#VirtualMedia.InsertMedia", {{"target", s.cdPath() + "/Actions/VirtualMedia.InsertMedia"}}},
                       {"#VirtualMedia.EjectMedia", {{"target", s.cdPath() + "/Actions/VirtualMedia.EjectMedia"}}}};
    }
    return cd;
  }

  /// Managers/<id>, its VirtualMedia collection and the Cd slot; nullopt when `path` is none.
  std::optional<Reply> routeManager(SystemEntry& e, const RecordedRequest& request, const std::string& path) {
    RedfishSystemState& s = e.state;
    const std::string manager = "/redfish/v1/Managers/" + s.id;
    const std::string& method = request.method;
    auto getOnly = [&](json body) -> Reply {
      if (method != "GET") return redfishError(405, "ActionNotSupported", "Method not allowed.");
      return jsonReply(200, std::move(body));
    };
    if (path == manager) {
      json body = {{"@odata.id", manager},
                   {"@odata.type", "#Manager.v1_10_0.Manager"},
                   {"Id", s.id},
                   {"ManagerType", "BMC"},
                   {"VirtualMedia", {{"@odata.id", manager + "/VirtualMedia"}}},
                   {"Links", {{"ManagerForServers", json::array({{{"@odata.id", s.path()}}})}}}};
      if (!s.managerFirmwareVersion.empty()) body["FirmwareVersion"] = s.managerFirmwareVersion;
      if (!s.managerModel.empty()) body["Model"] = s.managerModel;
      return getOnly(std::move(body));
    }
    if (path == manager + "/VirtualMedia") {
      return getOnly({{"@odata.id", path},
                      {"Members@odata.count", 1},
                      {"Members", json::array({{{"@odata.id", s.cdPath()}}})}});
    }
    if (path == s.cdPath()) {
      if (method == "GET") return jsonReply(200, renderCd(s));
      if (method != "PATCH") return redfishError(405, "ActionNotSupported", "Method not allowed.");
      auto body = json::parse(request.body, nullptr, false);
      if (!body.is_object()) return redfishError(400, "MalformedJSON", "The request body is not JSON.");
      if (body.contains("Image")) {
        s.cdImage = body["Image"].is_string() ? body["Image"].get<std::string>() : "";
      }
      if (body.contains("Inserted") && body["Inserted"].is_boolean()) s.cdInserted = body["Inserted"].get<bool>();
      s.cdHistory.push_back(s.cdInserted ? s.cdImage : std::string("eject"));
      return Reply{204, "", {}};
    }
    if (s.cdActions && path == s.cdPath() + "/Actions/VirtualMedia.InsertMedia") {
      if (method != "POST") return redfishError(405, "ActionNotSupported", "Method not allowed.");
      auto body = json::parse(request.body, nullptr, false);
      if (!body.is_object() || !body.contains("Image") || !body["Image"].is_string()) {
        return redfishError(400, "ActionParameterMissing", "The action requires the parameter Image.");
      }
      s.cdImage = body["Image"].get<std::string>();
      s.cdInserted = body.value("Inserted", true);
      s.cdHistory.push_back(s.cdImage);
      return Reply{204, "", {}};
    }
    if (s.cdActions && path == s.cdPath() + "/Actions/VirtualMedia.EjectMedia") {
      if (method != "POST") return redfishError(405, "ActionNotSupported", "Method not allowed.");
      s.cdImage.clear();
      s.cdInserted = false;
      s.cdHistory.push_back("eject");
      return Reply{204, "", {}};
    }
    return std::nullopt;
  }

  Reply route(const RecordedRequest& request, const std::string& path) {
    const auto& method = request.method;
    if (path == kRoot) {
      if (method != "GET") return redfishError(405, "ActionNotSupported", "Method not allowed.");
      return jsonReply(200, {{"@odata.id", kRoot},
                             {"@odata.type", "#ServiceRoot.v1_5_0.ServiceRoot"},
                             {"Id", "RootService"},
                             {"Name", "Kiln test BMC"},
                             {"RedfishVersion", "1.6.0"},
                             {"Systems", {{"@odata.id", kSystems}}},
                             {"SessionService", {{"@odata.id", kSessionService}}},
                             {"UpdateService", {{"@odata.id", kUpdateService}}},
                             {"EventService", {{"@odata.id", kEventService}}},
                             {"Links", {{"Sessions", {{"@odata.id", kSessions}}}}}});
    }
    if (path == kSessions && method == "POST") {
      return createSession(request);
    }
    if (auto denied = checkAuth(request)) {
      return *denied;
    }
    if (path == kSystems) {
      if (method != "GET") return redfishError(405, "ActionNotSupported", "Method not allowed.");
      json members = json::array();
      for (const auto& e : systems) members.push_back({{"@odata.id", e.state.path()}});
      return jsonReply(200, {{"@odata.id", kSystems},
                             {"@odata.type", "#ComputerSystemCollection.ComputerSystemCollection"},
                             {"Name", "Computer System Collection"},
                             {"Members@odata.count", members.size()},
                             {"Members", members}});
    }
    if (auto reply = routeFirmware(request, path)) return *reply;
    if (auto reply = routeEvents(request, path)) return *reply;
    if (auto reply = routeVolumeTasks(request, path)) return *reply;
    if (path.rfind(std::string(kSessions) + "/", 0) == 0 && method == "DELETE") {
      for (auto it = sessions.begin(); it != sessions.end(); ++it) {
        if (it->second == path) {
          sessions.erase(it);
          return Reply{204, "", {}};
        }
      }
    }
    for (auto& e : systems) {
      if (path == e.state.path()) {
        if (method == "GET") return getSystem(e);
        if (method == "PATCH") return patchSystem(e, request);
        return redfishError(405, "ActionNotSupported", "Method not allowed.");
      }
      if (e.state.hasSecureBoot && path == e.state.path() + "/SecureBoot") {
        if (method == "GET") return jsonReply(200, renderSecureBoot(e.state));
        if (method == "PATCH") return patchSecureBoot(e, request);
        return redfishError(405, "ActionNotSupported", "Method not allowed.");
      }
      if (hasChassis(e.state) && path == e.state.chassisPath()) {
        if (method == "GET") return jsonReply(200, renderChassis(e.state));
        if (method == "PATCH") return patchChassis(e, request);
        return redfishError(405, "ActionNotSupported", "Method not allowed.");
      }
      for (const auto& [suffix, body] :
           {std::pair{"/Thermal", &e.state.thermalBody}, std::pair{"/Power", &e.state.powerBody}}) {
        if (body->empty() || path != e.state.chassisPath() + suffix) continue;
        if (method != "GET") return redfishError(405, "ActionNotSupported", "Method not allowed.");
        return Reply{200, *body, {}};
      }
      if (path == resetPath(e.state)) {
        if (method != "POST") return redfishError(405, "ActionNotSupported", "Method not allowed.");
        return reset(e, request);
      }
      if (e.state.manager) {
        if (auto reply = routeManager(e, request, path)) return *reply;
      }
      if (auto reply = routeNetworkAdapters(e.state, request, path)) return *reply;
      if (auto reply = routeStorage(e.state, request, path)) return *reply;
      if (auto reply = routeHardware(e.state, request, path)) return *reply;
      if (e.state.bios && path == e.state.path() + "/Bios") {
        if (method != "GET") return redfishError(405, "ActionNotSupported", "Method not allowed.");
        return jsonReply(200, renderBios(e.state));
      }
      if (e.state.bios && path == e.state.path() + "/Bios/Settings") {
        if (method == "GET") {
          json attrs = json::object();
          for (const auto& [k, v] : e.state.pendingBiosAttributes) attrs[k] = v;
          return jsonReply(200, {{"@odata.id", path}, {"Attributes", attrs}});
        }
        if (method != "PATCH")
          return redfishError(405, "ActionNotSupported", "Method not allowed.");
        return patchBiosSettings(e, request);
      }
      if (e.state.bios && path == e.state.path() + "/Bios/Actions/Bios.ResetBios") {
        if (method != "POST") return redfishError(405, "ActionNotSupported", "Method not allowed.");
        e.state.biosResetPending = true;
        e.state.pendingBiosAttributes.clear();
        return Reply{204, "", {}};
      }
    }
    return redfishError(404, "ResourceMissingAtURI",
                        "The resource at the URI " + path + " was not found.");
  }
};

struct RedfishTestServer::Endpoint {
  std::unique_ptr<Pistache::Http::Endpoint> endpoint;
};

RedfishTestServer::RedfishTestServer() : state_(new State), endpoint_(new Endpoint) {
  state_->systems.push_back(SystemEntry{RedfishSystemState{}, std::nullopt, 0});
}

RedfishTestServer::~RedfishTestServer() { stop(); }

Result<void> RedfishTestServer::start() {
  using namespace Pistache;
  try {
    endpoint_->endpoint = std::make_unique<Http::Endpoint>(Address("127.0.0.1", Port(0)));
    endpoint_->endpoint->init(Http::Endpoint::options().threads(1).flags(Tcp::Options::ReuseAddr));
    endpoint_->endpoint->setHandler(Http::make_handler<Handler>(this));
    endpoint_->endpoint->serveThreaded();
  } catch (const std::exception& e) {
    endpoint_->endpoint.reset();
    return fail(ErrorCode::Unavailable, std::string("test BMC cannot listen: ") + e.what());
  }
  return {};
}

void RedfishTestServer::stop() {
  if (endpoint_ && endpoint_->endpoint) {
    endpoint_->endpoint->shutdown();
    endpoint_->endpoint.reset();
  }
}

uint16_t RedfishTestServer::port() const {
  return endpoint_->endpoint ? static_cast<uint16_t>(endpoint_->endpoint->getPort()) : 0;
}

std::string RedfishTestServer::address() const {
  return "http://127.0.0.1:" + std::to_string(port());
}

void RedfishTestServer::setSystems(std::vector<RedfishSystemState> systems) {
  std::lock_guard lock(state_->mutex);
  state_->systems.clear();
  for (auto& s : systems) state_->systems.push_back(SystemEntry{std::move(s), std::nullopt, 0});
}

void RedfishTestServer::addSystem(RedfishSystemState system) {
  std::lock_guard lock(state_->mutex);
  state_->systems.push_back(SystemEntry{std::move(system), std::nullopt, 0});
}

RedfishSystemState RedfishTestServer::system(std::string_view id) const {
  std::lock_guard lock(state_->mutex);
  for (const auto& e : state_->systems) {
    if (e.state.id == id) return e.state;
  }
  RedfishSystemState none;
  none.id.clear();
  return none;
}

void RedfishTestServer::updateSystem(std::string_view id,
                                     const std::function<void(RedfishSystemState&)>& change) {
  std::lock_guard lock(state_->mutex);
  if (auto* e = state_->find(id)) change(e->state);
}

void RedfishTestServer::requireCredentials(std::string username, std::string password) {
  std::lock_guard lock(state_->mutex);
  state_->credentials = std::make_pair(std::move(username), std::move(password));
}

void RedfishTestServer::setBasicAuthEnabled(bool enabled) {
  std::lock_guard lock(state_->mutex);
  state_->basicAuth = enabled;
}

void RedfishTestServer::setSessionsEnabled(bool enabled) {
  std::lock_guard lock(state_->mutex);
  state_->sessionService = enabled;
}

std::vector<RedfishSubscription> RedfishTestServer::subscriptions() const {
  std::lock_guard lock(state_->mutex);
  return state_->subscriptions;
}

void RedfishTestServer::setEventTypes(std::vector<std::string> types) {
  std::lock_guard lock(state_->mutex);
  state_->eventTypes = std::move(types);
}

void RedfishTestServer::addFirmwareImage(RedfishFirmwareImage image) {
  std::lock_guard lock(state_->mutex);
  state_->firmwareImages.push_back(std::move(image));
}

void RedfishTestServer::setFirmwareTaskPolls(int polls) {
  std::lock_guard lock(state_->mutex);
  state_->firmwareTaskPolls = polls;
}

void RedfishTestServer::setPowerChangeDelay(int polls) {
  std::lock_guard lock(state_->mutex);
  state_->powerDelay = polls;
}

void RedfishTestServer::injectError(InjectedError error) {
  std::lock_guard lock(state_->mutex);
  state_->errors.push_back(std::move(error));
}

std::vector<RecordedRequest> RedfishTestServer::requests() const {
  std::lock_guard lock(state_->mutex);
  return state_->requests;
}

std::vector<RecordedRequest> RedfishTestServer::requests(std::string_view method,
                                                         std::string_view path) const {
  std::lock_guard lock(state_->mutex);
  std::vector<RecordedRequest> out;
  for (const auto& r : state_->requests) {
    if (r.method == method && r.path == path) out.push_back(r);
  }
  return out;
}

void RedfishTestServer::clearRequests() {
  std::lock_guard lock(state_->mutex);
  state_->requests.clear();
}

size_t RedfishTestServer::activeSessions() const {
  std::lock_guard lock(state_->mutex);
  return state_->sessions.size();
}

void RedfishTestServer::dropSessions() {
  std::lock_guard lock(state_->mutex);
  state_->sessions.clear();
}

void RedfishTestServer::setRequestObserver(std::function<void(const RecordedRequest&)> observer) {
  std::lock_guard lock(state_->mutex);
  state_->observer = std::move(observer);
}

RedfishTestServer::Reply RedfishTestServer::handle(const RecordedRequest& request) {
  std::function<void(const RecordedRequest&)> observer;
  {
    std::lock_guard lock(state_->mutex);
    observer = state_->observer;
  }
  if (observer) observer(request);
  std::lock_guard lock(state_->mutex);
  state_->requests.push_back(request);
  std::string path = request.path;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  for (auto it = state_->errors.begin(); it != state_->errors.end(); ++it) {
    if (it->count != 0 && (it->method.empty() || it->method == request.method) &&
        it->path == path) {
      if (it->after > 0) {
        --it->after;
        break;
      }
      Reply reply = redfishError(it->status, "InternalError", it->message);
      if (it->count > 0 && --it->count == 0) state_->errors.erase(it);
      return reply;
    }
  }
  return state_->route(request, path);
}

}  // namespace kiln::test
