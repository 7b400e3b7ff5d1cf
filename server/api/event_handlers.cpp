#include "server/api/event_handlers.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "server/api/common.h"
#include "server/api/port_handlers.h"
#include "shared/core/secrets.h"
#include "shared/core/uuid.h"

namespace kiln::server {
namespace {

constexpr std::string_view kPrefix = "Schema error for evts: ";

std::unexpected<Error> schemaError(const std::string& what) {
  return invalid(std::string(kPrefix) + what);
}

/// One network.* event: Ironic's NETWORK_EVENT_VALIDATOR (a schema, then UUID and MAC checks).
Result<void> validateNetworkEvent(const Json& e) {
  static constexpr std::string_view kRequired[] = {"event", "port_id", "mac_address", "status"};
  static constexpr std::string_view kNullable[] = {"device_id", "binding:host_id",
                                                   "binding:vnic_type"};
  for (auto it = e.begin(); it != e.end(); ++it) {
    const bool required =
        std::find(std::begin(kRequired), std::end(kRequired), it.key()) != std::end(kRequired);
    const bool nullable =
        std::find(std::begin(kNullable), std::end(kNullable), it.key()) != std::end(kNullable);
    if (!required && !nullable) {
      return schemaError("Additional properties are not allowed ('" + it.key() +
                         "' was unexpected)");
    }
    if (!it->is_string() && !(nullable && it->is_null())) {
      return schemaError(maskedRepr(*it) + " is not of type 'string'" +
                         (nullable ? ", 'null'" : ""));
    }
  }
  for (auto key : kRequired) {
    if (!e.contains(std::string(key))) {
      return schemaError("'" + std::string(key) + "' is a required property");
    }
  }
  for (const char* key : {"port_id", "device_id", "binding:host_id"}) {
    if (e.contains(key) && e[key].is_string() && !isUuidLike(e[key].get<std::string>())) {
      return invalid("Expected UUID for " + std::string(key) + ": " + e[key].get<std::string>());
    }
  }
  KILN_TRY(normalizeMac(e["mac_address"].get<std::string>(), "mac_address"));
  return {};
}

}  // namespace

Result<ApiResponse> EventHandlers::post(RequestContext& ctx) {
  Json body = KILN_TRY(parseJsonBody(ctx));
  if (!body.is_object()) return schemaError(maskedRepr(body) + " is not of type 'object'");
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (it.key() != "events") {
      return schemaError("Additional properties are not allowed ('" + it.key() +
                         "' was unexpected)");
    }
  }
  if (!body.contains("events")) return schemaError("'events' is a required property");
  const Json& events = body["events"];
  if (!events.is_array()) return schemaError(maskedRepr(events) + " is not of type 'array'");
  if (events.empty()) return schemaError("[] is too short");
  static constexpr std::string_view kKnown[] = {"network.bind_port", "network.unbind_port",
                                                "network.delete_port"};
  for (const auto& e : events) {
    if (!e.is_object()) return schemaError(maskedRepr(e) + " is not of type 'object'");
    if (!e.contains("event")) return schemaError("'event' is a required property");
    const Json& name = e["event"];
    if (!name.is_string() || std::find(std::begin(kKnown), std::end(kKnown),
                                       name.get<std::string>()) == std::end(kKnown)) {
      return schemaError(maskedRepr(name) +
                         " is not one of ['network.bind_port', "
                         "'network.unbind_port', 'network.delete_port']");
    }
  }
  for (const auto& e : events) KILN_TRY_VOID(validateNetworkEvent(e));
  for (const auto& e : events) {
    deps_.log.info("external event received", {{"event", e["event"].get<std::string>()},
                                               {"port_id", e["port_id"].get<std::string>()},
                                               {"status", e["status"].get<std::string>()}});
  }
  return emptyResponse(204);
}

}  // namespace kiln::server
