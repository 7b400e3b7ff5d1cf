// File: server/storage/queries/inspection_rules.h
//
// Inspection rules (API 1.96): the rules of a phase in the order they apply.
// Storage-side queries of inspection rules (server/model/inspection_rule.h has the schema and the
// plain data): they take the caller's Transaction, so they run inside its atomic unit.
#pragma once

#include <string_view>
#include <vector>

#include "server/model/inspection_rule.h"
#include "server/storage/storage.h"

namespace kiln::server {

/// The rules of a phase as the engine applies them: highest priority first, rules of equal
/// priority in the order they were created (Ironic sorts the list by priority, stably).
Result<std::vector<Record>> loadInspectionRules(Transaction& tx,
                                                std::string_view phase = kInspectionPhaseMain);

}  // namespace kiln::server
