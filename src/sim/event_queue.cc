#include "sim/event_queue.h"

namespace smartgen::sim {

void EventQueue::At(Seconds t, Fn fn) {
  heap_.push(Event{t < now_ ? now_ : t, next_seq_++, std::move(fn)});
}

bool EventQueue::RunNext() {
  if (heap_.empty()) return false;
  // The heap's top is const; move the callable out before popping.
  Event e = std::move(const_cast<Event&>(heap_.top()));
  heap_.pop();
  now_ = e.t;
  ++processed_;
  e.fn();
  return true;
}

void EventQueue::RunUntil(Seconds t_end) {
  while (!heap_.empty() && heap_.top().t <= t_end) RunNext();
  if (now_ < t_end && !heap_.empty()) now_ = t_end;
}

void EventQueue::RunAll(std::uint64_t max_events) {
  for (std::uint64_t i = 0; i < max_events && RunNext(); ++i) {
  }
}

}  // namespace smartgen::sim
