// File: server/drivers/fake/fake_interfaces.h
//
// The fake-hardware implementations (house-style rule 17): real implementations that act on the
// node record instead of hardware, so every flow completes with no BMC and no network boot.
// They declare the same steps as their real counterparts, so a deploy template that validates
// on fake-hardware validates on real hardware:
//   fake deploy: the core deploy steps of the direct deploy (deploy, write_image,
//                prepare_instance_boot, tear_down_agent, switch_to_tenant_network,
//                boot_instance) and the generic clean steps erase_devices_metadata (99) and
//                erase_devices (10), run out-of-band;
//   fake raid:   create_configuration, delete_configuration (clean), apply_configuration
//                (deploy, raid_config required);
//   fake bios:   apply_configuration (settings required), factory_reset (clean and deploy).
#pragma once

#include <memory>
#include <vector>

#include "server/drivers/interfaces.h"

namespace kiln::server {

std::vector<std::unique_ptr<HardwareInterface>> makeFakeInterfaces();

/// The RAID steps (create/delete/apply_configuration) with their argsinfo, shared by the fake
/// and agent raid interfaces; `handlers` false leaves them in-band (no handler).
std::vector<StepDefinition> raidSteps(bool handlers);

/// The BIOS steps (apply_configuration, factory_reset).
std::vector<StepDefinition> biosSteps();

/// The core deploy steps of the agent deploy with their Ironic priorities; the caller fills the
/// handlers.
std::vector<StepDefinition> coreDeploySteps();

}  // namespace kiln::server
