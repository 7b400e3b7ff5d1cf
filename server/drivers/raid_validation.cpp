#include "server/drivers/raid_validation.h"

#include "server/drivers/hardware_types.h"
#include "server/drivers/redfish/redfish_raid.h"
#include "shared/raid/raid_config.h"

namespace kiln::server {

Result<void> validateRaidConfigFor(std::string_view raidInterface, const nlohmann::json& config) {
  std::string_view impl = raidInterface;
  if (const auto* def = findImplementation(InterfaceType::Raid, raidInterface);
      def && !def->aliasOf.empty()) {
    impl = def->aliasOf;
  }
  if (impl == "redfish") return validateRedfishRaidConfig(config);
  KILN_TRY(parseRaidConfig(config));
  return {};
}

}  // namespace kiln::server
