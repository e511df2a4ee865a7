// CancelSignal: tells a backend at once that its request is cancelled (the client went away,
// a stop sequence completed the output, the deadline passed, the server is stopping), so that
// a backend waiting for something other than its next token (a queue slot, a prefill, a node's
// reply) can stop without waiting to fail its next on_token.
//
//   if (request.cancel && request.cancel->cancelled()) ...            // poll
//   auto sub = request.cancel->OnCancel([&] { cv.notify_all(); });    // or be woken
//
// Cancel() runs the registered callbacks on its caller's thread, under the signal's lock:
// callbacks must be short and must not call back into the signal. A subscription unregisters
// when destroyed; after its destructor returns, its callback is not running and never will.
// Thread-safety: every method is thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

namespace smartgen::server {

class CancelSignal {
 public:
  class Subscription {
   public:
    Subscription() = default;
    Subscription(Subscription&& o) noexcept : signal_(o.signal_), id_(o.id_) {
      o.signal_ = nullptr;
    }
    Subscription& operator=(Subscription&& o) noexcept {
      if (this != &o) {
        Reset();
        signal_ = o.signal_;
        id_ = o.id_;
        o.signal_ = nullptr;
      }
      return *this;
    }
    ~Subscription() { Reset(); }
    void Reset() {
      if (signal_ != nullptr) {
        std::lock_guard<std::mutex> lock(signal_->mu_);
        signal_->callbacks_.erase(id_);
      }
      signal_ = nullptr;
    }

   private:
    friend class CancelSignal;
    Subscription(CancelSignal* s, std::uint64_t id) : signal_(s), id_(id) {}
    CancelSignal* signal_ = nullptr;
    std::uint64_t id_ = 0;
  };

  // Idempotent: the first call runs the callbacks, later calls do nothing.
  void Cancel() {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_.exchange(true, std::memory_order_acq_rel)) return;
    for (auto& [id, fn] : callbacks_) fn();
    callbacks_.clear();
  }
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

  // Runs `fn` when cancelled; at once, on this thread, if already cancelled. The subscription
  // must not outlive the signal.
  [[nodiscard]] Subscription OnCancel(std::function<void()> fn) {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_.load(std::memory_order_acquire)) {
      fn();
      return {};
    }
    const std::uint64_t id = next_id_++;
    callbacks_.emplace(id, std::move(fn));
    return Subscription(this, id);
  }

 private:
  std::mutex mu_;
  std::atomic<bool> cancelled_{false};
  std::uint64_t next_id_ = 0;                                 // guarded by mu_
  std::map<std::uint64_t, std::function<void()>> callbacks_;  // guarded by mu_
};

}  // namespace smartgen::server
