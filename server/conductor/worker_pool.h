// File: server/conductor/worker_pool.h
//
// A fixed pool of threads running queued jobs. waitIdle() blocks until the queue is empty and
// no job runs (tests use it instead of sleeping).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::server {

class WorkerPool {
 public:
  explicit WorkerPool(int threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  /// Queues a job. Jobs submitted after stop() are dropped.
  void submit(std::function<void()> job);
  /// Blocks until no job is queued or running.
  void waitIdle();
  /// Finishes running jobs, drops queued ones, joins the threads. Idempotent.
  void stop();

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable work_;
  std::condition_variable idle_;
  std::deque<std::function<void()>> queue_;
  int running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace kiln::server
