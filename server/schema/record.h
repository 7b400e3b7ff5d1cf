// File: server/schema/record.h
//
// The schema-driven representation shared by every API resource (nodes, ports, port groups,
// chassis, deploy templates). A resource is described once, as a table of FieldSpecs (name,
// type, microversion, flags); a Record holds one Value per field in that order. From the same
// table Kiln derives the SQL columns, the JSON rendering with microversion hiding and `fields=`
// selection, which paths a PATCH may touch, and which keys a POST may carry.
//
// JSON documents (driver_info, properties, steps, ...) are kept as compact serialised text: the
// hot read paths splice them into responses without parsing.
//
// JSON null on input follows Ironic, per field (docs/compatibility.md, "`null` in request
// bodies"): a nullable field (kNullable) stores it; kNullMeansDefault takes it as the field's
// default; kNullRefusedOnCreate / kNullRefusedOnPatch refuse it with a 400. The flags are read
// from Ironic's request schemas and from what its controllers, objects and database layer do
// with a None. A field without them keeps its type's rule: {} or [] for an object or array, a
// 400 otherwise in a POST; in a PATCH also false or "" for a boolean or string.
#pragma once

#include <bitset>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shared/core/error.h"
#include "shared/json/json_fwd.h"

namespace kiln::server {

/// The wire type of a field.
enum class FieldType : uint8_t {
  String,  ///< JSON string; stored as TEXT.
  Bool,    ///< JSON boolean; stored as INTEGER 0/1. Input also accepts "true"/"false" strings.
  Int,     ///< JSON integer; stored as INTEGER.
  Object,  ///< JSON object; stored as compact JSON TEXT.
  Array,   ///< JSON array; stored as compact JSON TEXT.
  Time,    ///< ISO-8601 timestamp string; stored as TEXT.
};

/// Field flags (bit set).
enum FieldFlag : uint32_t {
  kNullable = 1u << 0,     ///< null is a valid value.
  kCreatable = 1u << 1,    ///< may be given in a POST body.
  kPatchable = 1u << 2,    ///< may be changed by PATCH.
  kSortable = 1u << 3,     ///< may be used as sort_key.
  kComputed = 1u << 4,     ///< not stored in the resource's table (links, traits, ...).
  kMaskSecrets = 1u << 5,  ///< password-like keys are shown as "******".
  kDefaultList = 1u << 6,  ///< included in the short (non-detail) list view.
  kInternal = 1u << 7,     ///< stored but never rendered (the integer primary key).
  kNoSelect = 1u << 8,     ///< a link collection shown in full views only, not via fields=.
  /// Rendered at every version, as Ironic renders it before the microversion that introduced
  /// it (port group mode, properties, ports); fields=, POST and PATCH still need the version.
  kShownBeforeSince = 1u << 9,
  /// Hidden below its version, but fields=, sort_key, POST and PATCH take it at every version
  /// (fields= then just leaves it out), as Ironic treats port group physical_network and
  /// category.
  kWritableBeforeSince = 1u << 10,
  /// null on input means the field's default, as Ironic's code treats a null its schema takes:
  /// a POST body's null leaves the field out (a generated uuid, "", false, {}, []), also for a
  /// field a POST cannot otherwise set (a node's boot_mode and secure_boot, which Ironic's node
  /// schema lists); a PATCH to null returns the field to its default (false, "", {}, []).
  kNullMeansDefault = 1u << 11,
  /// A POST body's null for the field is a 400 naming it (nullRefusedError): Ironic answers
  /// 500 there (its object or controller code fails on None) or refuses it itself.
  kNullRefusedOnCreate = 1u << 12,
  /// The same for a PATCH that leaves the field null. Removing the field is not affected: it
  /// returns to its default (null for a nullable field).
  kNullRefusedOnPatch = 1u << 13,
};

/// One field of a resource schema.
struct FieldSpec {
  std::string_view name;
  FieldType type;
  int since;  ///< microversion minor that introduced the field (1 = always there).
  uint32_t flags;
  int max_length = 0;  ///< for strings; 0 = unlimited.

  bool has(FieldFlag f) const { return (flags & f) != 0; }
};

/// A resource schema: its name (for messages), its SQL table and its fields in column order.
/// Field 0 is always the integer primary key `id`, field 1 the `uuid`.
struct Schema {
  std::string_view resource;  ///< "Node", "Port", ... as used in error messages.
  std::string_view table;
  std::span<const FieldSpec> fields;

  /// Index of the named field, or -1.
  int indexOf(std::string_view name) const;
  const FieldSpec& operator[](size_t i) const { return fields[i]; }
  size_t size() const { return fields.size(); }
};

/// A single field value.
struct Value {
  enum class Kind : uint8_t { Null, Bool, Int, Text };
  Kind kind = Kind::Null;
  bool b = false;
  int64_t i = 0;
  std::string s;  ///< text, timestamp, or compact JSON for Object/Array fields.

  static Value null() { return {}; }
  static Value boolean(bool v) { Value x; x.kind = Kind::Bool; x.b = v; return x; }
  static Value integer(int64_t v) { Value x; x.kind = Kind::Int; x.i = v; return x; }
  static Value text(std::string v) { Value x; x.kind = Kind::Text; x.s = std::move(v); return x; }

  bool isNull() const { return kind == Kind::Null; }
  bool operator==(const Value& o) const {
    return kind == o.kind && b == o.b && i == o.i && s == o.s;
  }
};

using FieldMask = std::bitset<96>;

/// One row of a resource: one Value per schema field.
class Record {
 public:
  Record() = default;
  explicit Record(size_t fields) : values_(fields) {}

  Value& operator[](size_t i) { return values_[i]; }
  const Value& operator[](size_t i) const { return values_[i]; }
  size_t size() const { return values_.size(); }

  int64_t id() const { return values_[0].i; }
  const std::string& uuid() const { return values_[1].s; }

  /// Text of a String/Time field, or "" when null.
  const std::string& str(size_t i) const { return values_[i].s; }
  std::optional<std::string> optStr(size_t i) const {
    if (values_[i].isNull()) return std::nullopt;
    return values_[i].s;
  }
  bool flag(size_t i) const { return values_[i].kind == Value::Kind::Bool && values_[i].b; }
  void setText(size_t i, std::string v) { values_[i] = Value::text(std::move(v)); }
  void setNull(size_t i) { values_[i] = Value::null(); }
  void setBool(size_t i, bool v) { values_[i] = Value::boolean(v); }

 private:
  std::vector<Value> values_;
};

/// Converts a stored value to nlohmann JSON according to its field type (Object/Array text is
/// parsed). Does not mask secrets.
Json valueToJson(const Value& value, FieldType type);

/// Converts client JSON to a value of the given field, checking the type (bool fields also take
/// "true"/"false" strings, as Ironic does) and the maximum length. Errors name the field. null
/// is null for a nullable field, {} or [] for an object or array field, and an error otherwise
/// (the null flags above are the callers' business: recordFromBody, patchRecord).
Result<Value> valueFromJson(const Json& json, const FieldSpec& field);

/// The 400 of a null the field refuses (kNullRefusedOnCreate, kNullRefusedOnPatch): "Field `x'
/// cannot be None", the words of Ironic's objects when they refuse None.
Error nullRefusedError(const FieldSpec& field);

/// Builds a Record with the schema's defaults: null everywhere, "{}" for non-nullable objects,
/// "[]" for non-nullable arrays, false for non-nullable booleans.
Record defaultRecord(const Schema& schema);

/// The fields visible at microversion `minor` (rendered fields only: no internal ones).
FieldMask visibleFields(const Schema& schema, int minor);

/// Resolves a `fields=` list against the schema at a version. Unknown names give
/// InvalidArgument "Field(s) "x" are not valid"; names newer than the version NotAcceptable.
Result<FieldMask> selectFields(const Schema& schema, int minor,
                               const std::vector<std::string>& names);

}  // namespace kiln::server
