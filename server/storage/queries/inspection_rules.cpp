#include "server/storage/queries/inspection_rules.h"

#include <algorithm>
#include <string_view>
#include <vector>

namespace kiln::server {

Result<std::vector<Record>> loadInspectionRules(Transaction& tx, std::string_view phase) {
  ListQuery query;
  ListFilter byPhase;
  byPhase.field = kIrPhase;
  byPhase.value = Value::text(std::string(phase));
  query.filters.push_back(std::move(byPhase));
  query.sortField = kIrId;
  query.limit = 0;
  std::vector<Record> rules = KILN_TRY(tx.records(Resource::InspectionRule).list(query));
  std::stable_sort(rules.begin(), rules.end(), [](const Record& a, const Record& b) {
    return a[kIrPriority].i > b[kIrPriority].i;
  });
  return rules;
}

}  // namespace kiln::server
