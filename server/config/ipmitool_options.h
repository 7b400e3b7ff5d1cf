// File: server/config/ipmitool_options.h
//
// The tunables of the ipmitool wrapper (server/drivers/ipmitool/ipmitool.h), apart from it so
// that the configuration and the interface registry carry them without its includes.
// kiln-server reads them from the [ipmi] section (docs/configuration.md).
#pragma once

#include <chrono>

namespace kiln::server {

struct IpmitoolOptions {
  /// Runs of one command before a transient failure is reported (1 = no retry).
  /// [ipmi] command_attempts.
  int attempts = 3;
  /// Wait between attempts (through the task's clock). [ipmi] command_retry_interval.
  std::chrono::milliseconds retryDelay{std::chrono::seconds(2)};
  /// Bound on one ipmitool run; it is killed after that (DeadlineExceeded, retried).
  /// [ipmi] command_timeout.
  std::chrono::milliseconds commandTimeout{std::chrono::seconds(30)};
};

}  // namespace kiln::server
