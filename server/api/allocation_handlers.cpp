#include "server/api/allocation_handlers.h"

#include <nlohmann/json.hpp>

#include "server/api/handler_support.h"
#include "server/conductor/allocations.h"
#include "server/model/allocation.h"
#include "server/model/node.h"
#include "shared/core/secrets.h"
#include "shared/json/json_util.h"
#include "server/model/versions.h"

namespace kiln::server {
namespace {

using Mode = Storage::Mode;

const Schema& schema() { return schemaOf(Resource::Allocation); }

void renderAllocation(JsonWriter& w, const RequestContext& ctx, const Record& a,
                      const FieldMask& mask) {
  renderRecord(w, schema(), a, mask, [&](JsonWriter& out, size_t field) {
    if (field == kAllocLinks) {
      writeLinks(out, ctx.baseUrl, "allocations/" + a.uuid());
      return true;
    }
    if (field == kAllocExtra) {
      out.raw(maskUrlCredentials(a.str(kAllocExtra)));
      return true;
    }
    if (field == kAllocLastError && !a[kAllocLastError].isNull()) {
      out.string(maskUrlsInText(a.str(kAllocLastError)));
      return true;
    }
    return false;
  });
}

/// Finds an allocation by UUID or logical name, as Ironic's get_rpc_allocation.
Result<Record> findAllocation(Transaction& tx, const std::string& ident) {
  std::optional<Record> found;
  if (isUuidLike(ident)) {
    found = KILN_TRY(tx.allocations().findBy(kAllocUuid, Value::text(normalizeUuid(ident))));
  } else if (isValidLogicalName(ident)) {
    found = KILN_TRY(tx.allocations().findBy(kAllocName, Value::text(ident)));
  } else {
    return invalid("Expected a logical name or UUID but received " + ident + ".");
  }
  if (!found) return notFound("Allocation " + ident + " could not be found.");
  return std::move(*found);
}

/// The allocation bound to `node`; NotFound in Ironic's words when there is none.
Result<Record> allocationOfNode(Transaction& tx, const Record& node, const std::string& ident) {
  auto found = KILN_TRY(tx.allocations().findBy(kAllocNodeUuid, Value::text(node.uuid())));
  if (!found) return notFound("Allocation for node " + ident + " was not found");
  return std::move(*found);
}

/// A node named by a client in a request body or a filter: NotFound becomes 400, as in Ironic.
Result<Record> findReferencedNode(Transaction& tx, const RequestContext& ctx,
                                  const std::string& ident) {
  auto node = findNode(tx, ctx, ident);
  if (!node && node.error().code == ErrorCode::NotFound) return invalid(node.error().message);
  return node;
}

/// candidate_nodes as UUIDs, in the given order (Ironic's check_node_list): an identifier that
/// is neither a UUID nor a logical name, or names no node, is a 400 listing all such.
Result<std::vector<std::string>> resolveCandidates(Transaction& tx,
                                                   const std::vector<std::string>& idents) {
  std::vector<std::string> uuids, missing;
  for (const auto& ident : idents) {
    std::optional<Record> node;
    if (isUuidLike(ident)) {
      node = KILN_TRY(tx.nodes().findBy(kNodeUuid, Value::text(normalizeUuid(ident))));
    } else if (isValidLogicalName(ident)) {
      node = KILN_TRY(tx.nodes().findBy(kNodeName, Value::text(ident)));
    }
    if (node) {
      uuids.push_back(node->uuid());
    } else if (std::find(missing.begin(), missing.end(), ident) == missing.end()) {
      missing.push_back(ident);
    }
  }
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    return invalid("Nodes cannot be found: " + list);
  }
  return uuids;
}

/// Ironic's messages for a duplicate allocation name or UUID (409).
Error duplicate(const Error& error, const Record& a) {
  return uniqueViolation(error, "allocation", a, schemaOf(Resource::Allocation));
}

Result<ApiResponse> renderOne(const RequestContext& ctx, const Record& a, int status,
                              const FieldMask& mask) {
  JsonWriter w;
  renderAllocation(w, ctx, a, mask);
  return jsonResponse(status, w.take());
}

}  // namespace

Result<ApiResponse> AllocationHandlers::list(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    ListOptions opts;
    opts.collection = "allocations";
    opts.invalidSortKeys = {"extra", "candidate_nodes", "traits"};
    opts.detailSince = 1000;  // allocations have no ?detail: every field is listed
    opts.fieldsSince = ver::k52Allocation;
    opts.maxLimit = deps_.config.maxLimit;
    ListRequest list = KILN_TRY(parseListRequest(ctx, tx.allocations(), opts));
    auto& filters = list.query.filters;
    if (auto node = ctx.request.param("node")) {
      Record n = KILN_TRY(findReferencedNode(tx, ctx, *node));
      filters.push_back({ListFilter::Op::Equals, kAllocNodeUuid, Value::text(n.uuid()), {}});
    }
    if (auto rc = ctx.request.param("resource_class")) {
      filters.push_back({ListFilter::Op::Equals, kAllocResourceClass, Value::text(*rc), {}});
    }
    if (auto state = ctx.request.param("state")) {
      filters.push_back({ListFilter::Op::Equals, kAllocState, Value::text(*state), {}});
    }
    if (auto owner = ctx.request.param("owner")) {
      KILN_TRY_VOID(requireVersion(ctx, ver::k60AllocationOwner));
      filters.push_back({ListFilter::Op::Equals, kAllocOwner, Value::text(*owner), {}});
    }
    auto rows = KILN_TRY(tx.allocations().list(list.query));
    return jsonResponse(
        200, renderCollection(ctx, opts, list, rows, [&](JsonWriter& w, const Record& a) {
          renderAllocation(w, ctx, a, list.mask);
        }));
  });
}

Result<ApiResponse> AllocationHandlers::show(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    Record a = KILN_TRY(findAllocation(tx, ctx.param(0)));
    return renderOne(ctx, a, 200, KILN_TRY(showFields(ctx, schema())));
  });
}

Result<ApiResponse> AllocationHandlers::create(RequestContext& ctx) {
  Json body = KILN_TRY(parseJsonBody(ctx));
  AllocationRequest req = KILN_TRY(parseAllocationRequest(body, ctx.version));
  Record& a = req.allocation;
  bool backfill = false;
  auto response =
      inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
        std::optional<Record> node;
        if (req.node) node = KILN_TRY(findReferencedNode(tx, ctx, *req.node));
        if (a[kAllocResourceClass].isNull()) {
          if (!node) return invalid("The resource_class field is mandatory when not backfilling");
          a[kAllocResourceClass] = (*node)[kNodeResourceClass];
        }
        if (!req.candidates.empty()) {
          a.setText(kAllocCandidateNodes,
                    dumpJson(Json(KILN_TRY(resolveCandidates(tx, req.candidates)))));
        }
        // A backfill without a UUID takes the instance's, so the instance keeps its identity.
        if (a[kAllocUuid].isNull() && node && !(*node)[kNodeInstanceUuid].isNull()) {
          a.setText(kAllocUuid, node->str(kNodeInstanceUuid));
        }
        KILN_TRY_VOID(assignUuid(a));
        const std::string now = timestamp(deps_);
        a.setText(kAllocCreatedAt, now);
        auto inserted = tx.allocations().insert(a);
        if (!inserted) return std::unexpected(duplicate(inserted.error(), a));
        a = std::move(*inserted);
        if (node) {
          KILN_TRY_VOID(backfillAllocation(tx, a, *node, now));
          backfill = true;
        }
        ApiResponse r = KILN_TRY(renderOne(ctx, a, 201, visibleFields(schema(), ctx.version)));
        setLocation(r, ctx.baseUrl, "allocations/" + a.uuid());
        return r;
      });
  if (response && !backfill) deps_.conductor.allocate(a.uuid());
  if (response) {
    deps_.log.info("allocation created", {{"allocation", a.uuid()}, {"state", a.str(kAllocState)}});
  }
  return response;
}

Result<ApiResponse> AllocationHandlers::update(RequestContext& ctx) {
  if (!ctx.atLeast(ver::k57AllocationUpdate)) {
    return fail(ErrorCode::MethodNotAllowed, "The API version does not allow updating allocations");
  }
  Json body = KILN_TRY(parseJsonBody(ctx));
  Patch patch = KILN_TRY(parsePatch(body));
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    Record before = KILN_TRY(findAllocation(tx, ctx.param(0)));
    Record a = KILN_TRY(patchRecord(schema(), before, patch, ctx.version));
    if (!a[kAllocName].isNull() && !isValidLogicalName(a.str(kAllocName))) {
      return invalid("Cannot update allocation with invalid name '" + a.str(kAllocName) + "'");
    }
    a.setText(kAllocUpdatedAt, timestamp(deps_));
    if (auto updated = tx.allocations().update(a); !updated) {
      return std::unexpected(duplicate(updated.error(), a));
    }
    return renderOne(ctx, a, 200, visibleFields(schema(), ctx.version));
  });
}

Result<ApiResponse> AllocationHandlers::remove(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    Record a = KILN_TRY(findAllocation(tx, ctx.param(0)));
    std::optional<Record> node;
    if (!a[kAllocNodeUuid].isNull()) {
      node = KILN_TRY(tx.nodes().findBy(kNodeUuid, a[kAllocNodeUuid]));
      if (node) KILN_TRY_VOID(checkDeallocation(*node, a));
    }
    KILN_TRY_VOID(releaseAllocation(tx, a, timestamp(deps_), node ? &*node : nullptr));
    deps_.log.info("allocation deleted", {{"allocation", a.uuid()}});
    return emptyResponse(204);
  });
}

Result<ApiResponse> AllocationHandlers::showForNode(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Read, [&](Transaction& tx) -> Result<ApiResponse> {
    Record node = KILN_TRY(findNode(tx, ctx, ctx.param(0)));
    Record a = KILN_TRY(allocationOfNode(tx, node, ctx.param(0)));
    return renderOne(ctx, a, 200, KILN_TRY(showFields(ctx, schema())));
  });
}

Result<ApiResponse> AllocationHandlers::removeForNode(RequestContext& ctx) {
  return inTransaction(deps_.storage, Mode::Write, [&](Transaction& tx) -> Result<ApiResponse> {
    Record node = KILN_TRY(findNode(tx, ctx, ctx.param(0)));
    Record a = KILN_TRY(allocationOfNode(tx, node, ctx.param(0)));
    KILN_TRY_VOID(checkDeallocation(node, a));
    KILN_TRY_VOID(releaseAllocation(tx, a, timestamp(deps_), &node));
    deps_.log.info("allocation deleted", {{"allocation", a.uuid()}, {"node", node.uuid()}});
    return emptyResponse(204);
  });
}

}  // namespace kiln::server
