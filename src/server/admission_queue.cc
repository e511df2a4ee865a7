#include "server/admission_queue.h"

#include <algorithm>
#include <chrono>

namespace smartgen::server {

AdmissionQueue::Ticket AdmissionQueue::Acquire(const core::Deadline& deadline,
                                               const std::function<bool()>& abandoned) {
  const core::Nanos start = core::NowNanos();
  const core::Deadline until = Earlier(deadline, core::Deadline::After(options_.max_wait));
  std::unique_lock<std::mutex> lock(mu_);
  if (closed_) return Ticket(nullptr, Outcome::kClosed, 0);
  if (line_.empty() && running_ < options_.max_running) {
    ++running_;
    return Ticket(this, Outcome::kAdmitted, 0);
  }
  if (static_cast<int>(line_.size()) >= options_.max_queued) {
    return Ticket(nullptr, Outcome::kQueueFull, 0);
  }
  const std::uint64_t me = next_number_++;
  line_.push_back(me);
  Outcome outcome = Outcome::kAdmitted;
  while (true) {
    if (closed_) {
      outcome = Outcome::kClosed;
      break;
    }
    if (line_.front() == me && running_ < options_.max_running) break;
    if (until.Expired()) {
      outcome = Outcome::kTimedOut;
      break;
    }
    if (abandoned) {
      lock.unlock();
      const bool gone = abandoned();
      lock.lock();
      if (gone) {
        outcome = Outcome::kAbandoned;
        break;
      }
    }
    const core::Nanos step = std::min(until.Remaining(), options_.abandon_poll);
    cv_.wait_for(lock, std::chrono::nanoseconds(std::max<core::Nanos>(step, 1)));
  }
  line_.erase(std::find(line_.begin(), line_.end(), me));
  const core::Nanos waited = core::NowNanos() - start;
  if (outcome != Outcome::kAdmitted) {
    cv_.notify_all();  // the next in line may be the front now
    return Ticket(nullptr, outcome, waited);
  }
  ++running_;
  cv_.notify_all();  // a second free slot may serve the next in line too
  return Ticket(this, Outcome::kAdmitted, waited);
}

void AdmissionQueue::Release() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --running_;
  }
  cv_.notify_all();
}

void AdmissionQueue::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

int AdmissionQueue::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_;
}

int AdmissionQueue::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(line_.size());
}

}  // namespace smartgen::server
