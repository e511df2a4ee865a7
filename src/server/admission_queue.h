// AdmissionQueue: at most `max_running` generations at once, and at most `max_queued` more
// waiting for a slot, first come first served, each for at most `max_wait` (and its request's
// deadline). A request that finds the queue full, or waits too long, is refused (HTTP 429 with
// Retry-After); one whose client leaves while it waits leaves the queue.
//
//   AdmissionQueue::Ticket t = queue.Acquire(deadline, [&] { return client_gone(); });
//   if (t.outcome() != AdmissionQueue::Outcome::kAdmitted) ...refuse...
//   ...generate...   // the slot is released when the ticket is destroyed
//
// Plain data and a condition variable: no sockets, no clock of its own beyond the steady one.
// Thread-safety: every method is thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>

#include "core/clock.h"

namespace smartgen::server {

struct AdmissionOptions {
  int max_running = 64;
  int max_queued = 128;
  core::Nanos max_wait = core::Seconds(30);
  // How often a waiting request asks whether its client is still there.
  core::Nanos abandon_poll = core::Millis(100);
};

class AdmissionQueue {
 public:
  enum class Outcome {
    kAdmitted,   // holds a slot until the ticket is destroyed
    kQueueFull,  // max_running running and max_queued waiting already
    kTimedOut,   // waited max_wait or up to the request's deadline
    kAbandoned,  // the `abandoned` predicate said the requester is gone
    kClosed,     // Close() was called (server stopping)
  };

  class Ticket {
   public:
    Ticket(Ticket&& o) noexcept : queue_(o.queue_), outcome_(o.outcome_), waited_(o.waited_) {
      o.queue_ = nullptr;
    }
    Ticket& operator=(Ticket&&) = delete;
    ~Ticket() {
      if (queue_ != nullptr) queue_->Release();
    }
    Outcome outcome() const { return outcome_; }
    bool admitted() const { return outcome_ == Outcome::kAdmitted; }
    core::Nanos waited() const { return waited_; }  // time spent in the queue

   private:
    friend class AdmissionQueue;
    Ticket(AdmissionQueue* q, Outcome o, core::Nanos waited)
        : queue_(q), outcome_(o), waited_(waited) {}
    AdmissionQueue* queue_;  // non-null while holding a slot
    Outcome outcome_;
    core::Nanos waited_;
  };

  explicit AdmissionQueue(AdmissionOptions options) : options_(options) {}
  AdmissionQueue(const AdmissionQueue&) = delete;
  AdmissionQueue& operator=(const AdmissionQueue&) = delete;

  // Takes a slot now, or waits in line for one. `abandoned` (may be empty) is polled every
  // abandon_poll while waiting. The ticket must not outlive the queue.
  Ticket Acquire(const core::Deadline& deadline, const std::function<bool()>& abandoned = {});

  // Refuses every waiter and later request with kClosed. Slots held stay until released.
  void Close();

  int running() const;
  int queued() const;
  const AdmissionOptions& options() const { return options_; }

 private:
  void Release();

  const AdmissionOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int running_ = 0;                 // guarded by mu_
  std::deque<std::uint64_t> line_;  // guarded by mu_: waiters' numbers, oldest first
  std::uint64_t next_number_ = 0;   // guarded by mu_
  bool closed_ = false;             // guarded by mu_
};

}  // namespace smartgen::server
