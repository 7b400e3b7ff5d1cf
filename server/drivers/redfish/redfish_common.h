// File: server/drivers/redfish/redfish_common.h
//
// What the redfish power and management interfaces share: a client for the task's node and the
// path of its ComputerSystem, and driver_info validation.
#pragma once

#include <memory>
#include <optional>
#include <string>

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

}  // namespace kiln::server
