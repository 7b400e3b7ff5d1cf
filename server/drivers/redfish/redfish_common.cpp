#include "server/drivers/redfish/redfish_common.h"

namespace kiln::server {

Result<RedfishTarget> connectRedfish(const HttpClientPtr& http, const TaskContext& task) {
  auto config = KILN_TRY(parseRedfishConfig(task.driverInfo, task.uuid()));
  RedfishTarget target;
  target.client = std::make_unique<RedfishClient>(http, std::move(config), task.log);
  target.systemPath = KILN_TRY(target.client->systemPath(task.uuid()));
  return target;
}

std::optional<std::string> validateRedfishDriverInfo(const TaskContext& task) {
  auto config = parseRedfishConfig(task.driverInfo, task.uuid());
  if (!config) {
    return config.error().message;
  }
  return std::nullopt;
}

}  // namespace kiln::server
