// The node lock (server/conductor/node_lock.h): the reservation column taken by a
// compare-and-set, given back only while it still names this host, owned by one RAII object
// whichever way it was taken.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <utility>

#include "server/conductor/node_lock.h"
#include "server/model/node.h"
#include "tests/support/test_api.h"

using kiln::test::Json;
using kiln::test::TestApi;
using namespace kiln::server;

namespace {

constexpr const char* kHost = "test-conductor";  // TestApi's [DEFAULT] host

/// The node's reservation as stored (null when free).
Json reservation(TestApi& api, const std::string& uuid) {
  auto tx = api.app().storage().begin(Storage::Mode::Read).value();
  auto rec = tx->nodes().findBy(kNodeUuid, Value::text(uuid)).value();
  REQUIRE(rec);
  return (*rec)[kNodeReservation].isNull() ? Json() : Json(rec->str(kNodeReservation));
}

/// Writes the reservation column behind the lock's back (another conductor, or a flow's save).
void writeReservation(TestApi& api, const std::string& uuid, std::optional<std::string> host) {
  auto tx = api.app().storage().begin(Storage::Mode::Write).value();
  auto rec = tx->nodes().findBy(kNodeUuid, Value::text(uuid)).value();
  REQUIRE(rec);
  if (host) {
    rec->setText(kNodeReservation, *host);
  } else {
    rec->setNull(kNodeReservation);
  }
  REQUIRE(tx->nodes().update(*rec));
  REQUIRE(tx->commit());
}

kiln::Result<NodeLock> acquire(TestApi& api, const std::string& uuid,
                               const std::string& host = kHost,
                               const NodeLock::Precondition& precondition = {}) {
  return NodeLock::acquire(api.app().storage(), api.clock(), uuid, host, "test", precondition);
}

std::string lockedMessage(const std::string& uuid, const std::string& host) {
  return "Node " + uuid + " is locked by host " + host +
         ", please retry after the current operation is completed.";
}

}  // namespace

TEST_CASE("NodeLock reserves the node for its host and releases it on release or destruction",
          "[server][conductor][node_lock]") {
  TestApi api;
  const std::string uuid = api.createNode()["uuid"];

  SECTION("release() clears the reservation, once") {
    auto lock = acquire(api, uuid);
    REQUIRE(lock);
    CHECK(lock->held());
    CHECK(lock->uuid() == uuid);
    CHECK(reservation(api, uuid) == kHost);
    CHECK(api.get("/v1/nodes/" + uuid).json()["reservation"] == kHost);
    lock->release();
    CHECK_FALSE(lock->held());
    CHECK(reservation(api, uuid).is_null());
    // Idempotent: a reservation taken afterwards is not cleared by a second release.
    writeReservation(api, uuid, kHost);
    lock->release();
    CHECK(reservation(api, uuid) == kHost);
  }
  SECTION("the destructor clears it") {
    {
      auto lock = acquire(api, uuid);
      REQUIRE(lock);
      CHECK(reservation(api, uuid) == kHost);
    }
    CHECK(reservation(api, uuid).is_null());
  }
  SECTION("a moved lock releases once, from its new owner") {
    auto first = acquire(api, uuid);
    REQUIRE(first);
    NodeLock owner = std::move(*first);
    CHECK_FALSE(first->held());
    CHECK(owner.held());
    first->release();  // the moved-from lock holds nothing
    CHECK(reservation(api, uuid) == kHost);
    const std::string other = api.createNode()["uuid"];
    auto second = acquire(api, other);
    REQUIRE(second);
    owner = std::move(*second);  // releases the first node, takes over the second
    CHECK(reservation(api, uuid).is_null());
    CHECK(reservation(api, other) == kHost);
    owner.release();
    CHECK(reservation(api, other).is_null());
  }
}

TEST_CASE("NodeLock refuses a reserved node with Ironic's NodeLocked conflict",
          "[server][conductor][node_lock]") {
  TestApi api;
  const std::string uuid = api.createNode()["uuid"];
  auto held = acquire(api, uuid);
  REQUIRE(held);

  SECTION("for another host") {
    auto second = acquire(api, uuid, "other-host");
    REQUIRE_FALSE(second);
    CHECK(second.error().code == kiln::ErrorCode::Conflict);
    CHECK(second.error().message == lockedMessage(uuid, kHost));
    CHECK(second.error().is(kiln::Reason::NodeLocked));
  }
  SECTION("for the same host (one holder per node, not per conductor)") {
    auto second = acquire(api, uuid);
    REQUIRE_FALSE(second);
    CHECK(second.error().message == lockedMessage(uuid, kHost));
  }
  SECTION("and the API answers 409 with it while the lock is held") {
    auto r = api.put("/v1/nodes/" + uuid + "/states/power", {{"target", "power on"}});
    CHECK(r.status == 409);
    CHECK(r.fault() == lockedMessage(uuid, kHost));
    held->release();
    CHECK(api.put("/v1/nodes/" + uuid + "/states/power", {{"target", "power on"}}).status == 202);
    api.settle();
    CHECK(api.get("/v1/nodes/" + uuid).json()["power_state"] == "power on");
  }
  // The refused attempts wrote nothing: the holder's reservation stands until it releases.
  if (held->held()) {
    CHECK(reservation(api, uuid) == kHost);
    held->release();
  }
  CHECK(reservation(api, uuid).is_null());
}

TEST_CASE("NodeLock acquire fails without writing for an unknown node or a refused precondition",
          "[server][conductor][node_lock]") {
  TestApi api;
  const std::string uuid = api.createNode()["uuid"];
  auto missing = acquire(api, "5c6b2c8e-4f0e-4c1f-9a53-6f1f9e0c0d11");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == kiln::ErrorCode::NotFound);
  CHECK(missing.error().message == "Node 5c6b2c8e-4f0e-4c1f-9a53-6f1f9e0c0d11 could not be found.");

  bool checked = false;
  auto refused = acquire(api, uuid, kHost, [&](const Record& node) -> kiln::Result<void> {
    checked = true;
    CHECK(node.uuid() == uuid);
    CHECK(node[kNodeReservation].isNull());  // the compare-and-set found it free first
    return kiln::invalid("not now");
  });
  CHECK(checked);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message == "not now");
  CHECK(reservation(api, uuid).is_null());
}

TEST_CASE("NodeLock release leaves a reservation another conductor holds",
          "[server][conductor][node_lock]") {
  TestApi api;
  const std::string uuid = api.createNode()["uuid"];
  auto lock = acquire(api, uuid);
  REQUIRE(lock);
  // Another conductor took the node over (its reservation replaced ours).
  writeReservation(api, uuid, "other-host");
  lock->release();
  CHECK(reservation(api, uuid) == "other-host");
  CHECK_FALSE(lock->held());
}

TEST_CASE("NodeLock releasedInSave hands the reservation to the flow's save and writes nothing",
          "[server][conductor][node_lock]") {
  TestApi api;
  const std::string uuid = api.createNode()["uuid"];
  auto parked = acquire(api, uuid);
  REQUIRE(parked);
  // The flow parks: its own save clears the reservation (and commits) ...
  writeReservation(api, uuid, std::nullopt);
  parked->releasedInSave();
  CHECK_FALSE(parked->held());
  // ... and a new holder on the same host (the agent's heartbeat resuming the flow) is not
  // disturbed when the parked flow's lock goes.
  auto resumed = acquire(api, uuid);
  REQUIRE(resumed);
  { NodeLock gone = std::move(*parked); }
  CHECK(reservation(api, uuid) == kHost);
  resumed->release();
  CHECK(reservation(api, uuid).is_null());
}

TEST_CASE("NodeLock adopts the reservation a request committed and releases it",
          "[server][conductor][node_lock]") {
  TestApi api;
  const std::string uuid = api.createNode()["uuid"];
  auto reserveInRequest = [&]() -> kiln::Result<void> {
    auto tx = KILN_TRY(api.app().storage().begin(Storage::Mode::Write));
    auto rec = KILN_TRY(tx->nodes().findBy(kNodeUuid, Value::text(uuid)));
    REQUIRE(rec);
    KILN_TRY_VOID(NodeLock::reserve(*rec, kHost));
    KILN_TRY_VOID(tx->nodes().update(*rec));
    return tx->commit();
  };
  REQUIRE(reserveInRequest());
  CHECK(reservation(api, uuid) == kHost);

  // A second request finds it reserved: the same conflict, nothing written.
  auto again = reserveInRequest();
  REQUIRE_FALSE(again);
  CHECK(again.error().message == lockedMessage(uuid, kHost));

  {
    NodeLock worker = NodeLock::adopt(api.app().storage(), api.clock(), uuid, kHost, "test");
    CHECK(worker.held());
    CHECK(reservation(api, uuid) == kHost);
  }  // the worker's lock goes: the reservation with it
  CHECK(reservation(api, uuid).is_null());

  SECTION("a reservation given up before the worker ends is not cleared again") {
    REQUIRE(reserveInRequest());
    NodeLock worker = NodeLock::adopt(api.app().storage(), api.clock(), uuid, kHost, "test");
    writeReservation(api, uuid, "other-host");
    worker.release();
    CHECK(reservation(api, uuid) == "other-host");
  }
}
