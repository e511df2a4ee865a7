// A thread that runs tasks one at a time, in the order posted, each no earlier than its due
// time (due times must not decrease). The endpoint uses one for user callbacks (so they never
// run under engine locks) and, per peer, one as the delay line that emulates link latency.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "core/clock.h"

namespace smartgen::transfer {

class SerialExecutor {
 public:
  SerialExecutor();
  // Runs what is still queued (due times ignored), then joins.
  ~SerialExecutor();
  SerialExecutor(const SerialExecutor&) = delete;
  SerialExecutor& operator=(const SerialExecutor&) = delete;

  // Queues `task` to run at `due` (steady-clock nanoseconds; 0 = now). Thread-safe. After
  // Stop(), tasks are dropped.
  void Post(std::function<void()> task, core::Nanos due = 0);
  // Stops: runs queued tasks now if `drain`, else drops them; joins the thread. Must not be
  // called from a task. Idempotent.
  void Stop(bool drain);
  // Whether the calling thread is this executor's thread.
  bool OnExecutorThread() const { return std::this_thread::get_id() == thread_.get_id(); }

 private:
  void Loop();
  struct Task {
    core::Nanos due;
    std::function<void()> fn;
  };
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> tasks_;  // guarded by mu_
  bool stopping_ = false;   // guarded by mu_
  bool drain_ = true;       // guarded by mu_
  std::thread thread_;
};

}  // namespace smartgen::transfer
