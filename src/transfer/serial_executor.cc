#include "transfer/serial_executor.h"

#include <chrono>
#include <exception>

#include "core/log.h"

namespace smartgen::transfer {

SerialExecutor::SerialExecutor() : thread_([this] { Loop(); }) {}

SerialExecutor::~SerialExecutor() { Stop(true); }

void SerialExecutor::Post(std::function<void()> task, core::Nanos due) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return;
  tasks_.push_back({due, std::move(task)});
  cv_.notify_one();
}

void SerialExecutor::Stop(bool drain) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) drain_ = drain;
    stopping_ = true;
    cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

void SerialExecutor::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (tasks_.empty()) {
      if (stopping_) return;
      cv_.wait(lock);
      continue;
    }
    if (stopping_ && !drain_) {
      tasks_.clear();
      continue;
    }
    const core::Nanos now = core::NowNanos();
    if (!stopping_ && tasks_.front().due > now) {
      cv_.wait_for(lock, std::chrono::nanoseconds(tasks_.front().due - now));
      continue;
    }
    std::function<void()> fn = std::move(tasks_.front().fn);
    tasks_.pop_front();
    lock.unlock();
    // Tasks are callbacks into higher layers; an exception must not end the process from this
    // thread (peer input is parsed without exceptions: this is the last line of defence).
    try {
      fn();
    } catch (const std::exception& e) {
      SG_LOG_ERROR("transfer", "a callback threw ({}); it was dropped", e.what());
    } catch (...) {
      SG_LOG_ERROR("transfer", "a callback threw; it was dropped");
    }
    fn = nullptr;  // destroy captures outside the lock
    lock.lock();
  }
}

}  // namespace smartgen::transfer
