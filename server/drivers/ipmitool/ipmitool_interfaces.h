// File: server/drivers/ipmitool/ipmitool_interfaces.h
//
// The ipmitool implementations for the interface registry (registerBuiltinInterfaces).
#pragma once

#include <memory>
#include <vector>

#include "server/drivers/interfaces.h"
#include "server/config/ipmitool_options.h"
#include "shared/exec/command_runner.h"

namespace kiln::server {

/// The "ipmitool" power (IpmitoolPower) and management (IpmitoolManagement) implementations,
/// both running ipmitool through `runner` with `options`. A null `runner` means a
/// ProcessCommandRunner.
std::vector<std::unique_ptr<HardwareInterface>> makeIpmitoolInterfaces(
    CommandRunnerPtr runner, IpmitoolOptions options = {});

}  // namespace kiln::server
