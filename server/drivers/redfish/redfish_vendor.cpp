#include "server/drivers/redfish/redfish_vendor.h"

#include <algorithm>
#include <array>
#include <utility>

#include "server/drivers/redfish/redfish_common.h"
#include "server/drivers/redfish/redfish_virtual_media.h"
#include "shared/core/strings.h"
#include "shared/json/json_util.h"

namespace kiln::server {
namespace {

using nlohmann::json;

constexpr std::string_view kServiceRoot = "/redfish/v1/";
constexpr std::string_view kDefaultEventService = "/redfish/v1/EventService";

/// The fields of a subscription Ironic hands back (the rest, HttpHeaders above all, stays on
/// the BMC).
constexpr std::array<std::string_view, 5> kSubscriptionFields = {"Id", "Context", "Protocol",
                                                                 "Destination", "EventTypes"};

/// boot_device values of eject_vmedia and the Redfish MediaTypes they name.
constexpr std::array<std::pair<std::string_view, std::string_view>, 4> kMediaTypes = {{
    {"cd", "CD"}, {"dvd", "DVD"}, {"usb", "USBStick"}, {"floppy", "Floppy"}}};

bool asciiAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool asciiAlnum(char c) { return asciiAlpha(c) || (c >= '0' && c <= '9'); }

/// Whether `uri` has a scheme and a host (Ironic checks Destination with rfc3986 likewise).
bool hasSchemeAndHost(const std::string& uri) {
  const auto sep = uri.find("://");
  if (sep == std::string::npos || sep == 0) return false;
  if (!asciiAlpha(uri[0])) return false;
  for (size_t i = 1; i < sep; ++i) {
    const char c = uri[i];
    if (!asciiAlnum(c) && c != '+' && c != '-' && c != '.') return false;
  }
  std::string_view rest = std::string_view(uri).substr(sep + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) rest = rest.substr(at + 1);
  if (rest.find_first_of(" \t\r\n") != std::string_view::npos) return false;
  if (!rest.empty() && rest.front() == '[') return rest.find(']') != std::string_view::npos && rest.size() > 2;
  rest = rest.substr(0, rest.find(':'));
  return !rest.empty();
}

/// A subscription id that names one member of the collection and nothing else.
bool safeMemberId(const std::string& id) {
  return !id.empty() && id != "." && id != ".." &&
         id.find_first_of("/?#\\ \t\r\n") == std::string::npos;
}

json filterSubscription(const json& subscription) {
  json out = json::object();
  if (!subscription.is_object()) return out;
  for (auto field : kSubscriptionFields) {
    const auto it = subscription.find(std::string(field));
    if (it != subscription.end()) out[std::string(field)] = *it;
  }
  return out;
}

/// The EventService resource and the path of its Subscriptions collection.
struct EventService {
  json resource;
  std::string subscriptions;
};

Result<EventService> eventService(RedfishTarget& bmc, const TaskContext& task) {
  const json root = KILN_TRY(bmc.client->get(kServiceRoot));
  std::string path = redfishLinkAt(root, {"EventService"});
  if (path.empty()) path = std::string(kDefaultEventService);
  auto resource = bmc.client->get(path);
  if (!resource) {
    if (resource.error().code == ErrorCode::NotFound) {
      return invalid("The BMC of node " + task.uuid() + " has no Redfish EventService.");
    }
    return std::unexpected(resource.error());
  }
  std::string subscriptions = redfishLinkAt(*resource, {"Subscriptions"});
  if (subscriptions.empty()) subscriptions = path + "/Subscriptions";
  return EventService{std::move(*resource), std::move(subscriptions)};
}

std::string memberPath(const std::string& collection, const std::string& id) {
  return collection + (collection.ends_with('/') ? "" : "/") + id;
}

/// Ironic's messages for a BMC that refused a subscription call; the BMC's 404 stays a 404.
Error subscriptionError(const Error& e, std::string what) {
  return Error{e.code, std::move(what) + " Error: " + e.message};
}

}  // namespace

RedfishVendor::RedfishVendor(HttpClientPtr http) : http_(std::move(http)) {}

std::optional<std::string> RedfishVendor::validate(const TaskContext& task) const {
  return validateRedfishDriverInfo(task);
}

std::span<const VendorMethod> RedfishVendor::methods() const {
  static const VendorMethod kMethods[] = {
      {"eject_vmedia", {"POST"}, true,
       "Eject a virtual media device. If no device is provided then all attached devices will "
       "be ejected. Optional arguments: 'boot_device' - the boot device to eject, either 'cd', "
       "'dvd', 'usb', or 'floppy'"},
      {"create_subscription", {"POST"}, false,
       "Creates a subscription on a node. Required argument: a dictionary of {'Destination': "
       "'destination_url'}"},
      {"delete_subscription", {"DELETE"}, false,
       "Delete a subscription on a node. Required argument: a dictionary of {'id': "
       "'subscription_bmc_id'}"},
      {"get_all_subscriptions", {"GET"}, false, "Returns all subscriptions on the node."},
      {"get_subscription", {"GET"}, false,
       "Get a subscription on the node. Required argument: a dictionary of {'id': "
       "'subscription_bmc_id'}"},
  };
  return kMethods;
}

std::optional<std::string> RedfishVendor::validateCall(const TaskContext&, std::string_view method,
                                                       const json& args) const {
  if (method == "eject_vmedia") {
    const auto device = args.find("boot_device");
    if (device == args.end() || device->is_null() ||
        (device->is_string() && device->get_ref<const std::string&>().empty())) {
      return std::nullopt;
    }
    const bool known = device->is_string() &&
                       std::any_of(kMediaTypes.begin(), kMediaTypes.end(), [&](const auto& m) {
                         return m.first == device->get_ref<const std::string&>();
                       });
    if (!known) return "Boot device " + dumpJson(*device) + " is not a valid value";
    return std::nullopt;
  }
  if (method == "create_subscription") {
    const auto destination = args.find("Destination");
    if (destination == args.end() || !destination->is_string() ||
        !hasSchemeAndHost(destination->get<std::string>())) {
      return "Destination " + (destination == args.end() ? std::string("None") : dumpJson(*destination)) +
             " is not a valid URI";
    }
    if (const auto events = args.find("EventTypes"); events != args.end() && !events->is_null()) {
      const bool strings = events->is_array() && std::all_of(events->begin(), events->end(),
                                                             [](const json& e) { return e.is_string(); });
      if (!strings) return "EventTypes " + dumpJson(*events) + " is not a valid value";
    }
    if (const auto context = args.find("Context"); context != args.end() && !context->is_string()) {
      return "Context " + dumpJson(*context) + " is not a valid string";
    }
    if (const auto protocol = args.find("Protocol"); protocol != args.end() && !protocol->is_string()) {
      return "Protocol " + dumpJson(*protocol) + " is not a string";
    }
    if (const auto headers = args.find("HttpHeaders");
        headers != args.end() && !headers->is_null() && !headers->is_array()) {
      return "HttpHeaders " + dumpJson(*headers) + " is not a list of headers";
    }
    return std::nullopt;
  }
  if (method == "delete_subscription" || method == "get_subscription") {
    const auto id = args.find("id");
    if (id == args.end() || id->is_null() || (id->is_string() && id->get_ref<const std::string&>().empty())) {
      return "id can't be None";
    }
    if (!id->is_string() || !safeMemberId(id->get<std::string>())) {
      return "id " + dumpJson(*id) + " is not a subscription id";
    }
  }
  return std::nullopt;
}

Result<json> RedfishVendor::call(TaskContext& task, std::string_view method, std::string_view,
                                 const json& args) {
  auto bmc = KILN_TRY(connectRedfish(http_, task));
  if (method == "eject_vmedia") {
    std::string wanted;
    if (const auto d = args.find("boot_device"); d != args.end() && d->is_string()) {
      for (const auto& [name, type] : kMediaTypes) {
        if (name == d->get_ref<const std::string&>()) wanted = type;
      }
    }
    const json system = KILN_TRY(bmc.client->get(bmc.systemPath));
    for (const auto& slot : KILN_TRY(listVirtualMediaSlots(bmc, system))) {
      if (!wanted.empty() && !slotTakesMedia(slot.resource, wanted)) continue;
      KILN_TRY_VOID(ejectVirtualMedia(bmc, slot));
    }
    return json();
  }
  const EventService events = KILN_TRY(eventService(bmc, task));
  if (method == "create_subscription") {
    json payload{{"Destination", args.at("Destination")},
                 {"Protocol", args.value("Protocol", json("Redfish"))},
                 {"Context", args.value("Context", json(""))},
                 {"EventTypes", args.value("EventTypes", json::array({"Alert"}))}};
    if (payload["EventTypes"].is_null()) payload["EventTypes"] = json::array({"Alert"});
    if (args.contains("EventTypes") && !args["EventTypes"].is_null()) {
      const json allowed = events.resource.value("EventTypesForSubscription", json::array());
      for (const auto& type : args["EventTypes"]) {
        if (!allowed.is_array() || std::find(allowed.begin(), allowed.end(), type) == allowed.end()) {
          return invalid("EventTypes " + dumpJson(args["EventTypes"]) +
                         " is not a valid value, allowed values " + dumpJson(allowed));
        }
      }
    }
    if (const auto headers = args.find("HttpHeaders");
        headers != args.end() && headers->is_array() && !headers->empty()) {
      payload["HttpHeaders"] = *headers;
    }
    const std::string what = "Failed to create subscription on node " + task.uuid() + ".";
    auto response = bmc.client->exchange("POST", events.subscriptions, &payload);
    if (!response) return std::unexpected(subscriptionError(response.error(), what));
    if (response->status < 200 || response->status >= 300) {
      return std::unexpected(subscriptionError(
          bmc.client->errorFor("POST", events.subscriptions, *response), what));
    }
    json created = parseJson(response->body).value_or(json());
    if (const auto location = response->header("location"); location && !location->empty()) {
      auto fetched = bmc.client->get(redfishLinkPath(*location));
      if (!fetched) return std::unexpected(subscriptionError(fetched.error(), what));
      created = std::move(*fetched);
    }
    if (!created.is_object() || !created.contains("Id")) {
      return fail(ErrorCode::Unavailable,
                  what + " Error: the BMC answered neither the new subscription nor its location.");
    }
    task.log.info("created a Redfish event subscription",
                  {{"id", created["Id"].is_string() ? created["Id"].get<std::string>() : dumpJson(created["Id"])}});
    return filterSubscription(created);
  }
  if (method == "get_all_subscriptions") {
    auto all = bmc.client->get(events.subscriptions);
    if (!all) {
      return std::unexpected(subscriptionError(
          all.error(), "Redfish get_subscriptions failed for node " + task.uuid() + "."));
    }
    return std::move(*all);
  }
  const std::string id = args.value("id", "");
  const std::string path = memberPath(events.subscriptions, id);
  if (method == "get_subscription") {
    auto one = bmc.client->get(path);
    if (!one) {
      return std::unexpected(subscriptionError(one.error(), "Redfish get_subscription failed for subscription " +
                                                                id + " on node " + task.uuid() + "."));
    }
    return filterSubscription(*one);
  }
  if (method == "delete_subscription") {
    const std::string what =
        "Redfish delete_subscription failed for subscription " + id + " on node " + task.uuid() + ".";
    auto response = bmc.client->exchange("DELETE", path);
    if (!response) return std::unexpected(subscriptionError(response.error(), what));
    if (response->status < 200 || response->status >= 300) {
      return std::unexpected(subscriptionError(bmc.client->errorFor("DELETE", path, *response), what));
    }
    task.log.info("deleted a Redfish event subscription", {{"id", id}});
    return json();
  }
  return invalid("No handler for method " + std::string(method));
}

}  // namespace kiln::server
