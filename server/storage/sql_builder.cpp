#include "server/storage/sql_builder.h"

namespace kiln::server {
namespace {

void appendPlaceholders(std::string& sql, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    sql += i ? ",?" : "?";
  }
}

/// "<expr> IN (?,...)"; an empty list matches nothing (SQLite accepts "IN ()", PostgreSQL does
/// not).
void appendIn(std::string& sql, const std::string& expr, size_t n) {
  if (n == 0) {
    sql += "1 = 0";
    return;
  }
  sql += expr + " IN (";
  appendPlaceholders(sql, n);
  sql += ")";
}

std::string escapeLike(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '%' || c == '_' || c == '\\') {
      out.push_back('\\');
    }
    out.push_back(c);
  }
  return out;
}

void appendWhere(const Schema& schema, const std::vector<ListFilter>& filters,
                 const SqlDialect& dialect, std::string& sql, std::vector<Value>& binds,
                 bool& hasWhere) {
  const std::string table(schema.table);
  for (const auto& f : filters) {
    sql += hasWhere ? " AND " : " WHERE ";
    hasWhere = true;
    const std::string col = columnName(schema[f.field].name, dialect);
    const std::string traitSubquery =
        "(SELECT COUNT(*) FROM node_traits t WHERE t.node_id = " + table + ".id AND ";
    switch (f.op) {
      case ListFilter::Op::Equals:
        sql += col + " = ?";
        binds.push_back(f.value);
        break;
      case ListFilter::Op::EitherEquals:
        sql += "(" + col + " = ? OR " + columnName(schema[f.field2].name, dialect) + " = ?)";
        binds.push_back(f.value);
        binds.push_back(f.value);
        break;
      case ListFilter::Op::IsNull: sql += col + " IS NULL"; break;
      case ListFilter::Op::IsNotNull: sql += col + " IS NOT NULL"; break;
      case ListFilter::Op::Contains:
        sql += col + " " + dialect.likeOperator + " ? ESCAPE '\\'";
        binds.push_back(Value::text("%" + escapeLike(f.value.s) + "%"));
        break;
      case ListFilter::Op::In:
        appendIn(sql, col, f.values.size());
        for (const auto& v : f.values) binds.push_back(Value::text(v));
        break;
      case ListFilter::Op::TraitsAll:
      case ListFilter::Op::NotTraitsAll:
        sql += traitSubquery;
        appendIn(sql, "t.trait", f.values.size());
        sql += f.op == ListFilter::Op::TraitsAll ? ") = ?" : ") < ?";
        for (const auto& v : f.values) binds.push_back(Value::text(v));
        binds.push_back(Value::integer(static_cast<int64_t>(f.values.size())));
        break;
      case ListFilter::Op::TraitsAny:
      case ListFilter::Op::NotTraitsAny:
        sql += traitSubquery;
        appendIn(sql, "t.trait", f.values.size());
        sql += f.op == ListFilter::Op::TraitsAny ? ") > 0" : ") = 0";
        for (const auto& v : f.values) binds.push_back(Value::text(v));
        break;
    }
  }
}

}  // namespace

std::string columnName(std::string_view name, const SqlDialect& dialect) {
  if (!dialect.quoteIdentifiers) return std::string(name);
  std::string out;
  out.reserve(name.size() + 2);
  out += '"';
  out += name;
  out += '"';
  return out;
}

namespace {

std::string placeholder(size_t n, const SqlDialect& dialect) {
  return dialect.numberedPlaceholders ? "$" + std::to_string(n) : "?";
}

}  // namespace

StoreStatements buildStoreStatements(const Schema& schema, const SqlDialect& dialect) {
  StoreStatements s;
  s.stored = storedFields(schema);
  const std::string table(schema.table);
  const std::string select = "SELECT " + selectColumns(schema, dialect) + " FROM " + table + " WHERE ";
  for (size_t i = 0; i < schema.size(); ++i) {
    s.findBy.push_back(select + columnName(schema[i].name, dialect) + " = " +
                       placeholder(1, dialect) + " LIMIT 1");
    s.findByLocked.push_back(s.findBy.back() + dialect.lockSuffix);
  }
  std::string cols, marks, sets;
  for (size_t k = 1; k < s.stored.size(); ++k) {
    const std::string name = columnName(schema[s.stored[k]].name, dialect);
    const std::string mark = placeholder(k, dialect);
    cols += (k > 1 ? ", " : "") + name;
    marks += (k > 1 ? ", " : "") + mark;
    sets += (k > 1 ? ", " : "") + name + " = " + mark;
  }
  const std::string idMark = placeholder(s.stored.size(), dialect);
  s.insert = "INSERT INTO " + table + " (" + cols + ") VALUES (" + marks + ")" + dialect.insertSuffix;
  s.update = "UPDATE " + table + " SET " + sets + " WHERE id = " + idMark;
  s.remove = "DELETE FROM " + table + " WHERE id = " + placeholder(1, dialect);
  s.exists = "SELECT 1 FROM " + table + " WHERE id = " + placeholder(1, dialect);
  return s;
}

std::string buildUpdateFieldsSql(const Schema& schema, const std::vector<int>& stored,
                                 const FieldMask& fields, const SqlDialect& dialect,
                                 std::vector<int>& set) {
  set.clear();
  std::string sql = "UPDATE " + std::string(schema.table) + " SET ";
  for (size_t k = 1; k < stored.size(); ++k) {
    if (!fields.test(static_cast<size_t>(stored[k]))) continue;
    set.push_back(stored[k]);
    sql += std::string(set.size() > 1 ? ", " : "") + columnName(schema[stored[k]].name, dialect) +
           " = " + placeholder(set.size(), dialect);
  }
  if (set.empty()) return {};
  return sql + " WHERE id = " + placeholder(set.size() + 1, dialect);
}

std::vector<int> storedFields(const Schema& schema) {
  std::vector<int> out;
  for (size_t i = 0; i < schema.size(); ++i) {
    if (!schema[i].has(kComputed)) {
      out.push_back(static_cast<int>(i));
    }
  }
  return out;
}

std::string selectColumns(const Schema& schema, const SqlDialect& dialect) {
  std::string cols;
  for (int i : storedFields(schema)) {
    if (!cols.empty()) cols += ", ";
    cols += columnName(schema[i].name, dialect);
  }
  return cols;
}

SqlQuery buildListQuery(const Schema& schema, const ListQuery& query, const SqlDialect& dialect) {
  SqlQuery q;
  q.sql = "SELECT " + selectColumns(schema, dialect) + " FROM " + std::string(schema.table);
  bool hasWhere = false;
  appendWhere(schema, query.filters, dialect, q.sql, q.binds, hasWhere);

  const std::string col = columnName(schema[query.sortField].name, dialect);
  const bool byId = query.sortField == 0;
  if (query.marker) {
    const Value& mv = (*query.marker)[query.sortField];
    const Value mid = Value::integer(query.marker->id());
    q.sql += hasWhere ? " AND " : " WHERE ";
    if (byId) {
      q.sql += query.descending ? "id < ?" : "id > ?";
      q.binds.push_back(mid);
    } else if (!query.descending) {
      // ASC, NULLs first.
      if (mv.isNull()) {
        q.sql += "((" + col + " IS NULL AND id > ?) OR " + col + " IS NOT NULL)";
        q.binds.push_back(mid);
      } else {
        q.sql += "(" + col + " > ? OR (" + col + " = ? AND id > ?))";
        q.binds.push_back(mv);
        q.binds.push_back(mv);
        q.binds.push_back(mid);
      }
    } else {
      // DESC, NULLs last.
      if (mv.isNull()) {
        q.sql += "(" + col + " IS NULL AND id < ?)";
        q.binds.push_back(mid);
      } else {
        q.sql += "(" + col + " < ? OR (" + col + " = ? AND id < ?) OR " + col + " IS NULL)";
        q.binds.push_back(mv);
        q.binds.push_back(mv);
        q.binds.push_back(mid);
      }
    }
  }
  const char* dir = query.descending ? " DESC" : " ASC";
  q.sql += " ORDER BY ";
  if (!byId) {
    q.sql += col + dir;
    if (dialect.explicitNullsOrder) {
      q.sql += query.descending ? " NULLS LAST" : " NULLS FIRST";
    }
    q.sql += ", ";
  }
  q.sql += std::string("id") + dir;
  if (query.limit > 0) {
    q.sql += " LIMIT ?";
    q.binds.push_back(Value::integer(query.limit));
  }
  return q;
}

SqlQuery buildCountQuery(const Schema& schema, const std::vector<ListFilter>& filters,
                         const SqlDialect& dialect) {
  SqlQuery q;
  q.sql = "SELECT COUNT(*) FROM " + std::string(schema.table);
  bool hasWhere = false;
  appendWhere(schema, filters, dialect, q.sql, q.binds, hasWhere);
  return q;
}

}  // namespace kiln::server

namespace kiln::server {

std::unexpected<Error> uniqueViolationError(const std::string& column) {
  return fail(ErrorCode::AlreadyExists, Reason::UniqueViolation,
              "a row with this " + column + " already exists", column);
}

}  // namespace kiln::server
