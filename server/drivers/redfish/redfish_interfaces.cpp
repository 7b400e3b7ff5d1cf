#include "server/drivers/redfish/redfish_interfaces.h"

#include "server/drivers/redfish/redfish_bios.h"
#include "server/drivers/redfish/redfish_inspect.h"
#include "server/drivers/redfish/redfish_management.h"
#include "server/drivers/redfish/redfish_power.h"
#include "server/drivers/redfish/redfish_raid.h"
#include "server/drivers/redfish/redfish_vendor.h"

namespace kiln::server {

std::vector<std::unique_ptr<HardwareInterface>> makeRedfishInterfaces(HttpClientPtr http) {
  std::vector<std::unique_ptr<HardwareInterface>> out;
  out.push_back(std::make_unique<RedfishPower>(http));
  out.push_back(std::make_unique<RedfishManagement>(http));
  out.push_back(std::make_unique<RedfishBios>(http));
  out.push_back(std::make_unique<RedfishInspect>(http));
  out.push_back(std::make_unique<RedfishRaid>(http));
  out.push_back(std::make_unique<RedfishVendor>(std::move(http)));
  return out;
}

}  // namespace kiln::server
