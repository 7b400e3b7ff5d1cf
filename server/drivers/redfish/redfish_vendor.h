// File: server/drivers/redfish/redfish_vendor.h
//
// The "redfish" vendor interface (Ironic's RedfishVendorPassthru): vendor passthru methods that
// reach the BMC directly.
//   eject_vmedia           POST, asynchronous: ejects the virtual media of one kind
//                          (boot_device cd, dvd, usb or floppy) or of every kind.
//   create_subscription    POST: a Redfish EventService subscription (Destination required;
//                          Context "", Protocol "Redfish", EventTypes ["Alert"] by default;
//                          HttpHeaders passed on), answered with its Id, Context,
//                          Destination, EventTypes and Protocol. Metal3's operator stores the Id.
//   delete_subscription    DELETE with {"id": ...}: removes that subscription (404 when the BMC
//                          has none by that id).
//   get_all_subscriptions  GET: the BMC's Subscriptions collection as it answers it.
//   get_subscription       GET with {"id": ...}: one subscription, with the fields above.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "server/drivers/interfaces.h"
#include "shared/http/http_client.h"

namespace kiln::server {

/// Thread-safe across nodes (no state of its own).
class RedfishVendor final : public VendorInterface {
 public:
  explicit RedfishVendor(HttpClientPtr http);

  std::string_view name() const override { return "redfish"; }
  /// Checks driver_info only (see parseRedfishConfig); does not contact the BMC.
  std::optional<std::string> validate(const TaskContext& task) const override;
  std::span<const VendorMethod> methods() const override;
  /// The arguments' shapes (Ironic's validate): no BMC contact.
  std::optional<std::string> validateCall(const TaskContext& task, std::string_view method,
                                          const nlohmann::json& args) const override;
  Result<nlohmann::json> call(TaskContext& task, std::string_view method,
                              std::string_view httpMethod, const nlohmann::json& args) override;

 private:
  HttpClientPtr http_;
};

}  // namespace kiln::server
