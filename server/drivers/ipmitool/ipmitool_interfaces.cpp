#include "server/drivers/ipmitool/ipmitool_interfaces.h"

#include "server/drivers/ipmitool/ipmitool.h"
#include "server/drivers/ipmitool/ipmitool_management.h"
#include "server/drivers/ipmitool/ipmitool_power.h"

namespace kiln::server {

std::vector<std::unique_ptr<HardwareInterface>> makeIpmitoolInterfaces(CommandRunnerPtr runner,
                                                                       IpmitoolOptions options) {
  if (!runner) runner = std::make_shared<ProcessCommandRunner>();
  const Ipmitool ipmitool(std::move(runner), options);
  std::vector<std::unique_ptr<HardwareInterface>> impls;
  impls.push_back(std::make_unique<IpmitoolPower>(ipmitool));
  impls.push_back(std::make_unique<IpmitoolManagement>(ipmitool));
  return impls;
}

}  // namespace kiln::server
