// File: server/conductor/worker_pool.h
//
// A fixed pool of threads running queued jobs. waitIdle() blocks until the queue is empty and
// no job runs (tests use it instead of sleeping).
//
// The pool is the boundary for exceptions on the conductor's threads (house-style rule 12):
// whatever a job throws is caught, logged with the node the job works on, and handed to the
// job's failure handler, which fails that node's action. The thread goes on with the next job;
// an exception never reaches std::terminate.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kiln::server {

class WorkerPool {
 public:
  /// Runs after the job threw, with what it threw: an exception's what(), or a note that it
  /// was not a std::exception.
  using FailureHandler = std::function<void(const std::string& what)>;

  explicit WorkerPool(int threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  /// Queues `job`, which works on node `nodeUuid` (named in the log when it fails). When the
  /// job throws, `onFailure` runs on the same thread; an exception from `onFailure` itself is
  /// logged and dropped. Jobs submitted after stop() are dropped. A job (with what it
  /// captured, such as a node's lock) is destroyed before waitIdle() counts it finished, and a
  /// dropped one outside the pool's mutex.
  void submit(std::string nodeUuid, std::function<void()> job, FailureHandler onFailure);
  /// Blocks until no job is queued or running.
  void waitIdle();
  /// Finishes running jobs, drops queued ones, joins the threads. Idempotent.
  void stop();

 private:
  struct Job {
    std::string nodeUuid;
    std::function<void()> run;
    FailureHandler onFailure;
  };

  void run();
  static void runGuarded(Job& job);

  std::mutex mutex_;
  std::condition_variable work_;
  std::condition_variable idle_;
  std::deque<Job> queue_;
  int running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace kiln::server
