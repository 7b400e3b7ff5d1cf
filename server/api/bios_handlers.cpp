#include "server/api/bios_handlers.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "server/api/handler_support.h"
#include "server/model/bios_setting.h"
#include "server/model/node.h"
#include "server/storage/queries/bios_settings.h"
#include "shared/core/strings.h"
#include "shared/json/json_util.h"
#include "server/model/versions.h"

namespace kiln::server {
namespace {

using Mode = Storage::Mode;

/// The API's names of a setting's fields, with their columns; the first two are Ironic's
/// default fields, the whole list its fields "with registry" (1.74).
constexpr std::pair<std::string_view, BiosSettingField> kFields[] = {
    {"name", kBiosName},
    {"value", kBiosValue},
    {"attribute_type", kBiosAttributeType},
    {"allowable_values", kBiosAllowableValues},
    {"lower_bound", kBiosLowerBound},
    {"max_length", kBiosMaxLength},
    {"min_length", kBiosMinLength},
    {"read_only", kBiosReadOnly},
    {"reset_required", kBiosResetRequired},
    {"unique", kBiosUnique},
    {"upper_bound", kBiosUpperBound},
};
constexpr size_t kDefaultFieldCount = 2;
constexpr size_t kAllFieldCount = std::size(kFields);

void renderValue(JsonWriter& w, const Record& r, BiosSettingField f) {
  const Value& v = r[f];
  if (v.isNull()) {
    if (f == kBiosAllowableValues) {
      w.raw("[]");  // a list field: [] rather than null, as Ironic's object_to_dict
    } else {
      w.null();
    }
    return;
  }
  switch (biosSettingSchema()[f].type) {
    case FieldType::Bool:
      w.boolean(v.b);
      break;
    case FieldType::Int:
      w.integer(v.i);
      break;
    case FieldType::Array:
      w.raw(v.s);
      break;
    default:
      w.string(v.s);
      break;
  }
}

/// One setting as Ironic's convert_with_links: created_at, updated_at, the chosen fields, then
/// self and bookmark links under nodes/<nodeIdent>/bios/<name>.
void renderSetting(JsonWriter& w, const RequestContext& ctx, const std::string& nodeIdent,
                   const Record& r, const std::vector<size_t>& fields) {
  w.beginObject();
  for (auto f : {kBiosCreatedAt, kBiosUpdatedAt}) {
    w.key(biosSettingSchema()[f].name);
    if (r[f].isNull()) {
      w.null();
    } else {
      w.string(r.str(f));
    }
  }
  for (size_t i : fields) {
    w.key(kFields[i].first);
    renderValue(w, r, kFields[i].second);
  }
  w.key("links");
  writeLinks(w, ctx.baseUrl, "nodes/" + nodeIdent + "/bios/" + r.str(kBiosName));
  w.endObject();
}

std::vector<size_t> firstFields(size_t n) {
  std::vector<size_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = i;
  return out;
}

}  // namespace

Result<ApiResponse> BiosHandlers::list(RequestContext& ctx) {
  // Ironic validates the query before it looks the node up.
  std::optional<bool> detail;
  if (auto d = ctx.request.param("detail")) detail = KILN_TRY(parseBool("detail", *d));
  std::optional<std::vector<std::string>> names;
  if (auto f = ctx.request.param("fields")) {
    names.emplace();
    for (auto& item : splitCommaList(*f)) {
      const std::string n = asciiLower(item);
      if (std::find(names->begin(), names->end(), n) == names->end()) names->push_back(n);
    }
  }
  if (detail && ctx.version < ver::k74BiosRegistry) {
    return invalid(std::string("Invalid query parameter ?detail=") + (*detail ? "True" : "False") +
                   " received.");
  }
  if (names && ctx.version < ver::k74BiosRegistry) {
    return invalid("Invalid query parameter ?fields=" + pyRepr(nlohmann::json(*names)) +
                   " received.");
  }
  if (names && detail.value_or(false)) {
    return invalid("Can not specify ?detail=True and fields in the same request.");
  }
  std::vector<size_t> fields =
      firstFields(detail.value_or(false) ? kAllFieldCount : kDefaultFieldCount);
  if (names) {
    fields.clear();
    std::string unknown;
    for (const auto& n : *names) {
      auto it = std::find_if(std::begin(kFields), std::end(kFields),
                             [&](const auto& f) { return f.first == n; });
      if (it == std::end(kFields)) {
        unknown += (unknown.empty() ? "" : ", ") + n;
      } else {
        fields.push_back(static_cast<size_t>(it - std::begin(kFields)));
      }
    }
    if (!unknown.empty()) return invalid("Field(s) \"" + unknown + "\" are not valid");
  }
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    const std::string& ident = ctx.param(0);
    const Record node = KILN_TRY(findNode(tx, ctx, ident));
    JsonWriter w;
    w.beginObject();
    w.key("bios");
    w.beginArray();
    // Ironic links list entries under the node identifier as the client gave it.
    for (const auto& r : KILN_TRY(listBiosSettings(tx, node.id()))) {
      renderSetting(w, ctx, ident, r, fields);
    }
    w.endArray();
    w.endObject();
    return jsonResponse(200, w.take());
  });
}

Result<ApiResponse> BiosHandlers::show(RequestContext& ctx) {
  const std::string& name = ctx.param(1);
  if (!isValidLogicalName(name)) return invalid("Expected name for setting_name: " + name);
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    const Record node = KILN_TRY(findNode(tx, ctx, ctx.param(0)));
    std::optional<Record> found;
    for (auto& r : KILN_TRY(listBiosSettings(tx, node.id()))) {
      if (r.str(kBiosName) == name) found = std::move(r);
    }
    if (!found) {
      return notFound("Node " + node.uuid() + " doesn't have a BIOS setting '" + name + "'");
    }
    JsonWriter w;
    w.beginObject();
    w.key(name);
    renderSetting(w, ctx, node.uuid(), *found,
                  firstFields(ctx.version >= ver::k74BiosRegistry ? kAllFieldCount : kDefaultFieldCount));
    w.endObject();
    return jsonResponse(200, w.take());
  });
}

}  // namespace kiln::server
