// The conductor's part of the scheduler: running allocations on the worker pool
// (the choice itself is server/conductor/allocations.cpp).
#include <random>

#include "server/conductor/allocations.h"
#include "server/conductor/conductor.h"
#include "server/model/allocation.h"

namespace kiln::server {
namespace {

using Mode = Storage::Mode;

/// A random source per worker thread, seeded once from the system's.
std::mt19937_64& threadRng() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng;
}

}  // namespace

void Conductor::allocate(const std::string& uuid) {
  pool_->submit(
      uuid, [this, uuid] { runAllocation(uuid); },
      [this, uuid](const std::string& what) {
        failAllocation(uuid, "Unexpected exception during allocation: " + what);
      });
}

void Conductor::runAllocation(const std::string& uuid) {
  Logger log = log_.with("allocation", uuid);
  const int attempts = std::max(1, deps_.config.nodeLockedRetryAttempts);
  for (int attempt = 1;; ++attempt) {
    auto pass = scheduleAllocation(deps_.storage, uuid, threadRng(), deps_.clock);
    if (!pass) {
      log.error("allocation failed", {{"error", pass.error().message}});
      return failAllocation(uuid,
                            "Unexpected exception during allocation: " + pass.error().message);
    }
    switch (pass->kind) {
      case AllocationDecision::Kind::Allocated:
        log.info("node allocated", {{"node", pass->nodeUuid}});
        return;
      case AllocationDecision::Kind::Gone:
        return;  // deleted meanwhile, or no longer allocating
      case AllocationDecision::Kind::Failed:
        return failAllocation(uuid, pass->error);
      case AllocationDecision::Kind::Locked:
        if (attempt >= attempts) {
          return failAllocation(uuid, "could not reserve any of " +
                                          std::to_string(pass->lockedCount) + " suitable nodes");
        }
        log.debug("every suitable node is locked, retrying",
                  {{"nodes", std::to_string(pass->lockedCount)}});
        deps_.clock.sleepFor(std::chrono::seconds(deps_.config.nodeLockedRetryInterval));
        break;
    }
  }
}

void Conductor::failAllocation(const std::string& uuid, const std::string& error) {
  auto result = [&]() -> Result<void> {
    auto tx = KILN_TRY(deps_.storage.begin(Mode::Write));
    auto found = KILN_TRY(tx->allocations().findBy(kAllocUuid, Value::text(uuid)));
    if (!found || found->str(kAllocState) != allocation_state::kAllocating) return {};
    found->setText(kAllocState, std::string(allocation_state::kError));
    found->setText(kAllocLastError, allocationFailedMessage(*found, error));
    found->setNull(kAllocNodeUuid);
    found->setText(kAllocUpdatedAt, formatIsoTime(deps_.clock.now()));
    KILN_TRY_VOID(tx->allocations().update(*found));
    return tx->commit();
  }();
  if (!result) {
    log_.error("cannot record a failed allocation",
               {{"allocation", uuid}, {"error", result.error().message}});
  } else {
    log_.warning("allocation failed", {{"allocation", uuid}, {"error", error}});
  }
}

void Conductor::recoverAllocations() {
  std::vector<Record> pending;
  {
    auto tx = deps_.storage.begin(Mode::Read);
    if (!tx) return;
    ListQuery q;
    q.limit = 0;
    q.filters.push_back({ListFilter::Op::Equals,
                         kAllocState,
                         Value::text(std::string(allocation_state::kAllocating)),
                         {}});
    auto listed = (*tx)->allocations().list(q);
    if (!listed) return;
    pending = std::move(*listed);
  }
  for (const auto& a : pending) {
    log_.info("resuming an allocation a previous run left", {{"allocation", a.uuid()}});
    allocate(a.uuid());
  }
}

}  // namespace kiln::server
