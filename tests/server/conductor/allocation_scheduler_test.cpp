// The scheduler against writers that get in its way between its unlocked list of candidates
// and its bind (server/conductor/allocations.h): a test Storage runs the other writer right
// after the scheduler's list. On SQLite (a file, so a read transaction and a write transaction
// can be open at once) and on PostgreSQL ([.postgresql], ctest's postgresql entry).
#include <catch2/catch.hpp>

#include <functional>
#include <random>

#include "server/conductor/allocations.h"
#include "server/conductor/node_lock.h"
#include "server/model/allocation.h"
#include "server/model/node.h"
#include "shared/core/uuid.h"
#include "tests/support/fake_clock.h"
#include "tests/support/postgres_test_server.h"
#include "tests/support/temp_dir.h"

using namespace kiln::server;

namespace {

/// Runs `hook` once, right after the first node list of a read transaction returns.
class HookedNodes final : public RecordStore {
 public:
  HookedNodes(RecordStore& inner, std::function<void()>& hook) : inner_(inner), hook_(hook) {}
  const Schema& schema() const override { return inner_.schema(); }
  kiln::Result<bool> findInto(int f, const Value& v, Record& out) override {
    return inner_.findInto(f, v, out);
  }
  kiln::Result<void> listInto(const ListQuery& q, std::vector<Record>& out) override {
    auto r = inner_.listInto(q, out);
    if (auto hook = std::exchange(hook_, nullptr)) hook();
    return r;
  }
  kiln::Result<int64_t> count(const std::vector<ListFilter>& f) override { return inner_.count(f); }
  kiln::Result<std::vector<std::pair<Value, int64_t>>> countByValue(int f) override {
    return inner_.countByValue(f);
  }
  kiln::Result<std::vector<std::pair<std::vector<Value>, int64_t>>> countGrouped(
      std::span<const int> f) override {
    return inner_.countGrouped(f);
  }
  kiln::Result<Record> insert(const Record& r) override { return inner_.insert(r); }
  kiln::Result<void> update(const Record& r) override { return inner_.update(r); }
  kiln::Result<void> updateFields(const Record& r, const FieldMask& m) override {
    return inner_.updateFields(r, m);
  }
  kiln::Result<void> remove(int64_t id) override { return inner_.remove(id); }
  kiln::Result<int64_t> removeWhere(int f, const Value& v) override {
    return inner_.removeWhere(f, v);
  }

 private:
  RecordStore& inner_;
  std::function<void()>& hook_;
};

class HookedTransaction final : public Transaction {
 public:
  HookedTransaction(TransactionPtr inner, std::function<void()>& hook)
      : inner_(std::move(inner)), nodes_(inner_->nodes(), hook) {}
  RecordStore& records(Resource r) override {
    return r == Resource::Node ? nodes_ : inner_->records(r);
  }
  TraitStore& traits() override { return inner_->traits(); }
  NodeEventStore& nodeEvents() override { return inner_->nodeEvents(); }
  kiln::Result<void> commit() override { return inner_->commit(); }

 private:
  TransactionPtr inner_;
  HookedNodes nodes_;
};

/// The storage the scheduler sees: read transactions run `hook` after their first node list.
class HookedStorage final : public Storage {
 public:
  explicit HookedStorage(Storage& inner) : inner_(inner) {}
  std::function<void()> hook;
  kiln::Result<TransactionPtr> begin(Mode mode) override {
    auto tx = KILN_TRY(inner_.begin(mode));
    if (mode == Mode::Write) return tx;
    return TransactionPtr(std::make_unique<HookedTransaction>(std::move(tx), hook));
  }
  int schemaVersion() const override { return inner_.schemaVersion(); }
  void setEventsListener(std::function<void()> listener) override {
    inner_.setEventsListener(std::move(listener));
  }

 private:
  Storage& inner_;
};

/// An available, powered-off fake-hardware node of resource class "rc", and an allocation for
/// "rc" waiting for the scheduler. Returns {node uuid, allocation uuid}.
std::pair<std::string, std::string> seed(Storage& storage) {
  auto tx = storage.begin(Storage::Mode::Write).value();
  Record n = defaultRecord(nodeSchema());
  n.setText(kNodeUuid, kiln::generateUuid());
  n.setText(kNodeName, "candidate");
  n.setText(kNodeDriver, "fake-hardware");
  n.setText(kNodeProvisionState, "available");
  n.setText(kNodePowerState, "power off");
  n.setText(kNodeResourceClass, "rc");
  n.setText(kNodeConductorGroup, "");
  REQUIRE(tx->nodes().insert(n));
  Record a = defaultRecord(schemaOf(Resource::Allocation));
  a.setText(kAllocUuid, kiln::generateUuid());
  a.setText(kAllocResourceClass, "rc");
  a.setText(kAllocState, std::string(allocation_state::kAllocating));
  a.setText(kAllocTraits, "[]");
  a.setText(kAllocCandidateNodes, "[]");
  REQUIRE(tx->allocations().insert(a));
  REQUIRE(tx->commit());
  return {n.uuid(), a.uuid()};
}

Record nodeRow(Storage& storage, const std::string& uuid) {
  auto tx = storage.begin(Storage::Mode::Read).value();
  auto n = tx->nodes().findBy(kNodeUuid, Value::text(uuid)).value();
  REQUIRE(n);
  return *n;
}

void racesWithLock(Storage& storage) {
  kiln::test::FakeClock clock;
  auto [node, allocation] = seed(storage);
  HookedStorage hooked(storage);
  // Between the scheduler's list and its bind, an operation reserves the node it listed.
  std::optional<NodeLock> held;
  hooked.hook = [&] {
    auto lock = NodeLock::acquire(storage, clock, node, "other-host", "power sync");
    REQUIRE(lock);
    held = std::move(*lock);
  };
  std::mt19937_64 rng(7);
  auto decision = scheduleAllocation(hooked, allocation, rng, clock);
  REQUIRE(decision);
  // The node is not bound, and the operation still holds it: the scheduler waits and retries.
  CHECK(decision->kind == AllocationDecision::Kind::Locked);
  CHECK(decision->lockedCount == 1);
  const Record after = nodeRow(storage, node);
  CHECK(after.str(kNodeReservation) == "other-host");
  CHECK(after[kNodeInstanceUuid].isNull());
  CHECK(after[kNodeAllocationUuid].isNull());
  held->release();
  // Once it is free the next pass binds it.
  decision = scheduleAllocation(storage, allocation, rng, clock);
  REQUIRE(decision);
  CHECK(decision->kind == AllocationDecision::Kind::Allocated);
  CHECK(decision->nodeUuid == node);
  CHECK(nodeRow(storage, node).str(kNodeInstanceUuid) == allocation);
}

void racesWithAnotherAllocation(Storage& storage) {
  kiln::test::FakeClock clock;
  auto [node, allocation] = seed(storage);
  HookedStorage hooked(storage);
  // Between the list and the bind, another allocation takes the only node.
  std::string other;
  hooked.hook = [&] {
    auto tx = storage.begin(Storage::Mode::Write).value();
    Record a = defaultRecord(schemaOf(Resource::Allocation));
    a.setText(kAllocUuid, kiln::generateUuid());
    a.setText(kAllocResourceClass, "rc");
    a.setText(kAllocState, std::string(allocation_state::kAllocating));
    a.setText(kAllocTraits, "[]");
    a.setText(kAllocCandidateNodes, "[]");
    REQUIRE(tx->allocations().insert(a));
    REQUIRE(tx->commit());
    other = a.uuid();
    std::mt19937_64 rng(1);
    auto first = scheduleAllocation(storage, other, rng, clock);
    REQUIRE(first);
    REQUIRE(first->kind == AllocationDecision::Kind::Allocated);
  };
  std::mt19937_64 rng(7);
  auto decision = scheduleAllocation(hooked, allocation, rng, clock);
  REQUIRE(decision);
  // The loser says, in Ironic's words, that no node is left; the winner's binding stands.
  CHECK(decision->kind == AllocationDecision::Kind::Failed);
  CHECK(decision->error == "no available nodes match the resource class rc");
  CHECK(nodeRow(storage, node).str(kNodeInstanceUuid) == other);
}

}  // namespace

TEST_CASE("an allocation racing a node lock leaves the reservation intact (SQLite)",
          "[server][conductor][allocations]") {
  kiln::test::TempDir dir;
  auto storage = openStorage("sqlite:///" + dir.file("kiln.sqlite"));
  REQUIRE(storage);
  racesWithLock(**storage);
}

TEST_CASE("an allocation losing its candidate to another allocation fails only for want of nodes (SQLite)",
          "[server][conductor][allocations]") {
  kiln::test::TempDir dir;
  auto storage = openStorage("sqlite:///" + dir.file("kiln.sqlite"));
  REQUIRE(storage);
  racesWithAnotherAllocation(**storage);
}

TEST_CASE("an allocation racing a node lock leaves the reservation intact (PostgreSQL)",
          "[server][conductor][allocations][.postgresql]") {
  auto storage = kiln::test::openScratchPostgresStorage();
  if (!storage) return;
  racesWithLock(*storage);
}

TEST_CASE("an allocation losing its candidate to another allocation fails only for want of nodes (PostgreSQL)",
          "[server][conductor][allocations][.postgresql]") {
  auto storage = kiln::test::openScratchPostgresStorage();
  if (!storage) return;
  racesWithAnotherAllocation(*storage);
}
