#include "server/model/allocation.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "server/model/node.h"
#include "server/model/trait.h"
#include "shared/core/secrets.h"
#include "shared/json/json_util.h"
#include "server/model/versions.h"

namespace kiln::server {
namespace {

constexpr std::string_view kPrefix = "Schema error for allocation: ";

std::unexpected<Error> schemaError(const std::string& what) {
  return invalid(std::string(kPrefix) + what);
}

/// A string-or-null property; the string itself when given.
Result<std::optional<std::string>> optionalString(const Json& body, const char* key) {
  if (!body.contains(key) || body[key].is_null()) return std::optional<std::string>();
  if (!body[key].is_string()) {
    return schemaError(maskedRepr(body[key]) + " is not of type 'string', 'null'");
  }
  return std::optional<std::string>(body[key].get<std::string>());
}

/// A list-of-strings-or-null property (traits, candidate_nodes).
Result<std::vector<std::string>> optionalStringList(const Json& body, const char* key) {
  std::vector<std::string> out;
  if (!body.contains(key) || body[key].is_null()) return out;
  const Json& list = body[key];
  if (!list.is_array()) {
    return schemaError(maskedRepr(list) + " is not of type 'array', 'null'");
  }
  for (const auto& item : list) {
    if (!item.is_string()) return schemaError(maskedRepr(item) + " is not of type 'string'");
    out.push_back(item.get<std::string>());
  }
  return out;
}

std::vector<std::string> storedList(const Record& allocation, size_t field) {
  std::vector<std::string> out;
  auto parsed = parseJson(allocation.str(field));
  if (!parsed || !parsed->is_array()) return out;
  for (const auto& item : *parsed) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
}

}  // namespace

Result<AllocationRequest> parseAllocationRequest(const Json& body, int version) {
  if (!body.is_object()) {
    return schemaError(maskedRepr(body) + " is not of type 'object'");
  }
  static constexpr std::string_view kKeys[] = {"candidate_nodes", "extra",  "name", "node", "owner",
                                               "resource_class",  "traits", "uuid"};
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (std::find(std::begin(kKeys), std::end(kKeys), it.key()) == std::end(kKeys)) {
      return schemaError("Additional properties are not allowed ('" + it.key() +
                         "' was unexpected)");
    }
  }
  AllocationRequest req;
  const Schema& schema = schemaOf(Resource::Allocation);
  req.allocation = defaultRecord(schema);
  Record& a = req.allocation;

  const auto uuid = KILN_TRY(optionalString(body, "uuid"));
  const auto name = KILN_TRY(optionalString(body, "name"));
  const auto resourceClass = KILN_TRY(optionalString(body, "resource_class"));
  const auto owner = KILN_TRY(optionalString(body, "owner"));
  req.node = KILN_TRY(optionalString(body, "node"));
  req.candidates = KILN_TRY(optionalStringList(body, "candidate_nodes"));
  auto traits = KILN_TRY(optionalStringList(body, "traits"));
  if (body.contains("extra") && !body["extra"].is_null() && !body["extra"].is_object()) {
    return schemaError(maskedRepr(body["extra"]) + " is not of type 'object', 'null'");
  }
  if (resourceClass && resourceClass->size() > 80) {
    return schemaError(maskedRepr(Json(*resourceClass)) + " is too long");
  }
  for (const auto& t : traits) {
    if (t.empty()) return schemaError("'' is too short");
    if (!validateTrait(t)) {
      return schemaError(maskedRepr(Json(t)) +
                         " does not match '^CUSTOM_[A-Z0-9_]+$' "
                         "and is not a standard trait");
    }
  }
  // Ironic refuses the owner key at any value below 1.60 (_check_allowed_allocation_fields).
  if (body.contains("owner") && version < ver::k60AllocationOwner) {
    return fail(ErrorCode::NotAcceptable,
                "Request not acceptable. The minimal required API version should be 1.60");
  }
  if (req.node && version < ver::k58AllocationBackfill) {
    return invalid("Cannot set node when creating an allocation in this API version");
  }
  if (name && !isValidLogicalName(*name)) {
    return invalid("Cannot create allocation with invalid name '" + *name + "'");
  }

  if (uuid) a.setText(kAllocUuid, *uuid);
  if (name) a.setText(kAllocName, *name);
  if (resourceClass && !resourceClass->empty()) a.setText(kAllocResourceClass, *resourceClass);
  if (owner) a.setText(kAllocOwner, *owner);
  std::vector<std::string> unique;
  for (auto& t : traits) {
    if (std::find(unique.begin(), unique.end(), t) == unique.end()) unique.push_back(std::move(t));
  }
  a.setText(kAllocTraits, dumpJson(Json(unique)));
  if (body.contains("extra") && body["extra"].is_object())
    a.setText(kAllocExtra, dumpJson(body["extra"]));
  a.setText(kAllocState, std::string(allocation_state::kAllocating));
  return req;
}

std::vector<std::string> allocationTraits(const Record& allocation) {
  return storedList(allocation, kAllocTraits);
}

std::vector<std::string> allocationCandidates(const Record& allocation) {
  return storedList(allocation, kAllocCandidateNodes);
}

std::string allocationFailedMessage(const Record& allocation, std::string_view error) {
  return "Failed to process allocation " + allocation.uuid() + ": " + std::string(error) + ".";
}

}  // namespace kiln::server
