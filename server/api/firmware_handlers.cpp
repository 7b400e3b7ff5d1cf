#include "server/api/firmware_handlers.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include <nlohmann/json.hpp>

#include "server/api/handler_support.h"
#include "server/model/firmware_component.h"
#include "server/model/versions.h"
#include "server/storage/queries/firmware_components.h"
#include "shared/core/strings.h"
#include "shared/json/json_util.h"

namespace kiln::server {
namespace {

/// The names ?fields= may give, in the order of Ironic's query schema, with their columns.
constexpr std::pair<std::string_view, FirmwareComponentField> kFields[] = {
    {"created_at", kFwCreatedAt},
    {"updated_at", kFwUpdatedAt},
    {"component", kFwComponent},
    {"initial_version", kFwInitialVersion},
    {"current_version", kFwCurrentVersion},
    {"last_version_flashed", kFwLastVersionFlashed},
    {"vendor", kFwVendor},
    {"model", kFwModel},
    {"serial_number", kFwSerialNumber},
};
/// Ironic's _DEFAULT_RETURN_FIELDS and _IDENTITY_FIELDS.
constexpr std::string_view kDefaultFields[] = {"component", "initial_version", "current_version",
                                               "last_version_flashed"};
constexpr std::string_view kIdentityFields[] = {"vendor", "model", "serial_number"};

std::optional<FirmwareComponentField> columnOf(std::string_view name) {
  for (const auto& [n, f] : kFields) {
    if (n == name) return f;
  }
  return std::nullopt;
}

bool isIdentity(std::string_view name) {
  return std::find(std::begin(kIdentityFields), std::end(kIdentityFields), name) !=
         std::end(kIdentityFields);
}

/// Ironic's args.string_list: comma-separated, trimmed, lower-cased, first occurrence kept.
std::vector<std::string> fieldList(std::string_view text) {
  std::vector<std::string> out;
  for (const auto& item : splitCommaList(text)) {
    std::string n = asciiLower(item);
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(std::move(n));
  }
  return out;
}

void renderValue(JsonWriter& w, const Record& r, FirmwareComponentField f) {
  if (r[f].isNull()) {
    w.null();
  } else {
    w.string(r.str(f));
  }
}

/// One component as Ironic's object_to_dict: created_at and updated_at, then the fields.
void renderComponent(JsonWriter& w, const Record& r, const std::vector<std::string>& fields) {
  w.beginObject();
  w.key("created_at");
  renderValue(w, r, kFwCreatedAt);
  w.key("updated_at");
  renderValue(w, r, kFwUpdatedAt);
  for (const auto& name : fields) {
    if (name == "created_at" || name == "updated_at") continue;
    w.key(name);
    renderValue(w, r, *columnOf(name));
  }
  w.endObject();
}

/// The fields to show: those asked for (identity ones need 1.114: a 400 below, after the node
/// lookup as in Ironic), else Ironic's defaults of the version.
Result<std::vector<std::string>> chosenFields(
    const RequestContext& ctx, const std::optional<std::vector<std::string>>& names) {
  const bool identity = ctx.atLeast(ver::k114FirmwareIdentity);
  if (!names) {
    std::vector<std::string> fields(std::begin(kDefaultFields), std::end(kDefaultFields));
    if (identity) {
      fields.insert(fields.end(), std::begin(kIdentityFields), std::end(kIdentityFields));
    }
    return fields;
  }
  std::vector<std::string> disallowed;
  for (const auto& n : *names) {
    if (!identity && isIdentity(n)) disallowed.push_back(n);
  }
  if (!disallowed.empty()) {
    std::sort(disallowed.begin(), disallowed.end());
    std::string list;
    for (const auto& d : disallowed) list += (list.empty() ? "" : ", ") + d;
    return invalid("Fields " + list +
                   " are not allowed in this API version. They require at least API version 1." +
                   std::to_string(ver::k114FirmwareIdentity) + ".");
  }
  return *names;
}

Result<ApiResponse> listFor(Transaction& tx, const RequestContext& ctx,
                            const std::optional<std::vector<std::string>>& names) {
  const Record node = KILN_TRY(findNode(tx, ctx, ctx.param(0)));
  const std::vector<std::string> fields = KILN_TRY(chosenFields(ctx, names));
  JsonWriter w;
  w.beginObject();
  w.key("firmware");
  w.beginArray();
  for (const auto& r : KILN_TRY(listFirmwareComponents(tx, node.id()))) {
    renderComponent(w, r, fields);
  }
  w.endArray();
  w.endObject();
  return jsonResponse(200, w.take());
}

}  // namespace

Result<ApiResponse> FirmwareHandlers::list(RequestContext& ctx) {
  // Ironic checks the query (its schema) before it looks the node up.
  if (auto detail = ctx.request.param("detail")) {
    return invalid("Schema error: " + pyRepr(nlohmann::json(*detail)) +
                   " is not of type 'boolean'");
  }
  std::optional<std::vector<std::string>> names;
  if (auto f = ctx.request.param("fields")) {
    names = fieldList(*f);
    for (const auto& n : *names) {
      if (!columnOf(n)) {
        std::vector<std::string> allowed;
        for (const auto& [name, column] : kFields) allowed.emplace_back(name);
        return invalid("Schema error: " + pyRepr(nlohmann::json(n)) + " is not one of " +
                       pyRepr(nlohmann::json(allowed)));
      }
    }
  }
  return inTransaction(deps_.storage, Storage::Mode::Read,
                       [&](Transaction& tx) { return listFor(tx, ctx, names); });
}

}  // namespace kiln::server
