// File: server/storage/storage.h
//
// Kiln's storage seam (house-style rule 22). Every request's reads and writes go through one
// Transaction; a write transaction is all-or-nothing (commit() or, when dropped, rollback).
// Per-resource stores hang off the transaction: records of each API resource (RecordStore,
// schema-driven, see server/model/record.h) and the node traits (TraitStore).
//
// Implementations: SqliteStorage (embedded default; write transactions serialised in-process)
// and PostgresStorage (several kiln-servers on one database; write transactions run
// concurrently, PostgreSQL's row locks and constraints keep them apart). The contract tests in
// tests/server/storage run against every back end.
//
// The rule that keeps writes from losing updates on PostgreSQL, where write transactions run
// side by side: a full-row update() only for a row read with findBy()/findInto() in the same
// write transaction (that read locks the row until the transaction ends, so what is written
// back is what the row holds); every other write -- a row read by list(), in a read
// transaction or in an earlier one -- uses updateFields() with only the columns it changes,
// after checking under findBy() what it depends on. A node's reservation is taken the same way
// (NodeLock::acquire: findBy, check, write the reservation column).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "server/schema/record.h"
#include "server/model/node_event.h"
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

/// The error both back ends give a write that violates a unique column: AlreadyExists with
/// Reason::UniqueViolation and the column's name as its subject (callers turn it into the
/// resource's own message: server/api's uniqueViolation).
std::unexpected<Error> uniqueViolationError(const std::string& column);

/// Rows of one resource. Errors: uniqueViolationError() for a unique column; Unavailable with
/// Reason::DatabaseBusy when another writer is in the way (try again); Internal for database
/// failures.
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
  /// The distinct combinations of `fields` (stored fields, at least one) with how many rows
  /// hold each, ordered by the fields' values (NULL first): one GROUP BY, what a metrics scrape
  /// reads (kiln_nodes).
  virtual Result<std::vector<std::pair<std::vector<Value>, int64_t>>> countGrouped(
      std::span<const int> fields) = 0;

  /// Inserts a row; field 0 (id) is ignored and assigned. Returns the stored row.
  virtual Result<Record> insert(const Record& record) = 0;

  /// Replaces every stored field of the row with the record's id. NotFound when there is no
  /// such row. Only for a row read with findBy()/findInto() in the same write transaction (see
  /// the rule in the file comment); otherwise updateFields().
  virtual Result<void> update(const Record& record) = 0;

  /// Like update(), but writes only the stored fields set in `fields` (never the id), leaving
  /// the row's other columns as they are. A save that changes two columns then costs two
  /// columns: SQLite rewrites the index entries of every column an UPDATE sets, changed or
  /// not. With no stored field in `fields` it only checks that the row exists (NotFound).
  virtual Result<void> updateFields(const Record& record, const FieldMask& fields) = 0;

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
  /// Every trait any node has, with how many nodes have it, sorted by trait (one GROUP BY).
  virtual Result<std::vector<std::pair<std::string, int64_t>>> countAll() = 0;
};

/// A page of the node event journal (table node_events; server/storage/queries/node_events.h
/// has the queries callers use).
struct NodeEventQuery {
  std::optional<int64_t> nodeId;   ///< one node's events; unset = every node's
  int64_t afterId = 0;             ///< events with a larger id only
  std::vector<std::string> kinds;  ///< only these kinds; empty = any
  int limit = 1000;                ///< at most this many, oldest (smallest id) first; >= 1
};

/// The node event journal (server/model/node_event.h).
class NodeEventStore {
 public:
  virtual ~NodeEventStore() = default;
  /// Inserts `event` (its id is ignored) and returns the id it got.
  virtual Result<int64_t> append(const NodeEvent& event) = 0;
  /// The events matching `query`, by increasing id.
  virtual Result<std::vector<NodeEvent>> list(const NodeEventQuery& query) = 0;
  /// The largest id of any event (0 when there is none).
  virtual Result<int64_t> newestId() = 0;
  /// Deletes every event whose time sorts before `time` (same format); returns how many.
  virtual Result<int64_t> removeOlderThan(const std::string& time) = 0;
  /// Deletes the node's events beyond its newest `keep`; returns how many.
  virtual Result<int64_t> removeBeyond(int64_t nodeId, int64_t keep) = 0;
  /// The ids of nodes holding more than `count` events.
  virtual Result<std::vector<int64_t>> nodesWithMoreThan(int64_t count) = 0;
  /// Deletes every event of the node; returns how many.
  virtual Result<int64_t> removeNode(int64_t nodeId) = 0;
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
  virtual NodeEventStore& nodeEvents() = 0;
  /// Makes the writes durable. After commit() the transaction must not be used again.
  virtual Result<void> commit() = 0;

  /// Set by node event appends (server/storage/queries/node_events.h): once this transaction
  /// has committed, its storage tells its events listener (Storage::setEventsListener).
  bool appendedEvents = false;
};
using TransactionPtr = std::unique_ptr<Transaction>;

/// Opens transactions. Thread-safe.
class Storage {
 public:
  enum class Mode { Read, Write };
  virtual ~Storage() = default;
  /// Starts a transaction. A Read transaction sees one snapshot of the database. Write
  /// transactions are all-or-nothing, and a statement that fails (a unique violation, say)
  /// changes nothing and leaves the transaction usable. SQLite serialises write transactions;
  /// PostgreSQL runs them concurrently (READ COMMITTED), and a row a write transaction has read
  /// with findBy()/findInto() stays locked against other writers until it ends, so a
  /// read-check-update of one row keeps its meaning.
  virtual Result<TransactionPtr> begin(Mode mode) = 0;
  /// The schema version the store is migrated to.
  virtual int schemaVersion() const = 0;
  /// Writes a consistent copy of the whole database into the new file `path` while
  /// transactions go on (SQLite: VACUUM INTO, a read snapshot that blocks no writer).
  /// Unavailable for a back end whose server has its own tools (PostgreSQL: pg_dump).
  virtual Result<void> backupTo(const std::string& path) {
    return fail(ErrorCode::Unavailable,
                "this database is backed up with its own tools (PostgreSQL: pg_dump)");
  }

  /// `listener` runs after every committed write transaction that appended node events (on
  /// the committing thread, after the commit; it must be quick and must not throw): the event
  /// hub of server/api/node_event_hub.h learns of local events this way. Set it before
  /// transactions begin; a wrapping storage forwards it to the one it wraps.
  virtual void setEventsListener(std::function<void()> listener) {
    eventsListener_ = std::move(listener);
  }

  /// For the back ends: called after a commit of a transaction with appendedEvents.
  void eventsCommitted() const {
    if (eventsListener_) eventsListener_();
  }

 private:
  std::function<void()> eventsListener_;
};
using StoragePtr = std::unique_ptr<Storage>;

/// Opens the store named by an Ironic-style `[database] connection` URL:
/// `sqlite:///relative/path`, `sqlite:////absolute/path`, `sqlite://` (in memory), or
/// `postgresql://user:password@host:port/database?param=value` (also spelled
/// `postgresql+psycopg2://`; libpq reads the rest). Runs pending migrations. InvalidArgument
/// for an unsupported or malformed URL; messages never show a password.
Result<StoragePtr> openStorage(const std::string& connection);

/// The connection URL as logs and messages may show it: SQLite URLs as they are, any other
/// with everything after host and port hidden (kiln::maskUrl: user, password, database).
std::string displayConnection(const std::string& connection);

}  // namespace kiln::server
