#include "server/api/json_patch.h"

#include <nlohmann/json.hpp>

#include "shared/core/secrets.h"
#include "shared/core/strings.h"
#include "shared/json/json_util.h"

namespace kiln::server {
namespace {

/// True when the value at the first `n` tokens of the op's path sits under a password-like key.
bool underSecretKey(const PatchOp& op, size_t n) {
  for (size_t i = 0; i < n && i < op.tokens.size(); ++i) {
    if (isSecretKey(op.tokens[i])) return true;
  }
  return false;
}

/// A value as an error message quotes it (python-jsonpatch's repr), with secrets masked by the
/// rules of shared/core/secrets.h; a value under a password-like key is masked whole. The
/// document being patched holds the stored, unmasked secrets, so nothing of it is quoted
/// otherwise.
std::string quoted(const Json& value, bool secret) {
  if (secret && !value.is_null()) return pyRepr(Json(std::string(kMaskedValue)));
  return maskedRepr(value);
}

std::string opRepr(const PatchOp& op, const Json& value) {
  std::string out = "{'op': " + pyRepr(op.op) + ", 'path': " + pyRepr(op.path);
  if (op.hasValue) out += ", 'value': " + quoted(value, underSecretKey(op, op.tokens.size()));
  return out + "}";
}

Result<std::vector<std::string>> splitPointer(const std::string& path) {
  std::vector<std::string> tokens;
  if (path.empty() || path[0] != '/') {
    return invalid("Invalid patch path '" + path + "': a path must start with '/'");
  }
  size_t pos = 1;
  while (true) {
    size_t slash = path.find('/', pos);
    std::string raw = path.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
    if (raw.empty()) {
      return invalid("Invalid patch path '" + path + "': empty path segment");
    }
    std::string tok;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '~' && i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1')) {
        tok.push_back(raw[i + 1] == '0' ? '~' : '/');
        ++i;
      } else {
        tok.push_back(raw[i]);
      }
    }
    tokens.push_back(std::move(tok));
    if (slash == std::string::npos) break;
    pos = slash + 1;
  }
  return tokens;
}

bool parseIndex(const std::string& tok, size_t& out) {
  if (tok.size() > 9 || (tok.size() > 1 && tok[0] == '0')) return false;
  const auto index = parseInt<size_t>(tok);
  if (!index) return false;
  out = *index;
  return true;
}

/// Walks to the parent container of the last token.
Result<Json*> resolveParent(Json& doc, const PatchOp& op) {
  Json* cur = &doc;
  for (size_t i = 0; i + 1 < op.tokens.size(); ++i) {
    const auto& tok = op.tokens[i];
    if (cur->is_object()) {
      auto it = cur->find(tok);
      if (it == cur->end()) {
        return invalid("member '" + tok + "' not found in " + quoted(*cur, underSecretKey(op, i)));
      }
      cur = &*it;
    } else if (cur->is_array()) {
      size_t idx = 0;
      if (!parseIndex(tok, idx)) return invalid("'" + tok + "' is not a valid sequence index");
      if (idx >= cur->size()) return invalid("index '" + tok + "' is out of bounds");
      cur = &(*cur)[idx];
    } else {
      return invalid("unable to fully resolve json pointer " + op.path + ", part " + tok);
    }
  }
  return cur;
}

Result<void> applyOne(Json& doc, const PatchOp& op, const Json& value) {
  Json* parent = KILN_TRY(resolveParent(doc, op));
  const std::string& key = op.tokens.back();
  if (op.op == "add") {
    if (parent->is_object()) {
      (*parent)[key] = value;
    } else if (parent->is_array()) {
      size_t idx = 0;
      if (key == "-") {
        parent->push_back(value);
      } else if (parseIndex(key, idx) && idx <= parent->size()) {
        parent->insert(parent->begin() + static_cast<std::ptrdiff_t>(idx), value);
      } else {
        return invalid("can't insert outside of list");
      }
    } else {
      return invalid("unable to fully resolve json pointer " + op.path + ", part " + key);
    }
  } else if (op.op == "replace") {
    if (parent->is_object()) {
      auto it = parent->find(key);
      if (it == parent->end()) return invalid("can't replace a non-existent object '" + key + "'");
      *it = value;
    } else if (parent->is_array()) {
      size_t idx = 0;
      if (!parseIndex(key, idx) || idx >= parent->size()) {
        return invalid("can't replace outside of list");
      }
      (*parent)[idx] = value;
    } else {
      return invalid("unable to fully resolve json pointer " + op.path + ", part " + key);
    }
  } else {  // remove
    if (parent->is_object()) {
      auto it = parent->find(key);
      if (it == parent->end()) return invalid("can't remove a non-existent object '" + key + "'");
      parent->erase(it);
    } else if (parent->is_array()) {
      size_t idx = 0;
      if (!parseIndex(key, idx) || idx >= parent->size()) {
        return invalid("can't remove a non-existent object '" + key + "'");
      }
      parent->erase(parent->begin() + static_cast<std::ptrdiff_t>(idx));
    } else {
      return invalid("unable to fully resolve json pointer " + op.path + ", part " + key);
    }
  }
  return {};
}

}  // namespace

Result<Patch> parsePatch(const Json& body) {
  if (!body.is_array()) {
    return invalid("Invalid patch: a JSON patch must be a list of operations, got " +
                   maskedRepr(body));
  }
  Patch patch;
  for (const auto& item : body) {
    if (!item.is_object()) {
      return invalid("Invalid patch: each operation must be an object, got " + maskedRepr(item));
    }
    for (auto it = item.begin(); it != item.end(); ++it) {
      if (it.key() != "op" && it.key() != "path" && it.key() != "value") {
        return invalid("Schema error for patch: Additional properties are not allowed ('" +
                       it.key() + "' was unexpected)");
      }
    }
    if (!item.contains("op") || !item["op"].is_string()) {
      return invalid("Schema error for patch: 'op' is a required property and must be a string");
    }
    if (!item.contains("path") || !item["path"].is_string()) {
      return invalid(
          "Schema error for patch: 'path' is a required property and must be a string");
    }
    PatchOp op;
    op.op = item["op"].get<std::string>();
    op.path = item["path"].get<std::string>();
    if (op.op != "add" && op.op != "replace" && op.op != "remove") {
      return invalid("Schema error for patch: '" + op.op +
                     "' is not one of ['add', 'replace', 'remove']");
    }
    op.tokens = KILN_TRY(splitPointer(op.path));
    op.hasValue = item.contains("value");
    if (op.op != "remove" && !op.hasValue) {
      return invalid("Invalid patch: '" + op.op + "' operation on " + op.path +
                     " requires a 'value'");
    }
    patch.values.push_back(op.hasValue ? item["value"] : Json());
    patch.ops.push_back(std::move(op));
  }
  return patch;
}

Result<void> applyPatch(Json& doc, const Patch& patch) {
  for (size_t i = 0; i < patch.ops.size(); ++i) {
    auto applied = applyOne(doc, patch.ops[i], patch.values[i]);
    if (!applied) {
      return invalid("Couldn't apply patch '" + opRepr(patch.ops[i], patch.values[i]) +
                     "'. Reason: " + applied.error().message);
    }
  }
  return {};
}

}  // namespace kiln::server
