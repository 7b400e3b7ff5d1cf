// File: server/storage/queries/runbooks.h
//
// Runbooks (API 1.92): find one, and resolve one for a node's provision request.
// Storage-side queries of runbooks (server/model/runbook.h has the schema and the plain data):
// they take the caller's Transaction, so they run inside its atomic unit.
#pragma once

#include <string>
#include <vector>

#include "server/model/runbook.h"
#include "server/storage/storage.h"

namespace kiln::server {

/// Finds a runbook by UUID or name (Ironic's get_rpc_runbook): InvalidArgument "Expected a
/// logical name or UUID but received X." for anything else, NotFound "Runbook X could not be
/// found.".
Result<Record> findRunbook(Transaction& tx, const std::string& ident);

/// Resolves `runbookIdent` (UUID or name) for the node `nodeUuid` with traits `nodeTraits`, as
/// Ironic's NodeStatesController._handle_runbook at API version `version`:
///   - below 1.92: NotAcceptable "Request not acceptable." (the `runbook` key is too new);
///   - an identifier that is neither a UUID nor a logical name: 400; no such runbook: 404;
///   - below 1.112 the runbook's name must be one of the node's traits, else 400 "This runbook
///     has not been approved for use on this node <uuid>. Please ask an administrator to add it
///     to your node traits.";
///   - from 1.112 the runbook must have a trait (else 400 "Runbook <uuid> has no traits
///     configured. ...") and share one with the node (else 400 "This runbook has not been
///     approved for use on this node <uuid>. The node does not have any of the runbook's traits
///     [...]. ...").
/// The caller (the provision verb handler) keeps Ironic's other rules: `runbook` only with the
/// clean or service verbs ('"runbooks" is only valid when setting target provision state to any
/// of ['clean', 'service']'), and not together with clean_steps ('Please provide either
/// "clean_steps" or a runbook, but not both.') or service_steps (likewise with
/// "service_steps"); then it runs plan.steps with plan.disableRamdisk.
Result<RunbookPlan> resolveRunbookForNode(Transaction& tx, const std::string& runbookIdent,
                                          const std::string& nodeUuid,
                                          const std::vector<std::string>& nodeTraits, int version);

/// resolveRunbookForNode for a node record, reading its traits in `tx`.
Result<RunbookPlan> resolveRunbookForNode(Transaction& tx, const std::string& runbookIdent,
                                          const Record& node, int version);

}  // namespace kiln::server
