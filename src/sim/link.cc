#include "sim/link.h"

#include <algorithm>
#include <cmath>

namespace smartgen::sim {
namespace {
// A transfer counts as sent when less than this is left (floating-point slack).
constexpr double kByteSlack = 1e-3;
}  // namespace

std::string_view PathName(Path p) {
  switch (p) {
    case Path::kControl: return "control";
    case Path::kOnDemand: return "on_demand";
    case Path::kFirstStep: return "first_step";
    case Path::kSummary: return "summary";
    case Path::kProactive: return "proactive";
    case Path::kFull: return "full";
    case Path::kLayerwise: return "layerwise";
    case Path::kSpeculative: return "speculative";
    case Path::kCount: break;
  }
  return "?";
}

int PriorityOf(Path p) {
  switch (p) {
    case Path::kControl:
    case Path::kSummary:
    case Path::kFirstStep:
    case Path::kOnDemand: return 0;
    case Path::kSpeculative: return 2;
    default: return 1;
  }
}

double EngineBucketBytes(double gbps) { return std::max(64.0 * 1024, 0.005 * gbps * 1e9 / 8); }

double EngineFrameBytes(double gbps) {
  return std::min(1024.0 * 1024, EngineBucketBytes(gbps) / 4 - kEngineFrameHeaderBytes);
}

double EngineFrameBytes(double gbps, double block_bytes) {
  if (!(block_bytes > 0)) return EngineFrameBytes(gbps);
  return std::max(1.0, std::floor(EngineFrameBytes(gbps) / block_bytes)) * block_bytes;
}

Link::Link(EventQueue* queue, const LinkConfig& config, std::string name)
    : queue_(queue), config_(config), name_(std::move(name)),
      bytes_per_s_(config.gbps * 1e9 / 8),
      frame_bytes_(config.frame_bytes > 0 ? config.frame_bytes : EngineFrameBytes(config.gbps)),
      bucket_(config.burst_bytes < 0 ? EngineBucketBytes(config.gbps) : config.burst_bytes),
      credit_(bucket_) {}

std::uint64_t Link::Send(Path path, double bytes, Callback on_arrive, double frame_bytes) {
  const std::uint64_t id = next_id_++;
  const int prio = PriorityOf(path);
  const double frame = frame_bytes > 0 ? std::min(frame_bytes, frame_bytes_) : frame_bytes_;
  const double wire_per_byte = frame > 0 ? 1 + std::max(0.0, config_.header_bytes) / frame : 1;
  queues_[prio].push_back(Transfer{id, path, std::max(0.0, bytes), std::max(0.0, bytes), frame,
                                   wire_per_byte, std::move(on_arrive)});
  if (!current_) {
    StartNext();
  } else if (prio < PriorityOf(current_->path)) {
    // Preempt at the end of the frame on the wire (frames counted from the transfer's start).
    Advance();
    const double sent = current_->size - current_->remaining;
    const double frame = current_->frame;
    double to_boundary = frame - std::fmod(sent, frame);
    if (to_boundary >= frame - kByteSlack) to_boundary = 0;  // at a boundary now
    to_boundary = std::min(to_boundary, current_->remaining);
    ScheduleWake(queue_->now() + to_boundary * current_->wire_per_byte / bytes_per_s_);
  }
  return id;
}

double Link::Cancel(std::uint64_t id) {
  if (current_ && current_->id == id) {
    Advance();
    const double left = current_->remaining;
    current_.reset();
    StartNext();
    return left;
  }
  for (auto& q : queues_) {
    for (auto it = q.begin(); it != q.end(); ++it) {
      if (it->id == id) {
        const double left = it->remaining;
        q.erase(it);
        return left;
      }
    }
  }
  return 0;
}

void Link::Advance() {
  if (!current_) return;
  const Seconds now = queue_->now();
  const double wpb = current_->wire_per_byte;
  const double sent = std::min(current_->remaining, (now - run_start_) * bytes_per_s_ / wpb);
  current_->remaining -= sent;
  bytes_[static_cast<int>(current_->path)] += sent;
  busy_ += sent * wpb / bytes_per_s_;
  run_start_ = now;
}

void Link::StartNext() {
  for (auto& q : queues_) {
    if (q.empty()) continue;
    const bool from_idle = !busy_run_;
    current_ = std::move(q.front());
    q.pop_front();
    run_start_ = queue_->now();
    if (bucket_ > 0 && from_idle) {
      // The bucket refilled while the link was idle: that much leaves at once.
      credit_ = std::min(bucket_, credit_ + (run_start_ - idle_since_) * bytes_per_s_);
    }
    const double wpb = current_->wire_per_byte;
    if (credit_ > 0) {
      const double burst = std::min(credit_ / wpb, current_->remaining);
      current_->remaining -= burst;
      bytes_[static_cast<int>(current_->path)] += burst;
      credit_ -= burst * wpb;
    }
    busy_run_ = true;
    ScheduleWake(run_start_ + current_->remaining * wpb / bytes_per_s_);
    return;
  }
  if (busy_run_) idle_since_ = queue_->now();
  busy_run_ = false;
}

void Link::ScheduleWake(Seconds t) {
  const std::uint64_t generation = ++wake_generation_;
  queue_->At(t, [this, generation] { Wake(generation); });
}

void Link::Wake(std::uint64_t generation) {
  if (generation != wake_generation_ || !current_) return;
  Advance();
  if (current_->remaining <= kByteSlack) {
    bytes_[static_cast<int>(current_->path)] += current_->remaining;
    Callback cb = std::move(current_->on_arrive);
    current_.reset();
    if (cb) queue_->After(config_.latency_s, std::move(cb));
  } else {
    // Preempted at a frame boundary: back to the head of its class.
    queues_[PriorityOf(current_->path)].push_front(std::move(*current_));
    current_.reset();
  }
  StartNext();
}

double Link::bytes_sent(Path p) {
  Advance();
  return bytes_[static_cast<int>(p)];
}

double Link::total_bytes_sent() {
  Advance();
  double s = 0;
  for (double b : bytes_) s += b;
  return s;
}

Seconds Link::busy_seconds() {
  Advance();
  return busy_;
}

double Link::backlog_bytes(int prio) const {
  double b = 0;
  for (int p = 0; p <= prio && p < 3; ++p) {
    for (const Transfer& t : queues_[p]) b += t.remaining;
  }
  if (current_ && PriorityOf(current_->path) <= prio) b += current_->remaining;
  return b;
}

}  // namespace smartgen::sim
