// File: server/drivers/redfish/redfish_common.h
//
// What the redfish interfaces share: a client for the task's node and the path of its
// ComputerSystem, driver_info validation, the ComputerSystem.Reset action, the task's clock and
// the small readers of Redfish JSON (string members, "@odata.id" links and arrays of links).
#pragma once

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/drivers/interfaces.h"
#include "server/drivers/redfish/redfish_client.h"

namespace kiln::server {

/// A connected client and the node's ComputerSystem path.
struct RedfishTarget {
  std::unique_ptr<RedfishClient> client;
  std::string systemPath;
};

/// Parses the task's driver_info, builds a client and finds the System (see
/// RedfishClient::systemPath). Errors: parseRedfishConfig's, the BMC's, the HttpClient's.
Result<RedfishTarget> connectRedfish(const HttpClientPtr& http, const TaskContext& task);

/// HardwareInterface::validate for the redfish interfaces: driver_info only, no BMC contact.
std::optional<std::string> validateRedfishDriverInfo(const TaskContext& task);

/// The ResetTypes the System's ComputerSystem.Reset action lists; empty when it does not say.
std::vector<std::string> redfishResetTypes(const nlohmann::json& system);

/// POSTs the System's Reset action (its advertised target, else the standard one) with
/// `type`. InvalidArgument, without contacting the BMC, for a type the System does not list.
Result<void> redfishReset(const TaskContext& task, RedfishTarget& target,
                          const nlohmann::json& system, std::string_view type);

/// The path of an "@odata.id" link (an absolute URL loses its scheme and authority).
std::string redfishLinkPath(std::string link);

/// The task's clock, else the system clock.
const Clock& redfishClock(const TaskContext& task);

/// object[key] when it is a string, "" included (Redfish reports absent values as null or
/// leaves them out); nullopt otherwise, and when `object` is no object.
std::optional<std::string> redfishStringAt(const nlohmann::json& object, const char* key);

/// Like redfishStringAt, but an empty string counts as absent too (versions, identifiers).
std::optional<std::string> redfishNonEmptyStringAt(const nlohmann::json& object, const char* key);

/// The "@odata.id" string, as the BMC wrote it, of the link at object[keys...] (each key one
/// level down: {"@Redfish.Settings", "SettingsObject"}; no keys: `object` is the link); "" when
/// a level is missing or is no object, or the link has no string "@odata.id".
std::string redfishOdataIdAt(const nlohmann::json& object,
                             std::initializer_list<const char*> keys = {});

/// redfishLinkPath of redfishOdataIdAt: the path of the link at object[keys...], or "".
std::string redfishLinkAt(const nlohmann::json& object,
                          std::initializer_list<const char*> keys = {});

/// The paths (redfishLinkPath) of the array of links at object[keys...] ({"Members"},
/// {"Links", "Chassis"}), in order; entries with no string "@odata.id" are skipped, an empty
/// one gives "". Empty when a level is missing or the value is no array.
std::vector<std::string> redfishLinksAt(const nlohmann::json& object,
                                        std::initializer_list<const char*> keys);

/// Like redfishLinksAt, but links with an empty "@odata.id" are skipped too (no "" paths).
std::vector<std::string> redfishNonEmptyLinksAt(const nlohmann::json& object,
                                                std::initializer_list<const char*> keys);

}  // namespace kiln::server
