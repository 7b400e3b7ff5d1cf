#include "server/conductor/worker_pool.h"

#include <exception>

#include "shared/core/log.h"

namespace kiln::server {
namespace {

/// What the exception being handled says; only call inside a catch block.
std::string describeCurrentException() {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

}  // namespace

WorkerPool::WorkerPool(int threads) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

WorkerPool::~WorkerPool() { stop(); }

void WorkerPool::submit(std::string nodeUuid, std::function<void()> job, FailureHandler onFailure) {
  bool queued = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stopping_) {
      queue_.push_back({std::move(nodeUuid), std::move(job), std::move(onFailure)});
      queued = true;
    }
  }
  // A job dropped after stop() (and what it holds, such as a node's lock) is destroyed with
  // the parameters, outside the mutex.
  if (queued) work_.notify_one();
}

void WorkerPool::waitIdle() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [this] { return queue_.empty() && running_ == 0; });
}

void WorkerPool::stop() {
  std::deque<Job> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    dropped.swap(queue_);
  }
  // Destroyed outside the mutex: a job's captures may release a node's lock in the database.
  dropped.clear();
  work_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  idle_.notify_all();
}

void WorkerPool::run() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    runGuarded(job);
    // What the job captured (a node's lock) goes before waitIdle() can see the job finished.
    job = Job{};
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --running_;
      if (queue_.empty() && running_ == 0) idle_.notify_all();
    }
  }
}

void WorkerPool::runGuarded(Job& job) {
  std::string what;
  try {
    job.run();
    return;
  } catch (...) {
    what = describeCurrentException();
  }
  const Logger log = Logger("conductor").with("node", job.nodeUuid);
  log.error("a conductor job threw; failing the node's action", {{"error", what}});
  if (!job.onFailure) return;
  try {
    job.onFailure(what);
  } catch (...) {
    log.error("failing the node's action threw too", {{"error", describeCurrentException()}});
  }
}

}  // namespace kiln::server
