// File: server/api/handler_support.h
//
// Small helpers the handler files share: running a handler body inside a transaction, and
// looking up a node by the identifier rules of the API version.
#pragma once

#include <functional>
#include <optional>

#include <utility>

#include "server/api/api_service.h"
#include "server/api/common.h"
#include "server/model/node.h"
#include "shared/core/uuid.h"

namespace kiln::server {

/// Runs `body(tx)` in a transaction; a write transaction commits when `body` succeeds and
/// rolls back otherwise.
template <typename F>
Result<ApiResponse> inTransaction(Storage& storage, Storage::Mode mode, F&& body) {
  auto tx = KILN_TRY(storage.begin(mode));
  Result<ApiResponse> result = body(*tx);
  if (result && mode == Storage::Mode::Write) {
    KILN_TRY_VOID(tx->commit());
  }
  return result;
}

/// Finds a node by UUID, or (API >= 1.5) by name. A non-UUID that is not a valid name is 400
/// "Expected a logical name or UUID but received X."; below 1.5 names are not looked up.
Result<Record> findNode(Transaction& tx, const RequestContext& ctx, const std::string& ident);
/// Like findNode(), into `out` (reusing its strings' capacity).
Result<void> findNodeInto(Transaction& tx, const RequestContext& ctx, const std::string& ident,
                          Record& out);

/// Timestamp for created_at / updated_at.
inline std::string timestamp(const ApiDeps& deps) { return formatIsoTime(deps.clock.now()); }

/// Words a column's unique violation itself; nullopt leaves it to uniqueViolation's generic text.
using UniqueWording = std::function<std::optional<std::string>(std::string_view column)>;

/// Turns a unique-constraint failure (Reason::UniqueViolation, the column as subject) on
/// `record` of `resource` ("node", "allocation", ...) into Ironic's 409 message ("A node with
/// name X already exists.", "An allocation with UUID ..."); `special` may word some columns
/// itself. Passes other errors through.
Error uniqueViolation(const Error& error, std::string_view resource, const Record& record,
                      const Schema& schema, const UniqueWording& special = {});

}  // namespace kiln::server
