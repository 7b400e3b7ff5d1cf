// The fixed statements both SQL back ends build from a schema (server/storage/sql_builder.h):
// one builder, two dialects.
#include <catch2/catch.hpp>

#include "server/model/conductor_registration.h"
#include "server/model/resources.h"
#include "server/storage/sql_builder.h"

using namespace kiln::server;

TEST_CASE("buildStoreStatements writes each dialect's placeholders, quoting and suffixes",
          "[server][storage][sql]") {
  const Schema& schema = conductorSchema();
  const auto lite = buildStoreStatements(schema, SqlDialect{});
  CHECK(lite.stored.size() == schema.size());
  CHECK(lite.insert ==
        "INSERT INTO conductors (hostname, conductor_group, drivers, online, created_at, "
        "updated_at) VALUES (?, ?, ?, ?, ?, ?)");
  CHECK(lite.update ==
        "UPDATE conductors SET hostname = ?, conductor_group = ?, drivers = ?, online = ?, "
        "created_at = ?, updated_at = ? WHERE id = ?");
  CHECK(lite.findBy[kCondHostname] ==
        "SELECT id, hostname, conductor_group, drivers, online, created_at, updated_at FROM "
        "conductors WHERE hostname = ? LIMIT 1");
  CHECK(lite.findByLocked[kCondHostname] == lite.findBy[kCondHostname]);
  CHECK(lite.remove == "DELETE FROM conductors WHERE id = ?");

  const SqlDialect pg{.explicitNullsOrder = true, .likeOperator = "ILIKE", .quoteIdentifiers = true,
                      .numberedPlaceholders = true, .insertSuffix = " RETURNING id",
                      .lockSuffix = " FOR NO KEY UPDATE"};
  const auto post = buildStoreStatements(schema, pg);
  CHECK(post.insert ==
        "INSERT INTO conductors (\"hostname\", \"conductor_group\", \"drivers\", \"online\", "
        "\"created_at\", \"updated_at\") VALUES ($1, $2, $3, $4, $5, $6) RETURNING id");
  CHECK(post.update.ends_with("\"updated_at\" = $6 WHERE id = $7"));
  CHECK(post.findByLocked[kCondId].ends_with("WHERE \"id\" = $1 LIMIT 1 FOR NO KEY UPDATE"));
  CHECK(post.exists == "SELECT 1 FROM conductors WHERE id = $1");
}

TEST_CASE("buildUpdateFieldsSql sets only the named stored fields, never the id",
          "[server][storage][sql]") {
  const Schema& schema = conductorSchema();
  const auto stored = storedFields(schema);
  FieldMask fields;
  fields.set(kCondId);
  fields.set(kCondOnline);
  fields.set(kCondUpdatedAt);
  std::vector<int> set;
  CHECK(buildUpdateFieldsSql(schema, stored, fields, SqlDialect{}, set) ==
        "UPDATE conductors SET online = ?, updated_at = ? WHERE id = ?");
  CHECK(set == std::vector<int>{kCondOnline, kCondUpdatedAt});
  SqlDialect numbered;
  numbered.numberedPlaceholders = true;
  CHECK(buildUpdateFieldsSql(schema, stored, fields, numbered, set) ==
        "UPDATE conductors SET online = $1, updated_at = $2 WHERE id = $3");
  FieldMask none;
  none.set(kCondId);
  CHECK(buildUpdateFieldsSql(schema, stored, none, SqlDialect{}, set).empty());
  CHECK(set.empty());
}
