// File: server/drivers/redfish/redfish_client.h
//
// The small Redfish client behind the redfish power and management interfaces: the node's
// driver_info parsed and checked (RedfishConfig), and JSON requests to one BMC with its
// authentication (HTTP basic, a Redfish session, or a session falling back to basic).
//
// BMC answers other than 2xx become Errors whose message names the request and carries the
// BMC's own Redfish message (error.@Message.ExtendedInfo[].Message, else error.message):
//   401, 403 -> PermissionDenied   404 -> NotFound   other 4xx -> InvalidArgument
//   5xx -> Unavailable             (network failures keep the HttpClient's codes)
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "shared/core/error.h"
#include "shared/core/log.h"
#include "shared/http/http_client.h"
#include "shared/http/url.h"

namespace kiln::server {

/// driver_info/redfish_auth_type.
enum class RedfishAuthType { Basic, Session, Auto };

/// The redfish_* properties of a node's driver_info, checked.
struct RedfishConfig {
  HttpUrl address;       ///< redfish_address; https when the scheme was left out
  std::string systemId;  ///< redfish_system_id (a path); "" = the only System
  std::string username;  ///< redfish_username; "" = no authentication
  std::string password;  ///< redfish_password
  RedfishAuthType authType = RedfishAuthType::Auto;
  bool verifyCa = true;  ///< redfish_verify_ca as a Boolean
  std::string caBundle;  ///< redfish_verify_ca as a path (file or directory)
  std::chrono::milliseconds requestTimeout{std::chrono::seconds(30)};  ///< per HTTP request
};

/// Parses and checks the Redfish properties of `driverInfo` for node `nodeUuid`.
/// InvalidArgument with a message naming the node and the property:
///   "Missing the following Redfish properties in node <uuid> driver_info: redfish_address",
///   "Invalid Redfish address ... set in driver_info/redfish_address on node <uuid> ...", and
///   likewise for redfish_system_id, redfish_verify_ca (a Boolean, or an existing file or
///   directory), redfish_auth_type (basic, session, auto), redfish_username/password (strings).
Result<RedfishConfig> parseRedfishConfig(const nlohmann::json& driverInfo,
                                         std::string_view nodeUuid);

/// JSON requests to one BMC. Opens a session lazily (auth type session/auto with a user name)
/// and deletes it when destroyed. Not thread-safe: one per task.
class RedfishClient {
 public:
  RedfishClient(HttpClientPtr http, RedfishConfig config, Logger log = Logger("redfish"));
  /// Ends the session this client opened (best effort).
  ~RedfishClient();
  RedfishClient(const RedfishClient&) = delete;
  RedfishClient& operator=(const RedfishClient&) = delete;

  /// GET `path` (absolute, "/redfish/v1/..."); the parsed body.
  Result<nlohmann::json> get(std::string_view path);
  /// POST `body` to `path`; the parsed response body (null when empty).
  Result<nlohmann::json> post(std::string_view path, const nlohmann::json& body);
  /// PATCH `path` with `body`; the parsed response body (null when empty).
  Result<nlohmann::json> patch(std::string_view path, const nlohmann::json& body);
  /// A request whose answer the caller reads itself: the BMC's status, headers and body for
  /// any status (an action's 202 and Location, a task monitor's 202 while its task runs and
  /// 404 once the BMC purged it). Only authentication and transport failures are errors.
  Result<HttpResponse> exchange(std::string_view method, std::string_view path,
                                const nlohmann::json* body = nullptr);
  /// The Error get(), post() and patch() give for `response`, a non-2xx answer to
  /// `method path`.
  Error errorFor(std::string_view method, std::string_view path,
                 const HttpResponse& response) const;

  /// The ComputerSystem's path: redfish_system_id, or the only member of the service root's
  /// Systems collection. NotFound when the collection is empty; InvalidArgument naming the
  /// members when there are several (redfish_system_id must choose).
  Result<std::string> systemPath(std::string_view nodeUuid);

  const RedfishConfig& config() const { return config_; }

 private:
  Result<nlohmann::json> call(std::string_view method, std::string_view path,
                              const nlohmann::json* body);
  Result<HttpResponse> send(std::string_view method, std::string_view path,
                            const nlohmann::json* body);
  HttpRequest baseRequest(std::string_view method, std::string_view path) const;
  /// The one place a request reaches the BMC: sends `request` and records it
  /// (server/drivers/bmc_metrics.h) under its HTTP method, and notes it for the node's
  /// bmc_request event (server/drivers/bmc_requests.h).
  Result<HttpResponse> transmit(const HttpRequest& request);
  /// transmit's bmc_request record, when a scope is open (server/drivers/bmc_requests.h).
  void noteRequest(const HttpRequest& request, std::string_view outcome,
                   std::chrono::steady_clock::duration elapsed,
                   const Result<HttpResponse>& response) const;
  Result<void> authenticate();
  /// `text` with the BMC password and the session token masked (a BMC's error message may
  /// quote what it was sent).
  std::string maskCredentials(std::string_view text) const;
  /// The error for a refused request: method, URL, status and the BMC's masked message.
  Error bmcError(const HttpRequest& request, const HttpResponse& response) const;
  /// POSTs to the SessionService; `bmcAnswered` tells a refusal from a network failure.
  Result<void> openSession(bool* bmcAnswered = nullptr);

  HttpClientPtr http_;
  RedfishConfig config_;
  Logger log_;
  bool authenticated_ = false;  ///< the auth decision is made (token_ set, or basic/none)
  bool useBasic_ = false;
  std::string token_;        ///< X-Auth-Token of the open session
  std::string sessionPath_;  ///< the session resource, deleted on destruction
};

/// The BMC's own message in a Redfish error body (extended info messages joined with "; ",
/// else error.message); "" when the body carries none.
std::string redfishErrorMessage(std::string_view body);

}  // namespace kiln::server
