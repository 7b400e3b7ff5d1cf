#include "server/storage/queries/bios_settings.h"

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shared/json/json_util.h"

namespace kiln::server {
namespace {

Value optText(const std::optional<std::string>& v) { return v ? Value::text(*v) : Value::null(); }
Value optInt(const std::optional<int64_t>& v) { return v ? Value::integer(*v) : Value::null(); }
Value optBool(const std::optional<bool>& v) { return v ? Value::boolean(*v) : Value::null(); }

/// Sets the reported columns of `r`; returns those that changed.
FieldMask assign(Record& r, const BiosSetting& s) {
  Value list;
  if (s.allowableValues) list = Value::text(dumpJson(nlohmann::json(*s.allowableValues)));
  const std::pair<size_t, Value> values[] = {
      {kBiosValue, optText(s.value)},          {kBiosAttributeType, optText(s.attributeType)},
      {kBiosAllowableValues, std::move(list)}, {kBiosLowerBound, optInt(s.lowerBound)},
      {kBiosMaxLength, optInt(s.maxLength)},   {kBiosMinLength, optInt(s.minLength)},
      {kBiosReadOnly, optBool(s.readOnly)},    {kBiosResetRequired, optBool(s.resetRequired)},
      {kBiosUnique, optBool(s.unique)},        {kBiosUpperBound, optInt(s.upperBound)},
  };
  FieldMask changed;
  for (const auto& [field, value] : values) {
    if (r[field] == value) continue;
    r[field] = value;
    changed.set(field);
  }
  return changed;
}

}  // namespace

Result<std::vector<Record>> listBiosSettings(Transaction& tx, int64_t nodeId) {
  ListQuery q;
  q.limit = 0;
  q.sortField = kBiosName;
  q.filters.push_back({ListFilter::Op::Equals, kBiosNodeId, Value::integer(nodeId), {}});
  return tx.records(Resource::BiosSetting).list(q);
}

Result<void> syncBiosSettings(Transaction& tx, int64_t nodeId,
                              const std::vector<BiosSetting>& settings, const std::string& now) {
  RecordStore& store = tx.records(Resource::BiosSetting);
  std::map<std::string, Record> current;
  for (auto& r : KILN_TRY(listBiosSettings(tx, nodeId))) {
    std::string name = r.str(kBiosName);
    current.emplace(std::move(name), std::move(r));
  }
  std::map<std::string, const BiosSetting*> given;
  for (const auto& s : settings) given[s.name] = &s;  // a repeated name: the last one wins
  for (const auto& [name, s] : given) {
    auto it = current.find(name);
    if (it == current.end()) {
      Record r = defaultRecord(biosSettingSchema());
      r.setText(kBiosName, name);
      r[kBiosNodeId] = Value::integer(nodeId);
      assign(r, *s);
      r.setText(kBiosCreatedAt, now);
      KILN_TRY(store.insert(r));
    } else if (FieldMask changed = assign(it->second, *s); changed.any()) {
      // Listed, not read under the row's lock: only the changed columns are written.
      it->second.setText(kBiosUpdatedAt, now);
      changed.set(kBiosUpdatedAt);
      KILN_TRY_VOID(store.updateFields(it->second, changed));
    }
  }
  for (const auto& [name, r] : current) {
    if (!given.count(name)) KILN_TRY_VOID(store.remove(r.id()));
  }
  return {};
}

}  // namespace kiln::server
