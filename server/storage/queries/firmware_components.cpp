#include "server/storage/queries/firmware_components.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace kiln::server {
namespace {

Value optText(const std::optional<std::string>& v) { return v ? Value::text(*v) : Value::null(); }

}  // namespace

Result<std::vector<Record>> listFirmwareComponents(Transaction& tx, int64_t nodeId) {
  ListQuery q;
  q.limit = 0;
  q.sortField = kFwId;
  q.filters.push_back({ListFilter::Op::Equals, kFwNodeId, Value::integer(nodeId), {}});
  return tx.records(Resource::FirmwareComponent).list(q);
}

Result<void> syncFirmwareComponents(Transaction& tx, int64_t nodeId,
                                    const std::vector<FirmwareComponentInfo>& components,
                                    const std::string& now) {
  RecordStore& store = tx.records(Resource::FirmwareComponent);
  std::map<std::string, Record> current;
  for (auto& r : KILN_TRY(listFirmwareComponents(tx, nodeId))) {
    std::string name = r.str(kFwComponent);
    current.emplace(std::move(name), std::move(r));
  }
  std::set<std::string> seen;
  for (const auto& c : components) {
    if (!seen.insert(c.component).second) continue;
    const Value version = Value::text(c.currentVersion);
    const Value vendor = optText(c.vendor), model = optText(c.model),
                serial = optText(c.serialNumber);
    auto it = current.find(c.component);
    if (it == current.end()) {
      Record r = defaultRecord(firmwareComponentSchema());
      r.setText(kFwComponent, c.component);
      r[kFwNodeId] = Value::integer(nodeId);
      r[kFwInitialVersion] = version;
      r[kFwCurrentVersion] = version;
      r[kFwVendor] = vendor;
      r[kFwModel] = model;
      r[kFwSerialNumber] = serial;
      r.setText(kFwCreatedAt, now);
      KILN_TRY(store.insert(r));
      continue;
    }
    Record& r = it->second;
    const bool versionChanged = r[kFwCurrentVersion] != version;
    const bool flashedDiffers =
        !r[kFwLastVersionFlashed].isNull() && r[kFwLastVersionFlashed] != version;
    const bool identityChanged =
        r[kFwVendor] != vendor || r[kFwModel] != model || r[kFwSerialNumber] != serial;
    if (!versionChanged && !flashedDiffers && !identityChanged) continue;
    // Listed, not read under the row's lock: only the changed columns are written.
    FieldMask changed;
    if (versionChanged) {
      r[kFwLastVersionFlashed] = version;
      r[kFwCurrentVersion] = version;
      changed.set(kFwLastVersionFlashed).set(kFwCurrentVersion);
    }
    r[kFwVendor] = vendor;
    r[kFwModel] = model;
    r[kFwSerialNumber] = serial;
    r.setText(kFwUpdatedAt, now);
    changed.set(kFwVendor).set(kFwModel).set(kFwSerialNumber).set(kFwUpdatedAt);
    KILN_TRY_VOID(store.updateFields(r, changed));
  }
  return {};
}

}  // namespace kiln::server
