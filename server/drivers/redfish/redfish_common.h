// File: server/drivers/redfish/redfish_common.h
//
// What the redfish power and management interfaces share: a client for the task's node and the
// path of its ComputerSystem, driver_info validation and the ComputerSystem.Reset action.
#pragma once

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

}  // namespace kiln::server
