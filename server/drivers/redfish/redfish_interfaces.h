// File: server/drivers/redfish/redfish_interfaces.h
//
// The redfish hardware type's own implementations: "redfish" power, management, bios, inspect
// and raid (the idrac hardware type uses them too, under its own names: hardware_types.cpp).
#pragma once

#include <memory>
#include <vector>

#include "server/drivers/interfaces.h"
#include "shared/http/http_client.h"

namespace kiln::server {

/// RedfishPower, RedfishManagement, RedfishBios, RedfishInspect and RedfishRaid sharing `http`
/// (the outbound client; never null).
std::vector<std::unique_ptr<HardwareInterface>> makeRedfishInterfaces(HttpClientPtr http);

}  // namespace kiln::server
