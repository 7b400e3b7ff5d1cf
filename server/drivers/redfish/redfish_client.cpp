#include "server/drivers/redfish/redfish_client.h"

#include <filesystem>

#include "server/drivers/bmc_metrics.h"
#include "server/drivers/bmc_requests.h"
#include "shared/core/secrets.h"
#include "shared/core/strings.h"
#include "shared/json/json_util.h"

namespace kiln::server {
namespace {

using nlohmann::json;

constexpr std::string_view kServiceRoot = "/redfish/v1/";
constexpr std::string_view kDefaultSystems = "/redfish/v1/Systems";
constexpr std::string_view kSessions = "/redfish/v1/SessionService/Sessions";
/// Logging out is a courtesy (BMCs have few session slots): never let it hold a task for long.
constexpr std::chrono::seconds kLogoutTimeout{5};

/// A path from an @odata.id or Location value, which may be an absolute URL.
std::string pathOf(std::string_view reference) {
  if (reference.find("://") != std::string_view::npos) {
    if (auto url = parseHttpUrl(reference)) {
      return url->target;
    }
  }
  return std::string(reference);
}

ErrorCode codeForStatus(int status) {
  if (status == 401 || status == 403) return ErrorCode::PermissionDenied;
  if (status == 404) return ErrorCode::NotFound;
  if (status >= 500) return ErrorCode::Unavailable;
  return ErrorCode::InvalidArgument;
}

}  // namespace

std::string redfishErrorMessage(std::string_view body) {
  const json doc = parseJson(body).value_or(json());
  if (!doc.is_object()) {
    return "";
  }
  auto extended = [](const json& holder) {
    std::string out;
    const auto it = holder.find("@Message.ExtendedInfo");
    if (it == holder.end() || !it->is_array()) return out;
    for (const auto& info : *it) {
      if (info.is_object() && info.contains("Message") && info["Message"].is_string()) {
        if (!out.empty()) out += "; ";
        out += info["Message"].get<std::string>();
      }
    }
    return out;
  };
  if (const auto error = doc.find("error"); error != doc.end() && error->is_object()) {
    if (auto text = extended(*error); !text.empty()) return text;
    if (const auto m = error->find("message"); m != error->end() && m->is_string()) {
      return m->get<std::string>();
    }
  }
  return extended(doc);
}

Result<RedfishConfig> parseRedfishConfig(const json& driverInfo, std::string_view nodeUuid) {
  const std::string node(nodeUuid);
  auto where = [&](const char* key) {
    return std::string(" set in driver_info/") + key + " on node " + node;
  };
  // A string property, nullopt when absent, null or empty.
  auto text = [&](const char* key) -> Result<std::optional<std::string>> {
    const auto it = driverInfo.find(key);
    if (it == driverInfo.end() || it->is_null()) return std::nullopt;
    if (!it->is_string()) {
      return invalid("Invalid value type" + where(key) + ": a string is expected, not " +
                     jsonTypeName(*it));
    }
    auto value = it->get<std::string>();
    if (value.empty()) return std::nullopt;
    return value;
  };

  RedfishConfig config;
  if (!driverInfo.is_object()) {
    return invalid("Missing the following Redfish properties in node " + node +
                   " driver_info: redfish_address");
  }
  const auto address = KILN_TRY(text("redfish_address"));
  if (!address) {
    return invalid("Missing the following Redfish properties in node " + node +
                   " driver_info: redfish_address");
  }
  const std::string withScheme =
      address->find("://") == std::string::npos ? "https://" + *address : *address;
  auto url = parseHttpUrl(withScheme);
  if (!url) {
    // parseHttpUrl says `Invalid URL "<url>": <why>`; keep the why.
    const auto& m = url.error().message;
    const auto sep = m.find("\": ");
    const std::string why = sep == std::string::npos ? m : m.substr(sep + 3);
    return invalid("Invalid Redfish address " + *address + where("redfish_address") + ": " + why);
  }
  if (url->target != "/") {
    return invalid("Invalid Redfish address " + *address + where("redfish_address") +
                   ": it must be scheme://host[:port] without a path");
  }
  config.address = std::move(*url);

  if (auto systemId = KILN_TRY(text("redfish_system_id"))) {
    if (systemId->front() != '/' || systemId->find_first_of(" ?#") != std::string::npos) {
      return invalid("Invalid value \"" + *systemId + "\"" + where("redfish_system_id") +
                     ": the value should be the path of the ComputerSystem resource, for "
                     "example /redfish/v1/Systems/1");
    }
    config.systemId = std::move(*systemId);
  }
  config.username = KILN_TRY(text("redfish_username")).value_or("");
  config.password = KILN_TRY(text("redfish_password")).value_or("");

  if (auto authType = KILN_TRY(text("redfish_auth_type"))) {
    if (*authType == "basic") {
      config.authType = RedfishAuthType::Basic;
    } else if (*authType == "session") {
      config.authType = RedfishAuthType::Session;
    } else if (*authType == "auto") {
      config.authType = RedfishAuthType::Auto;
    } else {
      return invalid("Invalid value \"" + *authType + "\"" + where("redfish_auth_type") +
                     ": the value should be one of \"basic\", \"session\", \"auto\"");
    }
  }

  if (const auto it = driverInfo.find("redfish_verify_ca");
      it != driverInfo.end() && !it->is_null()) {
    if (it->is_boolean()) {
      config.verifyCa = it->get<bool>();
    } else if (it->is_string()) {
      const auto value = it->get<std::string>();
      const auto lower = asciiLower(value);
      if (lower == "true" || lower == "1" || lower == "yes" || lower == "on" || lower == "t" ||
          lower == "y") {
        config.verifyCa = true;
      } else if (lower == "false" || lower == "0" || lower == "no" || lower == "off" ||
                 lower == "f" || lower == "n") {
        config.verifyCa = false;
      } else {
        std::error_code ec;
        if (value.empty() || !std::filesystem::exists(value, ec)) {
          return invalid("Invalid value \"" + value + "\"" + where("redfish_verify_ca") +
                         ": the value should be a Boolean or the path to an existing CA bundle "
                         "file or directory");
        }
        config.verifyCa = true;
        config.caBundle = value;
      }
    } else {
      return invalid("Invalid value type" + where("redfish_verify_ca") +
                     ": the value should be a Boolean or the path to a CA bundle file or "
                     "directory, not " +
                     jsonTypeName(*it) + " " + dumpJson(*it));
    }
  }
  return config;
}

RedfishClient::RedfishClient(HttpClientPtr http, RedfishConfig config, Logger log)
    : http_(std::move(http)), config_(std::move(config)), log_(std::move(log)) {}

RedfishClient::~RedfishClient() {
  if (sessionPath_.empty() || token_.empty()) {
    return;
  }
  HttpRequest request = baseRequest("DELETE", sessionPath_);
  request.timeout = std::min<std::chrono::milliseconds>(request.timeout, kLogoutTimeout);
  auto response = transmit(request);
  if (!response || response->status >= 300) {
    log_.debug("could not delete the Redfish session",
               {{"session", sessionPath_},
                {"error", response ? std::to_string(response->status) : response.error().message}});
  }
}

Result<HttpResponse> RedfishClient::transmit(const HttpRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  auto response = http_->send(request);
  const std::string_view outcome =
      !response ? (response.error().code == ErrorCode::DeadlineExceeded ? kBmcTimeout : kBmcError)
                : (response->status < 400 ? kBmcSuccess : kBmcError);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  recordBmcRequest("redfish", request.method, outcome, elapsed);
  if (bmcRequestScopeOpen()) noteRequest(request, outcome, elapsed, response);
  return response;
}

void RedfishClient::noteRequest(const HttpRequest& request, std::string_view outcome,
                                std::chrono::steady_clock::duration elapsed,
                                const Result<HttpResponse>& response) const {
  BmcRequestRecord record;
  record.driver = "redfish";
  record.operation = request.method;
  record.result = std::string(outcome);
  record.durationSeconds = std::chrono::duration<double>(elapsed).count();
  record.bmc = config_.address.hostHeader();
  // The path only: no origin (whose credentials, if any, never reach request.url anyway), no
  // query, no body.
  const std::string origin = config_.address.origin();
  if (request.url.starts_with(origin)) {
    record.path = request.url.substr(origin.size());
    if (const size_t q = record.path.find_first_of("?#"); q != std::string::npos) {
      record.path.resize(q);
    }
  }
  const auto masked = [&](std::string_view text) {
    return boundBmcError(maskCredentials(maskUrlsInText(text, UrlScope::All)));
  };
  if (!response) {
    record.error = masked(response.error().message);
  } else {
    record.httpStatus = response->status;
    if (response->status >= 400) {
      const std::string detail = redfishErrorMessage(response->body);
      record.error = masked("HTTP " + std::to_string(response->status) +
                            (detail.empty() ? std::string() : ": " + detail));
    }
  }
  noteBmcRequest(std::move(record));
}

Result<json> RedfishClient::get(std::string_view path) { return call("GET", path, nullptr); }

Result<json> RedfishClient::post(std::string_view path, const json& body) {
  return call("POST", path, &body);
}

Result<json> RedfishClient::patch(std::string_view path, const json& body) {
  return call("PATCH", path, &body);
}

HttpRequest RedfishClient::baseRequest(std::string_view method, std::string_view path) const {
  HttpRequest request;
  request.method = std::string(method);
  request.url = config_.address.origin() + std::string(path);
  request.headers = {{"Accept", "application/json"}, {"OData-Version", "4.0"}};
  request.timeout = config_.requestTimeout;
  request.verifyTls = config_.verifyCa;
  request.caFile = config_.caBundle;
  if (!token_.empty()) {
    request.headers.emplace_back("X-Auth-Token", token_);
  } else if (useBasic_) {
    request.basicAuth = std::make_pair(config_.username, config_.password);
  }
  return request;
}

std::string RedfishClient::maskCredentials(std::string_view text) const {
  std::string out(text);
  maskSecretIn(out, config_.password);
  maskSecretIn(out, token_);
  return out;
}

Error RedfishClient::bmcError(const HttpRequest& request, const HttpResponse& response) const {
  const std::string& username = config_.username;
  std::string message = "Redfish " + request.method + " " + request.url + " failed with HTTP " +
                        std::to_string(response.status);
  if (response.status == 401) {
    message += username.empty() ? " (the BMC requires credentials: set "
                                  "driver_info/redfish_username and redfish_password)"
                                : " (the BMC rejected the credentials of user '" + username + "')";
  }
  if (const auto detail = redfishErrorMessage(response.body); !detail.empty()) {
    message += ": " + maskCredentials(detail);
  }
  return Error{codeForStatus(response.status), std::move(message)};
}

Result<void> RedfishClient::openSession(bool* bmcAnswered) {
  HttpRequest request = baseRequest("POST", kSessions);
  request.basicAuth.reset();
  std::erase_if(request.headers, [](const auto& h) { return h.first == "X-Auth-Token"; });
  request.headers.emplace_back("Content-Type", "application/json");
  request.body = json{{"UserName", config_.username}, {"Password", config_.password}}.dump();
  const auto response = KILN_TRY(transmit(request));
  if (bmcAnswered) {
    *bmcAnswered = true;
  }
  if (response.status < 200 || response.status >= 300) {
    return std::unexpected(bmcError(request, response));
  }
  const auto token = response.header("x-auth-token");
  if (!token || token->empty()) {
    return fail(ErrorCode::Unavailable,
                "Redfish POST " + request.url + " created a session without an X-Auth-Token");
  }
  token_ = *token;
  sessionPath_.clear();
  if (const auto location = response.header("location")) {
    sessionPath_ = pathOf(*location);
  } else {
    const json body = parseJson(response.body).value_or(json());
    if (body.is_object() && body.contains("@odata.id") && body["@odata.id"].is_string()) {
      sessionPath_ = pathOf(body["@odata.id"].get<std::string>());
    }
  }
  return {};
}

Result<void> RedfishClient::authenticate() {
  if (authenticated_) {
    return {};
  }
  if (config_.username.empty() || config_.authType == RedfishAuthType::Basic) {
    useBasic_ = !config_.username.empty();
    authenticated_ = true;
    return {};
  }
  bool bmcAnswered = false;
  auto session = openSession(&bmcAnswered);
  if (!session) {
    if (config_.authType == RedfishAuthType::Session || !bmcAnswered) {
      return std::unexpected(session.error());
    }
    // auto: a BMC without (working) sessions may still take basic authentication.
    log_.debug("Redfish session authentication failed; falling back to basic",
               {{"bmc", config_.address.origin()}, {"error", session.error().message}});
    useBasic_ = true;
  }
  authenticated_ = true;
  return {};
}

Result<HttpResponse> RedfishClient::send(std::string_view method, std::string_view path,
                                         const json* body) {
  KILN_TRY_VOID(authenticate());
  auto build = [&] {
    HttpRequest request = baseRequest(method, path);
    if (body) {
      request.headers.emplace_back("Content-Type", "application/json");
      request.body = body->dump();
    }
    return request;
  };
  auto response = KILN_TRY(transmit(build()));
  if (response.status == 401 && !token_.empty()) {
    // The session expired (BMCs time idle sessions out): open a new one and retry once.
    token_.clear();
    sessionPath_.clear();
    KILN_TRY_VOID(openSession());
    response = KILN_TRY(transmit(build()));
  }
  return response;
}

Result<HttpResponse> RedfishClient::exchange(std::string_view method, std::string_view path,
                                             const json* body) {
  return send(method, path, body);
}

Error RedfishClient::errorFor(std::string_view method, std::string_view path,
                              const HttpResponse& response) const {
  return bmcError(baseRequest(method, path), response);
}

Result<json> RedfishClient::call(std::string_view method, std::string_view path, const json* body) {
  const auto response = KILN_TRY(send(method, path, body));
  if (response.status < 200 || response.status >= 300) {
    return std::unexpected(bmcError(baseRequest(method, path), response));
  }
  if (response.body.empty()) {
    return json();
  }
  auto parsed = parseJson(response.body);
  if (!parsed) {
    return fail(ErrorCode::Unavailable, "Redfish " + std::string(method) + " " +
                                            config_.address.origin() + std::string(path) +
                                            " returned a body that is not JSON");
  }
  return std::move(*parsed);
}

Result<std::string> RedfishClient::systemPath(std::string_view nodeUuid) {
  if (!config_.systemId.empty()) {
    return config_.systemId;
  }
  const json root = KILN_TRY(get(kServiceRoot));
  std::string collection(kDefaultSystems);
  if (root.is_object() && root.contains("Systems") && root["Systems"].is_object() &&
      root["Systems"].contains("@odata.id") && root["Systems"]["@odata.id"].is_string()) {
    collection = pathOf(root["Systems"]["@odata.id"].get<std::string>());
  }
  const json systems = KILN_TRY(get(collection));
  std::vector<std::string> members;
  if (systems.is_object() && systems.contains("Members") && systems["Members"].is_array()) {
    for (const auto& m : systems["Members"]) {
      if (m.is_object() && m.contains("@odata.id") && m["@odata.id"].is_string()) {
        members.push_back(pathOf(m["@odata.id"].get<std::string>()));
      }
    }
  }
  if (members.empty()) {
    return notFound("The Redfish BMC at " + config_.address.origin() +
                    " lists no ComputerSystem in " + collection + " (node " +
                    std::string(nodeUuid) + ")");
  }
  if (members.size() > 1) {
    std::string list;
    for (const auto& m : members) list += (list.empty() ? "" : ", ") + m;
    return invalid("The Redfish BMC at " + config_.address.origin() + " manages " +
                   std::to_string(members.size()) + " systems (" + list +
                   "): set driver_info/redfish_system_id on node " + std::string(nodeUuid) +
                   " to the one to use");
  }
  return members.front();
}

}  // namespace kiln::server
