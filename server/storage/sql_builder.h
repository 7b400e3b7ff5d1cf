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

#include "server/model/record.h"
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
};

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
