// File: server/drivers/redfish/redfish_bios.h
//
// The "redfish" bios interface: the ComputerSystem's Bios resource. Settings are read from its
// Attributes; apply_configuration PATCHes the Bios settings object ("@Redfish.Settings"
// SettingsObject, else <Bios>/Settings) and factory_reset posts Bios.ResetBios, each followed
// by a reboot through the node's power interface so the BMC applies them. Unlike Ironic's,
// which waits for the node to come back in "clean wait", the steps finish when the reboot has
// been made; the conductor then caches what the BMC reports.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server/drivers/interfaces.h"
#include "shared/http/http_client.h"

namespace kiln::server {

/// BIOS settings through Redfish. Thread-safe across nodes (no state of its own).
class RedfishBios final : public BiosInterface {
 public:
  explicit RedfishBios(HttpClientPtr http);

  std::string_view name() const override { return "redfish"; }
  /// Checks driver_info only (see parseRedfishConfig); does not contact the BMC.
  std::optional<std::string> validate(const TaskContext& task) const override;
  std::span<const StepDefinition> steps() const override { return steps_; }
  /// Bios.Attributes as name/value settings. Unimplemented when the system has no Bios.
  Result<std::vector<BiosSetting>> cacheBiosSettings(TaskContext& task) override;

 private:
  HttpClientPtr http_;
  std::vector<StepDefinition> steps_;
};

}  // namespace kiln::server
