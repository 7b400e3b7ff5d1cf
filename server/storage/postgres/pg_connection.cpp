#include "server/storage/postgres/pg_connection.h"

// pkg-config's libpq flags put its directory on the include path; Debian's is also reachable
// as postgresql/.
#if __has_include(<libpq-fe.h>)
#include <libpq-fe.h>
#else
#include <postgresql/libpq-fe.h>
#endif

#include <algorithm>
#include <cstring>

#include "server/model/resources.h"
#include "server/storage/storage.h"
#include "shared/core/secrets.h"
#include "shared/core/strings.h"

namespace kiln::server::postgres {
namespace {

void ignoreNotice(void*, const char*) {}

/// More distinct statements than this on one connection (list queries with many filter
/// combinations) and its prepared statements are dropped and prepared again as needed.
constexpr size_t kMaxPreparedStatements = 512;

/// libpq's messages end in a newline (and sometimes a space).
std::string trimmed(std::string_view text) { return std::string(trimEnd(text, " \n")); }

int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percentDecoded(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hexDigit(text[i + 1]) >= 0 &&
        hexDigit(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hexDigit(text[i + 1]) * 16 + hexDigit(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

void addSecret(PgUrl& url, std::string_view secret) {
  if (secret.empty()) return;
  for (const std::string& s : {std::string(secret), percentDecoded(secret)}) {
    if (!s.empty() && std::find(url.secrets.begin(), url.secrets.end(), s) == url.secrets.end()) {
      url.secrets.push_back(s);
    }
  }
}

void replaceAll(std::string& text, std::string_view what, std::string_view with) {
  if (what.empty()) return;
  for (size_t pos = text.find(what); pos != std::string::npos;
       pos = text.find(what, pos + with.size())) {
    text.replace(pos, what.size(), with);
  }
}

/// The column a unique violation names, as SQLite's "UNIQUE constraint failed: t.a, t.b" gives
/// the last one ("b"). Read from the constraint's name, which does not depend on the server's
/// language: PostgreSQL names UNIQUE (a, b) "<table>_a_b_key", and the migrations name their
/// unique indexes "<table>_<column>"; the longest field name of the table that ends it wins
/// ("nodes_instance_uuid_key" is instance_uuid, not uuid).
std::string uniqueColumn(const PGresult* result) {
  const char* table = PQresultErrorField(result, PG_DIAG_TABLE_NAME);
  const char* constraint = PQresultErrorField(result, PG_DIAG_CONSTRAINT_NAME);
  if (table && constraint) {
    const std::string_view name(constraint);
    std::string_view best;
    for (size_t r = 0; r < kResourceCount; ++r) {
      const Schema& schema = schemaOf(static_cast<Resource>(r));
      if (schema.table != table) continue;
      for (const FieldSpec& field : schema.fields) {
        const std::string column = "_" + std::string(field.name);
        if ((name.ends_with(column + "_key") || name.ends_with(column)) &&
            field.name.size() > best.size()) {
          best = field.name;
        }
      }
    }
    if (!best.empty()) return std::string(best);
  }
  // Otherwise the last column of DETAIL's "Key (a, b)=(x, y) already exists." (in English).
  if (const char* detail = PQresultErrorField(result, PG_DIAG_MESSAGE_DETAIL)) {
    const std::string_view d(detail);
    const size_t open = d.find("Key (");
    const size_t close = open == std::string_view::npos ? open : d.find(")=(", open);
    if (close != std::string_view::npos) {
      std::string_view columns = d.substr(open + 5, close - open - 5);
      if (const size_t comma = columns.rfind(", "); comma != std::string_view::npos) {
        columns.remove_prefix(comma + 2);
      }
      if (columns.size() >= 2 && columns.front() == '"' && columns.back() == '"') {
        columns = columns.substr(1, columns.size() - 2);
      }
      if (!columns.empty()) return std::string(columns);
    }
  }
  return constraint ? constraint : "unique";
}

}  // namespace

std::string PgUrl::scrub(std::string_view text) const {
  std::string out(text);
  replaceAll(out, conninfo, display);
  for (const std::string& secret : secrets) {
    replaceAll(out, secret, kMaskedValue);
  }
  return out;
}

Result<PgUrl> parsePgUrl(const std::string& url) {
  PgUrl out;
  constexpr std::string_view kSqlAlchemy = "postgresql+psycopg2://";
  out.conninfo =
      url.rfind(kSqlAlchemy, 0) == 0 ? "postgresql://" + url.substr(kSqlAlchemy.size()) : url;
  out.display = maskUrl(url);
  // The password of "scheme://user:password@host": libpq ends the user part at the first '@'
  // before any '/'.
  if (const size_t sep = out.conninfo.find("://"); sep != std::string::npos) {
    const std::string_view rest = std::string_view(out.conninfo).substr(sep + 3);
    const size_t end = rest.find_first_of("@/");
    if (end != std::string_view::npos && rest[end] == '@') {
      const std::string_view userinfo = rest.substr(0, end);
      if (const size_t colon = userinfo.find(':'); colon != std::string_view::npos) {
        addSecret(out, userinfo.substr(colon + 1));
      }
    }
    // ...and of "?password=...".
    if (const size_t q = rest.find('?'); q != std::string_view::npos) {
      std::string_view query = rest.substr(q + 1);
      while (!query.empty()) {
        const size_t amp = query.find('&');
        const std::string_view param = query.substr(0, amp);
        if (param.rfind("password=", 0) == 0) addSecret(out, param.substr(9));
        if (amp == std::string_view::npos) break;
        query.remove_prefix(amp + 1);
      }
    }
  }
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(out.conninfo.c_str(), &error);
  if (!options) {
    const std::string reason = error ? trimmed(error) : "out of memory";
    PQfreemem(error);
    return invalid("[database] connection: malformed PostgreSQL URL " + out.display + ": " +
                   out.scrub(reason));
  }
  for (const PQconninfoOption* o = options; o->keyword; ++o) {
    if (o->val && std::strcmp(o->keyword, "password") == 0) addSecret(out, o->val);
  }
  PQconninfoFree(options);
  return out;
}

// ---- PgResult ----------------------------------------------------------------------------------

PgResult::~PgResult() {
  if (result_) PQclear(result_);
}

PgResult& PgResult::operator=(PgResult&& other) noexcept {
  if (this != &other) {
    if (result_) PQclear(result_);
    result_ = other.result_;
    other.result_ = nullptr;
  }
  return *this;
}

int PgResult::rows() const { return result_ ? PQntuples(result_) : 0; }

bool PgResult::isNull(int row, int col) const { return PQgetisnull(result_, row, col) != 0; }

std::string_view PgResult::text(int row, int col) const {
  return std::string_view(PQgetvalue(result_, row, col),
                          static_cast<size_t>(PQgetlength(result_, row, col)));
}

int64_t PgResult::integer(int row, int col) const {
  return parseInt<int64_t>(text(row, col)).value_or(0);
}

int64_t PgResult::affected() const {
  return parseInt<int64_t>(result_ ? PQcmdTuples(result_) : "").value_or(0);
}

std::string_view PgResult::command() const { return result_ ? PQcmdStatus(result_) : ""; }

void PgResult::read(int row, int col, FieldType type, Value& out) const {
  out.b = false;
  out.i = 0;
  if (isNull(row, col)) {
    out.kind = Value::Kind::Null;
    out.s.clear();
    return;
  }
  if (type == FieldType::Bool) {
    // BOOLEAN columns read as "t"/"f".
    const std::string_view t = text(row, col);
    out.kind = Value::Kind::Bool;
    out.b = !(t == "f" || t == "0" || t == "false");
    out.s.clear();
    return;
  }
  if (type == FieldType::Int) {
    out.kind = Value::Kind::Int;
    out.i = integer(row, col);
    out.s.clear();
    return;
  }
  out.kind = Value::Kind::Text;
  const std::string_view t = text(row, col);
  out.s.assign(t.data(), t.size());
}

// ---- PgConnection ------------------------------------------------------------------------------

Result<std::unique_ptr<PgConnection>> PgConnection::open(const PgUrl& url) {
  // Keywords are read in order and a later one wins: the URL (expanded from dbname) may set its
  // own connect_timeout and application_name; the client encoding is always UTF-8.
  const char* const keywords[] = {"connect_timeout", "application_name", "dbname",
                                  "client_encoding", nullptr};
  const char* const values[] = {"10", "kiln-server", url.conninfo.c_str(), "UTF8", nullptr};
  PGconn* conn = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
  if (!conn) {
    return fail(ErrorCode::Unavailable,
                "cannot connect to PostgreSQL database " + url.display + ": out of memory");
  }
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string reason = url.scrub(trimmed(PQerrorMessage(conn)));
    PQfinish(conn);
    return fail(ErrorCode::Unavailable,
                "cannot connect to PostgreSQL database " + url.display + ": " + reason);
  }
  // NOTICEs ("relation ... already exists, skipping") would go to stderr.
  PQsetNoticeProcessor(conn, ignoreNotice, nullptr);
  return std::unique_ptr<PgConnection>(new PgConnection(conn, url));
}

PgConnection::~PgConnection() { PQfinish(conn_); }

bool PgConnection::healthy() const { return PQstatus(conn_) == CONNECTION_OK; }

bool PgConnection::idle() const { return PQtransactionStatus(conn_) == PQTRANS_IDLE; }

bool PgConnection::reconnect() {
  prepared_.clear();
  PQreset(conn_);
  return healthy();
}

Result<PgResult> PgConnection::check(PGresult* raw) {
  if (!raw) {
    return fail(ErrorCode::Unavailable, "lost the connection to PostgreSQL database " +
                                            url_.display + ": " +
                                            url_.scrub(trimmed(PQerrorMessage(conn_))));
  }
  PgResult result(raw);
  const ExecStatusType status = PQresultStatus(raw);
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY) {
    return result;
  }
  const char* state = PQresultErrorField(raw, PG_DIAG_SQLSTATE);
  const std::string_view sqlstate = state ? state : "";
  const char* primary = PQresultErrorField(raw, PG_DIAG_MESSAGE_PRIMARY);
  const std::string message = url_.scrub(primary ? primary : trimmed(PQerrorMessage(conn_)));
  if (sqlstate == "23505") {  // unique_violation
    return uniqueViolationError(uniqueColumn(raw));
  }
  if (sqlstate == "40P01" || sqlstate == "40001" || sqlstate == "55P03") {
    // deadlock_detected, serialization_failure, lock_not_available: like SQLITE_BUSY.
    return fail(ErrorCode::Unavailable, Reason::DatabaseBusy, "database is busy: " + message);
  }
  if (!healthy() || sqlstate.starts_with("08") || sqlstate.starts_with("57P")) {
    return fail(ErrorCode::Unavailable,
                "lost the connection to PostgreSQL database " + url_.display + ": " + message);
  }
  if (sqlstate.starts_with("22")) {
    // data_exception: text that is not valid UTF-8, a number out of range, ... from the client.
    return invalid("Invalid value: " + message);
  }
  return internalError("database error: " + message);
}

Result<PgResult> PgConnection::exec(const std::string& sql) {
  return check(PQexec(conn_, sql.c_str()));
}

Result<PgResult> PgConnection::query(const std::string& sql, std::span<const Value> binds) {
  std::vector<const Value*> refs;
  refs.reserve(binds.size());
  for (const Value& v : binds) refs.push_back(&v);
  return query(sql, std::span<const Value* const>(refs));
}

Result<PgResult> PgConnection::query(const std::string& sql, std::span<const Value* const> binds) {
  auto it = prepared_.find(sql);
  if (it == prepared_.end()) {
    if (prepared_.size() >= kMaxPreparedStatements) {
      KILN_TRY(exec("DEALLOCATE ALL"));
      prepared_.clear();
    }
    std::string name = "kiln_" + std::to_string(++nextStatement_);
    KILN_TRY(check(PQprepare(conn_, name.c_str(), sql.c_str(), 0, nullptr)));
    it = prepared_.emplace(sql, std::move(name)).first;
  }
  std::vector<std::string> numbers;
  numbers.reserve(binds.size());  // no reallocation: values[] points into these strings
  std::vector<const char*> values(binds.size(), nullptr);
  for (size_t i = 0; i < binds.size(); ++i) {
    const Value& v = *binds[i];
    switch (v.kind) {
      case Value::Kind::Null:
        break;
      // "1"/"0" are valid input for both BOOLEAN and integer columns.
      case Value::Kind::Bool:
        values[i] = v.b ? "1" : "0";
        break;
      case Value::Kind::Int:
        numbers.push_back(std::to_string(v.i));
        values[i] = numbers.back().c_str();
        break;
      case Value::Kind::Text:
        if (v.s.find('\0') != std::string::npos) {
          return invalid("Invalid value: text with a NUL character cannot be stored.");
        }
        values[i] = v.s.c_str();
        break;
    }
  }
  return check(PQexecPrepared(conn_, it->second.c_str(), static_cast<int>(values.size()),
                              values.data(), nullptr, nullptr, 0));
}

std::string numberPlaceholders(std::string_view sql) {
  std::string out;
  out.reserve(sql.size() + 16);
  char quote = 0;  // the quote character of the literal or name being copied, if any
  int n = 0;
  for (char c : sql) {
    if (quote) {
      if (c == quote) quote = 0;  // a doubled quote closes and reopens: same result
      out.push_back(c);
    } else if (c == '\'' || c == '"') {
      quote = c;
      out.push_back(c);
    } else if (c == '?') {
      out += '$';
      out += std::to_string(++n);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace kiln::server::postgres
