// File: server/storage/sql_builder.h
//
// Builds the SQL for schema-driven record stores: the column list, list queries with filters,
// keyset pagination and ordering. Shared by the SQL back ends; placeholders are `?` (a back end
// using `$n` rewrites them). NULLs sort first in ascending order and last in descending order,
// matching SQLite's native behaviour (other dialects add NULLS FIRST/LAST). Column names are
// quoted in dialects that need it (PostgreSQL reserves some of them, such as "user").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/schema/record.h"
#include "server/storage/storage.h"

namespace kiln::server {

struct SqlQuery {
  std::string sql;
  std::vector<Value> binds;
};

struct SqlDialect {
  bool explicitNullsOrder = false;  ///< append NULLS FIRST / NULLS LAST to ORDER BY terms
  std::string likeOperator = "LIKE";  ///< case-insensitive substring operator
  bool quoteIdentifiers = false;  ///< write column names as "name"
  bool numberedPlaceholders = false;  ///< $1, $2, ... in the statements built below, not ?
  std::string insertSuffix;  ///< after INSERT ... VALUES (...), e.g. " RETURNING id"
  std::string lockSuffix;    ///< after a locking SELECT, e.g. " FOR NO KEY UPDATE"; "" = none
};

/// The fixed statements of a schema-driven store in a dialect, built once per schema.
struct StoreStatements {
  std::vector<int> stored;                ///< storedFields()
  std::vector<std::string> findBy;        ///< per field: its row by that field (one bind)
  std::vector<std::string> findByLocked;  ///< the same with the dialect's lockSuffix
  std::string insert;  ///< every stored field after id, in order
  std::string update;  ///< every stored field after id, then the id
  std::string remove;  ///< by id
  std::string exists;  ///< SELECT 1 by id
};
StoreStatements buildStoreStatements(const Schema& schema, const SqlDialect& dialect);

/// UPDATE of the stored fields set in `fields` (never the id) of one row: the SQL, whose
/// binds are `set` (filled with those fields, in order) and then the id. "" when no stored
/// field is set.
std::string buildUpdateFieldsSql(const Schema& schema, const std::vector<int>& stored,
                                 const FieldMask& fields, const SqlDialect& dialect,
                                 std::vector<int>& set);

/// A column name as the dialect writes it: `name`, or `"name"` with quoteIdentifiers.
std::string columnName(std::string_view name, const SqlDialect& dialect);

/// "id, uuid, name, ..." : the stored columns in schema order.
std::string selectColumns(const Schema& schema, const SqlDialect& dialect = SqlDialect{});

/// Indices of the stored (non-computed) fields in schema order.
std::vector<int> storedFields(const Schema& schema);

/// SELECT for a list query (with ORDER BY and LIMIT).
SqlQuery buildListQuery(const Schema& schema, const ListQuery& query, const SqlDialect& dialect);

/// SELECT COUNT(*) for filters.
SqlQuery buildCountQuery(const Schema& schema, const std::vector<ListFilter>& filters,
                         const SqlDialect& dialect);

}  // namespace kiln::server
