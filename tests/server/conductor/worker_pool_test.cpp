// The worker pool's exception boundary: a job that throws fails its node's action through the
// job's failure handler and is logged; the thread, the pool and the process go on.
#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "server/conductor/worker_pool.h"
#include "shared/core/log.h"

using kiln::server::WorkerPool;

namespace {

/// Collects log lines while alive (and lets Info through, whatever the tests' level).
struct LogLines {
  std::mutex mutex;
  std::vector<std::string> lines;
  kiln::Logger::Sink previous;
  kiln::LogLevel level = kiln::Logger::level();
  LogLines() {
    kiln::Logger::setLevel(kiln::LogLevel::Info);
    previous = kiln::Logger::setSink([this](std::string_view line) {
      std::lock_guard<std::mutex> lock(mutex);
      lines.emplace_back(line);
    });
  }
  ~LogLines() {
    kiln::Logger::setSink(previous);
    kiln::Logger::setLevel(level);
  }
  std::string all() {
    std::lock_guard<std::mutex> lock(mutex);
    std::string out;
    for (const auto& l : lines) out += l;
    return out;
  }
};

struct NotAStdException {};

}  // namespace

TEST_CASE("worker pool hands what a job throws to the job's failure handler and keeps running",
          "[server][conductor][worker_pool]") {
  LogLines log;
  WorkerPool pool(1);  // one thread: the jobs after the throwing ones run on the same thread
  std::mutex mutex;
  std::vector<std::string> failures;
  std::atomic<int> ran{0};
  auto record = [&](std::string node) {
    return [&, node](const std::string& what) {
      std::lock_guard<std::mutex> lock(mutex);
      failures.push_back(node + ": " + what);
    };
  };

  pool.submit("node-a", [] { throw std::runtime_error("stored row is corrupt"); }, record("node-a"));
  pool.submit("node-b", [] { throw NotAStdException{}; }, record("node-b"));
  pool.submit("node-c", [] { throw 42; }, {});  // no handler: only logged
  pool.submit("node-d", [&] { ++ran; }, record("node-d"));
  pool.waitIdle();

  CHECK(failures == std::vector<std::string>{"node-a: stored row is corrupt",
                                             "node-b: an exception that is not a std::exception"});
  CHECK(ran == 1);
  const std::string lines = log.all();
  CHECK_THAT(lines, Catch::Contains("a conductor job threw; failing the node's action") &&
                        Catch::Contains("node=node-a") && Catch::Contains("stored row is corrupt") &&
                        Catch::Contains("node=node-b") && Catch::Contains("node=node-c"));

  // The pool still takes and runs work.
  for (int i = 0; i < 20; ++i) pool.submit("node-e", [&] { ++ran; }, record("node-e"));
  pool.waitIdle();
  CHECK(ran == 21);
  CHECK(failures.size() == 2);
}

TEST_CASE("worker pool survives a failure handler that throws too", "[server][conductor][worker_pool]") {
  LogLines log;
  WorkerPool pool(2);
  std::atomic<int> ran{0};
  pool.submit("node-a", [] { throw std::logic_error("first"); },
              [](const std::string&) { throw std::runtime_error("the database is gone as well"); });
  pool.waitIdle();
  for (int i = 0; i < 4; ++i) pool.submit("node-b", [&] { ++ran; }, {});
  pool.waitIdle();
  CHECK(ran == 4);
  CHECK_THAT(log.all(), Catch::Contains("failing the node's action threw too") &&
                            Catch::Contains("the database is gone as well"));
}

TEST_CASE("worker pool drops jobs submitted after stop", "[server][conductor][worker_pool]") {
  WorkerPool pool(1);
  pool.stop();
  bool ran = false;
  pool.submit("node-a", [&] { ran = true; }, {});
  pool.waitIdle();
  CHECK_FALSE(ran);
}

TEST_CASE("worker pool destroys what a job captured before waitIdle returns, and on stop",
          "[server][conductor][worker_pool]") {
  // The conductor's jobs capture the node's lock, which releases the node when destroyed:
  // once the pool is idle, nothing a job held may still be alive.
  LogLines log;
  WorkerPool pool(2);
  std::vector<std::weak_ptr<int>> ran;
  for (int i = 0; i < 8; ++i) {
    auto held = std::make_shared<int>(i);
    ran.push_back(held);
    pool.submit("node-a", [held] { (void)*held; }, [held](const std::string&) {});
  }
  auto thrown = std::make_shared<int>(0);
  std::weak_ptr<int> thrownRef = thrown;
  pool.submit("node-b", [thrown] { throw std::runtime_error("boom"); },
              [thrown](const std::string&) {});
  thrown.reset();
  pool.waitIdle();
  for (const auto& r : ran) CHECK(r.expired());
  CHECK(thrownRef.expired());

  pool.stop();
  auto late = std::make_shared<int>(1);
  std::weak_ptr<int> lateRef = late;
  pool.submit("node-c", [late] {}, {});
  late.reset();
  CHECK(lateRef.expired());  // dropped at once, not kept
}
