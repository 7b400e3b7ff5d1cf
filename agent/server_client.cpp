#include "agent/server_client.h"

#include "shared/json/json_util.h"

namespace kiln::agent {

using nlohmann::json;

std::string faultOf(const std::string& body) {
  json parsed = parseJson(body).value_or(json());
  if (parsed.is_object() && parsed.contains("error_message")) {
    json inner = parsed["error_message"];
    if (inner.is_string()) inner = parseJson(inner.get<std::string>()).value_or(json());
    if (inner.is_object() && inner.contains("faultstring") && inner["faultstring"].is_string()) {
      return inner["faultstring"].get<std::string>();
    }
  }
  if (body.size() <= 300) return body;
  // Cut between characters, not inside a UTF-8 sequence: the fault is quoted in messages.
  size_t cut = 300;
  for (int i = 0; i < 3 && (static_cast<unsigned char>(body[cut]) & 0xC0) == 0x80; ++i) --cut;
  return body.substr(0, cut) + "...";
}

Result<json> HttpServerClient::exchange(HttpRequest request, int expectedStatus) {
  request.headers.push_back({"Accept", "application/json"});
  request.timeout = std::chrono::seconds(30);
  auto response = http_.send(request);
  if (!response) return std::unexpected(response.error());
  const int status = response->status;
  if (status == expectedStatus) {
    auto body = parseJson(response->body);
    if (!body) return fail(ErrorCode::Unavailable, "the server answered with malformed JSON");
    return std::move(*body);
  }
  const std::string fault = faultOf(response->body);
  const std::string what = request.method + " " + request.url + ": HTTP " + std::to_string(status) + ": " + fault;
  if (status == 404) return fail(ErrorCode::NotFound, what);
  if (status == 401 || status == 403) return fail(ErrorCode::Unauthenticated, what);
  if (status == 409) return fail(ErrorCode::Conflict, what);
  if (status >= 400 && status < 500) return invalid(what);
  return fail(ErrorCode::Unavailable, what);
}

Result<protocol::LookupResponse> HttpServerClient::lookup(const std::vector<std::string>& macs,
                                                          const std::string& nodeUuid) {
  std::string addresses;
  for (const auto& m : macs) addresses += (addresses.empty() ? "" : ",") + m;
  HttpRequest request;
  // MACs and UUIDs need no percent-encoding (hex digits, ':' and '-').
  request.url = apiUrl_ + "/v1/lookup?addresses=" + addresses;
  if (!nodeUuid.empty()) request.url += "&node_uuid=" + nodeUuid;
  request.headers.push_back({"X-OpenStack-Ironic-API-Version", protocol::kLookupApiVersion});
  const json body = KILN_TRY(exchange(std::move(request), 200));
  auto parsed = protocol::LookupResponse::parse(body);
  if (!parsed) return fail(ErrorCode::Unavailable, "malformed lookup response: " + parsed.error().message);
  return parsed;
}

Result<protocol::HeartbeatResponse> HttpServerClient::heartbeat(const std::string& nodeUuid,
                                                                const protocol::HeartbeatRequest& beat) {
  HttpRequest request;
  request.method = "POST";
  request.url = apiUrl_ + "/v1/heartbeat/" + nodeUuid;
  request.headers.push_back({"X-OpenStack-Ironic-API-Version", protocol::kHeartbeatApiVersion});
  request.headers.push_back({"Content-Type", "application/json"});
  // dumpJson: bytes of the machine's that are not UTF-8 (a DMI string, a disk serial, tool
  // output) are replaced; nlohmann's dump() would throw and end the agent.
  request.body = dumpJson(beat.toJson());
  const json body = KILN_TRY(exchange(std::move(request), 202));
  auto parsed = protocol::HeartbeatResponse::parse(body);
  if (!parsed) return fail(ErrorCode::Unavailable, "malformed heartbeat response: " + parsed.error().message);
  return parsed;
}

}  // namespace kiln::agent
