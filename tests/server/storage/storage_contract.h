// File: tests/server/storage/storage_contract.h
//
// The behaviour every Storage back end must have. A back end's test file defines
//   kiln::server::StoragePtr makeContractStorage();  // a fresh, empty store; null to skip
// KILN_STORAGE_BACKEND (its tags, such as "[sqlite]") and KILN_STORAGE_NAME (the prefix that
// keeps the test names of the back ends apart, such as "sqlite"), then includes this header.
// makeContractStorage() returns null (after a WARN) when the back end cannot run here.
#pragma once

#include <array>
#include <catch2/catch.hpp>
#include <set>

#include "server/model/node.h"
#include "server/model/resources.h"
#include "server/storage/queries/node_events.h"
#include "server/storage/storage.h"
#include "shared/core/uuid.h"
#include "tests/support/fake_clock.h"

// static: each back end's test file (all linked into one binary) defines its own.
static kiln::server::StoragePtr makeContractStorage();

namespace contract {

using namespace kiln::server;
using Mode = Storage::Mode;

inline Record makeNode(const std::string& name, const std::string& state = "enroll") {
  Record n = defaultRecord(nodeSchema());
  n.setText(kNodeUuid, kiln::generateUuid());
  if (!name.empty()) n.setText(kNodeName, name);
  n.setText(kNodeDriver, "fake-hardware");
  n.setText(kNodeProvisionState, state);
  n.setText(kNodeConductorGroup, "");
  return n;
}

inline Record insertNode(Transaction& tx, Record n) {
  auto r = tx.nodes().insert(n);
  REQUIRE(r);
  return *r;
}

}  // namespace contract

/// Declares `name`, the store under test, or returns when the back end cannot run here.
#define KILN_CONTRACT_STORAGE(name)      \
  auto name = makeContractStorage();     \
  if (!name) return

TEST_CASE(KILN_STORAGE_NAME " storage: round-trips every node field", "[server][storage]" KILN_STORAGE_BACKEND) {
  using namespace contract;
  KILN_CONTRACT_STORAGE(storage);
  auto tx = storage->begin(Mode::Write).value();
  Record n = makeNode("full");
  const Schema& s = nodeSchema();
  for (size_t i = 2; i < s.size(); ++i) {
    if (s[i].has(kComputed)) continue;
    switch (s[i].type) {
      case FieldType::String: case FieldType::Time: n.setText(i, std::string(s[i].name) + "-v"); break;
      case FieldType::Bool: n.setBool(i, true); break;
      case FieldType::Int: n[i] = Value::integer(7); break;
      case FieldType::Object: n.setText(i, R"({"k":")" + std::string(s[i].name) + R"("})"); break;
      case FieldType::Array: n.setText(i, "[1]"); break;
    }
  }
  n.setNull(kNodeChassisUuid);  // a foreign key; chassis have their own test
  Record stored = insertNode(*tx, n);
  REQUIRE(tx->commit());
  auto rtx = storage->begin(Mode::Read).value();
  auto found = rtx->nodes().findBy(kNodeUuid, Value::text(n.uuid())).value();
  REQUIRE(found);
  for (size_t i = 1; i < s.size(); ++i) {
    if (s[i].has(kComputed)) continue;
    INFO(s[i].name);
    CHECK((*found)[i] == n[i]);
  }
  CHECK(found->id() == stored.id());
}

TEST_CASE(KILN_STORAGE_NAME " storage: reports unique violations with the field name", "[server][storage]" KILN_STORAGE_BACKEND) {
  using namespace contract;
  KILN_CONTRACT_STORAGE(storage);
  auto tx = storage->begin(Mode::Write).value();
  insertNode(*tx, makeNode("same"));
  auto dup = tx->nodes().insert(makeNode("same"));
  REQUIRE_FALSE(dup);
  CHECK(dup.error().code == kiln::ErrorCode::AlreadyExists);
  CHECK(dup.error().is(kiln::Reason::UniqueViolation));
  CHECK(dup.error().subject == "name");
}

TEST_CASE(KILN_STORAGE_NAME " storage: an uncommitted write transaction changes nothing", "[server][storage]" KILN_STORAGE_BACKEND) {
  using namespace contract;
  KILN_CONTRACT_STORAGE(storage);
  {
    auto tx = storage->begin(Mode::Write).value();
    insertNode(*tx, makeNode("ghost"));
  }
  auto tx = storage->begin(Mode::Read).value();
  CHECK(tx->nodes().count({}).value() == 0);
}

TEST_CASE(KILN_STORAGE_NAME " storage: update and remove act on one row", "[server][storage]" KILN_STORAGE_BACKEND) {
  using namespace contract;
  KILN_CONTRACT_STORAGE(storage);
  auto tx = storage->begin(Mode::Write).value();
  Record a = insertNode(*tx, makeNode("a"));
  Record b = insertNode(*tx, makeNode("b"));
  a.setText(kNodeDescription, "changed");
  REQUIRE(tx->nodes().update(a));
  CHECK(tx->nodes().findBy(kNodeId, Value::integer(a.id())).value()->str(kNodeDescription) == "changed");
  CHECK(tx->nodes().findBy(kNodeId, Value::integer(b.id())).value()->optStr(kNodeDescription) == std::nullopt);
  REQUIRE(tx->nodes().remove(a.id()));
  CHECK_FALSE(tx->nodes().remove(a.id()));
  CHECK(tx->nodes().count({}).value() == 1);
}

TEST_CASE(KILN_STORAGE_NAME " storage: list filters, sorts and paginates without gaps or repeats", "[server][storage]" KILN_STORAGE_BACKEND) {
  using namespace contract;
  KILN_CONTRACT_STORAGE(storage);
  auto tx = storage->begin(Mode::Write).value();
  for (int i = 0; i < 25; ++i) {
    Record n = makeNode("n" + std::to_string(i), i % 3 == 0 ? "available" : "enroll");
    if (i % 4 != 0) n.setText(kNodeOwner, "owner-" + std::to_string(i % 5));  // some NULLs
    if (i % 2 == 0) n.setText(kNodeDescription, "rack " + std::to_string(i) + " Fast");
    insertNode(*tx, n);
  }
  REQUIRE(tx->commit());
  auto rtx = storage->begin(Mode::Read).value();
  auto& nodes = rtx->nodes();

  SECTION("equality, null and substring filters") {
    CHECK(nodes.count({{ListFilter::Op::Equals, kNodeProvisionState, Value::text("available"), {}}}).value() == 9);
    CHECK(nodes.count({{ListFilter::Op::IsNull, kNodeOwner, {}, {}}}).value() == 7);
    CHECK(nodes.count({{ListFilter::Op::IsNotNull, kNodeOwner, {}, {}}}).value() == 18);
    CHECK(nodes.count({{ListFilter::Op::Contains, kNodeDescription, Value::text("fast"), {}}}).value() == 13);
    CHECK(nodes.count({{ListFilter::Op::Contains, kNodeDescription, Value::text("100%"), {}}}).value() == 0);
    CHECK(nodes.count({{ListFilter::Op::In, kNodeName, {}, {"n1", "n2", "zz"}}}).value() == 2);
  }
  for (bool desc : {false, true}) {
    SECTION(std::string("keyset pagination over a nullable sort key, ") + (desc ? "desc" : "asc")) {
      std::set<int64_t> seen;
      std::optional<Record> marker;
      std::optional<std::string> previous;
      int pages = 0;
      while (true) {
        ListQuery q;
        q.sortField = kNodeOwner;
        q.descending = desc;
        q.limit = 4;
        q.marker = marker;
        auto page = nodes.list(q).value();
        ++pages;
        for (const auto& r : page) {
          CHECK(seen.insert(r.id()).second);
        }
        if (page.size() < 4) break;
        marker = page.back();
      }
      CHECK(seen.size() == 25);
      CHECK(pages == 7);
    }
  }
  SECTION("limit 0 means no limit and id order is the default") {
    ListQuery q;
    q.limit = 0;
    auto all = nodes.list(q).value();
    REQUIRE(all.size() == 25);
    for (size_t i = 1; i < all.size(); ++i) CHECK(all[i - 1].id() < all[i].id());
  }
}

TEST_CASE(KILN_STORAGE_NAME " storage: traits are stored per node and filter node lists", "[server][storage]" KILN_STORAGE_BACKEND) {
  using namespace contract;
  KILN_CONTRACT_STORAGE(storage);
  auto tx = storage->begin(Mode::Write).value();
  Record red = insertNode(*tx, makeNode("red"));
  Record blue = insertNode(*tx, makeNode("blue"));
  Record both = insertNode(*tx, makeNode("both"));
  Record none = insertNode(*tx, makeNode("none"));
  auto& traits = tx->traits();
  REQUIRE(traits.set(red.id(), std::vector<std::string>{"CUSTOM_RED"}));
  REQUIRE(traits.set(blue.id(), std::vector<std::string>{"CUSTOM_BLUE"}));
  REQUIRE(traits.set(both.id(), std::vector<std::string>{"CUSTOM_RED", "CUSTOM_BLUE"}));
  REQUIRE(traits.add(both.id(), "CUSTOM_RED"));  // idempotent
  CHECK(traits.get(both.id()).value() == std::vector<std::string>{"CUSTOM_BLUE", "CUSTOM_RED"});
  auto many = traits.getMany(std::vector<int64_t>{red.id(), none.id()}).value();
  CHECK(many[red.id()] == std::vector<std::string>{"CUSTOM_RED"});
  CHECK(many[none.id()].empty());
  using Counts = std::vector<std::pair<std::string, int64_t>>;
  CHECK(traits.countAll().value() == Counts{{"CUSTOM_BLUE", 2}, {"CUSTOM_RED", 2}});

  auto names = [&](ListFilter::Op op, std::vector<std::string> values) {
    ListQuery q;
    q.limit = 0;
    q.filters.push_back({op, kNodeId, {}, std::move(values)});
    std::set<std::string> out;
    const auto rows = tx->nodes().list(q).value();
    for (const auto& r : rows) out.insert(r.str(kNodeName));
    return out;
  };
  using S = std::set<std::string>;
  const std::vector<std::string> rb = {"CUSTOM_RED", "CUSTOM_BLUE"};
  CHECK(names(ListFilter::Op::TraitsAll, rb) == S{"both"});
  CHECK(names(ListFilter::Op::TraitsAny, rb) == S{"red", "blue", "both"});
  CHECK(names(ListFilter::Op::NotTraitsAll, rb) == S{"red", "blue", "none"});
  CHECK(names(ListFilter::Op::NotTraitsAny, rb) == S{"none"});

  CHECK(traits.remove(both.id(), "CUSTOM_RED").value());
  CHECK_FALSE(traits.remove(both.id(), "CUSTOM_RED").value());
  REQUIRE(traits.clear(blue.id()));
  CHECK(traits.get(blue.id()).value().empty());
  // Deleting a node deletes its traits.
  REQUIRE(tx->nodes().remove(red.id()));
  CHECK(traits.get(red.id()).value().empty());
}

TEST_CASE(KILN_STORAGE_NAME " storage: a failed statement changes nothing and the transaction goes on", "[server][storage]" KILN_STORAGE_BACKEND) {
  using namespace contract;
  KILN_CONTRACT_STORAGE(storage);
  auto tx = storage->begin(Mode::Write).value();
  Record a = insertNode(*tx, makeNode("same"));
  auto dup = tx->nodes().insert(makeNode("same"));
  REQUIRE_FALSE(dup);
  CHECK(dup.error().code == kiln::ErrorCode::AlreadyExists);
  Record b = insertNode(*tx, makeNode("other"));
  Record renamed = a;
  renamed.setText(kNodeName, "other");
  renamed.setText(kNodeDescription, "not stored");
  auto clash = tx->nodes().update(renamed);
  REQUIRE_FALSE(clash);
  CHECK(clash.error().code == kiln::ErrorCode::AlreadyExists);
  CHECK(clash.error().is(kiln::Reason::UniqueViolation));
  CHECK(clash.error().subject == "name");
  REQUIRE(tx->traits().add(b.id(), "CUSTOM_AFTER"));
  REQUIRE(tx->commit());

  auto rtx = storage->begin(Mode::Read).value();
  CHECK(rtx->nodes().count({}).value() == 2);
  auto stored = rtx->nodes().findBy(kNodeId, Value::integer(a.id())).value();
  REQUIRE(stored);
  CHECK(stored->str(kNodeName) == "same");
  CHECK(stored->optStr(kNodeDescription) == std::nullopt);
  CHECK(rtx->traits().get(b.id()).value() == std::vector<std::string>{"CUSTOM_AFTER"});
}

TEST_CASE(KILN_STORAGE_NAME " storage: unique violations over two columns name the last one", "[server][storage]" KILN_STORAGE_BACKEND) {
  using namespace contract;
  KILN_CONTRACT_STORAGE(storage);
  auto tx = storage->begin(Mode::Write).value();
  Record node = insertNode(*tx, makeNode("n"));
  auto connector = [&](const std::string& id) {
    Record c = defaultRecord(schemaOf(Resource::VolumeConnector));
    c.setText(kVcUuid, kiln::generateUuid());
    c.setText(kVcNodeUuid, node.uuid());
    c.setText(kVcType, "iqn");
    c.setText(kVcConnectorId, id);
    return c;
  };
  REQUIRE(tx->volumeConnectors().insert(connector("iqn.2024-01.org.example:one")));
  auto dup = tx->volumeConnectors().insert(connector("iqn.2024-01.org.example:one"));
  REQUIRE_FALSE(dup);
  CHECK(dup.error().code == kiln::ErrorCode::AlreadyExists);
  CHECK(dup.error().is(kiln::Reason::UniqueViolation));
  CHECK(dup.error().subject == "connector_id");

  Record sameUuid = makeNode("another");
  sameUuid.setText(kNodeUuid, node.uuid());
  auto uuidDup = tx->nodes().insert(sameUuid);
  REQUIRE_FALSE(uuidDup);
  CHECK(uuidDup.error().is(kiln::Reason::UniqueViolation));
  CHECK(uuidDup.error().subject == "uuid");
}

TEST_CASE(KILN_STORAGE_NAME " storage: updateFields writes the named fields and leaves the others", "[server][storage]" KILN_STORAGE_BACKEND) {
  using namespace contract;
  KILN_CONTRACT_STORAGE(storage);
  auto tx = storage->begin(Mode::Write).value();
  Record node = insertNode(*tx, makeNode("partial"));
  auto& nodes = tx->nodes();
  Record changed = node;
  changed.setText(kNodeProvisionState, "manageable");
  changed.setText(kNodeDescription, "not written");
  changed.setNull(kNodeName);  // not in the mask either
  changed.setText(kNodeLastError, "written");
  FieldMask fields;
  fields.set(kNodeProvisionState);
  fields.set(kNodeLastError);
  fields.set(kNodeId);  // the id is never written
  REQUIRE(nodes.updateFields(changed, fields));
  auto stored = nodes.findBy(kNodeId, Value::integer(node.id())).value();
  REQUIRE(stored);
  CHECK(stored->str(kNodeProvisionState) == "manageable");
  CHECK(stored->str(kNodeLastError) == "written");
  CHECK(stored->str(kNodeName) == "partial");
  CHECK((*stored)[kNodeDescription] == node[kNodeDescription]);
  // Nothing to write: only the row's existence is checked.
  CHECK(nodes.updateFields(changed, FieldMask{}));
  Record ghost = node;
  ghost[kNodeId] = Value::integer(node.id() + 1000);
  for (const FieldMask& mask : {fields, FieldMask{}}) {
    auto missing = nodes.updateFields(ghost, mask);
    REQUIRE_FALSE(missing);
    CHECK(missing.error().code == kiln::ErrorCode::NotFound);
  }
}

TEST_CASE(KILN_STORAGE_NAME " storage: empty value lists match nothing and trait lists nothing required", "[server][storage]" KILN_STORAGE_BACKEND) {
  using namespace contract;
  KILN_CONTRACT_STORAGE(storage);
  auto tx = storage->begin(Mode::Write).value();
  Record a = insertNode(*tx, makeNode("a"));
  insertNode(*tx, makeNode("b"));
  REQUIRE(tx->traits().add(a.id(), "CUSTOM_X"));
  auto& nodes = tx->nodes();
  CHECK(nodes.count({{ListFilter::Op::In, kNodeName, {}, {}}}).value() == 0);
  CHECK(nodes.count({{ListFilter::Op::TraitsAny, kNodeId, {}, {}}}).value() == 0);
  CHECK(nodes.count({{ListFilter::Op::TraitsAll, kNodeId, {}, {}}}).value() == 2);
  CHECK(nodes.count({{ListFilter::Op::NotTraitsAny, kNodeId, {}, {}}}).value() == 2);
}

TEST_CASE(KILN_STORAGE_NAME " storage: countByValue puts the largest count first, then NULL, then values in order", "[server][storage]" KILN_STORAGE_BACKEND) {
  using namespace contract;
  KILN_CONTRACT_STORAGE(storage);
  auto tx = storage->begin(Mode::Write).value();
  const std::vector<std::optional<std::string>> owners = {"b", "a", std::nullopt, "a", "c",
                                                         std::nullopt, "c", "c"};
  for (size_t i = 0; i < owners.size(); ++i) {
    Record n = makeNode("n" + std::to_string(i));
    if (owners[i]) n.setText(kNodeOwner, *owners[i]);
    insertNode(*tx, n);
  }
  const auto counts = tx->nodes().countByValue(kNodeOwner).value();
  const std::vector<std::pair<Value, int64_t>> expected = {
      {Value::text("c"), 3}, {Value::null(), 2}, {Value::text("a"), 2}, {Value::text("b"), 1}};
  CHECK(counts == expected);
  const auto flags = tx->nodes().countByValue(kNodeMaintenance).value();
  REQUIRE(flags.size() == 1);
  CHECK(flags[0].first == Value::boolean(false));
  CHECK(flags[0].second == 8);
}

TEST_CASE(KILN_STORAGE_NAME
          " storage: countGrouped counts each combination of the fields once, NULL first",
          "[server][storage]" KILN_STORAGE_BACKEND) {
  using namespace contract;
  KILN_CONTRACT_STORAGE(storage);
  auto tx = storage->begin(Mode::Write).value();
  struct Row {
    const char* state;
    std::optional<std::string> power;
    bool maintenance;
  };
  const std::vector<Row> rows = {{"enroll", std::nullopt, false}, {"enroll", std::nullopt, false},
                                 {"enroll", "power off", false},  {"active", "power on", false},
                                 {"active", "power on", true},    {"active", "power on", false}};
  for (size_t i = 0; i < rows.size(); ++i) {
    Record n = makeNode("g" + std::to_string(i));
    n.setText(kNodeProvisionState, rows[i].state);
    n[kNodePowerState] = Value::optionalText(rows[i].power);
    n[kNodeMaintenance] = Value::boolean(rows[i].maintenance);
    insertNode(*tx, n);
  }
  static constexpr std::array<int, 3> kFields = {kNodeProvisionState, kNodePowerState,
                                                 kNodeMaintenance};
  const auto counts = tx->nodes().countGrouped(kFields).value();
  using Group = std::pair<std::vector<Value>, int64_t>;
  const std::vector<Group> expected = {
      {{Value::text("active"), Value::text("power on"), Value::boolean(false)}, 2},
      {{Value::text("active"), Value::text("power on"), Value::boolean(true)}, 1},
      {{Value::text("enroll"), Value::null(), Value::boolean(false)}, 2},
      {{Value::text("enroll"), Value::text("power off"), Value::boolean(false)}, 1}};
  CHECK(counts == expected);
}

TEST_CASE(KILN_STORAGE_NAME " storage: text sorts byte by byte", "[server][storage]" KILN_STORAGE_BACKEND) {
  using namespace contract;
  KILN_CONTRACT_STORAGE(storage);
  auto tx = storage->begin(Mode::Write).value();
  for (const char* name : {"b", "B", "a", "_x", "A-1", "a.2"}) insertNode(*tx, makeNode(name));
  ListQuery q;
  q.sortField = kNodeName;
  q.limit = 0;
  std::vector<std::string> names;
  const auto rows = tx->nodes().list(q).value();  // not a range over a temporary's value()
  for (const auto& r : rows) names.push_back(r.str(kNodeName));
  CHECK(names == std::vector<std::string>{"A-1", "B", "_x", "a", "a.2", "b"});
}

TEST_CASE(KILN_STORAGE_NAME
          " storage: node events list after an id by kind and limit, oldest first",
          "[server][storage][events]" KILN_STORAGE_BACKEND) {
  using namespace contract;
  KILN_CONTRACT_STORAGE(storage);
  kiln::test::FakeClock clock;
  auto tx = storage->begin(Mode::Write).value();
  const Record a = insertNode(*tx, makeNode("a"));
  const Record b = insertNode(*tx, makeNode("b"));
  std::vector<int64_t> ids;
  for (int i = 0; i < 5; ++i) {
    ids.push_back(appendNodeEvent(*tx, clock, "host-a", a.id(), a.uuid(),
                                  i % 2 ? "power_state" : "error", {{"n", i}})
                      .value());
    ids.push_back(
        appendNodeEvent(*tx, clock, "host-a", b.id(), b.uuid(), "error", {{"n", i}}).value());
  }
  CHECK(tx->appendedEvents);
  CHECK(std::is_sorted(ids.begin(), ids.end()));
  CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end());
  const auto all = listNodeEvents(*tx, a.id(), 0, {}, 100).value();
  REQUIRE(all.size() == 5);
  CHECK(all[0].id == ids[0]);
  CHECK(all[0].nodeUuid == a.uuid());
  CHECK(all[0].kind == "error");
  CHECK(all[0].fields == R"({"n":0})");
  CHECK(all[0].conductor == "host-a");
  CHECK(all[0].time == "2026-01-01T00:00:00.000+00:00");
  const auto after = listNodeEvents(*tx, a.id(), all[1].id, {}, 100).value();
  REQUIRE(after.size() == 3);
  CHECK(after[0].id == all[2].id);
  const auto power = listNodeEvents(*tx, a.id(), 0, {"power_state"}, 100).value();
  REQUIRE(power.size() == 2);
  CHECK(power[1].fields == R"({"n":3})");
  CHECK(listNodeEvents(*tx, a.id(), 0, {"error", "power_state"}, 2).value().size() == 2);
  CHECK(listAllNodeEvents(*tx, 0, 100).value().size() == 10);
  CHECK(newestNodeEventId(*tx).value() == ids.back());
  // Reserved names stay the journal's own; a non-object is wrapped.
  const int64_t odd =
      appendNodeEvent(*tx, clock, "h", a.id(), a.uuid(), "x", {{"id", 1}, {"kind", "y"}}).value();
  const int64_t wrapped = appendNodeEvent(*tx, clock, "h", a.id(), a.uuid(), "x", 7).value();
  const auto extra = listNodeEvents(*tx, a.id(), ids.back(), {}, 10).value();
  REQUIRE(extra.size() == 2);
  CHECK(extra[0].id == odd);
  CHECK(extra[0].fields == "{}");
  CHECK(extra[1].id == wrapped);
  CHECK(extra[1].fields == R"({"value":7})");
  CHECK_FALSE(appendNodeEvent(*tx, clock, "h", a.id(), a.uuid(), "Bad Kind", {}));
}

TEST_CASE(KILN_STORAGE_NAME
          " storage: node events roll back with their transaction and go with their node",
          "[server][storage][events]" KILN_STORAGE_BACKEND) {
  using namespace contract;
  KILN_CONTRACT_STORAGE(storage);
  kiln::test::FakeClock clock;
  Record a;
  {
    auto tx = storage->begin(Mode::Write).value();
    a = insertNode(*tx, makeNode("a"));
    REQUIRE(appendNodeEvent(*tx, clock, "h", a.id(), a.uuid(), "error", {}));
    REQUIRE(tx->commit());
  }
  {
    auto tx = storage->begin(Mode::Write).value();
    REQUIRE(appendNodeEvent(*tx, clock, "h", a.id(), a.uuid(), "error", {}));
  }  // rolled back
  {
    auto tx = storage->begin(Mode::Read).value();
    CHECK(listNodeEvents(*tx, a.id(), 0, {}, 10).value().size() == 1);
  }
  auto tx = storage->begin(Mode::Write).value();
  REQUIRE(deleteNodeEvents(*tx, a.id()));
  REQUIRE(tx->nodes().remove(a.id()));
  CHECK(listAllNodeEvents(*tx, 0, 10).value().empty());
  REQUIRE(tx->commit());
}

TEST_CASE(KILN_STORAGE_NAME
          " storage: node event pruning keeps each node's newest and drops the old",
          "[server][storage][events]" KILN_STORAGE_BACKEND) {
  using namespace contract;
  KILN_CONTRACT_STORAGE(storage);
  kiln::test::FakeClock clock;
  auto tx = storage->begin(Mode::Write).value();
  const Record a = insertNode(*tx, makeNode("a"));
  const Record b = insertNode(*tx, makeNode("b"));
  for (int i = 0; i < 6; ++i) {
    REQUIRE(appendNodeEvent(*tx, clock, "h", a.id(), a.uuid(), "error", {{"n", i}}));
    clock.advance(std::chrono::seconds(10));
  }
  REQUIRE(appendNodeEvent(*tx, clock, "h", b.id(), b.uuid(), "error", {{"n", 0}}));
  // By count: a keeps its newest 4, b (1 event) keeps all.
  CHECK(pruneNodeEvents(*tx, clock, 4, 0).value() == 2);
  auto left = listNodeEvents(*tx, a.id(), 0, {}, 10).value();
  REQUIRE(left.size() == 4);
  CHECK(left.front().fields == R"({"n":2})");
  CHECK(listNodeEvents(*tx, b.id(), 0, {}, 10).value().size() == 1);
  // By age (now is 60 s; a's events are at 0, 10, ... 50 s, b's at 60 s): older than 35 s go.
  CHECK(pruneNodeEvents(*tx, clock, 0, 25).value() == 2);
  left = listNodeEvents(*tx, a.id(), 0, {}, 10).value();
  REQUIRE(left.size() == 2);
  CHECK(left.front().fields == R"({"n":4})");
  // Ids are never reused after pruning.
  const int64_t newest = newestNodeEventId(*tx).value();
  clock.advance(std::chrono::seconds(2));
  REQUIRE(pruneNodeEvents(*tx, clock, 0, 1).value() == 3);
  REQUIRE(newestNodeEventId(*tx).value() == 0);
  CHECK(appendNodeEvent(*tx, clock, "h", a.id(), a.uuid(), "error", {}).value() > newest);
}
