// File: server/storage/storage.h
//
// Kiln's storage seam (house-style rule 22). Every request's reads and writes go through one
// Transaction; a write transaction is all-or-nothing (commit() or, when dropped, rollback).
// Per-resource stores hang off the transaction: records of each API resource (RecordStore,
// schema-driven, see server/model/record.h) and the node traits (TraitStore).
//
// Implementations: SqliteStorage (embedded default). A PostgreSQL store implements the same
// interfaces; the contract tests in tests/server/storage run against every back end.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "server/model/record.h"
#include "server/model/resources.h"
#include "shared/core/error.h"

namespace kiln::server {

/// One condition of a list query. Conditions are AND-ed.
struct ListFilter {
  enum class Op {
    Equals,        ///< field = value
    IsNull,        ///< field IS NULL
    IsNotNull,     ///< field IS NOT NULL
    Contains,      ///< field contains `value` as a substring (case-sensitive)
    TraitsAll,     ///< node has every trait in `values`            (nodes only)
    TraitsAny,     ///< node has at least one trait in `values`     (nodes only)
    NotTraitsAll,  ///< node lacks at least one trait in `values`   (nodes only)
    NotTraitsAny,  ///< node has none of the traits in `values`     (nodes only)
    In,            ///< field is one of `values` (text fields)
    EitherEquals,  ///< field = value OR field2 = value
  };
  Op op = Op::Equals;
  int field = 0;
  Value value;
  std::vector<std::string> values;
  int field2 = 0;  ///< the second field of EitherEquals
};

/// A keyset-paginated list request. Results are ordered by (sort field, id) in `descending`
/// direction, starting after `marker` when given.
struct ListQuery {
  std::vector<ListFilter> filters;
  int sortField = 0;
  bool descending = false;
  std::optional<Record> marker;
  int limit = 1000;  ///< 0 = no limit
};

/// Rows of one resource. Errors: AlreadyExists with the violated unique field's name as the
/// message (callers turn it into the resource's own message); Internal for database failures.
class RecordStore {
 public:
  virtual ~RecordStore() = default;

  /// The schema this store holds.
  virtual const Schema& schema() const = 0;

  /// The row whose `field` equals `value` (a unique field: id, uuid, name, address), if any.
  Result<std::optional<Record>> findBy(int field, const Value& value) {
    Record out;
    if (!KILN_TRY(findInto(field, value, out))) return std::optional<Record>();
    return std::optional<Record>(std::move(out));
  }

  /// Like findBy(), written over `out` (reusing its strings' capacity); false if there is no
  /// such row, and `out` is then unspecified.
  virtual Result<bool> findInto(int field, const Value& value, Record& out) = 0;

  /// Rows matching the query.
  Result<std::vector<Record>> list(const ListQuery& query) {
    std::vector<Record> out;
    KILN_TRY_VOID(listInto(query, out));
    return out;
  }

  /// Rows matching the query, written over `out` (resized to the number of rows). Records
  /// already in `out` are reused with their strings' capacity, so a caller that keeps `out`
  /// across requests (the node list pages) reads rows without allocating.
  virtual Result<void> listInto(const ListQuery& query, std::vector<Record>& out) = 0;

  /// Number of rows matching the filters.
  virtual Result<int64_t> count(const std::vector<ListFilter>& filters) = 0;
  /// The distinct values of `field` (a stored field) with how many rows hold each, the largest
  /// count first (ties by value).
  virtual Result<std::vector<std::pair<Value, int64_t>>> countByValue(int field) = 0;

  /// Inserts a row; field 0 (id) is ignored and assigned. Returns the stored row.
  virtual Result<Record> insert(const Record& record) = 0;

  /// Replaces every stored field of the row with the record's id.
  virtual Result<void> update(const Record& record) = 0;

  /// Deletes the row with this id; NotFound if there is none.
  virtual Result<void> remove(int64_t id) = 0;

  /// Deletes every row whose `field` equals `value`; returns how many.
  virtual Result<int64_t> removeWhere(int field, const Value& value) = 0;
};

/// The traits of nodes (node traits spec: table node_traits(node_id, trait)).
class TraitStore {
 public:
  virtual ~TraitStore() = default;
  /// The node's traits, sorted.
  virtual Result<std::vector<std::string>> get(int64_t nodeId) = 0;
  /// Traits of several nodes at once (for list pages), keyed by node id.
  virtual Result<std::unordered_map<int64_t, std::vector<std::string>>> getMany(
      std::span<const int64_t> nodeIds) = 0;
  /// Replaces the node's traits with `traits` (already validated and de-duplicated).
  virtual Result<void> set(int64_t nodeId, std::span<const std::string> traits) = 0;
  /// Adds one trait (no-op if present).
  virtual Result<void> add(int64_t nodeId, const std::string& trait) = 0;
  /// Removes one trait; false if the node did not have it.
  virtual Result<bool> remove(int64_t nodeId, const std::string& trait) = 0;
  /// Removes all of a node's traits.
  virtual Result<void> clear(int64_t nodeId) = 0;
};

/// A unit of work. Not thread-safe: one thread uses a transaction at a time.
class Transaction {
 public:
  virtual ~Transaction() = default;
  virtual RecordStore& records(Resource resource) = 0;
  RecordStore& nodes() { return records(Resource::Node); }
  RecordStore& ports() { return records(Resource::Port); }
  RecordStore& portgroups() { return records(Resource::Portgroup); }
  RecordStore& chassis() { return records(Resource::Chassis); }
  RecordStore& deployTemplates() { return records(Resource::DeployTemplate); }
  RecordStore& allocations() { return records(Resource::Allocation); }
  RecordStore& volumeConnectors() { return records(Resource::VolumeConnector); }
  RecordStore& volumeTargets() { return records(Resource::VolumeTarget); }
  virtual TraitStore& traits() = 0;
  /// Makes the writes durable. After commit() the transaction must not be used again.
  virtual Result<void> commit() = 0;
};
using TransactionPtr = std::unique_ptr<Transaction>;

/// Opens transactions. Thread-safe.
class Storage {
 public:
  enum class Mode { Read, Write };
  virtual ~Storage() = default;
  /// Starts a transaction. Write transactions are serialised against each other.
  virtual Result<TransactionPtr> begin(Mode mode) = 0;
  /// The schema version the store is migrated to.
  virtual int schemaVersion() const = 0;
};
using StoragePtr = std::unique_ptr<Storage>;

/// Opens the store named by an Ironic-style `[database] connection` URL:
/// `sqlite:///relative/path`, `sqlite:////absolute/path`, `sqlite://` (in memory).
/// Runs pending migrations. InvalidArgument for an unsupported URL.
Result<StoragePtr> openStorage(const std::string& connection);

}  // namespace kiln::server
