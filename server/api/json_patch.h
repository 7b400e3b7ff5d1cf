// File: server/api/json_patch.h
//
// RFC 6902 JSON Patch as Ironic accepts it: a list of {"op", "path", "value"} with op in
// add | replace | remove, applied in order to a document; the whole patch is atomic (callers
// validate the result before storing anything). Error texts follow python-jsonpatch, which
// Ironic surfaces verbatim: "Couldn't apply patch '{'op': 'remove', 'path': '/extra/x'}'.
// Reason: can't remove a non-existent object 'x'". Values and documents quoted in them are
// masked (shared/core/secrets.h): the document being patched holds the stored secrets.
#pragma once

#include <string>
#include <vector>

#include "shared/core/error.h"
#include "shared/json/json_fwd.h"
#include "shared/json/json_util.h"

namespace kiln::server {

struct PatchOp {
  std::string op;    ///< add | replace | remove
  std::string path;  ///< "/driver_info/ipmi_address"
  std::vector<std::string> tokens;  ///< decoded path segments (RFC 6901 ~0 ~1)
  bool hasValue = false;
};

/// A parsed patch: the ops plus their values (kept in a JSON array, same order).
struct Patch {
  std::vector<PatchOp> ops;
  std::vector<Json> values;  ///< values[i] belongs to ops[i] (null when absent)
};

/// Validates the body of a PATCH request. InvalidArgument for anything but a list of objects
/// with a string `path` starting with "/", `op` one of add/replace/remove, `value` for add and
/// replace, and no other keys.
Result<Patch> parsePatch(const Json& body);

/// Applies the patch to `doc` in order. On error `doc` may be partly modified (callers work on
/// a copy) and the error is InvalidArgument with python-jsonpatch's wording.
Result<void> applyPatch(Json& doc, const Patch& patch);

}  // namespace kiln::server
