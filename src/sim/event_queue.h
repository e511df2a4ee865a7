// EventQueue: the clock and agenda of the cluster simulator (a discrete-event simulation).
//
// Time is simulated seconds (double) from 0; nothing here reads a wall clock. Events run in
// order of time, and events scheduled for the same time run in the order they were scheduled
// (FIFO), so a run is deterministic. An event may schedule further events; one scheduled in
// the past runs at now() (time never goes backwards).
//
// Thread-safety: none; a simulation runs on one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

namespace smartgen::sim {

using Seconds = double;

class EventQueue {
 public:
  using Fn = std::function<void()>;

  Seconds now() const { return now_; }
  // Runs `fn` at time max(t, now()).
  void At(Seconds t, Fn fn);
  // Runs `fn` at now() + dt (dt < 0 is taken as 0).
  void After(Seconds dt, Fn fn) { At(now_ + (dt > 0 ? dt : 0), std::move(fn)); }

  // Runs the earliest event; false when none is left.
  bool RunNext();
  // Runs events while their time is <= t_end; then now() = max(now(), t_end) if events remain.
  void RunUntil(Seconds t_end);
  // Runs every event (the caller guarantees the agenda drains) or stops after max_events.
  void RunAll(std::uint64_t max_events = ~std::uint64_t{0});

  bool empty() const { return heap_.empty(); }
  std::size_t pending() const { return heap_.size(); }
  std::uint64_t processed() const { return processed_; }

 private:
  struct Event {
    Seconds t;
    std::uint64_t seq;
    Fn fn;
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.t != b.t ? a.t > b.t : a.seq > b.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  Seconds now_ = 0;
  std::uint64_t next_seq_ = 0;
  std::uint64_t processed_ = 0;
};

}  // namespace smartgen::sim
